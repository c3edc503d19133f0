'use strict';
/**
 * Issue 43 (findings 1 and 2): a Redis, Sentinel or Cluster peer's bytes reach ioredis only
 * through the reply guard in front of its decoder. Hostile peers are small fakes on loopback
 * (test/helpers/redis.js fakeRedis).
 *
 * - `$*\r\nX` (a length that is not digits) held ioredis 6's decoder in an endless loop inside
 *   the socket's 'data' event. The client runs in a worker thread here, so that a hang is seen
 *   (its ticks stop; the worker is ended after 10 s without one) instead of holding the test.
 * - `$0x999999999\r\n` read as 0 by the former guard and 72,999,999,999 by the decoder, which
 *   then kept every 1 MiB reply after it.
 */
const assert = require('node:assert/strict');
const path = require('node:path');
const { Worker } = require('node:worker_threads');
const { fakeRedis } = require('../../../helpers/redis');
const { waitUntil } = require('../../../helpers/wait');
const { RedisConnection } = require('../../../../dist/lib/account/redis');

const MB = 1024 * 1024;
const DIST = path.resolve(__dirname, '../../../../dist/lib/account/redis');
const POISON = '$*\r\nX';

/** Answers the first command of each connection (or every `name` command) with `reply(sock, stats)`; `+OK` to the rest. */
function poisoning(reply, name) {
  const hit = new WeakSet();
  return (args, sock, stats) => {
    const cmd = name ? args.slice(0, name.split(' ').length).join(' ').toUpperCase() : '';
    if (name ? cmd === name : !hit.has(sock)) {
      hit.add(sock);
      stats.poisoned = (stats.poisoned || 0) + 1;
      reply(sock, stats);
    } else sock.write('+OK\r\n');
  };
}

/** The client of a worker thread: ticks every 50 ms, runs one command, reports when told to finish. */
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const { RedisConnection } = require(workerData.dist);
const c = new RedisConnection({ url: 'redis://127.0.0.1:6379/0', keyPrefix: 'guard:', commandTimeoutMs: 5000, ...workerData.opts });
const warnings = [];
c.on('failure', () => {});
c.on('oversize', (e) => warnings.push(e.message));
c.on('misbehaved', (e) => warnings.push(e.message));
let last = Date.now();
let maxGap = 0;
const tick = setInterval(() => {
  const now = Date.now();
  maxGap = Math.max(maxGap, now - last);
  last = now;
  parentPort.postMessage({ tick: now });
}, 50);
let result;
c.run('a test command', (r) => r.ping(), { timeoutMs: 60000 }).then(
  () => (result = { ok: true }),
  (err) => (result = { code: err.code, reason: err.reason, message: err.message }),
);
parentPort.on('message', async () => {
  clearInterval(tick);
  await c.close().catch(() => {});
  parentPort.postMessage({ done: { result, maxGap, warnings } });
});
parentPort.postMessage({ tick: Date.now() });
`;

/**
 * Runs a RedisConnection with `opts` in a worker until `enough()` (and its run() ended); returns what
 * it reports. Fails when the worker's ticks stop for 10 s (a hang: the worker is ended).
 */
async function clientInWorker(opts, enough) {
  const worker = new Worker(WORKER, { eval: true, workerData: { dist: DIST, opts } });
  let lastTick = Date.now();
  let done;
  let failed;
  worker.on('message', (m) => {
    if (m.tick) lastTick = Date.now();
    if (m.done) done = m.done;
  });
  worker.on('error', (err) => (failed = err));
  const watch = setInterval(() => {
    if (!done && Date.now() - lastTick > 10000) {
      failed = new Error(`the client's event loop stopped: no tick for ${Date.now() - lastTick} ms (a hang)`);
      worker.terminate();
    }
  }, 200);
  try {
    await waitUntil(() => failed || enough(), 45000, 'the hostile peer answered twice');
    if (failed) throw failed;
    worker.postMessage('finish');
    await waitUntil(() => failed || done, 30000, "the worker's report");
    if (failed) throw failed;
    return done;
  } finally {
    clearInterval(watch);
    await worker.terminate();
  }
}

describe('the reply guard in front of ioredis: hostile Redis, Sentinel and Cluster peers (issue 43)', function () {
  this.timeout(120000);
  const fakes = [];
  afterEach(async function () {
    await Promise.all(fakes.splice(0).map((f) => f.close()));
  });
  const fake = async (answer) => {
    const f = await fakeRedis(answer);
    fakes.push(f);
    return f;
  };

  for (const [kind, opts, name] of [
    ['a Redis (standalone)', (port) => ({ url: `redis://127.0.0.1:${port}/0` })],
    ['a Sentinel', (port) => ({ mode: 'sentinel', sentinels: [{ host: '127.0.0.1', port }], masterName: 'mymaster' })],
    ['a Cluster node (its CLUSTER SLOTS reply)', (port) => ({ mode: 'cluster', nodes: [{ host: '127.0.0.1', port }] }), 'CLUSTER SLOTS'],
  ]) {
    it(`${kind} answering ${name ?? 'the first command'} with $*\\r\\nX: the event loop goes on (no gap over 1 s), SHARED_STATE, one warning`, async function () {
      const f = await fake(poisoning((sock) => sock.write(POISON), name));
      const { result, maxGap, warnings } = await clientInWorker(opts(f.port), () => f.stats.poisoned >= 2);
      console.log(`      [figures] ${JSON.stringify({ kind, poisoned: f.stats.poisoned, connections: f.stats.connections, maxGapMs: maxGap })}`);
      assert.ok(maxGap < 1000, `the event loop answered within 1 s throughout: a gap of ${maxGap} ms`);
      assert.ok(result, 'run() has ended');
      assert.equal(result.code, 'SHARED_STATE', result.message);
      assert.equal(result.reason, 'wrong-reply', `refused for the peer's fault, not at the deadline: ${result.message}`);
      assert.match(result.message, /malformed reply/);
      assert.equal(warnings.length, 1, `one warning: ${warnings.join(' | ')}`);
      assert.match(warnings[0], /malformed reply \(a length or count that is not decimal digits\)/);
    });
  }

  /** Writes `$0x999999999\r\n`, then 1 MiB replies as fast as the socket takes them, up to `capMB` a connection. */
  function desync(sock, stats, capMB = 300) {
    const one = Buffer.concat([Buffer.from(`$${MB}\r\n`), Buffer.alloc(MB, 0x61), Buffer.from('\r\n')]);
    sock.write('$0x999999999\r\n');
    let left = capMB;
    const pump = () => {
      while (left > 0 && !sock.destroyed) {
        left--;
        stats.sentBytes += one.length;
        if (!sock.write(one)) return void sock.once('drain', pump);
      }
    };
    pump();
  }

  for (const [kind, opts] of [
    ['a Redis (standalone)', (port) => ({ url: `redis://127.0.0.1:${port}/0` })],
    ['a Sentinel', (port) => ({ mode: 'sentinel', sentinels: [{ host: '127.0.0.1', port }], masterName: 'mymaster' })],
  ]) {
    it(`${kind} sending $0x999999999\\r\\n and then 1 MiB replies: refused at the header, RSS grows under 50 MB, SHARED_STATE, one warning`, async function () {
      const f = await fake(poisoning(desync));
      const c = new RedisConnection({ url: 'redis://127.0.0.1:6379/0', keyPrefix: 'guard:', commandTimeoutMs: 5000, ...opts(f.port) });
      const warnings = [];
      c.on('failure', () => {});
      c.on('oversize', (e) => warnings.push(e.message));
      global.gc?.();
      const start = process.memoryUsage().rss;
      let peak = start;
      const sample = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
      try {
        const err = await c.run('a test command', (r) => r.ping(), { timeoutMs: 60000 }).then(
          () => assert.fail('run() succeeded against a hostile peer'),
          (e) => e,
        );
        await waitUntil(() => f.stats.poisoned >= 2, 30000, 'a second connection refused too');
        peak = Math.max(peak, process.memoryUsage().rss);
        console.log(`      [figures] ${JSON.stringify({ kind, poisoned: f.stats.poisoned, sentMB: Math.round(f.stats.sentBytes / MB), rssStartMB: Math.round(start / MB), rssPeakMB: Math.round(peak / MB) })}`);
        assert.equal(err.code, 'SHARED_STATE', err.message);
        assert.equal(err.reason, 'wrong-reply', err.message);
        assert.equal(warnings.length, 1, `one warning: ${warnings.join(' | ')}`);
        assert.match(warnings[0], /malformed reply/);
        assert.ok(peak - start < 50 * MB, `RSS within 50 MB of before: grew ${Math.round((peak - start) / MB)} MB`);
      } finally {
        clearInterval(sample);
        await c.close().catch(() => {});
      }
    });
  }
});
