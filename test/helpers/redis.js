'use strict';
/**
 * A real Redis for tests: Debian's `redis-server` (apt package `redis-server`) on a free
 * loopback port, no persistence (`--save '' --appendonly no`), in a temporary directory.
 *
 * `describeRedis(title, fn)`: a mocha suite that starts one server before its tests and
 * stops it after. When redis-server cannot be found, its tests are marked PENDING with a
 * banner on stderr; under `CI=true` they FAIL instead (a CI run must not pass by skipping).
 */
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

const CANDIDATES = [process.env.REDIS_SERVER, '/usr/bin/redis-server', '/usr/local/bin/redis-server', '/usr/sbin/redis-server'].filter(Boolean);

/** The path of redis-server, or undefined. */
function findRedisServer() {
  for (const p of CANDIDATES) {
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return p;
    } catch {
      /* next */
    }
  }
  const r = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' });
  const found = r.status === 0 ? r.stdout.trim() : '';
  return found || undefined;
}

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

function canConnect(port) {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    sock.once('connect', () => {
      sock.end('PING\r\n');
      resolve(true);
    });
    sock.once('error', () => resolve(false));
  });
}

class RedisServer {
  constructor(bin) {
    this.bin = bin;
    this.port = undefined;
    this.proc = undefined;
    this.dir = undefined;
    this.output = '';
  }

  get url() {
    return `redis://127.0.0.1:${this.port}/0`;
  }

  /** Starts the server (on the same port as before when restarted). */
  async start(timeoutMs = 10000) {
    if (!this.port) this.port = await freePort();
    if (!this.dir) this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iotgw-redis-'));
    this.proc = spawn(this.bin, ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.dir, '--protected-mode', 'yes'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const proc = this.proc;
    proc.stdout.on('data', (d) => (this.output = (this.output + d).slice(-4000)));
    proc.stderr.on('data', (d) => (this.output = (this.output + d).slice(-4000)));
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (proc.exitCode !== null) throw new Error(`redis-server exited (${proc.exitCode}): ${this.output}`);
      if (await canConnect(this.port)) return this;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`redis-server did not listen on 127.0.0.1:${this.port} within ${timeoutMs} ms: ${this.output}`);
  }

  /** Stops it; `signal` SIGKILL for a crash. Resolves once the process is gone. */
  async stop(signal = 'SIGTERM') {
    const proc = this.proc;
    this.proc = undefined;
    if (!proc || proc.exitCode !== null || proc.signalCode) return;
    await new Promise((resolve) => {
      proc.once('exit', resolve);
      proc.kill(signal);
    });
  }

  /** Stops it and removes its directory. */
  async destroy() {
    await this.stop();
    if (this.dir) fs.rmSync(this.dir, { recursive: true, force: true });
    this.dir = undefined;
  }
}

let bannerShown = false;

/**
 * A suite with a fresh redis-server. `fn(ctx)` gets `ctx.server` (a RedisServer, set in
 * `before`). Without redis-server: pending (banner), or failing under CI=true.
 */
function describeRedis(title, fn) {
  const bin = findRedisServer();
  if (!bin) {
    if (process.env.CI === 'true') {
      describe(title, () => {
        it('needs redis-server (CI=true: a missing redis-server is a failure, not a skip)', () => {
          throw new Error('redis-server not found; install the apt package redis-server (.ci/run does)');
        });
      });
      return;
    }
    if (!bannerShown) {
      bannerShown = true;
      process.stderr.write('\n*** redis-server not found: the Redis tests are PENDING (not passed). Install the apt package redis-server. ***\n\n');
    }
    describe(title, () => {
      it('needs redis-server (not installed: pending)');
    });
    return;
  }
  describe(title, function () {
    const ctx = { server: new RedisServer(bin) };
    before(async function () {
      this.timeout(20000);
      await ctx.server.start();
    });
    after(async () => {
      await ctx.server.destroy();
    });
    fn.call(this, ctx);
  });
}

module.exports = { RedisServer, describeRedis, findRedisServer, freePort };
