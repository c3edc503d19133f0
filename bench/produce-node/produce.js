'use strict';
/**
 * The baseline of the poller's memory figure: the least a node can do to bring status
 * records into a flow one msg per record. From its deploy on, it sends `count` msgs in
 * lots of `lot` (500: one reply of the poller), one lot per event-loop turn
 * (setImmediate; `gapMs` > 0: setTimeout(gapMs) between lots), and nothing else: no
 * HTTP, no parse, no mark, no schema check.
 * Each msg has the shape the poller sends for a record of the simulator's backlog
 * (`{ topic: ID as text, payload: record, statusCode: 200 }`, the record with the names the
 * poller adds), built fresh per record with its own strings, as a parsed reply's would be.
 */
const STATE_RECEIVED = 1;
const TRANSPORT_SATELLITE = 1;
const BASE_ID = 10_000_000_000;
const PER_SECOND = 100; // as the simulator's backlog (seedBacklog's default)

const utc = (sec) => new Date(sec * 1000).toISOString().slice(0, 19).replace('T', ' ');

function record(i, startSec) {
  const sec = startSec + Math.floor(i / PER_SECOND);
  return {
    ID: BASE_ID + i,
    IsClosed: true,
    State: STATE_RECEIVED,
    CreateUTC: utc(sec - 60),
    StatusUTC: utc(sec),
    Transport: TRANSPORT_SATELLITE,
    ReferenceNumber: i + 1,
    AccountID: 'demo',
    StateName: 'RECEIVED',
    TransportName: 'SATELLITE',
  };
}

module.exports = function (RED) {
  function ProduceNode(config) {
    RED.nodes.createNode(this, config);
    const node = this;
    const count = Math.max(0, Number(config.count) || 0);
    const lot = Math.max(1, Number(config.lot) || 500);
    const gapMs = Math.max(0, Number(config.gapMs) || 0);
    const startSec = Math.floor(Date.now() / 1000) - Math.ceil(count / PER_SECOND) - 86400;
    let next = 0;
    let timer;
    let stopped = false;
    const later = (fn) => (gapMs > 0 ? (timer = setTimeout(fn, gapMs)) : setImmediate(fn));
    const step = () => {
      if (stopped) return;
      const end = Math.min(count, next + lot);
      for (; next < end; next++) {
        const rec = record(next, startSec);
        node.send({ topic: rec.ID.toFixed(0), payload: rec, statusCode: 200 });
      }
      if (next < count) later(step);
    };
    later(step);
    node.on('close', () => {
      stopped = true;
      clearTimeout(timer);
    });
  }
  RED.nodes.registerType('bench-produce', ProduceNode);
};
