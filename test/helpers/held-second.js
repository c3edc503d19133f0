'use strict';
/**
 * Feed readers of the simulator's status feed, the feed core's per-test set-up, and the run of
 * 120 polls of a gateway that holds NextFromUTC on one second, 499 new records a reply (issue 43),
 * for the feed core's tests with each mark store.
 */
const assert = require('node:assert/strict');
const { formatUtc } = require('../../dist/simulator');
const { FeedReader, FEED_BOUNDS } = require('../../dist/lib/feed');

/** The most keys a mark keeps (FEED_BOUNDS.maxSeen). */
const BOUND = 10_000;

/**
 * A FeedReader of the simulator's status feed over loopback (pages of 500, a record's key
 * ID|State|StatusUTC), feed `status-test` from 2000-01-01 to `store`; `options` (emit and any
 * other) override.
 */
function simStatusReader(sim, store, options) {
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
    ...options,
  });
}

/** A reader of the simulator's status feed from an hour ago, its events counted in `seen`. */
function statusReader(sim, store, seen, extra = {}) {
  return simStatusReader(sim, store, {
    feed: 'status-bounds',
    startFrom: formatUtc(Math.floor(Date.now() / 1000) - 3600),
    emit: (records) => {
      for (const r of records) seen.ids.add(String(r.ID));
      seen.emitted += records.length;
    },
    onOverfull: (o) => seen.overfull.push(o),
    onKeysDropped: (d) => seen.dropped.push(d),
    ...extra,
  });
}

/**
 * Mocha hooks of the feed core's tests: before each test a simulator with its limits off and a
 * temporary directory (named from `prefix`), given to `use(sim, dir)`; both gone after it.
 */
function simAndDirPerTest(prefix, use) {
  const fs = require('node:fs');
  const os = require('node:os');
  const path = require('node:path');
  const { startSimulator } = require('../../dist/simulator');
  let sim;
  let dir;
  beforeEach(async function () {
    sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 } });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    use(sim, dir);
  });
  afterEach(async function () {
    await sim.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
}

/**
 * 120 polls of a gateway holding NextFromUTC on one second, 499 new records a reply (the issue's
 * figure: one under a full reply, so never a crowded second): 59,880 records, the mark's bound of
 * 10,000 keys outgrown in five seconds in turn and the 50,000 recent keys outgrown too. The mark
 * stays bounded and the feed goes on. (It was 2,000 polls of 100: the same proof at 200,000
 * records, 19 s of a core for the file store and 29 s for Redis; the cost is per record.)
 */
async function holdOnOneSecond(sim, store, readStored) {
  const perReply = 499;
  const polls = 120;
  sim.terminal.configure({ heldSecondRecords: perReply });
  const seen = { ids: new Set(), emitted: 0, overfull: [], dropped: [] };
  const r = statusReader(sim, store, seen);
  let most = 0;
  const start = (await r.load()).fromUtc;
  for (let i = 0; i < polls; i++) {
    const res = await r.poll();
    assert.equal(res.emitted, perReply, `poll ${i}: the held second's new records go out`);
    most = Math.max(most, r.mark.seen.length);
    if (i % 15 === 0) assert.ok((await readStored()).seen.length <= BOUND, `poll ${i}: the stored mark is bounded`);
  }
  assert.equal(seen.emitted, polls * perReply);
  assert.ok(seen.emitted > FEED_BOUNDS.recentKeys, 'more records than the recent keys a reader remembers');
  assert.equal(seen.ids.size, seen.emitted, 'each record once');
  assert.ok(most <= BOUND, `the mark kept at most ${BOUND} keys (most: ${most})`);
  assert.ok(most > BOUND - perReply, `the mark filled up to its bound (most: ${most})`);
  // 59,880 records at 499 a reply, 10,000 keys a second: the mark stepped past 5 seconds.
  assert.equal(seen.overfull.length, Math.floor((polls * perReply - 1) / (BOUND + perReply)));
  assert.ok(seen.overfull.length >= 5);
  seen.overfull.forEach((o, i) => {
    assert.equal(o.bound, BOUND);
    assert.ok(o.keys > BOUND);
    assert.equal(o.second, formatUtc(Math.floor(Date.parse(`${start.replace(' ', 'T')}Z`) / 1000) + i), 'one warning per second stepped past, in turn');
  });
  assert.equal(r.mark.fromUtc, formatUtc(Math.floor(Date.parse(`${start.replace(' ', 'T')}Z`) / 1000) + seen.overfull.length));
  return { seen, reader: r };
}

module.exports = { holdOnOneSecond, simAndDirPerTest, simStatusReader, statusReader };
