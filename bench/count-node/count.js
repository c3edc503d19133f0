'use strict';
/**
 * The least a downstream node can do with a msg: count it. The memory figures (poller,
 * inventory) count what arrives with it besides a function node: a function node runs the
 * user's code in a vm context per msg, and that writes (global property cells) end up in
 * V8's old generation, so with one msg per record most of the garbage that piles up
 * between full GCs is the function node's, not the node under test's.
 * Config: `counter` (the name counted), `items` (true: also add msg.payload.length to
 * `<counter>Items`). The counters are the bench's (settings functionGlobalContext.bench).
 */
module.exports = function (RED) {
  function CountNode(config) {
    RED.nodes.createNode(this, config);
    const bench = this.context().global.get('bench');
    const name = String(config.counter || 'records');
    const items = config.items === true;
    this.on('input', (msg, send, done) => {
      bench.inc(name);
      if (items && Array.isArray(msg.payload)) bench.inc(`${name}Items`, msg.payload.length);
      done();
    });
  }
  RED.nodes.registerType('bench-count', CountNode);
};
