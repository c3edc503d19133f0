'use strict';
/**
 * The mark's bounds (issue 43, finding 6) against the strict simulator over loopback: a
 * gateway whose NextFromUTC stays on one second while each reply brings 499 new records (the
 * simulator's `heldSecondRecords`) for 120 polls, the mark's bound outgrown five times; a stored mark with more keys than a mark
 * keeps; keys longer than a mark keeps as they are.
 */
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { formatUtc } = require('../../../dist/simulator');
const { FileMarkStore, FEED_BOUNDS } = require('../../../dist/lib/feed');
const { holdOnOneSecond, simAndDirPerTest, statusReader } = require('../../helpers/held-second');
const { nextMark, checkReply, markKey, MAX_KEY_CHARS } = require('../../../dist/lib/feed/reply');

describe('feed core: the mark is bounded (issue 43)', function () {
  this.timeout(120000);
  let sim;
  let dir;
  simAndDirPerTest('iotgw-bounds-', (s, d) => ((sim = s), (dir = d)));

  it('a gateway holding NextFromUTC on one second for 120 polls of 499 new records: the mark (and its file) stay bounded, each record once, the feed goes on', async function () {
    const store = new FileMarkStore(dir);
    const file = path.join(dir, 'status-bounds.json');
    await holdOnOneSecond(sim, store, async () => JSON.parse(fs.readFileSync(file, 'utf8')));
    assert.ok(fs.statSync(file).size < 1024 * 1024, `the mark file stays under 1 MB (${fs.statSync(file).size} bytes)`);
  });

  it('a stored mark with more keys than a mark keeps: one warning, the feed goes on from its own second without them', async function () {
    const sec = Math.floor(Date.now() / 1000) - 100;
    const store = new FileMarkStore(dir);
    const big = Array.from({ length: 50_000 }, (_, i) => `${30_000_000_000 + i}|4|${formatUtc(sec)}`);
    await store.save('status-bounds', { fromUtc: formatUtc(sec), seen: big, generation: 3 });
    sim.terminal.addStatusRecords(4, sec);
    sim.terminal.addStatusRecords(2, sec + 5);
    const seen = { ids: new Set(), emitted: 0, overfull: [], dropped: [] };
    const r = statusReader(sim, new FileMarkStore(dir), seen);
    await r.poll();
    await r.poll();
    assert.deepEqual(seen.dropped, [{ second: formatUtc(sec), why: `50000 keys, more than the ${FEED_BOUNDS.maxSeen} a mark keeps` }]);
    assert.equal(seen.emitted, 6, "nothing lost: the records of the mark's own second and after");
    const onDisk = JSON.parse(fs.readFileSync(path.join(dir, 'status-bounds.json'), 'utf8'));
    assert.equal(onDisk.fromUtc, formatUtc(sec + 5));
    assert.equal(onDisk.seen.length, 2, 'the mark without the old keys is written');
    assert.equal(onDisk.generation, 3);
  });

  it('nextMark (unit): a second over maxSeen keys is stepped past; a long key is kept as its SHA-256', function () {
    const from = '2026-01-01 00:00:00';
    const recs = Array.from({ length: 5 }, (_, i) => ({ id: `r${i}`, t: from }));
    const rules = { pageSize: 500, time: (x) => x.t, maxAheadMs: 1e15, now: () => Date.now() };
    const reply = checkReply(recs, from, from, rules);
    const key = (x) => x.id;
    const kept = nextMark(reply, { fromUtc: from, seen: ['a', 'b'], generation: 0 }, 0, false, key, 7);
    assert.equal(kept.next.fromUtc, from);
    assert.equal(kept.next.seen.length, 7);
    assert.equal(kept.overfull, undefined);
    const over = nextMark(reply, { fromUtc: from, seen: ['a', 'b', 'c'], generation: 0 }, 0, false, key, 7);
    assert.deepEqual(over.overfull, { second: from, keys: 8, bound: 7 });
    assert.deepEqual(over.next, { fromUtc: '2026-01-01 00:00:01', seen: [], generation: 0 });
    const long = 'x'.repeat(MAX_KEY_CHARS + 1);
    assert.match(markKey(long), /^#sha256:[0-9a-f]{64}$/);
    assert.equal(markKey('x'.repeat(MAX_KEY_CHARS)), 'x'.repeat(MAX_KEY_CHARS));
  });
});

