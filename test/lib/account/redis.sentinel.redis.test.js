'use strict';
/**
 * The Redis seams in sentinel mode against real redis-servers (issue 28): one master, one
 * replica, three sentinels (test/helpers/redis.js SentinelSet), two "instances" as two
 * connections. The two sequences that broke the failover test
 * (test/nodes/iotgw-redis.sentinel.failover.redis.test.js) in some runs, made to happen:
 * - the sentinels fail over again, to the old master restarted empty before it synced: the
 *   other node resyncs from it and drops the feed's mark, though a replica acknowledged it
 *   (WAIT 1); a standby that took the feed then started from the node's start mark and
 *   emitted everything again (3,300 records on CI's Node 22 line);
 * - ioredis ends a client for good when a failover notice (+switch-master) cuts its
 *   reconnect short (the instance then never reached Redis again).
 */
const assert = require('node:assert/strict');
const { SentinelSet, findRedisServer, freePort, cli } = require('../../helpers/redis');
const { waitFor } = require('../../helpers/child-red');
const { RedisConnection, AccountKeys, RedisFeedLease, RedisMarkStore } = require('../../../dist/lib/account/redis');

(findRedisServer() ? describe : describe.skip)('Redis seams in sentinel mode (real redis-server, sentinels)', function () {
  this.timeout(120000);
  let set;
  const conns = [];
  const leases = [];
  before(async function () {
    set = await new SentinelSet().start();
  });
  after(async function () {
    for (const l of leases) await l.close().catch(() => {});
    for (const c of conns) await c.close();
    if (set) await set.destroy();
  });

  const connect = () => {
    const c = new RedisConnection({ url: 'redis://127.0.0.1:6379/0', mode: 'sentinel', sentinels: set.sentinels.map((s) => ({ host: '127.0.0.1', port: s.port })), masterName: 'mymaster', keyPrefix: 'seam:' });
    c.on('failure', () => {});
    conns.push(c);
    return c;
  };
  const atMaster = (c) => c.ready && c.master() === `127.0.0.1:${set.masterPort()}`;
  const keys = AccountKeys.of('seam:', { baseUrl: 'https://gw.example.com', clientId: 'client-1' });

  it('a mark Redis lost (the sentinels promoted a replica that had not synced) is written back: the next holder goes on from the last holder\'s mark', async function () {
    const ca = connect();
    const cb = connect();
    const marksA = new RedisMarkStore(ca, keys, { timeoutMs: 5000, settleMs: 2000 });
    const marksB = new RedisMarkStore(cb, keys, { timeoutMs: 5000, settleMs: 2000 });
    const lease = (c, id, marks) => {
      const l = new RedisFeedLease(c, keys, { leaseMs: 1200, instanceId: id, observe: (f, t) => marks.observe(f, t) });
      leases.push(l);
      return l;
    };
    const a = lease(ca, 'a', marksA);
    const fa = await a.acquire('status');
    const m1 = { fromUtc: '2026-11-24 10:00:00', seen: ['1'], generation: 0 };
    await marksA.save('status', m1, fa);
    // b stands by and looks at the mark (as at each look at the lease): it knows m1.
    await marksB.observe('status');
    const m2 = { fromUtc: '2026-11-24 10:05:00', seen: ['2', '3'], generation: 0 };
    await marksA.save('status', m2, fa);
    assert.deepEqual(await marksB.load('status'), m2, 'acknowledged by the replica (WAIT 1) and read back');
    await marksB.observe('status');
    const m3 = { fromUtc: '2026-11-24 10:10:00', seen: ['4'], generation: 0 };
    await marksA.save('status', m3, fa);
    await a.release('status');

    const { dead } = await set.killMaster();
    await set.failoverToUnsynced(dead);
    assert.equal(cli(set.masterPort(), 'dbsize'), '0', 'every key is gone, the acknowledged mark too');
    await waitFor(() => atMaster(ca) && atMaster(cb), 30000, 'both connections at the new master');

    // b takes the feed first and finds no mark; a, standing by, writes back the newest it knows.
    const b = lease(cb, 'b', marksB);
    await b.acquire('status');
    const standby = new AbortController();
    const pa = a.acquire('status', standby.signal).catch(() => {});
    try {
      const loaded = await marksB.load('status');
      assert.deepEqual(loaded, m3, `b goes on from a's last mark (b itself knew only m2): ${JSON.stringify(loaded)}`);
      assert.equal(cli(set.masterPort(), 'hget', `seam:{${keys.hash}}:mark:status`, 'fromUtc'), m3.fromUtc);
    } finally {
      standby.abort(new Error('done'));
      await pa;
    }
  });

  it('ioredis ending a client when a failover notice cuts its reconnect short: the connection starts it again', async function () {
    const c = connect();
    await waitFor(() => atMaster(c), 30000, 'the connection to be ready');
    let ended = 0;
    c.client.on('end', () => ended++);
    // What ioredis's FailoverDetector does on +switch-master: the connector is closed while
    // the client asks a sentinel for the master; that connect then fails, status 'end'.
    c.client.once('connecting', () => c.client.connector.disconnect());
    c.client.stream.destroy();
    await waitFor(() => ended > 0, 10000, "ioredis's 'end'");
    assert.equal(await c.run('ping', (r) => r.ping(), { timeoutMs: 15000 }), 'PONG');
    assert.equal(c.master(), `127.0.0.1:${set.masterPort()}`);
  });

  it('an ACL user without ROLE (+@all -role): the writes wait for a replica as before, no NOPERM surfaces', async function () {
    for (const sv of set.servers) if (sv.proc) cli(sv.port, 'acl', 'setuser', 'norole', 'on', '>norole-pw', '~*', '&*', '+@all', '-role');
    const c = new RedisConnection({ url: 'redis://127.0.0.1:6379/0', mode: 'sentinel', sentinels: set.sentinels.map((s) => ({ host: '127.0.0.1', port: s.port })), masterName: 'mymaster', keyPrefix: 'seam:', username: 'norole', password: 'norole-pw' });
    c.on('failure', () => {});
    conns.push(c);
    await waitFor(() => atMaster(c), 30000, 'the connection to be ready');
    const marks = new RedisMarkStore(c, keys, { timeoutMs: 10000 });
    const l = new RedisFeedLease(c, keys, { leaseMs: 3000, instanceId: 'norole' });
    leases.push(l);
    const f = await l.acquire('acl-feed');
    const m = { fromUtc: '2026-11-26 09:00:00', seen: ['1'], generation: 0 };
    await marks.save('acl-feed', m, f);
    assert.deepEqual(await marks.load('acl-feed'), m);
    await l.release('acl-feed');
  });

  // Last: it leaves the set with one node, then two again.
  it('a sentinel that is down: the connection goes on through the others, and neither the master look-up nor the failover watch prints to stderr (their errors are the connection\'s "sentinel-error")', async function () {
    const dead = await freePort();
    const c = new RedisConnection({
      url: 'redis://127.0.0.1:6379/0',
      mode: 'sentinel',
      // The dead one first: the look-up tries it before the others, and the failover watch connects to each.
      sentinels: [{ host: '127.0.0.1', port: dead }, ...set.sentinels.map((s) => ({ host: '127.0.0.1', port: s.port }))],
      masterName: 'mymaster',
      keyPrefix: 'seam:',
    });
    c.on('failure', () => {});
    conns.push(c);
    const told = [];
    c.on('sentinel-error', (err, at) => told.push({ at, message: err.message }));
    const printed = [];
    const realError = console.error;
    console.error = (...a) => {
      printed.push(a.map(String).join(' '));
      realError.apply(console, a);
    };
    try {
      // One error from the look-up, one from the failover watch's client (it connects after the look-up).
      await waitFor(() => c.ready && told.filter((t) => t.at === `127.0.0.1:${dead}`).length >= 2, 30000, `ready, and two errors of the dead sentinel told (${JSON.stringify(told)})`);
      assert.equal(await c.run('ping', (r) => r.ping(), { timeoutMs: 15000 }), 'PONG');
    } finally {
      console.error = realError;
    }
    assert.deepEqual(printed.filter((l) => l.includes('[ioredis]')), [], 'nothing printed by ioredis');
    assert.ok(told.every((t) => /ECONNREFUSED/.test(t.message)), JSON.stringify(told));
  });

  it('a failover that leaves no replica (the old master stays dead): writes acknowledged by the master alone, told once; a replica that joins must acknowledge again (issue 34)', async function () {
    const c = connect();
    const told = { alone: [], replicated: [] };
    c.on('alone', (m) => told.alone.push(m));
    c.on('replicated', (m) => told.replicated.push(m));
    await waitFor(() => atMaster(c), 30000, 'the connection to be ready');
    const marks = new RedisMarkStore(c, keys, { timeoutMs: 10000 });
    const l = new RedisFeedLease(c, keys, { leaseMs: 3000, instanceId: 'alone' });
    leases.push(l);
    const f1 = await l.acquire('alone-feed');
    await marks.save('alone-feed', { fromUtc: '2026-11-26 10:00:00', seen: ['1'], generation: 0 }, f1);
    assert.deepEqual(told.alone, [], 'with a replica online, a replica acknowledges');
    await l.release('alone-feed');

    const { dead } = await set.killMaster();
    await waitFor(() => atMaster(c), 30000, 'the connection at the promoted replica');
    assert.match(cli(set.masterPort(), 'info', 'replication'), /connected_slaves:0/, 'the new master has no replica');
    // The feed goes on: the lease and the mark are written, acknowledged by the master alone.
    const f2 = await l.acquire('alone-feed');
    assert.ok(f2 > f1, 'a new fence');
    const m2 = { fromUtc: '2026-11-26 10:05:00', seen: ['2'], generation: 0 };
    await marks.save('alone-feed', m2, f2);
    await marks.save('alone-feed', { ...m2, seen: ['2', '3'] }, f2);
    assert.deepEqual(await marks.load('alone-feed'), { ...m2, seen: ['2', '3'] });
    assert.deepEqual(told.alone, [`127.0.0.1:${set.masterPort()}`], 'told once, naming the master');

    // A replica joins: told, and its acknowledgement is required again (a replica that stops answering fails the write).
    const aloneMaster = set.masterPort();
    await set.rejoin(dead);
    // The master lists a replica as online only after its first acknowledgement, a moment after the replica's link is up.
    await waitFor(() => /slave0:.*state=online/.test(cli(set.masterPort(), 'info', 'replication')), 30000, 'the master to list its replica online');
    await waitFor(() => atMaster(c), 30000, 'the connection at the master');
    // Online is not yet caught up: a replica that joined acknowledges (once a second) only after its sync,
    // so the write waits for its offset to reach the master's (on a busy machine the 2 s wait was not enough).
    await waitFor(() => {
      const info = cli(set.masterPort(), 'info', 'replication');
      const master = Number(/master_repl_offset:(\d+)/.exec(info)?.[1]);
      const acked = Number(/slave0:.*offset=(\d+)/.exec(info)?.[1]);
      return acked > 0 && acked >= master;
    }, 30000, 'the replica to acknowledge the master\'s offset');
    await marks.save('alone-feed', { ...m2, seen: ['4'] }, f2);
    // Told, unless the sentinels failed back to the rejoined node (then the master told about is gone).
    if (set.masterPort() === aloneMaster) assert.equal(told.replicated.length, 1, 'told that a replica acknowledges again');
    const replica = set.servers.find((s) => s.port !== set.masterPort() && s.proc);
    replica.proc.kill('SIGSTOP');
    try {
      await assert.rejects(marks.save('alone-feed', { ...m2, seen: ['5'] }, f2), (err) => err.code === 'SHARED_STATE' && err.reason === 'unacknowledged');
    } finally {
      replica.proc.kill('SIGCONT');
    }
    assert.equal(told.alone.length, 1, 'still one warning');
  });
});
