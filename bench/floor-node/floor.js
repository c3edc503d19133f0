'use strict';
/**
 * The floor of the overhead figure: the least a Node-RED node can do for one call. One
 * undici request per msg (a keep-alive Pool of `connections`), POST msg.payload as JSON with
 * a bearer token, the JSON reply read whole into msg.payload, msg sent on. No checks, no
 * status, no batching, no limits, no exact integers.
 */
const { Pool } = require('undici');

module.exports = function (RED) {
  function FloorNode(config) {
    RED.nodes.createNode(this, config);
    const url = new URL(config.url);
    const path = url.pathname + url.search;
    const pool = new Pool(url.origin, { connections: Number(config.connections) || 4 });
    this.on('input', (msg, send, done) => {
      pool
        .request({ path, method: 'POST', headers: { authorization: `Bearer ${config.token}`, 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify(msg.payload) })
        .then(async (res) => {
          msg.statusCode = res.statusCode;
          msg.payload = await res.body.json();
          send(msg);
          done();
        })
        .catch((err) => done(err));
    });
    this.on('close', (done) => {
      pool.close().then(() => done(), () => done());
    });
  }
  RED.nodes.registerType('bench-floor', FloorNode);
};
