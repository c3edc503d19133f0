'use strict';
/**
 * The mark's bounds through a real redis-server (issue 43, finding 6): 120 polls of a gateway
 * holding NextFromUTC on one second, 499 new records each, keep the Redis mark bounded; a mark grown past the
 * connection's 8 MiB reply bound (as older versions wrote) is read without its keys: one
 * warning, the feed goes on from its second, the connection is never dropped for it.
 */
const assert = require('node:assert/strict');
const { describeRedis, cli } = require('../../helpers/redis');
const { holdOnOneSecond, statusReader } = require('../../helpers/held-second');
const { RedisConnection, AccountKeys, RedisMarkStore } = require('../../../dist/lib/account/redis');
const { startSimulator, formatUtc } = require('../../../dist/simulator');
const { FEED_BOUNDS } = require('../../../dist/lib/feed');

describeRedis('feed core: the mark is bounded in Redis too (issue 43)', function (ctx) {
  this.timeout(120000);
  let sim;
  let conn;
  let keys;
  let n = 0;
  const failures = [];
  beforeEach(async function () {
    sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 } });
    conn = new RedisConnection({ url: ctx.server.url, keyPrefix: 'iotgw:' });
    conn.on('failure', (e) => failures.push(e));
    failures.length = 0;
    keys = AccountKeys.of('iotgw:', { baseUrl: sim.url, clientId: `bounds-${++n}` });
  });
  afterEach(async function () {
    await conn.close();
    await sim.close();
  });

  it('a gateway holding NextFromUTC on one second for 120 polls of 499 new records: the Redis mark stays bounded, the feed goes on', async function () {
    const store = new RedisMarkStore(conn, keys, { timeoutMs: 5000 });
    const other = new RedisMarkStore(conn, keys, { timeoutMs: 5000 });
    await holdOnOneSecond(sim, store, () => other.load('status-bounds'));
    const bytes = Number(await cli(ctx.server.port, 'HSTRLEN', keys.key('mark', 'status-bounds'), 'seen'));
    assert.ok(bytes < 1024 * 1024, `the stored keys stay under 1 MB (${bytes} bytes)`);
  });

  it('a mark over the 8 MiB reply bound: read without its keys, one warning, the feed goes on from its second', async function () {
    const sec = Math.floor(Date.now() / 1000) - 100;
    const key = keys.key('mark', 'status-bounds');
    // 9.5 MB of keys, as an older version wrote them for a second that never ended.
    const big = JSON.stringify(Array.from({ length: 250_000 }, (_, i) => `${30_000_000_000 + i}|4|${formatUtc(sec)}`));
    assert.ok(big.length > 8 * 1024 * 1024);
    const writer = new RedisConnection({ url: ctx.server.url, keyPrefix: 'iotgw:' });
    writer.on('failure', () => {});
    try {
      await writer.run('seeding an old mark', (r) => r.hset(key, 'fromUtc', formatUtc(sec), 'seen', big, 'generation', '2', 'fence', ''), { timeoutMs: 10000 });
    } finally {
      await writer.close();
    }
    sim.terminal.addStatusRecords(4, sec);
    sim.terminal.addStatusRecords(2, sec + 5);
    const seen = { ids: new Set(), emitted: 0, overfull: [], dropped: [] };
    const r = statusReader(sim, new RedisMarkStore(conn, keys, { timeoutMs: 5000 }), seen);
    await r.poll();
    await r.poll();
    assert.equal(seen.dropped.length, 1, 'one warning');
    assert.equal(seen.dropped[0].second, formatUtc(sec));
    assert.match(seen.dropped[0].why, /its keys are 8\.\d MiB, more than the 4 MiB read back/);
    assert.equal(seen.emitted, 6, "nothing lost: the records of the mark's own second and after");
    assert.deepEqual(failures, [], 'the connection was never dropped');
    const stored = await new RedisMarkStore(conn, keys, { timeoutMs: 5000 }).load('status-bounds');
    assert.equal(stored.fromUtc, formatUtc(sec + 5));
    assert.equal(stored.seen.length, 2, 'the mark without the old keys is written');
    assert.equal(stored.keysUnread, undefined);
    assert.ok(stored.seen.length <= FEED_BOUNDS.maxSeen);
  });
});
