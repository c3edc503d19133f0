'use strict';
/**
 * Issue 34 (points 3 and the `+OK` Redis): every connection the package opens is under the
 * reply guard, and a reply of the wrong type is SHARED_STATE at once, with a pause before
 * the next try (no loop). Hostile peers are the point here, so they are fakes on loopback
 * (test/helpers/redis.js fakeRedis): a Sentinel and a Cluster node that answer the master
 * look-up and CLUSTER SLOTS with a 2 GB bulk string, or with a reply of the wrong type, and
 * a "Redis" that answers `+OK` to everything.
 */
const assert = require('node:assert/strict');
const { fakeRedis, streamBulk } = require('../../helpers/redis');
const { waitFor } = require('../../helpers/child-red');
const { RedisConnection, AccountKeys, RedisRateBudget, RedisFeedLease, RedisTokenSource, RedisMarkStore } = require('../../../dist/lib/account/redis');

const MB = 1024 * 1024;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Answers `name` (upper case, with its first argument when given as 'CLUSTER SLOTS') with `reply(sock, stats)`; `+OK` to the rest. */
function answering(name, reply) {
  return (args, sock, stats) => {
    const cmd = args.slice(0, name.split(' ').length).join(' ').toUpperCase();
    if (cmd === name) reply(sock, stats);
    else sock.write('+OK\r\n');
  };
}

describe('Redis connections under hostile peers (fake Sentinel, Cluster node, +OK Redis)', function () {
  this.timeout(90000);
  const conns = [];
  const fakes = [];
  afterEach(async function () {
    await Promise.all(conns.splice(0).map((c) => c.close().catch(() => {})));
    await Promise.all(fakes.splice(0).map((f) => f.close()));
  });

  const fake = async (answer) => {
    const f = await fakeRedis(answer);
    fakes.push(f);
    return f;
  };
  const connect = (opts) => {
    const c = new RedisConnection({ url: 'redis://127.0.0.1:6379/0', keyPrefix: 'hostile:', commandTimeoutMs: 5000, ...opts });
    const told = { oversize: [], misbehaved: [] };
    c.on('failure', () => {});
    c.on('oversize', (e) => told.oversize.push(e.message));
    c.on('misbehaved', (e) => told.misbehaved.push(e.message));
    conns.push(c);
    return { c, told };
  };
  /** Rejects with the error of run() (a long timeout: the refusal must come from the fault, not the deadline). */
  const runError = (c) => c.run('a test command', (r) => r.ping(), { timeoutMs: 60000 }).then(
    () => assert.fail('run() succeeded against a hostile peer'),
    (err) => err,
  );

  /** Samples this process's RSS while `during()` runs; returns [start, peak]. */
  async function rssWhile(during) {
    const start = process.memoryUsage().rss;
    let peak = start;
    const t = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
    try {
      await during();
    } finally {
      clearInterval(t);
    }
    return [start, Math.max(peak, process.memoryUsage().rss)];
  }

  for (const [kind, name, opts] of [
    ['a Sentinel', 'SENTINEL GET-MASTER-ADDR-BY-NAME', (port) => ({ mode: 'sentinel', sentinels: [{ host: '127.0.0.1', port }], masterName: 'mymaster' })],
    ['a Cluster node', 'CLUSTER SLOTS', (port) => ({ mode: 'cluster', nodes: [{ host: '127.0.0.1', port }] })],
  ]) {
    it(`${kind} streaming a 2 GB reply to ${name}: cut at the bound on every connection, RSS bounded, one warning, SHARED_STATE at once`, async function () {
      const f = await fake(answering(name, (sock, stats) => streamBulk(sock, stats)));
      const [start, peak] = await rssWhile(async () => {
        const { c, told } = connect(opts(f.port));
        // Several look-ups cut and asked again (after a pause that doubles: 1 s, 2 s).
        await waitFor(() => (f.stats.perCommand[name.split(' ')[0]] || 0) >= 3, 60000, `three ${name} asked`);
        const err = await runError(c);
        assert.equal(err.code, 'SHARED_STATE', err.message);
        assert.equal(err.reason, 'wrong-reply', `refused at once for the fault, not at the deadline: ${err.message}`);
        assert.match(err.message, /over the size bound/);
        assert.equal(told.oversize.length, 1, `one warning: ${told.oversize.join(' | ')}`);
        assert.match(told.oversize[0], /a reply larger than 8388608 bytes/);
      });
      const asked = f.stats.perCommand[name.split(' ')[0]];
      console.log(`      [figures] ${JSON.stringify({ kind, asked, sentMB: Math.round(f.stats.sentBytes / MB), perReplyMB: Math.round(f.stats.sentBytes / asked / MB), rssStartMB: Math.round(start / MB), rssPeakMB: Math.round(peak / MB) })}`);
      // What the guard let through: 8 MiB a reply, plus what the sockets buffer.
      assert.ok(f.stats.sentBytes / asked < 40 * MB, `at most the bound (8 MiB) and the socket buffers per reply: ${Math.round(f.stats.sentBytes / asked / MB)} MB`);
      assert.ok(peak - start < 150 * MB, `RSS within 150 MB of before: grew ${Math.round((peak - start) / MB)} MB`);
    });
  }

  it("a Sentinel answering the master look-up with a reply of the wrong type: SHARED_STATE at once, naming it; look-ups paused, not looped", async function () {
    const f = await fake(answering('SENTINEL GET-MASTER-ADDR-BY-NAME', (sock) => sock.write(':7\r\n')));
    const { c, told } = connect({ mode: 'sentinel', sentinels: [{ host: '127.0.0.1', port: f.port }], masterName: 'mymaster' });
    await waitFor(() => f.stats.perCommand.SENTINEL >= 1, 30000, 'the master look-up');
    const err = await runError(c);
    assert.equal(err.code, 'SHARED_STATE');
    assert.equal(err.reason, 'wrong-reply', err.message);
    assert.match(err.message, /wrong type .*master look-up.*an integer/);
    assert.equal(told.misbehaved.length, 1, 'one warning');
    const before = f.stats.perCommand.SENTINEL;
    await sleep(4000);
    const more = f.stats.perCommand.SENTINEL - before;
    assert.ok(more <= 4, `paused between look-ups (1 s, 2 s, 4 s ...): ${more} more in 4 s`);
  });

  it('a Cluster node answering CLUSTER SLOTS with nil or a string: no exception inside ioredis; SHARED_STATE at once', async function () {
    for (const reply of ['$-1\r\n', '+OK\r\n', '*1\r\n*3\r\n:0\r\n:16383\r\n:5\r\n']) {
      const f = await fake(answering('CLUSTER SLOTS', (sock) => sock.write(reply)));
      const { c } = connect({ mode: 'cluster', nodes: [{ host: '127.0.0.1', port: f.port }] });
      await waitFor(() => f.stats.perCommand.CLUSTER >= 1, 30000, 'CLUSTER SLOTS');
      const err = await runError(c);
      assert.equal(err.code, 'SHARED_STATE');
      assert.equal(err.reason, 'wrong-reply', `${JSON.stringify(reply)}: ${err.message}`);
      assert.match(err.message, /CLUSTER SLOTS/);
    }
  });

  it('a "Redis" answering +OK to everything: every seam fails SHARED_STATE at once (no wait for the timeout, no loop); few commands reach it', async function () {
    const f = await fake();
    const { c, told } = connect({ url: `redis://127.0.0.1:${f.port}/0` });
    await waitFor(() => c.ready, 30000, 'the connection (the ready check takes +OK)');
    const keys = AccountKeys.of('hostile:', { baseUrl: 'http://127.0.0.1:1', clientId: 'ok-everything' });
    const budget = new RedisRateBudget(c, keys, { groups: { GET: { calls: 5, windowMs: 1000 } }, maxConcurrent: 3, timeoutMs: 60000 });
    const lease = new RedisFeedLease(c, keys, { leaseMs: 2000 });
    const tokens = new RedisTokenSource(c, keys, async () => ({ token: 't', expiresInMs: 60000 }), { timeoutMs: 60000 });
    const marks = new RedisMarkStore(c, keys, { timeoutMs: 60000 });
    const outcomes = await Promise.allSettled([budget.acquireConcurrency(), budget.acquireRate('GET'), tokens.token(), marks.load('status')]);
    for (const [i, o] of outcomes.entries()) {
      assert.equal(o.status, 'rejected', `seam ${i} refused`);
      assert.equal(o.reason.code, 'SHARED_STATE', `seam ${i}: ${o.reason.message}`);
    }
    assert.ok(outcomes.some((o) => o.reason.reason === 'wrong-reply' && /wrong type/.test(o.reason.message)), outcomes.map((o) => o.reason.message).join(' | '));
    // A standby's loop (the lease) against it: down, with pauses; few commands reach the fake.
    const states = [];
    lease.on('state', (feed, s) => states.push(s));
    const ac = new AbortController();
    const held = lease.acquire('status', ac.signal).catch((err) => err);
    const before = f.stats.commands;
    await sleep(5000);
    ac.abort(new Error('done'));
    await held;
    const commands = f.stats.commands - before;
    console.log(`      [figures] ${JSON.stringify({ commandsIn5s: commands, connections: f.stats.connections, states })}`);
    assert.ok(states.includes('down'), `the lease says down: ${states}`);
    assert.ok(!states.includes('active'), 'never active on a +OK');
    assert.ok(commands < 100, `no loop: ${commands} commands in 5 s (it was about 1,400 a second)`);
    assert.equal(told.misbehaved.length, 1, 'one warning');
    await budget.close();
    await lease.close();
  });
});
