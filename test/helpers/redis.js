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
const { freePort } = require('./net');
const { waitUntil } = require('./wait');

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

/**
 * Does a Redis answer at `port`? A PING gets a RESP reply (+PONG, or -NOAUTH from a server that
 * wants a password); something else listening there (a port taken under the server) does not.
 */
function answers(port) {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    const done = (ok) => {
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(1000, () => done(false));
    sock.once('connect', () => sock.write('PING\r\n'));
    sock.once('data', (d) => done(d[0] === 0x2b || d[0] === 0x2d));
    sock.once('error', () => done(false));
  });
}

class RedisServer {
  /** `args`: extra arguments (replicaof, cluster-enabled ...); `conf`: a config file's text (sentinels need one). */
  constructor(bin, { args = [], conf } = {}) {
    this.bin = bin;
    this.args = args;
    this.conf = conf;
    this.port = undefined;
    this.proc = undefined;
    this.dir = undefined;
    this.output = '';
  }

  get url() {
    return `redis://127.0.0.1:${this.port}/0`;
  }

  /**
   * Starts the server (on the same port as before when restarted). A port found free a moment
   * ago may be taken by then (another suite beside this one, or an outgoing connection's local
   * port: the kernel hands out the same range): a first start then takes another free port, a
   * restart tries its own port again a moment later (at most 5 tries).
   */
  async start(timeoutMs = 10000) {
    const own = !this.port;
    for (let attempt = 1; ; attempt++) {
      if (own) this.port = await freePort();
      const from = this.output.length;
      try {
        return await this.startOnce(timeoutMs);
      } catch (err) {
        if (attempt >= 5 || !/Address already in use/i.test(this.output.slice(from))) throw err;
        if (!own) await new Promise((r) => setTimeout(r, 500));
      }
    }
  }

  async startOnce(timeoutMs) {
    if (!this.dir) this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iotgw-redis-'));
    const extra = typeof this.args === 'function' ? this.args(this) : this.args;
    let head = [];
    if (this.conf !== undefined) {
      const file = path.join(this.dir, 'server.conf');
      if (!fs.existsSync(file)) fs.writeFileSync(file, typeof this.conf === 'function' ? this.conf(this) : this.conf);
      head = [file];
    }
    this.proc = spawn(this.bin, [...head, '--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.dir, '--protected-mode', 'yes', ...extra], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const proc = this.proc;
    proc.stdout.on('data', (d) => (this.output = (this.output + d).slice(-40000)));
    proc.stderr.on('data', (d) => (this.output = (this.output + d).slice(-40000)));
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (proc.exitCode !== null) throw new Error(`redis-server exited (${proc.exitCode}): ${this.output}`);
      if (await answers(this.port)) return this;
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

const CLI = '/usr/bin/redis-cli';

/** Runs redis-cli against 127.0.0.1:`port` and returns its output (text). */
function cli(port, ...args) {
  const r = spawnSync(CLI, ['-h', '127.0.0.1', '-p', String(port), ...args.map(String)], { encoding: 'utf8', timeout: 10000 });
  if (r.error) throw r.error;
  return (r.stdout || '').trim();
}

/** Waits until `pred()` holds (a throw counts as not yet), raised for a loaded machine as the harness's (test/helpers/wait.js); on a timeout names `what` and what `detail()` (if given) says. */
function until(pred, ms, what, detail) {
  return waitUntil(pred, ms, what, { detail, every: 100, throwsMeanNotYet: true });
}

/**
 * A Sentinel set on loopback: one master, one replica and three `redis-server --sentinel`
 * (quorum 2, a master is down after 1 s). `destroy()` stops every process and removes
 * every directory.
 */
/**
 * A master starts a replica's sync at once (Redis waits 5 s by default for more replicas to
 * share a diskless sync: a third party's timer, which no test here is about). The sentinel
 * helper that needs a sync held back sets its own delay (failoverToUnsynced).
 */
const SYNC_AT_ONCE = ['--repl-diskless-sync-delay', '0'];

class SentinelSet {
  constructor(bin = findRedisServer(), { name = 'mymaster' } = {}) {
    this.bin = bin;
    this.name = name;
    this.servers = [];
    this.sentinels = [];
  }

  async start() {
    const master = new RedisServer(this.bin, { args: SYNC_AT_ONCE });
    await master.start();
    const replica = new RedisServer(this.bin, { args: ['--replicaof', '127.0.0.1', String(master.port), ...SYNC_AT_ONCE] });
    await replica.start();
    this.servers = [master, replica];
    for (let i = 0; i < 3; i++) {
      const conf = (s) =>
        [
          `port ${s.port}`,
          `sentinel monitor ${this.name} 127.0.0.1 ${master.port} 2`,
          `sentinel down-after-milliseconds ${this.name} 1000`,
          `sentinel failover-timeout ${this.name} 4000`,
          `sentinel parallel-syncs ${this.name} 1`,
          '',
        ].join('\n');
      const s = new RedisServer(this.bin, { conf, args: ['--sentinel'] });
      await s.start();
      this.sentinels.push(s);
    }
    await until(() => /master_link_status:up/.test(cli(replica.port, 'info', 'replication')), 20000, 'the replica to sync');
    await until(() => this.sentinels.every((s) => /num-other-sentinels\n2/.test(cli(s.port, 'sentinel', 'master', this.name)) && /num-slaves\n1/.test(cli(s.port, 'sentinel', 'master', this.name))), 20000, 'the sentinels to know each other and the replica');
    return this;
  }

  /** "127.0.0.1:p1,127.0.0.1:p2,..." of the sentinels. */
  get sentinelList() {
    return this.sentinels.map((s) => `127.0.0.1:${s.port}`).join(',');
  }

  /** The master's port as the sentinels see it now. */
  masterPort() {
    for (const s of this.sentinels) {
      if (!s.proc) continue;
      const out = cli(s.port, 'sentinel', 'get-master-addr-by-name', this.name).split('\n');
      if (out.length >= 2 && /^\d+$/.test(out[1])) return Number(out[1]);
    }
    return undefined;
  }

  server(port) {
    return this.servers.find((s) => s.port === port);
  }

  /** SIGKILLs the master; resolves with it once a replica has been promoted (its port changed). */
  async killMaster(timeoutMs = 30000) {
    const port = this.masterPort();
    const dead = this.server(port);
    await dead.stop('SIGKILL');
    const t0 = Date.now();
    await until(() => {
      const p = this.masterPort();
      return p && p !== port && /role:master/.test(cli(p, 'info', 'replication'));
    }, timeoutMs, 'a replica to be promoted');
    return { dead, failoverMs: Date.now() - t0 };
  }

  /** Starts a stopped server again, as a replica of the master now (the sentinels would make it one too). */
  async rejoin(server) {
    server.args = ['--replicaof', '127.0.0.1', String(this.masterPort()), ...SYNC_AT_ONCE];
    await server.start();
    // Whole again: the old master syncs as a replica, or (the sentinels failed back under load)
    // it is master again with its replica online.
    const whole = () => {
      const info = cli(server.port, 'info', 'replication');
      return /master_link_status:up/.test(info) || (/role:master/.test(info) && /slave\d+:.*state=online/.test(info));
    };
    await until(whole, 60000, 'the old master to sync as a replica', () => this.seen(server.port));
  }

  /** For a timeout's message: what the server at `port` says of its replication, and the master the sentinels name. */
  seen(port) {
    return `${cli(port, 'info', 'replication').replace(/\r?\n/g, ' ')}; sentinels name ${this.masterPort()}`;
  }

  /**
   * The sentinels fail over again, to `server` (the old master, restarted empty) before it has
   * synced: `SENTINEL FAILOVER` while the master holds back the sync (diskless delay 10 s).
   * The master becomes its replica and drops every key, acknowledged or not (issue 28).
   * Resolves once that replica has synced from it (the data set is then empty everywhere).
   *
   * The sentinels turn the former master into a replica themselves (+convert-to-slave) only once
   * it has answered them for 8 s in a row (SENTINEL_PUBLISH_PERIOD * 4, at least 10 s here); on a
   * loaded machine, a ping answered after down-after-milliseconds (1 s) marks it down and starts
   * those 8 s again, past the wait (a CI run timed out so). The helper sends the same REPLICAOF at
   * once: what follows (a full resync from the empty master) is the sentinels' own.
   */
  async failoverToUnsynced(server) {
    const master = this.masterPort();
    cli(master, 'config', 'set', 'repl-diskless-sync-delay', '10');
    server.args = ['--replicaof', '127.0.0.1', String(master), ...SYNC_AT_ONCE];
    await server.start();
    await until(() => /master_link_status:down/.test(cli(server.port, 'info', 'replication')) && /slave0:/.test(cli(master, 'info', 'replication')), 10000, 'the restarted server to ask for a sync');
    // A sentinel may still be ending the failover before (INPROG): ask again.
    let said = '';
    await until(() => (said = cli(this.sentinels[0].port, 'sentinel', 'failover', this.name)) === 'OK', 20000, 'SENTINEL FAILOVER to be accepted', () => said);
    await until(() => this.masterPort() === server.port && /role:master/.test(cli(server.port, 'info', 'replication')), 30000, 'the unsynced server to be promoted', () => this.seen(server.port));
    await until(() => cli(master, 'replicaof', '127.0.0.1', server.port).startsWith('OK'), 10000, 'the former master to take REPLICAOF', () => this.seen(master));
    await until(() => /master_link_status:up/.test(cli(master, 'info', 'replication')), 30000, 'the former master to sync from it', () => this.seen(master));
    // Its sync held back no more: promoted later, it syncs a replica at once like the others.
    cli(master, 'config', 'set', 'repl-diskless-sync-delay', '0');
  }

  async destroy() {
    for (const s of [...this.sentinels, ...this.servers]) await s.destroy().catch(() => {});
  }
}

/**
 * A Redis Cluster on loopback: three masters with a replica each (`redis-cli --cluster
 * create ... --cluster-replicas 1`), node timeout 2 s. `destroy()` stops every process and
 * removes every directory.
 */
class ClusterSet {
  constructor(bin = findRedisServer()) {
    this.bin = bin;
    this.servers = [];
  }

  async start() {
    for (let i = 0; i < 6; i++) {
      const s = new RedisServer(this.bin, { args: ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '2000', '--cluster-replica-validity-factor', '0', ...SYNC_AT_ONCE] });
      await s.start();
      this.servers.push(s);
    }
    const r = spawnSync(CLI, ['--cluster', 'create', ...this.servers.map((s) => `127.0.0.1:${s.port}`), '--cluster-replicas', '1', '--cluster-yes'], { encoding: 'utf8', timeout: 30000 });
    if (r.status !== 0) throw new Error(`redis-cli --cluster create failed: ${r.stdout} ${r.stderr}`);
    await until(() => this.servers.every((s) => /cluster_state:ok/.test(cli(s.port, 'cluster', 'info'))), 30000, 'the cluster to be ok');
    await until(() => this.servers.filter((s) => /role:slave/.test(cli(s.port, 'info', 'replication')) && /master_link_status:up/.test(cli(s.port, 'info', 'replication'))).length === 3, 30000, 'the replicas to sync');
    return this;
  }

  get nodeList() {
    return this.servers.map((s) => `127.0.0.1:${s.port}`).join(',');
  }

  /** The port of the master that serves `slot` now (from CLUSTER SLOTS of a live node). */
  masterOfSlot(slot) {
    for (const s of this.servers) {
      if (!s.proc) continue;
      const lines = cli(s.port, 'cluster', 'nodes').split('\n');
      for (const l of lines) {
        const f = l.split(' ');
        if (!/master/.test(f[2] || '') || /fail/.test(f[2])) continue;
        for (const range of f.slice(8)) {
          const [a, b] = range.split('-').map(Number);
          if (slot >= a && slot <= (b ?? a)) return Number(f[1].split(':')[1].split('@')[0]);
        }
      }
    }
    return undefined;
  }

  server(port) {
    return this.servers.find((s) => s.port === port);
  }

  /** SIGKILLs the master of `slot`; resolves once its replica serves the slot. */
  async killMasterOf(slot, timeoutMs = 30000) {
    const port = this.masterOfSlot(slot);
    const dead = this.server(port);
    await dead.stop('SIGKILL');
    const t0 = Date.now();
    await until(() => {
      const p = this.masterOfSlot(slot);
      return p && p !== port && /cluster_state:ok/.test(cli(p, 'cluster', 'info'));
    }, timeoutMs, 'the replica to take the slot');
    return { dead, failoverMs: Date.now() - t0 };
  }

  /** Starts a killed node again: it rejoins (its nodes.conf) as a replica. */
  async rejoin(server) {
    await server.start();
    await until(() => /role:slave/.test(cli(server.port, 'info', 'replication')) && /master_link_status:up/.test(cli(server.port, 'info', 'replication')), 30000, 'the old master to rejoin as a replica');
  }

  async destroy() {
    for (const s of this.servers) await s.destroy().catch(() => {});
  }
}

/**
 * A fake Redis on a free loopback port, for a hostile peer: it parses each command (RESP
 * arrays of bulk strings, as clients send them) and calls `answer(args, sock, stats)` with
 * the words as strings; `answer` writes the reply (default `+OK` to everything). `stats`:
 * connections, commands (count), perCommand (by upper-case name), sentBytes (what
 * `streamBulk` wrote). `close()` ends it and every connection.
 */
function fakeRedis(answer = (args, sock) => sock.write('+OK\r\n')) {
  const stats = { connections: 0, commands: 0, perCommand: {}, sentBytes: 0 };
  const socks = new Set();
  const server = net.createServer((sock) => {
    stats.connections++;
    socks.add(sock);
    sock.on('close', () => socks.delete(sock));
    sock.on('error', () => {});
    let buf = Buffer.alloc(0);
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      for (;;) {
        const parsed = parseCommand(buf);
        if (!parsed) return;
        buf = buf.subarray(parsed.used);
        stats.commands++;
        const name = String(parsed.args[0] || '').toUpperCase();
        stats.perCommand[name] = (stats.perCommand[name] || 0) + 1;
        if (!sock.destroyed) answer(parsed.args, sock, stats);
      }
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        port: server.address().port,
        stats,
        close: () => {
          for (const s of socks) s.destroy();
          return new Promise((r) => server.close(() => r()));
        },
      }),
    ),
  );
}

/** One RESP command (an array of bulk strings) at the start of `buf`: {args, used}, or undefined while incomplete. */
function parseCommand(buf) {
  const line = (at) => {
    const nl = buf.indexOf('\r\n', at);
    return nl < 0 ? undefined : { text: buf.toString('latin1', at, nl), next: nl + 2 };
  };
  const head = line(0);
  if (!head) return undefined;
  if (head.text[0] !== '*') return { args: head.text.split(' '), used: head.next }; // inline command
  const n = Number(head.text.slice(1));
  const args = [];
  let at = head.next;
  for (let i = 0; i < n; i++) {
    const len = line(at);
    if (!len) return undefined;
    const size = Number(len.text.slice(1));
    if (buf.length < len.next + size + 2) return undefined;
    args.push(buf.toString('utf8', len.next, len.next + size));
    at = len.next + size + 2;
  }
  return { args, used: at };
}

/** Writes a bulk string of `size` bytes to `sock`, streamed in 64 KiB chunks while the peer reads (stats.sentBytes counts it). */
function streamBulk(sock, stats, size = 2_000_000_000) {
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  sock.write(`$${size}\r\n`);
  let left = size;
  const pump = () => {
    while (left > 0 && !sock.destroyed) {
      const n = Math.min(left, chunk.length);
      left -= n;
      stats.sentBytes += n;
      if (!sock.write(n === chunk.length ? chunk : chunk.subarray(0, n))) return void sock.once('drain', pump);
    }
  };
  pump();
}

let bannerShown = false;

/**
 * A suite with a fresh redis-server. `fn(ctx)` gets `ctx.server` (a RedisServer, set in
 * `before`); with `cluster`, `ctx.cluster` instead (a ClusterSet started in `before`,
 * destroyed after the suite's own `after` hooks). Without redis-server: pending (banner), or
 * failing under CI=true.
 */
function describeRedis(title, fn, { cluster = false } = {}) {
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
  if (cluster) {
    describe(title, function () {
      const ctx = { cluster: undefined };
      before(async function () {
        this.timeout(120000);
        ctx.cluster = await new ClusterSet(bin).start();
      });
      fn.call(this, ctx);
      after(async () => {
        if (ctx.cluster) await ctx.cluster.destroy();
      });
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

/**
 * A flow of several gateway accounts (gw<id> for each of `ids`, on the simulator's demo
 * account: 3 calls in 1.5 s, 3 in flight, one item a call) that name the same iotgw-redis node
 * r (`redisUrl`, `keyPrefix`) when `redis` is true, each with a terminal-mode node mode<id>
 * into the shared helpers ok and bad, and a catch-all (catcher -> caught).
 */
function accountsFlow(sim, { ids, redis, redisUrl, keyPrefix, timeoutSeconds }) {
  const nodes = [
    { id: 'flow', type: 'tab', label: 'test' },
    { id: 'r', type: 'iotgw-redis', url: redisUrl, keyPrefix },
    { id: 'ok', z: 'flow', type: 'helper' },
    { id: 'bad', z: 'flow', type: 'helper' },
    { id: 'catcher', z: 'flow', type: 'catch', scope: null, uncaught: false, wires: [['caught']] },
    { id: 'caught', z: 'flow', type: 'helper' },
  ];
  for (const x of ids) {
    nodes.push({ id: `gw${x}`, type: 'iotgw-gateway', baseUrl: sim.url, apiVersion: '1.0', rateLimitCalls: 3, rateLimitWindowSeconds: 1.5, maxConcurrent: 3, maxBatchSize: 1, timeoutSeconds, redis: redis ? 'r' : '' });
    nodes.push({ id: `mode${x}`, z: 'flow', type: 'iotgw-terminal-mode', gateway: `gw${x}`, mode: 0, wakeupInterval: 0, family: 'any', wires: [['ok'], ['bad']] });
  }
  return nodes;
}

/**
 * For a loaded accountsFlow: sends `perNode` msgs to each node of `ids` in turn (msg k of the
 * `ids.length * perNode`, node j's i-th being k = j * perNode + i, is `msg(k)`), and waits
 * until every one has ended at the helper ok or caught (30 s). What each received.
 */
async function sendTogether(ids, perNode, msg) {
  const { helper, collect, until: waitHelper } = require('./harness');
  const ok = collect(helper.getNode('ok'));
  const caught = collect(helper.getNode('caught'));
  for (let i = 0; i < perNode; i++) ids.forEach((id, j) => helper.getNode(id).receive(msg(j * perNode + i)));
  await waitHelper(() => ok.length + caught.length === ids.length * perNode, 30000, 'every msg ended');
  return { ok, caught };
}

module.exports = { accountsFlow, sendTogether, RedisServer, SentinelSet, ClusterSet, describeRedis, findRedisServer, freePort, cli, fakeRedis, streamBulk, until };
