'use strict';
/**
 * The Redis gates as ApiClient uses them (src/lib/transport/http.ts acquireShared, issue 35):
 * a call waiting for its group's window holds no concurrency slot, so a call of another
 * group whose window is open leaves meanwhile. Before, the waiter took the concurrency slot
 * first and held it through the window (bench:fleet: a status poller's GET waiter held one of
 * the account's 3 slots while SEND calls were due).
 */
const assert = require('node:assert/strict');
const http = require('node:http');
const { describeRedis } = require('../../helpers/redis');
const { RedisConnection, AccountKeys, GatedRedisRateBudget } = require('../../../dist/lib/account/redis');
const { ApiClient } = require('../../../dist/lib/transport/http');

describeRedis('Redis gates in ApiClient (real redis-server)', function (ctx) {
  let srv;
  let conn;
  let client;
  let budget;
  afterEach(async function () {
    await client?.close();
    await budget?.close();
    await conn?.close();
    if (srv) await new Promise((r) => srv.close(r));
    client = budget = conn = srv = undefined;
  });

  it('a call waiting for its window holds no concurrency slot: another group goes meanwhile; the waiter aborts cleanly', async function () {
    const arrivals = [];
    srv = http.createServer((req, res) => {
      req.resume();
      arrivals.push(req.url);
      res.setHeader('content-type', 'application/json');
      res.end('{"ok":1}');
    });
    await new Promise((r) => srv.listen(0, '127.0.0.1', r));
    conn = new RedisConnection({ url: ctx.server.url, keyPrefix: 'gates:' });
    conn.on('failure', () => {});
    const keys = AccountKeys.of('gates:', { baseUrl: 'http://127.0.0.1:1', clientId: `gates-${Date.now()}` });
    // One call in flight for the whole account; one GET and one SEND per minute.
    const groups = { GET: { calls: 1, windowMs: 60_000 }, SEND: { calls: 1, windowMs: 60_000 } };
    budget = new GatedRedisRateBudget(conn, keys, { groups, maxConcurrent: 1, timeoutMs: 30_000 });
    client = new ApiClient({ label: 't', baseUrl: `http://127.0.0.1:${srv.address().port}`, timeoutMs: 30_000, maxConcurrent: 1, maxRetries: 0, gates: budget.gates });

    await client.request({ method: 'GET', path: '/get1', group: 'GET' });
    const ac = new AbortController();
    const waiting = client.request({ method: 'GET', path: '/get2', group: 'GET', signal: ac.signal });
    // The second GET waits for its window (a minute); give it time to take what it would take.
    await new Promise((r) => setTimeout(r, 500));
    const send = client.request({ method: 'POST', path: '/send1', group: 'SEND', body: { a: 1 } });
    const timer = new Promise((_, reject) => setTimeout(() => reject(new Error('the SEND call did not leave while a GET waited for its window')), 20_000).unref());
    await Promise.race([send, timer]);
    assert.deepEqual(arrivals, ['/get1', '/send1'], 'the waiting GET has not left');
    ac.abort(new Error('stop waiting'));
    await assert.rejects(waiting, /stop waiting/);
    // Nothing held by the aborted waiter: the account's one concurrency slot is free.
    // (a release reaches Redis a moment later: wait for it, generously)
    let held = -1;
    for (let i = 0; i < 100 && held !== 0; i++) {
      held = await conn.client.zcard(keys.key('conc'));
      if (held !== 0) await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(held, 0, 'no concurrency lease left behind');
    assert.deepEqual(arrivals, ['/get1', '/send1']);
  });
});
