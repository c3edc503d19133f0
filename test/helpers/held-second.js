'use strict';
/**
 * Feed readers of the simulator's status feed, the feed core's per-test set-up, and the run of
 * 2,000 polls of a gateway that holds NextFromUTC on one second (issue 43), for the feed core's
 * tests with each mark store.
 */
const assert = require('node:assert/strict');
const { formatUtc } = require('../../dist/simulator');
const { FeedReader } = require('../../dist/lib/feed');

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

/** 2,000 polls of a gateway holding NextFromUTC on one second: the mark stays bounded and the feed goes on. */
async function holdFor2000Polls(sim, store, readStored) {
  const perReply = 100;
  sim.terminal.configure({ heldSecondRecords: perReply });
  const seen = { ids: new Set(), emitted: 0, overfull: [], dropped: [] };
  const r = statusReader(sim, store, seen);
  let most = 0;
  const start = (await r.load()).fromUtc;
  for (let i = 0; i < 2000; i++) {
    const res = await r.poll();
    assert.equal(res.emitted, perReply, `poll ${i}: the held second's new records go out`);
    most = Math.max(most, r.mark.seen.length);
    if (i % 250 === 0) assert.ok((await readStored()).seen.length <= BOUND, `poll ${i}: the stored mark is bounded`);
  }
  assert.equal(seen.emitted, 2000 * perReply);
  assert.equal(seen.ids.size, seen.emitted, 'each record once');
  assert.ok(most <= BOUND, `the mark kept at most ${BOUND} keys (most: ${most})`);
  // 200,000 records at 100 a reply, 10,000 keys a second: the mark stepped past 19 seconds.
  assert.equal(seen.overfull.length, Math.floor((2000 * perReply - 1) / (BOUND + perReply)));
  seen.overfull.forEach((o, i) => {
    assert.equal(o.bound, BOUND);
    assert.ok(o.keys > BOUND);
    assert.equal(o.second, formatUtc(Math.floor(Date.parse(`${start.replace(' ', 'T')}Z`) / 1000) + i), 'one warning per second stepped past, in turn');
  });
  assert.equal(r.mark.fromUtc, formatUtc(Math.floor(Date.parse(`${start.replace(' ', 'T')}Z`) / 1000) + seen.overfull.length));
  return { seen, reader: r };
}

module.exports = { holdFor2000Polls, simAndDirPerTest, simStatusReader, statusReader };
