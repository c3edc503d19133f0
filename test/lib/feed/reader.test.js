'use strict';
/**
 * The feed-reading core (src/lib/feed) on its own, against the strict simulator over
 * loopback, with its durable file store: what the pollers build on.
 */
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { startSimulator, formatUtc } = require('../../../dist/simulator');
const { FeedReader, FileMarkStore, ContextMarkStore, FallbackMarkStore, startMark, isUtcTime } = require('../../../dist/lib/feed');

describe('feed core: FeedReader with a FileMarkStore against the strict simulator', function () {
  let sim;
  let dir;
  beforeEach(async function () {
    sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 } });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iotgw-feed-'));
  });
  afterEach(async function () {
    await sim.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  function reader(store, emitted, extra = {}) {
    return new FeedReader({
      feed: 'status-test',
      store,
      pageSize: 500,
      startFrom: '2000-01-01 00:00:00',
      key: (r) => `${r.ID}|${r.State}|${r.StatusUTC}`,
      time: (r) => r.StatusUTC,
      fetchPage: async (from, signal) => {
        const r = await fetch(`${sim.url}/api/v1.0/get/subaccounts/fw_status_updates?FromUTC=${encodeURIComponent(from)}`, { headers: { authorization: 'Bearer demo-token' }, signal });
        const b = await r.json();
        return { records: b.Statuses ?? [], nextFromUtc: b.NextFromUTC };
      },
      emit: (records) => emitted.push(...records),
      ...extra,
    });
  }

  it('drains a backlog once, writes mark + seen keys + generation in one file, and a second reader resumes with no repeat', async function () {
    sim.terminal.seedBacklog(1234);
    const store = new FileMarkStore(dir);
    const out = [];
    const r1 = reader(store, out);
    const res = await r1.poll();
    assert.equal(out.length, 1234);
    assert.equal(res.emitted, 1234);
    const onDisk = JSON.parse(fs.readFileSync(path.join(dir, 'status-test.json'), 'utf8'));
    assert.equal(onDisk.fromUtc, out[out.length - 1].StatusUTC);
    assert.equal(onDisk.seen.length, out.filter((r) => r.StatusUTC === onDisk.fromUtc).length, 'the keys of the mark\'s second');
    assert.equal(onDisk.generation, 0);
    assert.deepEqual(fs.readdirSync(dir), ['status-test.json'], 'no temporary file left');
    sim.terminal.addStatusRecords(3, Math.floor(Date.now() / 1000));
    const again = [];
    await reader(new FileMarkStore(dir), again).poll();
    assert.equal(again.length, 3, 'a fresh reader on the same file: only the new records');
  });

  it('a reset during a fetch wins: the reply is dropped, the mark is the reset one, the generation moved', async function () {
    sim.terminal.addStatusRecords(5, Math.floor(Date.now() / 1000) - 50);
    sim.inject({ route: 'terminal/status', delayMs: 400, phase: 'after' });
    const store = new FileMarkStore(dir);
    const out = [];
    const r = reader(store, out);
    const p = r.poll();
    await new Promise((res) => setTimeout(res, 100));
    const reset = formatUtc(Math.floor(Date.now() / 1000) - 10);
    await r.reset(reset);
    await p;
    assert.equal(out.length, 0, 'nothing from the reply begun before the reset');
    const m = await store.load('status-test');
    assert.equal(m.fromUtc, reset);
    assert.equal(m.generation, 1);
    const froms = sim.server.callsTo('terminal/status').map((c) => new URLSearchParams(c.query).get('FromUTC'));
    assert.deepEqual(froms, ['2000-01-01 00:00:00', reset]);
  });

  it('a crowded second: one step past it, onCrowded once, no loop', async function () {
    const sec = Math.floor(Date.now() / 1000) - 30;
    sim.terminal.addStatusRecords(1200, sec);
    sim.terminal.addStatusRecords(7, sec + 2);
    const crowded = [];
    const out = [];
    const r = reader(new FileMarkStore(dir), out, { onCrowded: (c) => crowded.push(c) });
    await r.poll();
    await r.poll();
    assert.deepEqual(crowded, [{ second: formatUtc(sec), fetched: 500 }]);
    assert.equal(out.length, 507);
    assert.equal(new Set(out.map((o) => o.ID)).size, 507);
    assert.ok(sim.server.callsTo('terminal/status').length <= 4);
  });

  it('the start mark is written with the first reply, even an empty one (a restart keeps the first start)', async function () {
    const store = new FileMarkStore(dir);
    const start = formatUtc(Math.floor(Date.now() / 1000) - 5);
    await reader(store, [], { startFrom: start }).poll();
    assert.equal((await new FileMarkStore(dir).load('status-test')).fromUtc, start);
    const later = [];
    sim.terminal.addStatusRecords(2, Math.floor(Date.now() / 1000) - 3);
    await reader(new FileMarkStore(dir), later, { startFrom: formatUtc(Math.floor(Date.now() / 1000)) }).poll();
    assert.equal(later.length, 2, 'the restarted reader began at the first start, not at its own');
  });

  it('stores: a context store keeps the same shape; an old plain-string mark is read once; start marks are real dates', async function () {
    const values = new Map([['nextFromUTC', '2025-01-02 03:04:05']]);
    const ctx = { get: (k, _s, cb) => cb(null, values.get(k)), set: (k, v, _s, cb) => (values.set(k, v), cb()) };
    const cstore = new ContextMarkStore(ctx, undefined, 'feedMark', 'nextFromUTC');
    assert.deepEqual(await cstore.load('x'), { fromUtc: '2025-01-02 03:04:05', seen: [], generation: 0 });
    const both = new FallbackMarkStore(new FileMarkStore(dir), cstore);
    assert.equal((await both.load('x')).fromUtc, '2025-01-02 03:04:05', 'migrated from context');
    await both.save('x', { fromUtc: '2025-01-02 03:04:06', seen: ['a'], generation: 2 });
    assert.equal((await new FileMarkStore(dir).load('x')).fromUtc, '2025-01-02 03:04:06', 'saved to the file');
    assert.equal(isUtcTime('2026-13-45 99:00:00'), false);
    assert.equal(isUtcTime('2024-02-29 23:59:59'), true);
    assert.equal(isUtcTime('2025-02-29 00:00:00'), false);
    assert.throws(() => startMark('2026-13-45 99:00:00'), (e) => e.code === 'BAD_INPUT');
    assert.equal(startMark('-1h', Date.UTC(2026, 0, 1, 12, 0, 0)), '2026-01-01 11:00:00');
    assert.throws(() => reader(new FileMarkStore(dir), [], { startFrom: '2026-13-45 99:00:00' }), (e) => e.code === 'BAD_INPUT');
  });
});
