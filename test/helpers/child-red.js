'use strict';
/**
 * A real Node-RED as a child process, for tests that must stop it the hard way (SIGKILL)
 * or cleanly (SIGINT), with a settings file, a user directory that has this package
 * installed (a symlink in node_modules, as `npm install /path/to/checkout` would), a
 * file-backed context store, and flows deployed through the admin HTTP API on loopback.
 *
 * Records reach a file through `global.get('append')` (functionGlobalContext): a
 * synchronous write, so what a function node wrote survives a SIGKILL.
 */
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '../..');
const RED_JS = require.resolve('node-red/red.js');

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/**
 * A fresh user directory with the package linked in and a settings file. `defaultContext`:
 * no contextStorage at all (Node-RED's default settings: the default store is memory).
 */
function makeUserDir({ flushInterval = 30, recordsFile, defaultContext = false }) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iotgw-red-'));
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
  functionGlobalContext: { append: (line) => fs.writeSync(fd, line) },
  logging: { console: { level: 'warn', metrics: false, audit: false } },
  editorTheme: { tours: false, projects: { enabled: false } },
  externalModules: { palette: { allowInstall: false } },
  diagnostics: { enabled: false },
  telemetry: { enabled: false },
};
`;
  fs.writeFileSync(path.join(dir, 'settings.js'), settings);
  return dir;
}

class ChildRed {
  /**
   * `nodeArgs`: options for the child's node (e.g. --expose-gc); `ipc`: open an IPC
   * channel to it (the benchmarks use one). `startMs` is how long start() took.
   */
  constructor(userDir, { nodeArgs = [], ipc = false } = {}) {
    this.userDir = userDir;
    this.nodeArgs = nodeArgs;
    this.ipcChannel = ipc;
    this.output = '';
  }

  async start(timeoutMs = 30000) {
    this.port = await freePort();
    const t0 = process.hrtime.bigint();
    this.proc = spawn(process.execPath, [...this.nodeArgs, RED_JS, '--settings', path.join(this.userDir, 'settings.js'), '--userDir', this.userDir, '--port', String(this.port)], {
      cwd: this.userDir,
      env: { ...process.env, NODE_RED_ENABLE_PROJECTS: 'false', http_proxy: '', https_proxy: '', HTTP_PROXY: '', HTTPS_PROXY: '', NO_PROXY: '127.0.0.1,localhost' },
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
        const r = await fetch(`${this.url}/settings`, { signal: AbortSignal.timeout(2000) });
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

  /** Which of our node types the runtime loaded (from the admin API). */
  async nodeTypes() {
    const r = await fetch(`${this.url}/nodes`, { headers: { accept: 'application/json' } });
    const sets = await r.json();
    return sets.flatMap((s) => s.types);
  }

  kill(signal) {
    this.proc.kill(signal);
    return this.exited;
  }
}

module.exports = { ChildRed, makeUserDir, freePort };
