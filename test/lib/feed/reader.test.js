'use strict';
/**
 * The feed-reading core (src/lib/feed) on its own, against the strict simulator over
 * loopback, with its durable file store: what the pollers build on.
 */
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { formatUtc } = require('../../../dist/simulator');
const { simAndDirPerTest, simStatusReader } = require('../../helpers/held-second');
const { FeedReader, FileMarkStore, ContextMarkStore, FallbackMarkStore, RecentKeys, startMark, isUtcTime } = require('../../../dist/lib/feed');

describe('feed core: FeedReader with a FileMarkStore against the strict simulator', function () {
  let sim;
  let dir;
  simAndDirPerTest('iotgw-feed-', (s, d) => ((sim = s), (dir = d)));

  /** A reader of the simulator's status feed (simStatusReader) whose records go to `emitted`. */
  const reader = (store, emitted, extra = {}) => simStatusReader(sim, store, { emit: (records) => emitted.push(...records), ...extra });


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

  describe('faults (issue 25)', function () {
    const sec = (s) => formatUtc(s);
    /** A store in memory whose saves fail while `broken` is set. */
    const flakyStore = () => {
      const st = { marks: new Map(), broken: false, saves: 0 };
      st.load = async (f) => st.marks.get(f);
      st.save = async (f, m) => {
        st.saves++;
        if (st.broken) throw Object.assign(new Error(`ENOSPC: no space left on device, open '${dir}/x'`), { code: 'ENOSPC' });
        st.marks.set(f, JSON.parse(JSON.stringify(m)));
      };
      return st;
    };
    /** A feed of `pages` replies of `per` records, one second per reply, from `base`. */
    const feed = (base, per, pages) => {
      const asked = [];
      const fetchPage = async (from) => {
        asked.push(from);
        const i = Math.max(0, Math.floor(Date.parse(from.replace(' ', 'T') + 'Z') / 1000) - base);
        if (i >= pages) return { records: [], nextFromUtc: null };
        const records = Array.from({ length: per }, (_, k) => ({ id: `${i}-${k}`, t: sec(base + i) }));
        return { records, nextFromUtc: sec(base + i) };
      };
      return { asked, fetchPage };
    };
    const opts = (store, f, emitted, extra = {}) => ({
      feed: 'f',
      store,
      pageSize: 3,
      startFrom: sec(1_700_000_000),
      key: (r) => r.id,
      time: (r) => r.t,
      fetchPage: f.fetchPage,
      emit: (rs) => emitted.push(...rs.map((r) => r.id)),
      ...extra,
    });

    it('a mark that cannot be written: STORAGE once, no fetch until it is, then on with nothing repeated', async function () {
      const store = flakyStore();
      const f = feed(1_700_000_000, 3, 6);
      const emitted = [];
      const r = new FeedReader(opts(store, f, emitted));
      store.broken = true;
      await assert.rejects(r.poll(), (e) => e.code === 'STORAGE' && /ENOSPC/.test(e.message) && !e.message.includes(dir));
      assert.equal(f.asked.length, 1);
      assert.equal(emitted.length, 3, 'the reply in flight went out');
      assert.equal(r.unwritten, true);
      await assert.rejects(r.poll(), (e) => e.code === 'STORAGE');
      assert.equal(f.asked.length, 1, 'nothing fetched while the mark cannot be written');
      store.broken = false;
      await r.poll();
      assert.equal(new Set(emitted).size, emitted.length, 'no repeat');
      assert.equal(emitted.length, 18);
    });

    it('a torn or garbage mark file is kept aside and never read as "no mark"; a context store holding garbage too', async function () {
      for (const text of ['{"fromUtc":"2026-01-01 00:0', '{"fromUtc":"garbage"}', 'null', '{"fromUtc":"2026-01-01 00:00:00","seen":7}']) {
        const d = fs.mkdtempSync(path.join(dir, 'm-'));
        fs.writeFileSync(path.join(d, 'f.json'), text);
        const store = new FileMarkStore(d, 'iotgw-feeds');
        await assert.rejects(store.load('f'), (e) => e.code === 'STORAGE' && /iotgw-feeds\/f\.json\.bad-/.test(e.message) && !e.message.includes(d));
        const bad = fs.readdirSync(d);
        assert.equal(bad.length, 1);
        assert.equal(fs.readFileSync(path.join(d, bad[0]), 'utf8'), text);
        await assert.rejects(new FileMarkStore(d).load('f'), (e) => e.code === 'STORAGE' && /fromUTC/.test(e.message), 'a new store (a restart) still refuses');
        const f = feed(1_700_000_000, 1, 1);
        const r = new FeedReader(opts(new FileMarkStore(d), f, []));
        await assert.rejects(r.poll(), (e) => e.code === 'STORAGE');
        assert.equal(f.asked.length, 0, 'no poll');
        await r.reset(sec(1_700_000_000));
        await r.poll();
        assert.equal(f.asked.length >= 1, true, 'a reset goes on');
      }
      const values = new Map([['feedMark', { fromUtc: 42 }]]);
      const ctx = { get: (k, _s, cb) => cb(null, values.get(k)), set: (k, v, _s, cb) => (values.set(k, v), cb()) };
      await assert.rejects(new ContextMarkStore(ctx, 'file').load('x'), (e) => e.code === 'STORAGE' && /context store "file"/.test(e.message));
      assert.deepEqual(values.get([...values.keys()].find((k) => k.startsWith('feedMark-bad-'))), { fromUtc: 42 });
      assert.deepEqual(values.get('feedMark'), { fromUtc: 42 }, 'not overwritten');
    });

    it('replies past the rules: too many records and a NextFromUTC a day ahead are BAD_RESPONSE, the mark kept; a poll reads at most maxPagesPerPoll replies', async function () {
      const store = flakyStore();
      const emitted = [];
      const start = sec(1_700_000_000);
      // More than the API's 500 (a "Full at" below it only says when a reply counts as full).
      const big = { fetchPage: async () => ({ records: Array.from({ length: 501 }, (_, i) => ({ id: `${i}`, t: start })), nextFromUtc: start }) };
      await assert.rejects(new FeedReader(opts(store, big, emitted)).poll(), (e) => e.code === 'BAD_RESPONSE' && /501 records, more than the 500/.test(e.message));
      const ahead = { fetchPage: async () => ({ records: [{ id: 'a', t: start }], nextFromUtc: '9999-12-31 23:59:59' }) };
      await assert.rejects(new FeedReader(opts(store, ahead, emitted)).poll(), (e) => e.code === 'BAD_RESPONSE' && /ahead of this machine's clock/.test(e.message));
      assert.equal(emitted.length, 0);
      assert.equal(store.marks.size, 0, 'no mark written');
      const f = feed(1_700_000_000, 3, 1000);
      const r = new FeedReader(opts(store, f, emitted, { maxPagesPerPoll: 7 }));
      const res = await r.poll();
      assert.equal(res.pages, 7);
      assert.equal(res.capped, true);
      await r.poll();
      assert.equal(f.asked.length, 14, 'the next poll goes on');
      assert.equal(new Set(emitted).size, 42);
    });

    it('a key emitted before comes again at a later second: not emitted again; the memory is bounded', async function () {
      const store = flakyStore();
      const emitted = [];
      let n = 0;
      const again = { fetchPage: async () => ({ records: [{ id: 'same', t: sec(1_700_000_000 + n) }, { id: `new${n}`, t: sec(1_700_000_000 + n++) }], nextFromUtc: sec(1_700_000_000 + n - 1) }) };
      const r = new FeedReader(opts(store, again, emitted, { pageSize: 500 }));
      for (let i = 0; i < 5; i++) await r.poll();
      assert.deepEqual(emitted.filter((k) => k === 'same'), ['same']);
      const keys = new RecentKeys(3);
      for (const k of ['a', 'b', 'c', 'd']) keys.add(k);
      assert.equal(keys.count, 3);
      assert.equal(keys.has('a'), false, 'the oldest is forgotten first');
      assert.equal(keys.has('d'), true);
    });
  });
});
