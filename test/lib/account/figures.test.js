'use strict';
/**
 * The account's figures kept cheaply (src/lib/account/figures.ts): 429s counted for an
 * hour, the last error without closing noise, and the limiter's used / in-flight read from
 * its own state.
 */
const assert = require('node:assert/strict');
const { AccountWatch } = require('../../../dist/lib/account/figures');
const { SlidingWindowLimiter } = require('../../../dist/lib/transport/limiter');
const { GatewayError } = require('../../../dist/lib/common/errors');
const { HourCounter, outboxStateName } = require('../../../dist/lib/node-red/outbox-registry');

describe('account figures', function () {
  it('counts throttled replies per group for the last hour only', function () {
    let now = 1_000_000;
    const w = new AccountWatch(() => now);
    w.throttled('SEND');
    w.throttled('SEND');
    now += 30 * 60_000;
    w.throttled('SEND');
    w.throttled('GET');
    assert.equal(w.throttledCount('SEND'), 3);
    assert.equal(w.throttledCount('GET'), 1);
    assert.equal(w.throttledCount('APP'), 0);
    now += 31 * 60_000;
    assert.equal(w.throttledCount('SEND'), 1, 'the first two are over an hour old');
  });

  it('keeps the last failure, not bad input nor a closing node', function () {
    const w = new AccountWatch(() => Date.UTC(2026, 0, 1));
    assert.equal(w.lastError(), null);
    w.failed(new GatewayError('TIMEOUT', 'GET x: no reply in 5 s'));
    w.failed(new GatewayError('BAD_INPUT', 'msg.payload: must be ...', { field: 'msg.payload' }));
    w.failed(new GatewayError('NETWORK', 'the node was closed (redeploy or shutdown) before the work finished'));
    w.failed(new Error('not ours'));
    assert.deepEqual(w.lastError(), { code: 'TIMEOUT', message: 'GET x: no reply in 5 s', at: '2026-01-01T00:00:00.000Z' });
    w.failed(new GatewayError('NETWORK', 'GET x: the connection closed unexpectedly'));
    assert.equal(w.lastError().code, 'NETWORK', 'a dropped connection is an error of the account');
  });

  it('reads used and in-flight calls from the limiter, on read only', async function () {
    let now = 0;
    const lim = new SlidingWindowLimiter(2, 1000, 10, 'test', () => now);
    const r1 = await lim.acquire();
    const r2 = await lim.acquire();
    assert.equal(lim.used, 2);
    assert.equal(lim.inFlightCalls, 2);
    const third = lim.acquire();
    assert.equal(lim.queued, 1);
    r1();
    assert.equal(lim.inFlightCalls, 1);
    assert.equal(lim.used, 2, 'a finished call still counts in the window');
    now = 1001;
    r2();
    // r1's slot has left the window; the waiter gets it.
    const r3 = await third;
    assert.equal(lim.queued, 0);
    assert.equal(lim.used, 2);
    assert.equal(lim.inFlightCalls, 1);
    r3();
    now = 5000;
    assert.equal(lim.used, 0);
    lim.close();
  });

  it('a limiter with no window still counts its calls in flight', async function () {
    const lim = new SlidingWindowLimiter(0, 0, 10, 'off');
    const a = lim.tryAcquire();
    const b = lim.tryAcquire();
    assert.equal(lim.inFlightCalls, 2);
    assert.equal(lim.used, 0);
    a();
    a();
    assert.equal(lim.inFlightCalls, 1, 'a release counts once');
    b();
    assert.equal(lim.inFlightCalls, 0);
  });
  it("an outbox's counts are for the last hour only; its state follows the engine's and the sender's 401/403", function () {
    const c = new HourCounter();
    const t0 = 10 * 3_600_000;
    c.add(t0);
    c.add(t0 + 30 * 60_000, 2);
    assert.equal(c.total(t0 + 45 * 60_000), 3);
    assert.equal(c.total(t0 + 61 * 60_000), 2, 'the first left the hour');
    assert.equal(c.total(t0 + 2 * 3_600_000), 0);
    const s = (over) => ({ outbox: 'o', waiting: 2, unknown: 0, bytes: 10, phase: 'sending', ...over });
    assert.equal(outboxStateName(s({ waiting: 0, phase: 'idle' }), undefined), 'idle');
    assert.equal(outboxStateName(s(), undefined), 'draining');
    assert.equal(outboxStateName(s({ phase: 'backoff', problem: 'network: ECONNREFUSED' }), undefined), 'waiting for the link');
    assert.equal(outboxStateName(s({ phase: 'reconciling', unknown: 1 }), undefined), 'reconciling');
    assert.equal(outboxStateName(s({ phase: 'backoff', problem: '401' }), 'UNAUTHORIZED'), 'unauthorized');
    assert.equal(outboxStateName(s({ waiting: 0, phase: 'idle' }), 'UNAUTHORIZED'), 'idle', 'nothing waits: nothing held up');
  });
});
