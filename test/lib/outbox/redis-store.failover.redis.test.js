'use strict';
/**
 * An outbox accept acknowledged through a master failover (issue 45; nodes.md "Accepted means
 * durable"; docs/redis.md "What each promise costs through a master failover"), with real
 * parts: a Sentinel set (a master, a replica, three sentinels) and the Redis outbox store in
 * sentinel mode.
 *
 * The replica lags (stopped with SIGSTOP behind 32 MB of other writes, so the accept stays in
 * the master's own output buffer, never sent), the accept's script runs on the master and its
 * WAIT 1 waits; the master is SIGKILLed, the replica resumed and promoted. WAIT counts the
 * writes of its own connection: the WAIT asked again on the new master (the connection's retry)
 * counted nothing of the accept. Before the fix the accept resolved there (acknowledged by the
 * new master "alone"), and the msg was not in Redis: an entry acknowledged as accepted, lost.
 * Now a write whose master changed before its acknowledgement is run again on the new master
 * (each store script is safe to run twice): the accept resolves with the msg in Redis.
 *
 * First (the set still whole), a send's mark that no replica acknowledged: see its case.
 */
const assert = require('node:assert/strict');
const { SentinelSet, findRedisServer, cli } = require('../../helpers/redis');
const { RedisConnection, AccountKeys, RedisOutboxStore } = require('../../../dist/lib/account/redis');

const msg = (key) => ({ key, msgId: `id-${key}`, json: { topic: key }, acceptedAt: 1, entryIds: [`${key}/0`] });
const entry = (key) => ({ id: `${key}/0`, msgKey: key, kind: 'message', item: { n: key }, priority: 4, seq: 0, acceptedAt: 1, expiresAt: 9e15, attempts: 0, state: { phase: 'waiting' } });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

(findRedisServer() ? describe : describe.skip)('outbox Redis store: an accept acknowledged through a master failover (issue 45, sentinels)', function () {
  this.timeout(120000);
  let set;
  let conn;
  let stopped;

  before(async function () {
    set = await new SentinelSet().start();
  });
  after(async function () {
    if (stopped?.proc) stopped.proc.kill('SIGCONT');
    await conn?.close();
    await set?.destroy();
  });

  it("a send's mark no replica acknowledged (the replica stopped) rejects, and the entry can be marked again with a new attempt", async function () {
    // Before: the mark stayed in Redis, the drain took it as not made, and each later mark was
    // refused as stale ("an entry is no longer waiting"): the outbox stalled until another
    // instance took its lease.
    const c = new RedisConnection({ url: 'redis://127.0.0.1:6379/0', mode: 'sentinel', sentinels: set.sentinels.map((s) => ({ host: '127.0.0.1', port: s.port })), masterName: set.name, keyPrefix: 'oxmark:' });
    c.on('failure', () => {});
    const keys = AccountKeys.of('oxmark:', { baseUrl: 'http://127.0.0.1:1', clientId: 'mark' });
    // A long lease: its renewals (which wait for the replica too) do not come while the replica is stopped.
    const store = new RedisOutboxStore(c, keys, 'ob', { timeoutMs: 10000, leaseMs: 60000 });
    try {
      await store.open();
      await store.waitForLease();
      await store.accept(msg('m'), [entry('m')]);
      const replica = set.servers.find((sv) => sv.port !== set.masterPort());
      stopped = replica;
      replica.proc.kill('SIGSTOP');
      await assert.rejects(store.markSending(['m/0'], { id: 'attempt-1', startedAt: 1 }), (e) => e.code === 'SHARED_STATE' && e.reason === 'unacknowledged');
      replica.proc.kill('SIGCONT');
      stopped = undefined;
      await store.markSending(['m/0'], { id: 'attempt-2', startedAt: 2 });
      const found = await store.openAfter(0);
      assert.deepEqual(found.entries.map((e) => [e.id, e.state.phase, e.state.attempt?.id]), [['m/0', 'sending', 'attempt-2']]);
    } finally {
      await store.close();
      await c.close();
    }
  });

  it('the replica lagging and the master SIGKILLed during the WAIT: the accept resolves only with the msg on the new master', async function () {
    conn = new RedisConnection({ url: 'redis://127.0.0.1:6379/0', mode: 'sentinel', sentinels: set.sentinels.map((s) => ({ host: '127.0.0.1', port: s.port })), masterName: set.name, keyPrefix: 'oxfail:' });
    conn.on('failure', () => {});
    const keys = AccountKeys.of('oxfail:', { baseUrl: 'http://127.0.0.1:1', clientId: 'failover' });
    const store = new RedisOutboxStore(conn, keys, 'ob', { timeoutMs: 30000, leaseMs: 2000 });
    assert.equal(await store.accept(msg('a'), [entry('a')]), 1, 'a first msg, acknowledged by the replica');

    const oldPort = set.masterPort();
    const master = set.server(oldPort);
    const replica = set.servers.find((s) => s !== master);
    // The replica lags: stopped, behind 32 MB of other writes (more than the sockets buffer), so
    // what the master writes next stays in its own output buffer and dies with it.
    stopped = replica;
    replica.proc.kill('SIGSTOP');
    cli(oldPort, 'eval', "redis.call('SET', 'oxfail:junk', string.rep('x', 32 * 1024 * 1024)) return 1", '0');
    let settled;
    const accepting = store.accept(msg('b'), [entry('b')]).then(
      (seq) => (settled = { seq }),
      (err) => (settled = { err }),
    );
    // The script has run on the master once it holds the msg; the accept now waits for the replica.
    const mh = `oxfail:{${keys.hash}}:outbox:ob:mh`;
    for (let i = 0; i < 100 && cli(oldPort, 'hexists', mh, 'b') !== '1'; i++) await sleep(20);
    assert.equal(cli(oldPort, 'hexists', mh, 'b'), '1', 'the accept ran on the master');
    assert.equal(settled, undefined, 'the accept waits for the replica');
    await master.stop('SIGKILL');
    replica.proc.kill('SIGCONT');
    stopped = undefined;
    await accepting;
    const newPort = set.masterPort();
    assert.notEqual(newPort, oldPort, 'the replica was promoted');
    const there = cli(newPort, 'hexists', mh, 'b');
    assert.ok(settled.err || there === '1', `an accept that resolved (seq ${settled.seq}) is in Redis on the new master`);
    assert.equal(settled.err, undefined, `the accept resolved (${settled.err?.message})`);
    assert.equal(cli(newPort, 'hexists', mh, 'a'), '1', 'the first msg is there too');
    await store.close();
  });
});
