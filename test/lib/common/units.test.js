'use strict';
const assert = require('node:assert/strict');
const { SlidingWindowLimiter, Semaphore } = require('../../../dist/lib/transport/limiter');
const { toInt64, parseJson, stringifyJson, int64Out } = require('../../../dist/lib/common/int64');
const { migrateGatewayConfig, gatewaySettings } = require('../../../dist/nodes/iotgw-gateway');

describe('limits, int64 and config migration (units)', function () {
  it('the sliding window grants at most N calls per window, counting from completion', async function () {
    let now = 0;
    const lim = new SlidingWindowLimiter(2, 1000, 10, 'test', () => now);
    const r1 = await lim.acquire();
    const r2 = await lim.acquire();
    let third = false;
    const p3 = lim.acquire().then((r) => {
      third = true;
      return r;
    });
    await new Promise((r) => setImmediate(r));
    assert.equal(third, false, 'two in flight fill the window');
    now = 100;
    r1();
    now = 200;
    r2();
    assert.equal(lim.msUntilFree(), 900, 'the first completed call leaves the window at 1100');
    now = 1101;
    await new Promise((r) => setTimeout(r, 1200));
    assert.equal(third, true);
    (await p3)();
    lim.close();
  });

  it('a full queue refuses at once with RATE_LIMITED; an aborted waiter leaves the queue', async function () {
    const sem = new Semaphore(1, 1, 'test');
    const hold = await sem.acquire();
    const ac = new AbortController();
    const waiting = sem.acquire(ac.signal);
    await assert.rejects(sem.acquire(), (e) => e.code === 'RATE_LIMITED' && /queue full/.test(e.message));
    ac.abort(new Error('closed'));
    await assert.rejects(waiting, /closed/);
    assert.equal(sem.queued, 0);
    hold();
    (await sem.acquire())();
  });

  it('penalize blocks grants until the wait is over', async function () {
    let now = 0;
    const lim = new SlidingWindowLimiter(5, 1000, 10, 'test', () => now);
    lim.penalize(500);
    assert.equal(lim.msUntilFree(), 500);
    now = 600;
    (await lim.acquire())();
    lim.close();
  });

  it('int64: exact parse, exact output form, exact serialisation', function () {
    const v = parseJson('{"ID":9223372036854775807,"small":42,"f":1.5,"neg":-9223372036854775808}');
    assert.deepEqual(v, { ID: '9223372036854775807', small: 42, f: 1.5, neg: '-9223372036854775808' });
    assert.equal(stringifyJson([9223372036854775807n, 1n]), '[9223372036854775807,1]');
    assert.equal(toInt64('9223372036854775808'), 'is outside the int64 range');
    assert.equal(toInt64(' 12 '), 12n);
    assert.equal(int64Out(9007199254740991n), 9007199254740991);
    assert.equal(int64Out(9007199254740992n), '9007199254740992');
    assert.match(String(toInt64(9007199254740992)), /above 2\^53/);
  });

  it('int64: digits inside strings take the native parser as they are; every unsafe integer token comes back as its exact decimal string', function () {
    const native = JSON.parse;
    let nativeCalls = 0;
    JSON.parse = (...a) => {
      nativeCalls++;
      return native(...a);
    };
    try {
      // Hex keys and serials with long digit runs (as LoRaWAN devices have): no number there.
      const keys = '{"nwkskey":"2622600adec0134441234567890123456","sn":"12345678901234567890","n":[1,2.5,-3]}';
      assert.deepEqual(parseJson(keys), native(keys));
      assert.equal(nativeCalls, 1);
      nativeCalls = 0;
      // A number token after ":", "," or "[" (with any JSON white space), or the whole text.
      assert.deepEqual(parseJson('{"a": \n\t9223372036854775807}'), { a: '9223372036854775807' });
      assert.deepEqual(parseJson('[1,\r\n 9223372036854775807]'), [1, '9223372036854775807']);
      assert.deepEqual(parseJson('[-9223372036854775808]'), ['-9223372036854775808']);
      assert.equal(parseJson(' 9007199254740993'), '9007199254740993');
      assert.equal(parseJson('9007199254740991'), 9007199254740991);
      assert.equal(parseJson('[9007199254740992,-9007199254740991,-9007199254740992,1234567890123456.5,12345678901234567e2]')[0], '9007199254740992');
      assert.deepEqual(parseJson('[9007199254740992,-9007199254740991,-9007199254740992,1234567890123456.5,1.2345678901234567e2]'), ['9007199254740992', -9007199254740991, '-9007199254740992', 1234567890123456.5, 123.45678901234567]);
      // Strings with escaped quotes and digits, and a number after them: only the number is quoted.
      assert.deepEqual(parseJson('{"s":"a\\"b:9223372036854775807\\\\","n":9223372036854775807}'), { s: 'a"b:9223372036854775807\\', n: '9223372036854775807' });
      assert.throws(() => parseJson('[09223372036854775807]'));
      assert.throws(() => parseJson('{"a":9223372036854775807'));
      // A string that looks like a number token after ":" only costs the exact parser: same value.
      assert.deepEqual(parseJson('{"t":"x:12345678901234567890","v":1.5}'), { t: 'x:12345678901234567890', v: 1.5 });
    } finally {
      JSON.parse = native;
    }
  });

  it('int64: unsafe integers are put back by the native parser reading the text as it is (no quoted copy); ambiguous texts are quoted as before', function () {
    const native = JSON.parse;
    const texts = [];
    JSON.parse = (...a) => {
      texts.push(a[0]);
      return native(...a);
    };
    try {
      // The inventory's case (issue 35): the page's own text goes to the native parser.
      const page = '{"Terminals":[{"PrimeID":"01000001SKYA001","LastRegistrationMessageID":9009418956849993,"UnitID":1},{"PrimeID":"x","LastRegistrationMessageID":18446744073709551615}]}';
      assert.deepEqual(parseJson(page), { Terminals: [{ PrimeID: '01000001SKYA001', LastRegistrationMessageID: '9009418956849993', UnitID: 1 }, { PrimeID: 'x', LastRegistrationMessageID: '18446744073709551615' }] });
      assert.equal(texts.length, 1);
      assert.equal(texts[0], page, 'parsed in place, not a quoted copy');
      // Integer-like keys (enumerated before the others) and a repeated key (the last wins): the digits still match.
      texts.length = 0;
      const keyed = '{"b":12345678901234567891,"1":98765432109876543210,"b":22345678901234567891}';
      assert.deepEqual(parseJson(keyed), { 1: '98765432109876543210', b: '22345678901234567891' });
      assert.deepEqual(texts, [keyed]);
      // An own "__proto__" stays a data property (not the prototype), as JSON.parse makes it.
      const proto = parseJson('{"__proto__":9223372036854775807,"a":[{"__proto__":[9223372036854775807]}]}');
      assert.equal(Object.getPrototypeOf(proto), Object.prototype);
      assert.deepEqual(Object.getOwnPropertyDescriptor(proto, '__proto__'), { value: '9223372036854775807', writable: true, enumerable: true, configurable: true });
      assert.deepEqual(Object.getOwnPropertyDescriptor(proto.a[0], '__proto__').value, ['9223372036854775807']);
      // Two tokens rounding to one double, or an exponent form landing on one: quoted as before, same exact result.
      texts.length = 0;
      assert.deepEqual(parseJson('[9007199254740993,9007199254740992]'), ['9007199254740993', '9007199254740992']);
      assert.deepEqual(parseJson('[9007199254740993,9.007199254740992e15]'), ['9007199254740993', 9007199254740992]);
      assert.deepEqual(texts, ['["9007199254740993","9007199254740992"]', '["9007199254740993",9.007199254740992e15]']);
    } finally {
      JSON.parse = native;
    }
  });

  it('an old saved gateway config without the newer properties gets their defaults', function () {
    const old = migrateGatewayConfig({ id: 'x', type: 'iotgw-gateway', baseUrl: 'https://gw.example.com' });
    const s = gatewaySettings(old);
    assert.deepEqual(
      { v: s.apiVersion, c: s.rateLimitCalls, w: s.rateLimitWindowMs, m: s.maxConcurrent, b: s.maxBatchSize, t: s.timeoutMs, r: s.maxRetries, q: s.maxQueue },
      { v: '1.0', c: 5, w: 60000, m: 3, b: 100, t: 65000, r: 3, q: 10000 },
    );
    assert.throws(() => gatewaySettings(migrateGatewayConfig({ baseUrl: 'http://10.0.0.5' })), /http:\/\/ is allowed only for loopback/);
    assert.throws(() => gatewaySettings(migrateGatewayConfig({ baseUrl: 'https://user:pw@gw.example.com' })), /must not contain a user name or password/);
    assert.throws(() => gatewaySettings(migrateGatewayConfig({ baseUrl: '' })), /baseUrl: required/);
  });
});
