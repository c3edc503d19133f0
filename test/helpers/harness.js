'use strict';
/**
 * Shared test fixtures: a real simulator on loopback and the real Node-RED runtime
 * (node-red-node-test-helper) loading our compiled nodes. Tests build flows from the
 * fixtures here instead of repeating the wiring.
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const helper = require('node-red-node-test-helper');
const { startSimulator } = require('../../dist/simulator');
const { waitUntil } = require('./wait');

helper.init(require.resolve(process.env.IOTGW_NODE_RED_PATH || 'node-red')); // IOTGW_NODE_RED_PATH: another Node-RED line (CI runs 5.x)

/** Every node module of the package, as Node-RED loads them. */
const OUR_NODES = Object.values(require('../../package.json')['node-red'].nodes).map((p) => require(`../../${p}`));
/**
 * Core nodes the tests wire in (Catch, Status, Complete). The helper registers such a module
 * once for every node of its type in a flow, so a flow with two Catch nodes failed with "catch
 * already registered": each registers once per load here (registeredCore, emptied by load).
 */
const registeredCore = new Set();
/** A core module's own register function (as a test may require it itself: `@node-red/nodes/core/common/25-catch.js`) -> its type. */
const coreWrappers = new Map();
/** One wrapper per type, kept across helper.init() (a file that calls init again in a mocha worker must not undo them). */
const wrappers = {};
const originals = new Map();
function wrapCore() {
  for (const type of Object.keys(helper._nodeModules)) {
    const current = helper._nodeModules[type];
    if (current === wrappers[type]) continue;
    originals.set(type, current);
    coreWrappers.set(current, type);
    wrappers[type] ??= (red) => {
      if (registeredCore.has(type)) return undefined;
      registeredCore.add(type);
      return originals.get(type)(red);
    };
    helper._nodeModules[type] = wrappers[type];
  }
}
wrapCore();
const helperInit = helper.init;
helper.init = function (...args) {
  const r = helperInit.apply(this, args);
  wrapCore();
  return r;
};
const CORE_NODES = ['catch', 'status', 'complete'].map((type) => helper._nodeModules[type]);
const ALL_NODES = [...OUR_NODES, ...CORE_NODES];

const { DEMO_CREDS, gatewayNode, modeNode, sendMessageNode, messagePollerNode } = require('./flows');

/** Loads a flow into the real runtime (with `extraNodes`: core node modules a test wires in, such as join); returns {get(id)}. */
const CONFIG_TYPES = new Set(['iotgw-gateway', 'iotgw-app', 'iotgw-definitions', 'tls-config']);

/**
 * A test that failed between helper.load() and helper.unload() leaves the helper's spies on
 * Node-RED's `log` and the Node prototype in place: the next load would fail with "Attempted
 * to wrap log which is already wrapped". Undo them first, so one failure never fails another.
 */
const helperLoad = helper.load;
helper.load = async function (...args) {
  if (this._log && typeof this._log.log.restore === 'function') await this.unload();
  registeredCore.clear();
  wrapCore();
  if (Array.isArray(args[0])) args[0] = args[0].map((fn) => (coreWrappers.has(fn) ? helper._nodeModules[coreWrappers.get(fn)] : fn));
  return helperLoad.apply(this, args);
};

function load(flow, credentials = { gw: DEMO_CREDS }, extraNodes = []) {
  // Flow nodes live on a tab (Catch nodes need one); config nodes stay global.
  const nodes = [{ id: 'flow', type: 'tab', label: 'test' }, ...flow.map((n) => (CONFIG_TYPES.has(n.type) || n.z ? n : { z: 'flow', ...n }))];
  return new Promise((resolve, reject) => {
    helper
      .load([...ALL_NODES, ...extraNodes], nodes, credentials, () => resolve({ get: (id) => helper.getNode(id) }))
      .catch(reject);
  });
}

/**
 * Deploys `flow` again on the runtime `load` started, as the editor's Deploy does (`type`
 * 'nodes': Modified Nodes, the editor's default, so only the nodes whose config changed are
 * closed and started again; 'full': all of them). Resolves once the changed nodes closed; they
 * start just after (wait for the new node: `helper.getNode(id)` is another object).
 */
async function redeploy(flow, type = 'nodes') {
  const nodes = [{ id: 'flow', type: 'tab', label: 'test' }, ...flow.map((n) => (CONFIG_TYPES.has(n.type) || n.z ? n : { z: 'flow', ...n }))];
  await helper._redNodes.setFlows(nodes, {}, type);
}

/**
 * Loads examples/<file> as Node-RED would import it, with the core nodes `core` as well:
 * `configure(c)` sees each node first (to point a config node at the test's simulator, or to
 * check it); inline credentials then go to the runtime's credentials; debug nodes become
 * helper nodes and inject nodes do not fire at deploy. Returns {flow, get(id)}.
 */
async function loadExample(file, core, configure = () => {}) {
  const flow = require(path.join(__dirname, '..', '..', 'examples', file));
  const credentials = {};
  const nodes = flow.map((n) => {
    const c = JSON.parse(JSON.stringify(n));
    configure(c);
    if (c.credentials) {
      credentials[c.id] = c.credentials;
      delete c.credentials;
    }
    if (c.type === 'debug') return { id: c.id, z: c.z, type: 'helper', wires: [] };
    if (c.type === 'inject') c.once = false;
    return c;
  });
  await helper.load([...ALL_NODES, ...core], nodes, credentials);
  return { flow, get: (id) => helper.getNode(id) };
}

/** Waits until `pred()` is true (polls every 10 ms), or fails after `ms` (raised for a loaded machine: test/helpers/wait.js) naming `what`, and what `detail()` (if given) says the test saw. */
function until(pred, ms = 5000, what = 'condition', detail) {
  return waitUntil(pred, ms, what, { detail, every: 10 });
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

/**
 * The usual flow around one node under test: the gateway config node gw (`gw` overrides),
 * the node wired to one helper node per name in `outs` (a falsy name: an output wired
 * nowhere; the node's own `wires` win), those helpers, a catch-all and the `extra` nodes.
 */
function nodeFlow(sim, node, { gw = {}, outs = ['out'], extra = [] } = {}) {
  return [
    gatewayNode(sim, gw),
    { gateway: 'gw', wires: outs.map((o) => (o ? [o] : [])), ...node },
    ...outs.filter(Boolean).map((id) => ({ id, type: 'helper' })),
    ...catchAll(),
    ...extra,
  ];
}

/**
 * Context stores for a test: `useFileContext(dir)` makes the next loads use a
 * `localfilesystem` store named "file" in `dir` (as a real runtime would), loaded before
 * the flows start. `restartContext()` closes the stores (flushing them to disk) the way
 * a clean runtime stop does. Call `useFileContext(null)` to go back to the default.
 */
const redNodes = helper._redNodes;
const origLoadFlows = redNodes.loadFlows;
let fileContextDir = null;
function useFileContext(dir) {
  fileContextDir = dir;
  if (dir) {
    helper.settings({ contextStorage: { default: { module: 'memory' }, file: { module: 'localfilesystem', config: { dir, cache: true, flushInterval: 30 } } } });
    redNodes.loadFlows = async function (...args) {
      await redNodes.loadContextsPlugin();
      return origLoadFlows.apply(this, args);
    };
  } else {
    helper.settings({ contextStorage: undefined });
    redNodes.loadFlows = origLoadFlows;
  }
}
/**
 * A Node-RED user directory of its own for each test of the suite (helper.settings({userDir}):
 * where an outbox keeps its files), removed after the test; `use(dir)` gets it before each test.
 */
function userDirPerTest(use, prefix = 'iotgw-userdir-') {
  let dir;
  beforeEach(function () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    helper.settings({ userDir: dir });
    use(dir);
  });
  afterEach(function () {
    helper.settings({ userDir: undefined });
    fs.rmSync(dir, { recursive: true, force: true });
  });
}

/** Stops the flows and flushes/closes the context stores, like a clean runtime stop. */
async function stopRuntime() {
  await redNodes.stopFlows();
  if (fileContextDir) await redNodes.closeContextsPlugin();
  // helper.unload() also cleans every node's context out of the stores, which a real
  // runtime stop never does: skip that step here.
  const clean = helper._context.clean;
  helper._context.clean = () => Promise.resolve();
  try {
    await helper.unload();
  } finally {
    helper._context.clean = clean;
  }
}

/**
 * Mocha hooks for the usual test: a fresh simulator (with `options`) and the test
 * helper's server before each test; flows unloaded, file context off, server and
 * simulator closed after it. `set` receives the simulator.
 */
function simulatorPerTest(options, set) {
  let sim;
  beforeEach(async function () {
    sim = await startSimulator(options);
    set(sim);
    await new Promise((r) => helper.startServer(r));
  });
  afterEach(async function () {
    await helper.unload();
    useFileContext(null);
    await new Promise((r) => helper.stopServer(r));
    await sim.close();
  });
}

/**
 * The outbox tests' hooks in the runtime: simulatorPerTest with the terminal API's limits off
 * (and `terminal`'s options), a user directory per test (`prefix`: where the outboxes keep
 * their files), and the simulator's link up again after each test (one may leave it refused).
 * `set(sim, userDir)` before each test.
 */
function outboxPerTest(terminal, prefix, set) {
  let sim;
  simulatorPerTest({ terminal: { rateLimitCalls: 0, maxConcurrent: 0, ...terminal } }, (s) => (sim = s));
  userDirPerTest((dir) => set(sim, dir), prefix);
  afterEach(async function () {
    await sim.server.link.up();
  });
}

/** The outbox tests' destination, and the base64 of a payload of bytes 128, 1, then `i` in two bytes (low first). */
const OUTBOX_DEST = '01000001SKYA001';
const outboxRaw = (i) => Buffer.from([128, 1, i & 255, (i >> 8) & 255]).toString('base64');

/**
 * Mocha hooks for a describe block whose tests share one simulator (with `options`), started
 * before its first test and given to `set`; after its last, the flows unloaded and the
 * simulator closed.
 */
function simulatorPerSuite(options, set) {
  let sim;
  before(async function () {
    sim = await startSimulator(options);
    set(sim);
  });
  after(async function () {
    await helper.unload();
    await sim.close();
  });
}

/** Mocha hooks: the test helper's Node-RED runtime for a describe block (started before its first test, stopped after its last). */
function useRuntime() {
  before(async function () {
    await new Promise((r) => helper.startServer(r));
  });
  after(async function () {
    await new Promise((r) => helper.stopServer(r));
  });
}

/** Records every status a node shows (the node still shows it); returns the list. */
function recordStatuses(node) {
  const statuses = [];
  const orig = node.status.bind(node);
  node.status = (s) => {
    statuses.push(s);
    return orig(s);
  };
  return statuses;
}

/** Records every warning a node logs (it still logs it); returns the list of texts. */
function recordWarnings(node) {
  const warns = [];
  const orig = node.warn.bind(node);
  node.warn = (m) => {
    warns.push(String(m));
    orig(m);
  };
  return warns;
}

/** What the runtime logged for node `id` at `level` (20 error, 30 warn), as texts. */
function logged(id, level = 20) {
  return helper
    .log()
    .args.map((a) => a[0])
    .filter((e) => e && e.level === level && e.id === id)
    .map((e) => String(e.msg));
}

module.exports = { userDirPerTest, outboxPerTest, OUTBOX_DEST, outboxRaw, logged, loadExample, recordWarnings, recordStatuses, simulatorPerTest, simulatorPerSuite, useRuntime, helper, startSimulator, gatewayNode, modeNode, sendMessageNode, messagePollerNode, nodeFlow, load, redeploy, until, collect, catchAll, useFileContext, stopRuntime, DEMO_CREDS, ALL_NODES };
