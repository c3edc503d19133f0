'use strict';
/**
 * The Redis-backed account seams (issue 19) against a real redis-server: several
 * "instances" are several connections, as several Node-RED runtimes would have.
 */
const assert = require('node:assert/strict');
const { describeRedis } = require('../../helpers/redis');
const { RedisConnection, AccountKeys, accountHash, RedisRateBudget, RedisTokenSource, RedisFeedLease, RedisMarkStore } = require('../../../dist/lib/account/redis');
const { FeedReader } = require('../../../dist/lib/feed');
const { startSimulator } = require('../../../dist/simulator');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

describe('Redis account keys (unit)', function () {
  it('derives the account hash from base URL and client ID or a token hash, never a secret in clear; one hash tag per account', function () {
    const a = accountHash({ baseUrl: 'https://GW.example.com/api/', clientId: 'client-1' });
    assert.equal(a, accountHash({ baseUrl: 'https://gw.example.com/api', clientId: 'client-1' }));
    assert.notEqual(a, accountHash({ baseUrl: 'https://gw.example.com/api', clientId: 'client-2' }));
    assert.notEqual(a, accountHash({ baseUrl: 'https://other.example.com/api', clientId: 'client-1' }));
    const t = accountHash({ baseUrl: 'https://gw.example.com', token: 'very-secret-token' });
    assert.match(t, /^[0-9a-f]{24}$/);
    const keys = AccountKeys.of('iotgw:', { baseUrl: 'https://gw.example.com', token: 'very-secret-token' });
    const k1 = keys.key('rate', 'SEND');
    const k2 = keys.key('mark', 'status{x}');
    assert.ok(!k1.includes('very-secret-token'));
    assert.equal(k1, `iotgw:{${t}}:rate:SEND`);
    assert.equal(k2, `iotgw:{${t}}:mark:status_x_`, 'no brace of a name can move the hash tag');
  });
});

describeRedis('Redis account seams (real redis-server)', function (ctx) {
  const conns = [];
  let n = 0;
  const conn = () => {
    const c = new RedisConnection({ url: ctx.server.url, keyPrefix: 'iotgw:' });
    c.on('failure', () => {});
    conns.push(c);
    return c;
  };
  let keys;
  beforeEach(function () {
    keys = AccountKeys.of('iotgw:', { baseUrl: 'http://127.0.0.1:1', clientId: `test-${++n}` });
  });
  afterEach(async function () {
    await Promise.all(conns.splice(0).map((c) => c.close()));
  });

  describe('RateBudget', function () {
    it("counts one SLIDING window for two instances: the (k+N)th call never starts within a window of the kth call's completion", async function () {
      this.timeout(15000);
      const groups = { SEND: { calls: 3, windowMs: 1000 } };
      const a = new RedisRateBudget(conn(), keys, { groups, maxConcurrent: 0, timeoutMs: 5000, marginMs: 20 });
      const b = new RedisRateBudget(conn(), keys, { groups, maxConcurrent: 0, timeoutMs: 5000, marginMs: 20 });
      const events = [];
      const call = async (budget, i) => {
        await sleep(i * 37 % 100);
        const release = await budget.acquireRate('SEND');
        const start = Date.now();
        await sleep(20);
        const end = Date.now();
        release();
        events.push({ start, end });
      };
      await Promise.all(Array.from({ length: 9 }, (_, i) => call(i % 2 ? a : b, i)));
      const starts = events.map((e) => e.start).sort((x, y) => x - y);
      const ends = events.map((e) => e.end).sort((x, y) => x - y);
      for (let k = 0; k + 3 < starts.length; k++) {
        assert.ok(starts[k + 3] - ends[k] >= 1000, `call ${k + 3} started ${starts[k + 3] - ends[k]} ms after call ${k} ended (window 1000 ms)`);
      }
      // 9 calls, 3 per window: admitted in three waves of three (a wave: the starts within one
      // window of its first). A stall (a slot left unused while calls waited) would split a
      // wave: more waves of fewer calls. Counted, not timed.
      const waves = [];
      for (const st of starts) {
        const w = waves[waves.length - 1];
        if (w && st - w.first < 1000) w.n++;
        else waves.push({ first: st, n: 1 });
      }
      assert.deepEqual(waves.map((w) => w.n), [3, 3, 3], `calls admitted per window: ${waves.map((w) => w.n).join(', ')}`);
      await a.close();
      await b.close();
    });

    it('caps calls in flight across instances; a crashed instance frees its slots after the lease time', async function () {
      this.timeout(15000);
      const opts = { groups: {}, maxConcurrent: 2, timeoutMs: 5000, leaseMs: 400 };
      const a = new RedisRateBudget(conn(), keys, opts);
      const b = new RedisRateBudget(conn(), keys, opts);
      let inFlight = 0;
      let peak = 0;
      const task = async (budget) => {
        const release = await budget.acquireConcurrency();
        inFlight++;
        peak = Math.max(peak, inFlight);
        await sleep(60);
        inFlight--;
        release();
      };
      await Promise.all(Array.from({ length: 8 }, (_, i) => task(i % 2 ? a : b)));
      assert.equal(peak, 2);
      // A "crash": instance c takes both slots and its connection dies (no release, no renewal).
      const cc = conn();
      const c = new RedisRateBudget(cc, keys, opts);
      await c.acquireConcurrency();
      await c.acquireConcurrency();
      cc.client.disconnect();
      const t0 = Date.now();
      const release = await a.acquireConcurrency();
      const waited = Date.now() - t0;
      assert.ok(waited >= 250, `slot freed only once the crashed holder's lease ended: after ${waited} ms (lease 400 ms)`);
      release();
      await a.close();
      await b.close();
    });

    it('grants a concurrency slot and a rate slot; a waiter honours its AbortSignal', async function () {
      const groups = { GET: { calls: 1, windowMs: 5000 } };
      const a = new RedisRateBudget(conn(), keys, { groups, maxConcurrent: 1, timeoutMs: 5000, marginMs: 0 });
      const relC = await a.acquireConcurrency();
      const relR = await a.acquireRate('GET');
      relR();
      relC();
      const ac = new AbortController();
      const p = a.acquireRate('GET', ac.signal);
      setTimeout(() => ac.abort(new Error('stop waiting')), 150);
      await assert.rejects(p, /stop waiting/, 'the abort ends the wait (a slot would come only after the 5 s window)');
      assert.ok(a.msUntilFree('GET') > 1000, `msUntilFree ${a.msUntilFree('GET')}`);
      assert.equal(a.windowMs('GET'), 5000);
      assert.equal(a.windowMs('NONE'), 0);
      await a.acquireRate('NONE'); // no limit: at once
      await a.close();
    });

    it('a penalty (429) set by one instance holds back the others', async function () {
      const groups = { SEND: { calls: 10, windowMs: 1000 } };
      const a = new RedisRateBudget(conn(), keys, { groups, maxConcurrent: 0, timeoutMs: 5000 });
      const b = new RedisRateBudget(conn(), keys, { groups, maxConcurrent: 0, timeoutMs: 5000 });
      const probe = conn();
      a.penalize('SEND', 400);
      // The penalty is written in the background: wait until Redis holds it (however slow the
      // machine), then b must wait out what is left of it.
      let left = -2;
      for (let i = 0; i < 500 && left < 0; i++) {
        left = await probe.run('reading the penalty', (r) => r.pttl(keys.key('pen', 'SEND')), { timeoutMs: 5000 });
        if (left < 0) await sleep(10);
      }
      assert.ok(left > 0, 'the penalty reached Redis');
      const t0 = Date.now();
      (await b.acquireRate('SEND'))();
      const waited = Date.now() - t0;
      assert.ok(waited >= left - 50, `waited ${waited} ms with ${left} ms of a 400 ms penalty left`);
      await a.close();
      await b.close();
    });

    it('close() refuses every waiter', async function () {
      const a = new RedisRateBudget(conn(), keys, { groups: {}, maxConcurrent: 1, timeoutMs: 5000 });
      await a.acquireConcurrency();
      const p = a.acquireConcurrency();
      p.catch(() => {});
      await sleep(50);
      await a.close();
      await assert.rejects(p, (e) => e.code === 'NETWORK');
    });
  });

  describe('TokenSource', function () {
    it('one token fetch for three instances; only the bearer token is in Redis, with its lifetime; renewed once after a 401', async function () {
      let fetches = 0;
      const fetcher = async () => {
        fetches++;
        await sleep(100);
        return { token: `bearer-${fetches}`, expiresInMs: 60_000 };
      };
      const sources = [0, 1, 2].map(() => new RedisTokenSource(conn(), keys, fetcher, { timeoutMs: 3000, skewMs: 10_000 }));
      const tokens = await Promise.all(sources.flatMap((s) => [s.token(), s.token()]));
      assert.equal(fetches, 1);
      assert.deepEqual(new Set(tokens), new Set(['bearer-1']));
      const r = conns[0].client;
      const all = await r.keys(`${keys.tag}*`);
      assert.deepEqual(all, [keys.key('token')], 'the lock is gone; only the token is stored');
      const pttl = await r.pttl(keys.key('token'));
      assert.ok(pttl > 45_000 && pttl <= 50_000, `token ttl ${pttl} ms = lifetime - skew`);
      // All three see a 401 with bearer-1: one new fetch for the fleet.
      assert.deepEqual(sources.map((s) => s.invalidate('bearer-1')), [true, true, true]);
      await sleep(50);
      const renewed = await Promise.all(sources.map((s) => s.token()));
      assert.equal(fetches, 2);
      assert.deepEqual(new Set(renewed), new Set(['bearer-2']));
      assert.equal(sources[0].invalidate('bearer-1'), false, 'a token already renewed once is not renewed again');
      await Promise.all(sources.map((s) => s.close()));
    });

    it('an instance that read no token, then got the lock after another stored one, uses it and does not fetch again', async function () {
      // The race a starved instance runs (seen beside busy loops): its read finds no token, then
      // another instance fetches, stores and unlocks, then this one takes the free lock.
      let fetches = 0;
      const fetcher = async () => {
        fetches++;
        return { token: `bearer-${fetches}`, expiresInMs: 60_000 };
      };
      const real = conn();
      const other = conn();
      let stepIn = true;
      const slow = Object.create(real);
      slow.run = async (label, fn, opts) => {
        if (label === 'locking the token fetch' && stepIn) {
          stepIn = false;
          // Meanwhile the other instance stored its token and let go of the lock.
          await other.run('storing a token as another instance', (r) => r.set(keys.key('token'), 'bearer-other', 'PX', 60_000), { timeoutMs: 3000 });
        }
        return real.run(label, fn, opts);
      };
      const source = new RedisTokenSource(slow, keys, fetcher, { timeoutMs: 3000, skewMs: 10_000 });
      assert.equal(await source.token(), 'bearer-other');
      assert.equal(stepIn, false, 'the lock was taken after the token appeared');
      assert.equal(fetches, 0, 'no second fetch for the fleet');
      assert.equal(await other.run('reading the lock', (r) => r.exists(`${keys.key('token')}:lock`), { timeoutMs: 3000 }), 0, 'the lock is let go');
      await source.close();
    });
  });

  describe('FeedLease and MarkStore', function () {
    it('one active holder with a fencing token; a standby takes over after a release or a crash; a stale fence cannot write the mark', async function () {
      this.timeout(10000);
      const ca = conn();
      const a = new RedisFeedLease(ca, keys, { leaseMs: 400, instanceId: 'a' });
      const b = new RedisFeedLease(conn(), keys, { leaseMs: 400, instanceId: 'b' });
      const states = [];
      a.on('state', (f, s) => states.push(`a:${s}`));
      b.on('state', (f, s) => states.push(`b:${s}`));
      const fa = await a.acquire('status');
      assert.ok(fa > 1.6e12 && Number.isSafeInteger(fa), `a first fence starts from Redis's clock (${fa})`);
      assert.ok(a.held('status'));
      const pb = b.acquire('status');
      await sleep(900);
      assert.ok(a.held('status'), 'renewed while held');
      assert.deepEqual(states, ['a:active', 'b:standby']);
      const marksA = new RedisMarkStore(ca, keys, { timeoutMs: 2000 });
      await marksA.save('status', { fromUtc: '2026-11-23 10:00:00', seen: ['1', '2'], generation: 0 }, fa);
      // The crash: a's connection dies; b takes over within the lease time.
      const t0 = Date.now();
      ca.client.disconnect();
      const fb = await pb;
      const took = Date.now() - t0;
      assert.equal(fb, fa + 1);
      // a renewed every third of its lease (133 ms): its lease had at least 267 ms left at the crash.
      assert.ok(took >= 200, `b took over only once a's lease (400 ms) had lapsed: after ${took} ms`);
      assert.ok(b.held('status'));
      await sleep(300);
      assert.equal(a.held('status'), false);
      const marksB = new RedisMarkStore(conns[1], keys, { timeoutMs: 2000 });
      assert.deepEqual(await marksB.load('status'), { fromUtc: '2026-11-23 10:00:00', seen: ['1', '2'], generation: 0 });
      // a comes back with its old fence: refused.
      await ca.client.connect().catch(() => {});
      await sleep(100);
      await assert.rejects(marksA.save('status', { fromUtc: '2026-11-23 10:00:05', seen: [], generation: 0 }, fa), (e) => e.code === 'SHARED_STATE' && e.reason === 'fenced');
      await marksB.save('status', { fromUtc: '2026-11-23 10:00:05', seen: ['3'], generation: 0 }, fb);
      // A {fromUTC} reset (generation 1, any instance) wins over a poll begun before it.
      await marksA.save('status', { fromUtc: '2026-01-01 00:00:00', seen: [], generation: 1 });
      await assert.rejects(marksB.save('status', { fromUtc: '2026-11-23 10:00:09', seen: [], generation: 0 }, fb), (e) => e.code === 'SHARED_STATE' && e.reason === 'generation');
      assert.deepEqual(await marksB.load('status'), { fromUtc: '2026-01-01 00:00:00', seen: [], generation: 1 });
      // A clean release hands over at once.
      const pa = a.acquire('status');
      await sleep(150);
      await b.release('status');
      assert.equal(await pa, fa + 2);
      await a.close();
      await b.close();
    });
  });

  describe('FeedReader on a shared feed: a former holder emits and writes nothing more (issue 28)', function () {
    let sim;
    beforeEach(async function () {
      sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 } });
      sim.terminal.seedBacklog(2000);
    });
    afterEach(async () => {
      await sim.close();
    });
    const keyOf = (r) => `${r.ID}|${r.State}|${r.StatusUTC}`;
    /** One instance's reader of the shared feed 'status': its lease gives the fence. */
    const reader = (marks, lease, out, extra = {}) =>
      new FeedReader({
        feed: 'status',
        store: marks,
        pageSize: 500,
        startFrom: '2000-01-01 00:00:00',
        key: keyOf,
        time: (r) => r.StatusUTC,
        fetchPage: async (from, signal) => {
          const r = await fetch(`${sim.url}/api/v1.0/get/subaccounts/fw_status_updates?FromUTC=${encodeURIComponent(from)}`, { headers: { authorization: 'Bearer demo-token' }, signal });
          const b = await r.json();
          return { records: b.Statuses ?? [], nextFromUtc: b.NextFromUTC };
        },
        emit: (records) => out.push(...records.map(keyOf)),
        fence: () => lease.fence('status'),
        ...extra,
      });
    const repeats = (...lists) => {
      const all = lists.flat();
      return all.length - new Set(all).size;
    };

    it('a reply that comes back after the lease lapsed (a starved or slow instance) is not emitted: the new holder polls alone', async function () {
      this.timeout(20000);
      const ca = conn();
      const cb = conn();
      // A lease of 3 s: B renews it in time on a busy machine too (600 ms lapsed under load
      // between B taking it and the check below, in one under-load run).
      const leaseA = new RedisFeedLease(ca, keys, { leaseMs: 3000, instanceId: 'a' });
      const leaseB = new RedisFeedLease(cb, keys, { leaseMs: 3000, instanceId: 'b' });
      await leaseA.acquire('status');
      const pb = leaseB.acquire('status');
      const a = [];
      let fetches = 0;
      const readerA = reader(new RedisMarkStore(conn(), keys, { timeoutMs: 2000 }), leaseA, a, {
        fetchPage: async (from, signal) => {
          if (++fetches === 2) {
            // A's lease can no longer be renewed while its request is out; b takes the feed.
            ca.client.disconnect();
            await pb;
          }
          const r = await fetch(`${sim.url}/api/v1.0/get/subaccounts/fw_status_updates?FromUTC=${encodeURIComponent(from)}`, { headers: { authorization: 'Bearer demo-token' }, signal });
          const body = await r.json();
          return { records: body.Statuses ?? [], nextFromUtc: body.NextFromUTC };
        },
      });
      await assert.rejects(readerA.poll(), (e) => e.code === 'SHARED_STATE' && e.reason === 'fenced');
      const afterFirst = a.length;
      assert.ok(afterFirst > 0 && afterFirst <= 500, `a emitted its first reply only (${afterFirst})`);
      assert.ok(leaseB.held('status'));
      const b = [];
      await reader(new RedisMarkStore(cb, keys, { timeoutMs: 2000 }), leaseB, b).poll();
      assert.equal(a.length, afterFirst, 'nothing more from a');
      assert.equal(new Set([...a, ...b]).size, 2000, 'every record emitted');
      assert.equal(repeats(a, b), 0, 'none twice');
      await leaseB.close();
      await leaseA.close();
    });

    it('a mark left unwritten by a former holder cannot overwrite the next holder\'s: taking the feed again repeats nothing', async function () {
      this.timeout(20000);
      const ca = conn();
      const cam = conn();
      const cb = conn();
      const leaseA = new RedisFeedLease(ca, keys, { leaseMs: 2000, instanceId: 'a' });
      const leaseB = new RedisFeedLease(cb, keys, { leaseMs: 2000, instanceId: 'b' });
      const a = [];
      const b = [];
      const readerA = reader(new RedisMarkStore(cam, keys, { timeoutMs: 300 }), leaseA, a, {
        maxPagesPerPoll: 1,
        // The mark write after this reply fails (Redis out of reach for this instance).
        emit: (records) => {
          a.push(...records.map(keyOf));
          cam.client.disconnect();
        },
      });
      const fa = await leaseA.acquire('status');
      await assert.rejects(readerA.poll(), (e) => e.code === 'SHARED_STATE');
      assert.ok(readerA.unwritten, "a's mark is pending");
      const first = a.length;
      // b takes the feed and drains it (repeating a's one reply, whose mark was not written).
      await leaseA.release('status');
      const fb = await leaseB.acquire('status');
      await reader(new RedisMarkStore(cb, keys, { timeoutMs: 2000 }), leaseB, b).poll();
      assert.equal(new Set([...a, ...b]).size, 2000, 'every record emitted');
      await leaseB.release('status');
      // a is back and takes the feed again: its pending mark is of its former lease.
      await cam.client.connect();
      const fa2 = await leaseA.acquire('status');
      assert.ok(fa2 > fb && fb > fa);
      await assert.rejects(readerA.poll(), (e) => e.code === 'SHARED_STATE' && e.reason === 'fenced');
      await readerA.poll();
      await readerA.poll();
      assert.equal(a.length, first, 'nothing emitted again by a');
      assert.ok(repeats(a, b) <= 500, `at most one reply repeated (${repeats(a, b)})`);
      await leaseA.close();
    });
  });

  describe('fence after a restart that lost the data', function () {
    it('a new holder never gets a fence at or below one handed out before (FLUSHALL as a restart without persistence)', async function () {
      const ca = conn();
      const a = new RedisFeedLease(ca, keys, { leaseMs: 5000, instanceId: 'a' });
      const fa = await a.acquire('f');
      await ca.client.flushall();
      await sleep(5);
      const b = new RedisFeedLease(conn(), keys, { leaseMs: 5000, instanceId: 'b' });
      const fb = await b.acquire('f');
      assert.ok(fb > fa, `fence ${fb} after ${fa}`);
      const marks = new RedisMarkStore(ca, keys, { timeoutMs: 2000 });
      await assert.rejects(marks.save('f', { fromUtc: '2026-11-23 10:00:00', seen: [], generation: 0 }, fa), (e) => e.reason === 'fenced');
      await a.close();
      await b.close();
    });
  });

  describe('Redis down', function () {
    it('a caller waits up to its timeout and fails with SHARED_STATE; the connection comes back by itself', async function () {
      this.timeout(20000);
      const c = conn();
      const budget = new RedisRateBudget(c, keys, { groups: { SEND: { calls: 5, windowMs: 1000 } }, maxConcurrent: 2, timeoutMs: 600 });
      (await budget.acquireRate('SEND'))();
      await ctx.server.stop('SIGKILL');
      const t0 = Date.now();
      await assert.rejects(budget.acquireRate('SEND'), (e) => e.code === 'SHARED_STATE' && /could not be reached/.test(e.message));
      const waited = Date.now() - t0;
      assert.ok(waited >= 550, `failed once the timeout (600 ms) had passed: after ${waited} ms`);
      // Restarted while a caller with a longer timeout waits: it gets its slot.
      const patient = new RedisRateBudget(c, keys, { groups: { SEND: { calls: 5, windowMs: 1000 } }, maxConcurrent: 2, timeoutMs: 8000 });
      const p = patient.acquireRate('SEND');
      await sleep(300);
      await ctx.server.start();
      (await p)();
      (await budget.acquireRate('SEND'))();
      await budget.close();
      await patient.close();
    });
  });
});
