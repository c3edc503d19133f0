'use strict';
/**
 * Shared test fixtures: a real simulator on loopback and the real Node-RED runtime
 * (node-red-node-test-helper) loading our compiled nodes. Tests build flows from the
 * fixtures here instead of repeating the wiring.
 */
const helper = require('node-red-node-test-helper');
const { startSimulator } = require('../../dist/simulator');

helper.init(require.resolve('node-red'));

/** Every node module of the package, as Node-RED loads them. */
const OUR_NODES = Object.values(require('../../package.json')['node-red'].nodes).map((p) => require(`../../${p}`));
/** Core nodes the tests wire in (Catch, Status, Complete). */
const CORE_NODES = ['25-catch.js', '25-status.js', '24-complete.js'].map((f) => require(`@node-red/nodes/core/common/${f}`));
const ALL_NODES = [...OUR_NODES, ...CORE_NODES];

/** A gateway config node for the simulator (client credentials by default). */
function gatewayNode(sim, props = {}) {
  return {
    id: 'gw',
    type: 'iotgw-gateway',
    name: 'sim',
    baseUrl: sim.url,
    apiVersion: '1.0',
    rateLimitCalls: 0,
    rateLimitWindowSeconds: 60,
    maxConcurrent: 3,
    maxBatchSize: 100,
    timeoutSeconds: 5,
    ...props,
  };
}

const DEMO_CREDS = { clientId: 'demo', clientSecret: 'demo-secret', brokerClientId: 'sim-client', brokerAccessToken: 'sim-access-token' };

/** Loads a flow into the real runtime; returns {get(id)}. */
const CONFIG_TYPES = new Set(['iotgw-gateway', 'iotgw-app', 'tls-config']);

function load(flow, credentials = { gw: DEMO_CREDS }) {
  // Flow nodes live on a tab (Catch nodes need one); config nodes stay global.
  const nodes = [{ id: 'flow', type: 'tab', label: 'test' }, ...flow.map((n) => (CONFIG_TYPES.has(n.type) || n.z ? n : { z: 'flow', ...n }))];
  return new Promise((resolve, reject) => {
    helper
      .load(ALL_NODES, nodes, credentials, () => resolve({ get: (id) => helper.getNode(id) }))
      .catch(reject);
  });
}

/**
 * Collects what a node sends and how each input ended. Wraps `receive` so that every
 * input msg's `done` is counted: exactly one send-or-done(err) per message is the
 * invariant many tests check.
 */
function track(node) {
  const t = { ended: [], errors: [] };
  node.on('call:error', (call) => t.errors.push(call.args[0]));
  return t;
}

/** Waits until `pred()` is true (polls every 10 ms), or fails after `ms`. */
async function until(pred, ms = 5000, what = 'condition') {
  const start = Date.now();
  while (!(await pred())) {
    if (Date.now() - start > ms) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Collects msgs arriving at a helper node. */
function collect(node) {
  const msgs = [];
  node.on('input', (msg) => msgs.push(msg));
  return msgs;
}

/** Catch-node msgs (errors) of the flow, via a catch node wired to a helper. */
function catchAll(id = 'catcher', wire = 'caught') {
  return [
    { id, type: 'catch', scope: null, uncaught: false, wires: [[wire]] },
    { id: wire, type: 'helper' },
  ];
}

module.exports = { helper, startSimulator, gatewayNode, load, until, collect, catchAll, track, DEMO_CREDS, ALL_NODES };
