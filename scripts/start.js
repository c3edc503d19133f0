#!/usr/bin/env node
'use strict';
/**
 * `npm start`: the bundled gateway simulator plus a Node-RED with this package loaded and
 * every flow of `examples/` deployed (each on its own tab), so a newcomer opens the editor
 * and sees every node work with no account.
 *
 *   node scripts/start.js [--port 1880] [--sim-port 1881] [--host 127.0.0.1]
 *                         [--user-dir .node-red-dev] [--no-examples] [--reset]
 *
 * Environment: IOTGW_PORT, IOTGW_SIM_PORT, IOTGW_USER_DIR, and IOTGW_NODE_RED_PATH (the
 * Node-RED package to run, default the devDependency). Port 0 picks a free port; the
 * addresses are printed as `Node-RED editor: <url>` and `Simulator: <url>`.
 *
 * Security: the simulator (with its unauthenticated control routes) always listens on
 * 127.0.0.1 only. Node-RED listens on `--host`; a host other than a loopback address is
 * refused unless an admin login is configured: IOTGW_ADMIN_PASSWORD_HASH (a bcrypt hash,
 * e.g. from `npx node-red admin hash-pw`) or IOTGW_ADMIN_PASSWORD (hashed here), with
 * IOTGW_ADMIN_USER (default "admin"). Either also turns the login on for a loopback host.
 *
 * The package is loaded through `nodesDir` (the checkout is a Node-RED module, so its
 * nodes, icons and `examples/` load as they would from node_modules, and Import > Examples
 * lists them). The examples are deployed on the first start only (when the user dir has
 * no flow file); after that the user's own edits are kept. `--reset` starts afresh.
 *
 * The fleet dashboard (examples/fleet-dashboard.json) is served at `/dashboard` (redirected to
 * `/api/dashboard`, under httpNodeRoot; its map's page likewise at `/worldmap`) when its two packages, devDependencies of this
 * checkout (@flowfuse/node-red-dashboard, node-red-contrib-web-worldmap), are installed. An
 * example naming a node type that Node-RED has not registered is left out of the demo with a
 * line naming the missing types: deployed, it would stop every flow.
 */
const fs = require('fs');
const http = require('http');
const path = require('path');

const ROOT = path.resolve(__dirname, '..');
/** The address the example flows name for the simulator. */
const EXAMPLE_SIM_URL = 'http://127.0.0.1:1881';
/** Config node types: merged by id across examples, never put on a tab. */
const CONFIG_TYPES = new Set(['iotgw-gateway', 'iotgw-app', 'iotgw-redis', 'tls-config', 'http proxy', 'mqtt-broker']);

/**
 * The demo's tabs in this order (the editor opens on the first): the terminal example the
 * README shows, then each area as the palette orders them; examples not named here follow
 * in file-name order.
 */
const DEMO_ORDER = [
  'terminal-mode-messages',
  'send-message-and-track',
  'receive-from-mobile-messages',
  'terminal-status-poller',
  'track-delivery',
  'terminal-cancel',
  'fleet-dashboard',
  'lorawan-contracts',
  'lorawan-referral',
  'lorawan-devices',
  'sms-request',
  'app-user',
  'app-tag-list',
  'app-tag-config',
];

/** The example flows of `examples/`, in demo order (DEMO_ORDER, then file names): [{file, name, nodes}]. */
function loadExamples(dir = path.join(ROOT, 'examples')) {
  if (!fs.existsSync(dir)) return [];
  const rank = (f) => {
    const i = DEMO_ORDER.indexOf(f.replace(/\.json$/, ''));
    return i < 0 ? DEMO_ORDER.length : i;
  };
  const files = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .sort((a, b) => rank(a) - rank(b));
  return files.map((file) => {
    const nodes = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8'));
    if (!Array.isArray(nodes)) throw new Error(`examples/${file}: a flow file must be a JSON array of nodes`);
    return { file, name: file.replace(/\.json$/, ''), nodes };
  });
}

function isConfig(n) {
  return CONFIG_TYPES.has(n.type) || (!n.z && n.type !== 'tab' && n.type !== 'subflow' && !('x' in n));
}

/**
 * One flow from several examples: each example on its own tab (its own tab node if it has
 * one), config nodes merged by id, and ids of flow nodes made unique across examples.
 * `simUrl` replaces the simulator address the examples name (when it runs on another port).
 */
function buildFlows(examples, simUrl = EXAMPLE_SIM_URL) {
  const out = [];
  const configs = new Map();
  const used = new Set();
  for (const ex of examples) {
    const nodes = JSON.parse(JSON.stringify(ex.nodes));
    const tabs = nodes.filter((n) => n.type === 'tab');
    // Flow-node ids already taken by an earlier example get a suffix, everywhere they appear.
    const rename = new Map();
    for (const n of nodes) {
      if (isConfig(n)) continue;
      if (used.has(n.id)) rename.set(n.id, `${n.id}-${ex.name}`);
      used.add(rename.get(n.id) ?? n.id);
    }
    const re = (id) => rename.get(id) ?? id;
    let tabId = tabs.length ? re(tabs[0].id) : `tab-${ex.name}`;
    if (!tabs.length) {
      if (used.has(tabId)) tabId = `${tabId}-${out.length}`;
      used.add(tabId);
      out.push({ id: tabId, type: 'tab', label: ex.name, disabled: false, info: `Example flow examples/${ex.file}` });
    }
    for (const n of nodes) {
      if (isConfig(n)) {
        delete n.z;
        if (typeof n.baseUrl === 'string' && n.baseUrl.startsWith(EXAMPLE_SIM_URL)) n.baseUrl = simUrl + n.baseUrl.slice(EXAMPLE_SIM_URL.length);
        if (!configs.has(n.id)) configs.set(n.id, n);
        continue;
      }
      n.id = re(n.id);
      if (n.type !== 'tab') n.z = n.z ? re(n.z) : tabId;
      if (Array.isArray(n.wires)) n.wires = n.wires.map((port) => port.map(re));
      if (Array.isArray(n.links)) n.links = n.links.map(re);
      if (Array.isArray(n.scope)) n.scope = n.scope.map(re);
      if (Array.isArray(n.nodes)) n.nodes = n.nodes.map(re);
      if (n.g) n.g = re(n.g);
      out.push(n);
    }
  }
  return [...out, ...configs.values()];
}

/** Types Node-RED itself knows without a registered node (tabs, groups, subflow instances). */
const STRUCTURAL = new Set(['tab', 'subflow', 'group', 'junction']);

/** The node types of `ex` that `known(type)` says are not registered, sorted and without repeats. */
function missingTypes(ex, known) {
  const types = new Set(ex.nodes.map((n) => n.type).filter((t) => typeof t === 'string' && !STRUCTURAL.has(t) && !t.startsWith('subflow:')));
  return [...types].filter((t) => !known(t)).sort();
}

/**
 * Redirects GET `/dashboard...` and `/worldmap...` (the query string too) to the same path
 * under httpNodeRoot, where FlowFuse Dashboard 2.0 serves the fleet dashboard and the
 * worldmap its page, so a newcomer finds them at `/dashboard` and `/worldmap`.
 */
function redirectUnderNodeRoot(app, httpNodeRoot) {
  const root = httpNodeRoot.replace(/\/+$/, '');
  if (!root) return;
  app.get(/^\/(dashboard|worldmap)(\/.*)?$/, (req, res) => res.redirect(302, root + req.originalUrl));
}

/** Is `host` a loopback address (only this machine can connect)? */
function isLoopbackHost(host) {
  const h = String(host).trim().toLowerCase().replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^127(\.\d{1,3}){3}$/.test(h) || h.endsWith('.localhost');
}

/**
 * Node-RED's adminAuth from the environment (see the header), or undefined when no admin
 * password is set. `bcrypt` hashes a plain password (Node-RED's own bcryptjs).
 */
function adminAuthFromEnv(env, bcrypt) {
  const user = (env.IOTGW_ADMIN_USER || 'admin').trim();
  let hash = (env.IOTGW_ADMIN_PASSWORD_HASH || '').trim();
  if (hash && !/^\$2[aby]?\$\d{2}\$[./A-Za-z0-9]{53}$/.test(hash)) {
    throw new Error('IOTGW_ADMIN_PASSWORD_HASH is not a bcrypt hash; make one with `npx node-red admin hash-pw`');
  }
  if (!hash && env.IOTGW_ADMIN_PASSWORD) {
    if (env.IOTGW_ADMIN_PASSWORD.length < 8) throw new Error('IOTGW_ADMIN_PASSWORD: use at least 8 characters');
    hash = bcrypt().hashSync(env.IOTGW_ADMIN_PASSWORD, 10);
  }
  if (!hash) return undefined;
  return { type: 'credentials', users: [{ username: user, password: hash, permissions: '*' }] };
}

/**
 * Refuses to serve the editor beyond this machine with no login: anyone who reaches it
 * could run code (function nodes) and read the flows.
 */
function checkHost(host, adminAuth) {
  if (isLoopbackHost(host) || adminAuth) return;
  throw new Error(
    `refusing --host ${host}: it is not a loopback address and no admin password is set, so anyone on the network could ` +
      'edit and run flows with no login. Set IOTGW_ADMIN_PASSWORD (or IOTGW_ADMIN_PASSWORD_HASH, a bcrypt hash) and ' +
      'IOTGW_ADMIN_USER (default admin), or keep the default --host 127.0.0.1',
  );
}

function parseArgs(argv) {
  const opt = (name) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(
      'Usage: node scripts/start.js [--port 1880] [--sim-port 1881] [--host 127.0.0.1] [--user-dir .node-red-dev] [--no-examples] [--reset]\n',
    );
    process.exit(0);
  }
  return {
    host: opt('--host') ?? process.env.IOTGW_HOST ?? '127.0.0.1',
    port: Number(opt('--port') ?? process.env.IOTGW_PORT ?? 1880),
    simPort: Number(opt('--sim-port') ?? process.env.IOTGW_SIM_PORT ?? 1881),
    userDir: path.resolve(opt('--user-dir') ?? process.env.IOTGW_USER_DIR ?? path.join(ROOT, '.node-red-dev')),
    deployExamples: !argv.includes('--no-examples'),
    reset: argv.includes('--reset'),
    nodeRedPath: process.env.IOTGW_NODE_RED_PATH || undefined,
  };
}

/**
 * Starts the simulator and Node-RED. Returns {url, simUrl, dashboardUrl, RED, sim, deployed,
 * skipped: [{name, missing}], stop()}. Options beyond the CLI's: `only` (example names to
 * deploy, default all), `settings` (more Node-RED settings), `demo` (the living fleet's options,
 * src/simulator/fleet-demo.ts, over the demo's), for tests and bench/.
 * Only one Node-RED runs per process (the runtime is a singleton).
 */
async function startDev(options = {}) {
  const o = { host: '127.0.0.1', port: 1880, simPort: 1881, deployExamples: true, reset: false, ...options };
  if (!o.userDir) throw new Error('startDev: userDir is required');
  const nrDir = o.nodeRedPath ? path.resolve(o.nodeRedPath) : path.dirname(require.resolve('node-red/package.json'));
  const adminAuth = o.adminAuth ?? adminAuthFromEnv(process.env, () => require(require.resolve('bcryptjs', { paths: [nrDir] })));
  // Before anything listens.
  checkHost(o.host, adminAuth);
  const distSim = path.join(ROOT, 'dist', 'simulator', 'index.js');
  if (!fs.existsSync(distSim)) throw new Error('dist/ is missing: run `npm install` (or `npm run build`) first');
  const { startSimulator } = require(distSim);

  if (o.reset) fs.rmSync(o.userDir, { recursive: true, force: true });
  fs.mkdirSync(o.userDir, { recursive: true });
  const flowFile = path.join(o.userDir, 'flows.json');
  const firstStart = !fs.existsSync(flowFile);

  // The simulator's control routes have no auth: never served beyond this machine.
  // Terminals report from-mobile messages every 5 s, so data arrives within seconds; every 3 s a
  // few of the fleet's terminals report moving positions and one changes (a living fleet).
  const sim = await startSimulator({ port: o.simPort, host: '127.0.0.1', messages: { reportEveryMs: 5000 }, demo: { everyMs: 3000, ...o.demo } });
  const nrPath = nrDir;
  const RED = require(nrPath);
  const express = require(require.resolve('express', { paths: [nrPath] }));
  const app = express();
  const server = http.createServer(app);

  const settings = {
    ...o.settings,
    userDir: o.userDir,
    flowFile: 'flows.json',
    nodesDir: [ROOT],
    // A fixed key: this user dir is for development only, never for real credentials.
    credentialSecret: 'iotgw-dev-only-not-secret',
    httpAdminRoot: '/',
    ...(adminAuth ? { adminAuth } : {}),
    httpNodeRoot: '/api',
    uiHost: o.host,
    uiPort: o.port,
    contextStorage: {
      default: { module: 'memory' },
      file: { module: 'localfilesystem' },
    },
    logging: { console: { level: process.env.IOTGW_LOG_LEVEL || 'info', metrics: false, audit: false } },
    editorTheme: {
      tours: false,
      projects: { enabled: false },
      palette: { catalogues: [] },
      header: { title: 'Node-RED · iot gateway (simulator)' },
    },
    externalModules: { autoInstall: false, palette: { allowInstall: false }, modules: { allowInstall: false } },
    functionExternalModules: false,
    telemetry: { enabled: false },
    diagnostics: { enabled: false },
  };
  RED.init(server, settings);
  redirectUnderNodeRoot(app, settings.httpNodeRoot);
  app.use(settings.httpAdminRoot, RED.httpAdmin);
  app.use(settings.httpNodeRoot, RED.httpNode);

  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, resolve);
  });
  const port = server.address().port;
  settings.uiPort = port;
  await RED.start();

  const url = `http://${o.host}:${port}/`;
  let deployed = 0;
  const skipped = [];
  if (firstStart && o.deployExamples) {
    // An example naming an iotgw-redis node needs a running redis-server: import it by hand.
    const examples = loadExamples()
      .filter((ex) => !ex.nodes.some((n) => n.type === 'iotgw-redis'))
      .filter((ex) => !o.only || o.only.includes(ex.name))
      .filter((ex) => {
        const missing = missingTypes(ex, (t) => Boolean(RED.nodes.getType(t)));
        if (missing.length) skipped.push({ name: ex.name, missing });
        return !missing.length;
      });
    if (examples.length) {
      const flows = buildFlows(examples, sim.url);
      await RED.runtime.flows.setFlows({ flows: { flows }, deploymentType: 'full' });
      deployed = examples.length;
    }
  }

  let stopping;
  const stop = () =>
    (stopping ??= (async () => {
      await RED.stop().catch(() => {});
      server.closeAllConnections?.();
      await new Promise((r) => server.close(() => r()));
      await sim.close().catch(() => {});
    })());
  // The dashboard's packages are here and its example was not left out.
  const dashboard = Boolean(RED.nodes.getType('ui-base')) && !skipped.some((x) => x.name === 'fleet-dashboard') && (!o.only || o.only.includes('fleet-dashboard'));
  return { url, simUrl: sim.url, RED, sim, server, deployed, skipped, dashboardUrl: dashboard ? `${url}dashboard` : undefined, firstStart, stop, login: Boolean(adminAuth) };
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const dev = await startDev(o);
  const lines = [
    '',
    `Node-RED editor: ${dev.url}`,
    `Simulator: ${dev.simUrl}  (gateway base URL; application API at ${dev.simUrl}/app)`,
    `User dir: ${o.userDir}`,
    dev.login ? 'Editor login: on (IOTGW_ADMIN_USER / IOTGW_ADMIN_PASSWORD).' : 'Editor login: off (loopback only).',
    ...(isLoopbackHost(o.host) ? [] : [`WARNING: the editor is served to the network on ${o.host} over plain HTTP; put it behind TLS.`]),
    dev.deployed
      ? `Deployed ${dev.deployed} example flows, one per tab. Open the editor and watch the debug sidebar.`
      : dev.firstStart
        ? 'No example flows deployed (--no-examples).'
        : 'Kept the flows of the user dir (start with --reset to deploy the examples afresh).',
    ...dev.skipped.map((x) => `Not deployed: examples/${x.name}.json needs node types that are not installed (${x.missing.join(', ')})${x.name === 'fleet-dashboard' ? '; `npm install` installs them (devDependencies)' : ''}.`),
    ...(dev.dashboardUrl ? [`Fleet dashboard: ${dev.dashboardUrl}`] : []),
    'Press Ctrl-C to stop.',
    '',
  ];
  process.stdout.write(lines.join('\n') + '\n');
  let signals = 0;
  const onSignal = () => {
    if (++signals > 1) process.exit(130);
    process.stdout.write('\nStopping Node-RED and the simulator...\n');
    dev.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}

if (require.main === module) {
  main().catch((err) => {
    if (err && err.code === 'EADDRINUSE') {
      // Which one: the simulator starts first (--sim-port), then Node-RED (--port).
      const o = parseArgs(process.argv.slice(2));
      const [what, flag] = err.port === o.simPort ? ["the simulator's port", '--sim-port'] : ["Node-RED's port", '--port'];
      process.stderr.write(`npm start: ${what} ${err.port} is already in use; choose another with ${flag} N (0 picks a free port), e.g. npm start -- --port 1890 --sim-port 1891\n`);
      process.exit(1);
    }
    process.stderr.write(`npm start: ${err && err.message ? err.message : err}\n`);
    process.exit(1);
  });
}

module.exports = { startDev, loadExamples, buildFlows, missingTypes, DEMO_ORDER, EXAMPLE_SIM_URL, ROOT, isLoopbackHost, adminAuthFromEnv, checkHost };
