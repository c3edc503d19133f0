'use strict';
/** The account layer (issue 14): in-process parts and the shared-state seam of the factory. */
const assert = require('node:assert/strict');
const { createAccount } = require('../../../dist/lib/account/account');
const { provideSharedState } = require('../../../dist/lib/account/shared');
const { MemoryRateBudget } = require('../../../dist/lib/account/memory/rate-budget');
const { MemoryFeedLease, MemoryMarkStore } = require('../../../dist/lib/account/memory/feed');
const { AuthTokenSource, TokenSourceAuth } = require('../../../dist/lib/account/memory/token-source');
const { StaticBearer } = require('../../../dist/lib/account/auth');
const { GatewayError } = require('../../../dist/lib/common/errors');

const base = (over = {}) => ({
  kind: 'gateway',
  id: 'gw1',
  label: 'gateway test',
  baseUrl: 'http://127.0.0.1:9',
  timeoutMs: 1000,
  maxConcurrent: 2,
  maxRetries: 0,
  groups: { SEND: { calls: 1, windowMs: 60000 } },
  auth: { bearer: () => new StaticBearer('t0k', 'bearer token') },
  ...over,
});

describe('account layer (in-process)', function () {
  it('the rate budget and the client count the same slots', async function () {
    const acc = createAccount(base());
    const client = acc.client();
    const r1 = await acc.budget.acquireConcurrency();
    assert.equal(client.inFlight, 1, 'a budget slot is a client slot');
    r1();
    assert.equal(client.inFlight, 0);
    assert.equal(acc.budget.windowMs('SEND'), 60000);
    assert.equal(acc.budget.windowMs('NONE'), 0);
    const s = await acc.budget.acquireRate('SEND');
    s();
    assert.ok(acc.budget.msUntilFree('SEND') > 0, 'one call per window: the next waits');
    let granted = false;
    const ac = new AbortController();
    const p = client.acquireGroup('SEND', ac.signal).then(() => (granted = true), (e) => e);
    await new Promise((r) => setImmediate(r));
    assert.equal(granted, false, 'the client waits on the slot the budget spent');
    ac.abort(new Error('stop'));
    await p;
    await acc.close();
    assert.equal(client.isClosed, true);
  });

  it('a config error surfaces at client(); missing credentials as BAD_INPUT at auth()', async function () {
    const err = new GatewayError('BAD_INPUT', 'baseUrl: required', { field: 'baseUrl' });
    const acc = createAccount(base({ configError: err, auth: { bearer: () => { throw new GatewayError('BAD_INPUT', 'credentials: none', { field: 'credentials' }); } } }));
    assert.throws(() => acc.client(), /baseUrl: required/);
    assert.throws(() => acc.auth('bearer'), (e) => e.code === 'BAD_INPUT' && /credentials/.test(e.message));
    assert.throws(() => acc.auth('other'), (e) => e.code === 'BAD_INPUT');
    await acc.close();
  });

  it('token source over a static bearer: the token, and no renewal', async function () {
    const acc = createAccount(base());
    assert.equal(await acc.tokens('bearer').token(), 't0k');
    assert.equal(acc.tokens('bearer').invalidate('t0k'), false, 'a static token cannot be renewed');
    assert.equal(acc.auth('bearer'), acc.auth('bearer'), 'one provider per account');
    await acc.close();
  });

  it('memory lease is always active; memory marks round-trip by value', async function () {
    const lease = new MemoryFeedLease();
    const states = [];
    lease.on('state', (f, s) => states.push(`${f}:${s}`));
    const f1 = await lease.acquire('status');
    const f2 = await lease.acquire('status');
    assert.ok(f2 > f1, 'fencing tokens grow');
    assert.equal(lease.held('status'), true);
    await lease.release('status');
    assert.equal(lease.held('status'), false);
    assert.deepEqual(states, ['status:active', 'status:down']);
    const marks = new MemoryMarkStore();
    const mark = { fromUtc: '2026-01-01 00:00:00', seen: ['a'], generation: 1 };
    await marks.save('status', mark);
    mark.seen.push('b');
    assert.deepEqual(await marks.load('status'), { fromUtc: '2026-01-01 00:00:00', seen: ['a'], generation: 1 });
    assert.equal(await marks.load('other'), undefined);
  });

  it('a shared-state backend plugs in through provideSharedState, without the config node knowing', async function () {
    const seen = [];
    let refused;
    const shared = {
      rateBudget: (key, local) => {
        seen.push(`budget ${key.kind}/${key.id}`);
        assert.ok(local instanceof MemoryRateBudget);
        return local;
      },
      tokenSource: (key, name, _local) => {
        seen.push(`tokens ${name}`);
        return { token: async () => 'shared-token', invalidate: (t) => ((refused = t), true), close: async () => {} };
      },
      markStore: (key, local) => (seen.push('marks'), local),
      feedLease: (key, local) => (seen.push('lease'), local),
    };
    const remove = provideSharedState((key, config) => (config.sharedState === 'r1' ? shared : undefined));
    try {
      const { ClientCredentialsBearer } = require('../../../dist/lib/account/auth');
      const acc = createAccount(base({ config: { sharedState: 'r1' }, auth: { bearer: () => new ClientCredentialsBearer('id', 'secret', '/api/v1.0/auth/token') } }));
      acc.budget;
      acc.marks;
      acc.lease;
      const auth = acc.auth('bearer');
      assert.ok(auth instanceof TokenSourceAuth);
      assert.deepEqual(await auth.headers(acc.client()), { authorization: 'Bearer shared-token' });
      assert.equal(auth.renew({ authorization: 'Bearer shared-token' }), true);
      assert.equal(refused, 'shared-token');
      assert.deepEqual(seen, ['budget gateway/gw1', 'marks', 'lease', 'tokens bearer']);
      await acc.close();
      const other = createAccount(base({ config: {} }));
      assert.ok(other.budget instanceof MemoryRateBudget, 'no resolver offers one: in-process');
      await other.close();
    } finally {
      remove();
    }
    const after = createAccount(base({ config: { sharedState: 'r1' } }));
    assert.ok(after.budget instanceof MemoryRateBudget, 'a removed resolver is no longer asked');
    await after.close();
  });

  it('AuthTokenSource renews a refused client-credentials token once', function () {
    let renewed = 0;
    const provider = { headers: async () => ({ authorization: 'Bearer x' }), renew: () => (renewed++, true) };
    const src = new AuthTokenSource(() => provider, () => undefined);
    assert.equal(src.invalidate('x'), true);
    assert.equal(src.invalidate('x'), false, 'the same refused token is not renewed twice');
    assert.equal(renewed, 1);
  });
});
