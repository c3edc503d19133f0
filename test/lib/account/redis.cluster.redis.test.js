'use strict';
/**
 * The Redis seams in cluster mode against a real Redis Cluster (three masters with a
 * replica each, test/helpers/redis.js ClusterSet), issue 34: the master of the account's
 * slot is SIGKILLed and left dead; its replica takes the slot over with no replica of its
 * own. The feed goes on: its lease and mark are acknowledged by that master alone (told
 * once), where they failed SHARED_STATE "no replica acknowledged" until the old master came
 * back.
 */
const assert = require('node:assert/strict');
const { describeRedis, cli } = require('../../helpers/redis');
const { waitFor } = require('../../helpers/child-red');
const { RedisConnection, AccountKeys, RedisFeedLease, RedisMarkStore } = require('../../../dist/lib/account/redis');

describeRedis('Redis seams in cluster mode (real Redis Cluster)', function (ctx) {
  this.timeout(120000);
  const conns = [];
  after(async function () {
    for (const c of conns) await c.close();
  });

  it("a shard whose replica took over, the old master left dead: the feed's lease and mark are acknowledged by the new master alone, told once", async function () {
    const c = new RedisConnection({ url: 'redis://127.0.0.1:6379/0', mode: 'cluster', nodes: ctx.cluster.servers.slice(0, 2).map((s) => ({ host: '127.0.0.1', port: s.port })), keyPrefix: 'cl:' });
    conns.push(c);
    c.on('failure', () => {});
    const alone = [];
    c.on('alone', (m) => alone.push(m));
    const keys = AccountKeys.of('cl:', { baseUrl: 'https://gw.example.com', clientId: 'cluster-alone' });
    const markKey = keys.key('mark', 'status');
    const slot = Number(cli(ctx.cluster.servers[0].port, 'cluster', 'keyslot', markKey));
    const marks = new RedisMarkStore(c, keys, { timeoutMs: 10000 });
    const lease = new RedisFeedLease(c, keys, { leaseMs: 3000, instanceId: 'x' });
    const f1 = await lease.acquire('status');
    await marks.save('status', { fromUtc: '2026-11-26 10:00:00', seen: ['1'], generation: 0 }, f1);
    assert.deepEqual(alone, [], 'a replica acknowledges while there is one');
    await lease.release('status');

    const { dead } = await ctx.cluster.killMasterOf(slot);
    const now = ctx.cluster.masterOfSlot(slot);
    assert.notEqual(now, dead.port);
    await waitFor(() => c.master(markKey) === `127.0.0.1:${now}`, 30000, 'the client to know the new master of the slot');
    assert.match(cli(now, 'info', 'replication'), /connected_slaves:0/, 'the new master has no replica');
    const f2 = await lease.acquire('status');
    assert.ok(f2 > f1);
    const m = { fromUtc: '2026-11-26 10:05:00', seen: ['2'], generation: 0 };
    await marks.save('status', m, f2);
    await marks.save('status', { ...m, seen: ['2', '3'] }, f2);
    assert.deepEqual(await marks.load('status'), { ...m, seen: ['2', '3'] });
    assert.deepEqual(alone, [`127.0.0.1:${now}`], 'told once, naming the master');
    await lease.release('status');
  });
}, { cluster: true });
