'use strict';
/**
 * A real Node-RED runtime as a child process for the benchmarks: its own settings file,
 * a temporary user directory with the package linked in (or installed from a tarball),
 * flows deployed through the admin API on 127.0.0.1, and an IPC bridge so that the
 * benchmark can read counters, latencies, memory and CPU time of the runtime without
 * adding HTTP traffic to what is measured.
 *
 * In a flow, a function node reaches the bridge as `global.get('bench')`:
 *   bench.inc(name, n)    add n to a counter
 *   bench.lat(ms)         record one latency sample (with the time it ended)
 * The parent reads them with `red.stats()` and clears them with `red.reset()`.
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { ChildRed: BaseChildRed, freePort } = require('../../test/helpers/child-red');

const ROOT = path.resolve(__dirname, '../..');

const SETTINGS = `
'use strict';
const counters = {};
let latEnd = [];
let latMs = [];
const bench = {
  inc(name, n = 1) { counters[name] = (counters[name] || 0) + n; },
  count(name) { return counters[name] || 0; },
  lat(ms) { latEnd.push(Date.now()); latMs.push(ms); },
  now() { const t = process.hrtime(); return t[0] * 1e3 + t[1] / 1e6; },
  // Entries an outbox of the package holds durably (accepted), read from its engine.
  outboxWaiting(name) {
    const reg = require(require('path').join(__dirname, 'node_modules/@iotgateway/node-red-gateway/dist/lib/node-red/outbox-registry.js'));
    const o = reg.openOutboxes().find((x) => x.name === name);
    return o ? o.outbox.state().waiting : -1;
  },
  outboxSyncs(name) {
    const reg = require(require('path').join(__dirname, 'node_modules/@iotgateway/node-red-gateway/dist/lib/node-red/outbox-registry.js'));
    const o = reg.openOutboxes().find((x) => x.name === name);
    return o && typeof o.outbox.store.syncs === 'number' ? o.outbox.store.syncs : 0;
  },
};
process.on('message', (m) => {
  if (!m || typeof m !== 'object') return;
  if (m.cmd === 'gc' && typeof global.gc === 'function') { global.gc(); global.gc(); }
  if (m.cmd === 'reset') { for (const k of Object.keys(counters)) delete counters[k]; latEnd = []; latMs = []; }
  const reply = { id: m.id, counters: { ...counters }, mem: process.memoryUsage(), cpu: process.cpuUsage() };
  if (m.cmd === 'lat') { reply.latEnd = latEnd; reply.latMs = latMs; }
  process.send(reply);
});
module.exports = {
  uiHost: '127.0.0.1',
  flowFile: 'flows.json',
  credentialSecret: 'bench-secret',
  functionGlobalContext: { bench },
  logging: { console: { level: 'warn', metrics: false, audit: false } },
  editorTheme: { tours: false, projects: { enabled: false } },
  externalModules: { palette: { allowInstall: false } },
  diagnostics: { enabled: false },
  telemetry: { enabled: false },
};
`;

// The bench's own minimal nodes (bench/<folder>), linked into a user directory on request.
const BENCH_NODES = {
  // bench/count-node: a minimal node counting msgs (the memory figures' second downstream).
  count: ['count-node', 'node-red-bench-count'],
  // The overhead floor (bench/floor-node): a minimal node doing one undici request per msg.
  floor: ['floor-node', 'node-red-bench-floor'],
  // bench/produce-node: a minimal node emitting status-record msgs (the poller figure's baseline).
  produce: ['produce-node', 'node-red-bench-produce'],
  // bench/sync-node: a minimal durable queue node (append + fdatasync; the outbox's baseline).
  sync: ['sync-node', 'node-red-bench-sync'],
};

/**
 * A fresh user directory. `pkg`: 'link' (symlink this checkout, as `npm install <dir>`
 * would), 'none' (no package: a bare Node-RED), or a path to an installed package dir.
 * `opts`: { count, floor, produce } true links that bench node (BENCH_NODES).
 */
function makeUserDir(pkg = 'link', opts = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iotgw-bench-red-'));
  fs.writeFileSync(path.join(dir, 'settings.js'), SETTINGS);
  const deps = {};
  for (const [opt, [folder, name]] of Object.entries(BENCH_NODES)) {
    if (!opts[opt]) continue;
    fs.mkdirSync(path.join(dir, 'node_modules'), { recursive: true });
    fs.symlinkSync(path.join(__dirname, '..', folder), path.join(dir, 'node_modules', name), 'dir');
    deps[name] = '*';
  }
  if (pkg !== 'none') {
    const scope = path.join(dir, 'node_modules', '@iotgateway');
    fs.mkdirSync(scope, { recursive: true });
    fs.symlinkSync(pkg === 'link' ? ROOT : pkg, path.join(scope, 'node-red-gateway'), 'dir');
    deps['@iotgateway/node-red-gateway'] = '*';
  }
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'red-user', private: true, dependencies: deps }));
  return dir;
}

/** The tests' child Node-RED launcher, plus an IPC channel to the bench hooks in SETTINGS. */
class ChildRed extends BaseChildRed {
  constructor(userDir, { ownDir = true, nodeArgs = [] } = {}) {
    // BENCH_PROFILE_DIR=dir: every child Node-RED writes a CPU profile there (--cpu-prof).
    const prof = process.env.BENCH_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`] : [];
    // BENCH_NODE_ARGS: extra node options for the child (e.g. --max-old-space-size=96).
    const extra = (process.env.BENCH_NODE_ARGS || '').split(' ').filter(Boolean);
    super(userDir, { nodeArgs: ['--expose-gc', ...prof, ...extra, ...nodeArgs], ipc: true });
    this.ownDir = ownDir;
    this.pendingIpc = new Map();
    this.nextId = 1;
  }

  /** Starts Node-RED; resolves when its admin API answers (`startMs` records how long). */
  async start(timeoutMs = 60000) {
    await super.start(timeoutMs);
    this.proc.on('message', (m) => {
      const p = this.pendingIpc.get(m.id);
      if (p) {
        this.pendingIpc.delete(m.id);
        p(m);
      }
    });
    return this;
  }

  get pid() {
    return this.proc.pid;
  }

  ipc(cmd, timeoutMs = 10000) {
    return new Promise((resolve, reject) => {
      const id = this.nextId++;
      const timer = setTimeout(() => {
        this.pendingIpc.delete(id);
        reject(new Error(`no IPC reply to ${cmd}`));
      }, timeoutMs);
      this.pendingIpc.set(id, (m) => {
        clearTimeout(timer);
        resolve(m);
      });
      this.proc.send({ cmd, id });
    });
  }

  stats() {
    return this.ipc('stats');
  }
  reset() {
    return this.ipc('reset');
  }
  gc() {
    return this.ipc('gc');
  }
  latencies() {
    return this.ipc('lat', 30000);
  }

  /** RSS from /proc (bytes); also the kernel's high-water mark. */
  procMem() {
    try {
      const s = fs.readFileSync(`/proc/${this.pid}/status`, 'utf8');
      const kb = (k) => Number((new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(s) || [])[1] || 0) * 1024;
      return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
    } catch {
      return { rss: 0, hwm: 0 };
    }
  }

  async stop() {
    if (this.proc && this.proc.exitCode === null) {
      this.proc.kill('SIGINT');
      const t = setTimeout(() => this.proc.kill('SIGKILL'), 5000);
      await this.exited;
      clearTimeout(t);
    }
    if (this.ownDir) fs.rmSync(this.userDir, { recursive: true, force: true });
  }
}

/** Samples the child's RSS every `everyMs` until stopped; returns the peak. */
function rssSampler(red, everyMs = 50) {
  let peak = 0;
  let samples = 0;
  const take = () => {
    const { rss } = red.procMem();
    samples++;
    if (rss > peak) peak = rss;
  };
  take();
  const timer = setInterval(take, everyMs);
  return {
    stop() {
      clearInterval(timer);
      take();
      return { peak, samples };
    },
    get peak() {
      return peak;
    },
  };
}

/**
 * The editor's sidebar tab kept open on `red` (issue 27's cost figure): a comms websocket as
 * the editor opens one, subscribed to `iotgw/accounts`, saying `iotgw/watch` every 5 s as the
 * visible tab does. `close()` ends it; `received` counts the figures published to it.
 */
function openSidebarTab(red) {
  const { WebSocket } = require('undici');
  const ws = new WebSocket(`${red.url.replace(/^http/, 'ws')}/comms`);
  const state = { received: 0, timer: undefined };
  const watch = () => ws.send(JSON.stringify({ topic: 'iotgw/watch', data: { watching: true } }));
  ws.addEventListener('open', () => {
    ws.send(JSON.stringify({ subscribe: 'iotgw/accounts' }));
    watch();
    state.timer = setInterval(watch, 5000);
  });
  ws.addEventListener('message', (e) => {
    for (const m of [].concat(JSON.parse(String(e.data)))) if (m && m.topic === 'iotgw/accounts') state.received++;
  });
  return {
    get received() {
      return state.received;
    },
    close() {
      clearInterval(state.timer);
      ws.close();
    },
  };
}

/** Idle RSS after a full GC and a short rest (median of 3 readings 200 ms apart). */
async function idleRss(red, restMs = 1500) {
  await new Promise((r) => setTimeout(r, restMs));
  const vals = [];
  let heap = 0;
  for (let i = 0; i < 3; i++) {
    const s = await red.gc();
    heap = s.mem.heapUsed;
    vals.push(red.procMem().rss);
    await new Promise((r) => setTimeout(r, 200));
  }
  vals.sort((a, b) => a - b);
  return { rss: vals[1], heapUsed: heap };
}

module.exports = { ChildRed, makeUserDir, freePort, rssSampler, idleRss, openSidebarTab, ROOT };
