'use strict';
/**
 * The least a durable queue node can do (the baseline of bench/outbox-node.js): each msg's
 * JSON (topic and payload) appended to `file` as one line and fdatasync'ed; only then does it
 * count as accepted (bench counter `synced`; `syncs` counts the fdatasyncs).
 * `mode`: `each`: one msg at a time, the next taken once the previous is synced (what a node
 * that keeps its promise without more work does); `group`: msgs that arrive during a sync
 * are appended together and synced once after it (group commit: the disk's ceiling for a
 * node). No framing, no checksum, no index, no reading back: less than the outbox does.
 */
const fs = require('node:fs');

module.exports = function (RED) {
  function SyncNode(config) {
    RED.nodes.createNode(this, config);
    const bench = this.context().global.get('bench');
    const fd = fs.openSync(String(config.file), 'a');
    const group = config.mode === 'group';
    let queue = [];
    let running = false;
    let chain = Promise.resolve();
    const sync = (lines, then) => {
      fs.write(fd, lines.join(''), (err) => {
        if (err) return then(err);
        bench.inc('syncs');
        fs.fdatasync(fd, then);
      });
    };
    const flush = () => {
      if (!queue.length) {
        running = false;
        return;
      }
      const batch = queue;
      queue = [];
      sync(batch.map((b) => b.line), (err) => {
        for (const b of batch) {
          if (!err) bench.inc('synced');
          b.done(err || undefined);
        }
        flush();
      });
    };
    this.on('input', (msg, send, done) => {
      const line = `${JSON.stringify({ topic: msg.topic, payload: msg.payload })}\n`;
      if (group) {
        queue.push({ line, done });
        if (!running) {
          running = true;
          flush();
        }
        return;
      }
      chain = chain.then(() => new Promise((resolve) => sync([line], (err) => {
        if (!err) bench.inc('synced');
        done(err || undefined);
        resolve();
      })));
    });
    this.on('close', (done) => {
      chain.then(() => {
        fs.closeSync(fd);
        done();
      });
    });
  }
  RED.nodes.registerType('bench-sync', SyncNode);
};
