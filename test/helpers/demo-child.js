'use strict';
/**
 * Child process for test/package/start-demo.test.js: `npm start`'s startDev (scripts/start.js) on
 * free ports and a fresh user dir (argv[2]), with whatever proxy the environment names.
 * It reports to the parent over IPC: every node status change, and the simulator's call
 * count. Node-RED's log goes to stdout as with `npm start`.
 */
const path = require('path');
const { startDev } = require('../../scripts/start');

(async () => {
  const dev = await startDev({ port: 0, simPort: 0, userDir: process.argv[2], reset: true });
  const nrPath = process.env.IOTGW_NODE_RED_PATH ? path.resolve(process.env.IOTGW_NODE_RED_PATH) : path.dirname(require.resolve('node-red/package.json'));
  const { events } = require(require.resolve('@node-red/util', { paths: [nrPath] }));
  events.on('node-status', (e) => process.send({ status: { id: e.id, status: e.status } }));
  const names = {};
  dev.RED.nodes.eachNode((n) => (names[n.id] = `${n.type} "${n.name || n.id}"`));
  process.send({ ready: true, names, deployed: dev.deployed });
  process.on('message', (m) => {
    if (m === 'calls') process.send({ calls: dev.sim.server.calls.length });
    if (m === 'stop') dev.stop().then(() => process.exit(0));
  });
})().catch((err) => {
  console.error(err);
  process.exit(1);
});
