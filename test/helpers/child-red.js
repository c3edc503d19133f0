'use strict';
/**
 * A real Node-RED as a child process, for tests that must stop it the hard way (SIGKILL)
 * or cleanly (SIGINT), with a settings file, a user directory that has this package
 * installed (a symlink in node_modules, as `npm install /path/to/checkout` would), a
 * file-backed context store, and flows deployed through the admin HTTP API on loopback.
 *
 * Records reach a file through `global.get('append')` (functionGlobalContext): a
 * synchronous write, so what a function node wrote survives a SIGKILL. `global.get('hold')(ms)`
 * blocks the runtime's event loop (Atomics.wait: no core spinning) after writing its coverage
 * so far under c8, so that a SIGKILL of the blocked runtime (`kill('SIGKILL', { blocked: true })`)
 * need not ask for it (the route could not answer).
 */
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { DEMO_CREDS, gatewayNode } = require('./flows');
const { freePort, directEnv } = require('./net');
const { waitUntil } = require('./wait');

const ROOT = path.resolve(__dirname, '../..');
const RED_JS = require.resolve('node-red/red.js');

/**
 * Under c8 (NODE_V8_COVERAGE, which the child inherits), an admin route that writes the
 * child's coverage so far: kill() calls it before a SIGKILL, which would lose it (a child that
 * stops on SIGINT or SIGTERM writes its own as it exits).
 */
const COVERAGE_PATH = '/iotgw-test/coverage';
const COVERAGE_ROUTE = `(req, res, next) => {
    if (req.method !== 'POST' || req.url !== '${COVERAGE_PATH}') return next();
    require('v8').takeCoverage();
    res.end('taken');
  }`;

/**
 * A fresh user directory with the package linked in and a settings file. `defaultContext`:
 * no contextStorage at all (Node-RED's default settings: the default store is memory).
 * `settings`: more entries of settings.js (JSON values), such as `iotgwRedisLeaseSeconds`.
 */
function makeUserDir({ flushInterval = 30, recordsFile, defaultContext = false, settings: extra = {} } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iotgw-red-'));
  // Without a file of the caller's, the records go to one in the user directory (removed with it).
  recordsFile ??= path.join(dir, 'records.txt');
  const scope = path.join(dir, 'node_modules', '@iotgateway');
  fs.mkdirSync(scope, { recursive: true });
  fs.symlinkSync(ROOT, path.join(scope, 'node-red-gateway'), 'dir');
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'red-user', private: true, dependencies: { '@iotgateway/node-red-gateway': '*' } }));
  const settings = `
const fs = require('fs');
const fd = fs.openSync(${JSON.stringify(recordsFile)}, 'a');
module.exports = {
  uiHost: '127.0.0.1',
  flowFile: 'flows.json',
  credentialSecret: 'child-red-test-secret',
${
    defaultContext
      ? ''
      : `  contextStorage: {
    default: { module: 'memory' },
    file: { module: 'localfilesystem', config: { dir: ${JSON.stringify(dir)}, flushInterval: ${Number(flushInterval)} } },
  },`
  }
  functionGlobalContext: {
    append: (line) => fs.writeSync(fd, line),
    hold: (ms) => {
      if (process.env.NODE_V8_COVERAGE) require('v8').takeCoverage();
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
    },
  },
${process.env.NODE_V8_COVERAGE ? `  httpAdminMiddleware: ${COVERAGE_ROUTE},\n` : ''}  logging: { console: { level: 'warn', metrics: false, audit: false } },
  editorTheme: { tours: false, projects: { enabled: false } },
  externalModules: { palette: { allowInstall: false } },
  diagnostics: { enabled: false },
  telemetry: { enabled: false },
${Object.entries(extra)
  .map(([k, v]) => `  ${k}: ${JSON.stringify(v)},\n`)
  .join('')}};
`;
  fs.writeFileSync(path.join(dir, 'settings.js'), settings);
  return dir;
}

/**
 * Adds Node-RED's adminAuth to the settings of user directory `dir`: `users`, each
 * {username, permissions}, all with `password` (start the runtime with readyPath '/auth/login').
 */
function addAdminAuth(dir, users, password) {
  const nrDir = path.dirname(require.resolve('node-red/package.json'));
  const bcrypt = require(require.resolve('bcryptjs', { paths: [nrDir] }));
  const hash = bcrypt.hashSync(password, 8);
  const file = path.join(dir, 'settings.js');
  const list = JSON.stringify(users.map((u) => ({ ...u, password: hash })));
  fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('module.exports = {', `module.exports = {\n  adminAuth: { type: 'credentials', users: ${list} },`));
}

class ChildRed {
  /**
   * `nodeArgs`: options for the child's node (e.g. --expose-gc); `ipc`: open an IPC
   * channel to it (the benchmarks use one); `readyPath`: the admin path that answers 200 once
   * it is up (`/auth/login` when the settings set adminAuth); `env`: more variables for the child.
   * `startMs` is how long start() took.
   */
  constructor(userDir, { nodeArgs = [], ipc = false, readyPath = '/settings', env = {} } = {}) {
    this.userDir = userDir;
    this.env = env;
    this.readyPath = readyPath;
    this.nodeArgs = nodeArgs;
    this.ipcChannel = ipc;
    this.output = '';
  }

  /**
   * Starts Node-RED on a free port. A port found free a moment ago may be taken by the time
   * Node-RED listens (another suite beside this one, or an outgoing connection's local port: the
   * kernel hands out the same range): Node-RED then exits with "port in use", and it is started
   * again on another (at most 5 tries). The limit is a wait, not a speed: a start takes 3 to 5 s
   * alone here, but when the suite's first files all start a runtime and a browser at once on two
   * busy cores it took more than 30 s (issue 44: both outbox chaos files failed so, 6 workers).
   */
  async start(timeoutMs = 120000) {
    for (let attempt = 1; ; attempt++) {
      const from = this.output.length;
      try {
        return await this.startOnce(timeoutMs);
      } catch (err) {
        if (attempt >= 5 || this.proc.exitCode === null || !/port in use|EADDRINUSE/i.test(this.output.slice(from))) throw err;
      }
    }
  }

  async startOnce(timeoutMs) {
    this.port = await freePort();
    const t0 = process.hrtime.bigint();
    this.proc = spawn(process.execPath, [...this.nodeArgs, RED_JS, '--settings', path.join(this.userDir, 'settings.js'), '--userDir', this.userDir, '--port', String(this.port)], {
      cwd: this.userDir,
      env: { ...directEnv(), NODE_RED_ENABLE_PROJECTS: 'false', ...this.env },
      stdio: ['ignore', 'pipe', 'pipe', ...(this.ipcChannel ? ['ipc'] : [])],
    });
    const keep = (d) => {
      this.output += d.toString();
      if (this.output.length > 200000) this.output = this.output.slice(-100000);
    };
    this.proc.stdout.on('data', keep);
    this.proc.stderr.on('data', keep);
    this.exited = new Promise((resolve) => this.proc.once('exit', (code, signal) => resolve({ code, signal })));
    for (;;) {
      if (this.proc.exitCode !== null) throw new Error(`Node-RED exited at start:\n${this.output.slice(-3000)}`);
      try {
        const r = await fetch(`${this.url}${this.readyPath}`, { signal: AbortSignal.timeout(2000) });
        if (r.ok) break;
      } catch {
        /* not up yet */
      }
      if (Number(process.hrtime.bigint() - t0) / 1e6 > timeoutMs) throw new Error(`Node-RED did not start in ${timeoutMs} ms:\n${this.output.slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    this.startMs = Number(process.hrtime.bigint() - t0) / 1e6;
    return this;
  }

  get alive() {
    return Boolean(this.proc) && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  get url() {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Deploys flows through the admin API (credentials inline, as the editor sends them). */
  async deploy(flows, type = 'full') {
    const r = await fetch(`${this.url}/flows`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'Node-RED-Deployment-Type': type, 'Node-RED-API-Version': 'v1' },
      body: JSON.stringify(flows),
    });
    if (r.status !== 204 && r.status !== 200) throw new Error(`deploy failed: HTTP ${r.status} ${await r.text()}`);
  }

  /** Logs a user of adminAuth in, as the editor does: the token answer ({access_token, ...}). */
  async login(username, password) {
    const r = await fetch(`${this.url}/auth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_id: 'node-red-editor', grant_type: 'password', scope: '', username, password }),
    });
    if (r.status !== 200) throw new Error(`login of ${username}: HTTP ${r.status}`);
    return r.json();
  }

  /** Which of our node types the runtime loaded (from the admin API). */
  async nodeTypes() {
    const r = await fetch(`${this.url}/nodes`, { headers: { accept: 'application/json' } });
    const sets = await r.json();
    return sets.flatMap((s) => s.types);
  }

  /** The end of what the runtime wrote, for a failure message. */
  lastLines() {
    return `the runtime's last lines: ${this.output.slice(-3000)}`;
  }

  /**
   * Sends `signal`; resolves {code, signal} when it has ended. Under c8 the coverage is taken
   * first (see COVERAGE_ROUTE), unless `blocked` (the runtime holds in `hold()`, which took it).
   */
  async kill(signal, { blocked = false } = {}) {
    if (signal === 'SIGKILL' && !blocked && process.env.NODE_V8_COVERAGE && this.alive) {
      await fetch(`${this.url}${COVERAGE_PATH}`, { method: 'POST', signal: AbortSignal.timeout(20000) }).catch(() => {}); // a child that cannot answer loses it
    }
    this.proc.kill(signal);
    return this.exited;
  }
}

/**
 * Waits until `pred()` is true (checked every 25 ms), or fails after `ms` (raised for a loaded
 * machine: test/helpers/wait.js) naming `what`, and what `detail()` (if given) says the test saw.
 */
function waitFor(pred, ms, what, detail) {
  return waitUntil(pred, ms, what, { detail, every: 25 });
}

/**
 * A stop arranged by the simulator, not by timing (issue 34: "a SIGKILL that did not land
 * mid-drain"): the simulator lets `skip` calls of `route` through and holds the next one open
 * (no reply for `ms`), so the feed is paused in the middle of its drain until the test has
 * redeployed, stopped or killed the runtime (a client that goes away ends the hold). Returns
 * the fault; `await held(fault)` waits until the held call has arrived.
 */
function holdCall(sim, route, skip, ms = 120000) {
  return sim.inject({ route, kind: 'slow', phase: 'before', delayMs: ms, skip, times: 1 });
}
const held = (fault, what = 'the held call') => waitFor(() => fault.hits > 0, 60000, what);

/**
 * How many lines `file` holds (its newlines; 0 if it is not there yet): a cheap first test for a
 * wait checked every 25 ms before the one that parses every line.
 */
function lineCount(file) {
  if (!fs.existsSync(file)) return 0;
  const buf = fs.readFileSync(file);
  let n = 0;
  for (let i = buf.indexOf(10); i !== -1; i = buf.indexOf(10, i + 1)) n++;
  return n;
}

/** The lines a flow appended to `file` (through `global.get('append')`), each split on spaces. */
function recordLines(file) {
  return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => l.split(' ')) : [];
}

/**
 * The iotgw-gateway config node (id gw1) of a child Node-RED's flow, on the simulator's demo
 * account; `props` override (rate limit, `redis`, timeout).
 */
function childGateway(sim, props = {}) {
  return gatewayNode(sim, { id: 'gw1', timeoutSeconds: 10, credentials: { clientId: DEMO_CREDS.clientId, clientSecret: DEMO_CREDS.clientSecret }, ...props });
}

/** A status poller (poller1 on tab1, account gw1) draining from two days back, one msg per record, into `to`. */
function statusPoller(to) {
  return { id: 'poller1', z: 'tab1', type: 'iotgw-status-poller', gateway: 'gw1', intervalSeconds: 1, startFrom: '-2d', output: 'record', contextStore: '', autoStart: true, addNames: false, wires: [[to]] };
}

/**
 * A function node (on tab1) that appends one line to the records file: `expr` is a JavaScript
 * expression of msg (and env) giving the line without its newline.
 */
function appendNode(id, expr) {
  return { id, z: 'tab1', type: 'function', func: `global.get('append')(${expr} + '\\n');\nreturn null;`, outputs: 0, wires: [] };
}

/**
 * Child Node-REDs (one or several) that write to one records file in a fresh directory,
 * each with a user directory of its own (`defaultContext` as makeUserDir; default true:
 * Node-RED's default context; `settings` as makeUserDir) and, when `start(tag)` names one, its own IOTGW_TAG (a flow
 * reads it as `env.get('IOTGW_TAG')`). `close()` SIGKILLs those still running and removes
 * every directory.
 */
class RedFleet {
  constructor(prefix = 'iotgw-fleet-', { defaultContext = true, settings = {} } = {}) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    this.dirs = [dir];
    this.reds = [];
    this.recordsFile = path.join(dir, 'records.txt');
    this.defaultContext = defaultContext;
    this.settings = settings;
  }

  async start(tag) {
    const userDir = makeUserDir({ recordsFile: this.recordsFile, defaultContext: this.defaultContext, settings: this.settings });
    this.dirs.push(userDir);
    // The tag in the child's environment only (not this process's): several may start side by
    // side. Its first start only: a restart (red.start()) runs without it, as a test expects.
    const red = await new ChildRed(userDir, { env: tag !== undefined ? { IOTGW_TAG: tag } : {} }).start();
    red.env = {};
    red.tag = tag;
    red.userDir = userDir;
    this.reds.push(red);
    return red;
  }

  /**
   * For the tests of a file that need no fresh runtime (a start costs about a second of CPU,
   * more under c8): the runtime of IOTGW_TAG `tag` still running from an earlier test, else a new one.
   */
  async running(tag) {
    return this.reds.find((r) => r.tag === tag && r.alive) ?? this.start(tag);
  }

  /**
   * Between two tests that share runtimes (`running`): after a failure each is killed (the next
   * test starts fresh ones); else each running one gets an empty flow. Then the feeds' marks
   * (iotgw-feeds/ in each user directory) are removed, the records file and each runtime's
   * `output` emptied: the next test starts where it would with fresh runtimes.
   */
  async reset(failed) {
    for (const red of this.reds) if (red.alive) await (failed ? red.kill('SIGKILL') : red.deploy([]));
    this.reds = this.reds.filter((r) => r.alive);
    for (const red of this.reds) red.output = '';
    for (const d of this.dirs) fs.rmSync(path.join(d, 'iotgw-feeds'), { recursive: true, force: true });
    if (fs.existsSync(this.recordsFile)) fs.truncateSync(this.recordsFile, 0);
  }

  async close() {
    for (const red of this.reds.splice(0)) if (red.alive) await red.kill('SIGKILL');
    for (const d of this.dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  }
}

/**
 * The end of a drain: waits (up to `ms`) until `done()` says every record is in, then one
 * more poll interval and a bit (`settleMs`: nothing else may arrive), and returns `read()`
 * as it is then. With `polls` ({sim, route, count}) instead of that pause: until the simulator
 * has answered `count` more requests to `route` received after the drain's end (the pollers'
 * next polls, which would bring anything more).
 */
async function drained(done, read, { ms = 60000, what = 'the drain', settleMs = 2500, polls, detail } = {}) {
  await waitFor(done, ms, what, detail);
  if (polls) {
    const since = Date.now();
    const answered = () => polls.sim.server.callsTo(polls.route).filter((c) => c.at > since && c.status !== 0).length;
    await waitFor(() => answered() >= polls.count, ms, `${polls.count} more polls answered after the drain`, () => `${answered()} answered`);
  } else await new Promise((r) => setTimeout(r, settleMs));
  return read();
}

/** How many of the simulator's status backlog of `count` records (seedBacklog: IDs from 10,000,000,000) are not among `ids` (a Set or Map of IDs). */
function backlogMissing(ids, count) {
  let missing = 0;
  for (let i = 0n; i < BigInt(count); i++) if (!ids.has(String(10_000_000_000n + i))) missing++;
  return missing;
}

/** The simulator of the fleet tests: a shared budget of 2 calls a second, 3 in flight. */
const FLEET_SIM = { terminal: { rateLimitCalls: 2, rateLimitWindowMs: 1000, maxConcurrent: 3 } };

/**
 * Mocha hooks for a fleet test: before each test a simulator (`simOptions`, by default on a
 * shared budget: FLEET_SIM) given to `seed(sim)`, and a RedFleet (`prefix`, `fleetOptions`);
 * both closed after it. Returns the context, whose `sim` and `fleet` are set for each test.
 */
function fleetPerTest(prefix, seed, { simOptions = FLEET_SIM, fleetOptions } = {}) {
  const { startSimulator } = require('../../dist/simulator');
  const ctx = {};
  beforeEach(async function () {
    ctx.sim = await startSimulator(simOptions);
    seed(ctx.sim);
    ctx.fleet = new RedFleet(prefix, fleetOptions);
  });
  afterEach(async function () {
    await ctx.fleet.close();
    await ctx.sim.close();
  });
  return ctx;
}

/**
 * As fleetPerTest, but one RedFleet for the file's tests, whose runtimes they share
 * (`ctx.fleet.running(tag)`), reset between two tests (RedFleet.reset); each test its own simulator.
 */
function fleetPerFile(prefix, seed, { simOptions = FLEET_SIM, fleetOptions } = {}) {
  const { startSimulator } = require('../../dist/simulator');
  const ctx = {};
  before(function () {
    ctx.fleet = new RedFleet(prefix, fleetOptions);
  });
  beforeEach(async function () {
    ctx.sim = await startSimulator(simOptions);
    seed(ctx.sim);
  });
  afterEach(async function () {
    await ctx.fleet.reset(this.currentTest.state !== 'passed');
    await ctx.sim.close();
  });
  after(async function () {
    await ctx.fleet.close();
  });
  return ctx;
}

/**
 * Mocha hooks for the suite of a Node-RED with adminAuth: before its tests a simulator and a
 * child Node-RED whose `users` ({username, permissions}) all have `password`; both stopped,
 * and the user directory removed, after them. Returns the context, whose `sim`, `red` and
 * `dir` are set once the hooks have run.
 */
function authRedPerSuite(users, password) {
  const { startSimulator } = require('../../dist/simulator');
  const ctx = {};
  before(async function () {
    ctx.sim = await startSimulator({ port: 0, host: '127.0.0.1' });
    ctx.dir = makeUserDir();
    addAdminAuth(ctx.dir, users, password);
    ctx.red = await new ChildRed(ctx.dir, { readyPath: '/auth/login' }).start();
  });
  after(async function () {
    if (ctx.red) await ctx.red.kill('SIGKILL');
    if (ctx.sim) await ctx.sim.close();
    if (ctx.dir) fs.rmSync(ctx.dir, { recursive: true, force: true });
  });
  return ctx;
}

/** A fleet's flow: tab1, the iotgw-redis node r (`redis`: its properties), the account gw1 on the shared budget through r, then `nodes`. */
function fleetFlows(sim, redis, nodes) {
  return [
    { id: 'tab1', type: 'tab', label: 'fleet' },
    { id: 'r', type: 'iotgw-redis', ...redis },
    childGateway(sim, { rateLimitCalls: 2, rateLimitWindowSeconds: 1, redis: 'r' }),
    ...nodes,
  ];
}

module.exports = { ChildRed, makeUserDir, addAdminAuth, freePort, waitFor, holdCall, held, drained, backlogMissing, lineCount, recordLines, childGateway, statusPoller, appendNode, RedFleet, fleetPerTest, fleetPerFile, fleetFlows, authRedPerSuite, FLEET_SIM };
