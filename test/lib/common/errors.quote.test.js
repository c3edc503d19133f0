'use strict';
/**
 * Issue 34: error texts quoted foreign text without a bound (one was 10 MB). Every quote of
 * a reply body, a peer's or a library's error message, an ErrorID name from the gateway's
 * catalogue, or a reply's keys is bounded (300 characters, "..." and the original length),
 * and no GatewayError message exceeds 2,000 characters whatever it holds.
 */
const assert = require('node:assert/strict');
const { GatewayError, quote, foreignText, QUOTE_MAX, MESSAGE_MAX } = require('../../../dist/lib/common/errors');
const { serverErrorText, asGatewayError, networkText } = require('../../../dist/lib/transport/failures');
const { throwOnCallError } = require('../../../dist/lib/api/gateway-errors');
const { parseReply } = require('../../../dist/lib/api/terminal');
const { schema } = require('../../../dist/lib/common/schema');

const BIG = 'y'.repeat(10 * 1024 * 1024);
const bounded = (s) => s.length < MESSAGE_MAX + 50 && /y{10}\.\.\. \(10485760 chars\)/.test(s);

describe('quotes of foreign text in error messages are bounded (issue 34)', function () {
  it('quote(): short text as it is; long text cut with "..." and its length; a surrogate pair never split', function () {
    assert.equal(quote('short'), 'short');
    assert.equal(quote(BIG), `${'y'.repeat(QUOTE_MAX)}... (10485760 chars)`);
    const pairs = 'a'.repeat(QUOTE_MAX - 1) + '\u{1F600}'.repeat(3);
    const q = quote(pairs);
    assert.ok(q.startsWith('a'.repeat(QUOTE_MAX - 1) + '...'), 'the pair across the cut is left out whole');
    assert.equal(quote(42), '42');
  });

  it('a GatewayError never holds more than 2,000 characters of message', function () {
    const e = new GatewayError('HTTP_ERROR', `GET /x: ${BIG}`);
    assert.ok(e.message.length <= MESSAGE_MAX + 30, `${e.message.length}`);
    assert.match(e.message, /\.\.\. \(10485768 chars\)$/);
  });

  it('a server error body, a network message and a thrown message of 10 MB are quoted bounded', function () {
    assert.ok(bounded(serverErrorText({ message: BIG })));
    assert.ok(bounded(serverErrorText(BIG)));
    assert.ok(bounded(networkText('ECONNRESET', BIG)));
    assert.ok(bounded(asGatewayError(new Error(BIG), 'GET /x').message));
  });

  it("an ErrorID's name and description from the gateway's catalogue are quoted bounded", async function () {
    const g = { catalogue: { load: async () => undefined, lookup: () => ({ name: BIG, description: BIG }) } };
    const err = await throwOnCallError(g, 7, 'POST /submit', 200).then(
      () => assert.fail('no error'),
      (e) => e,
    );
    assert.equal(err.code, 'GATEWAY_ERROR');
    assert.ok(err.message.length < 600, `${err.message.length}`);
    assert.match(err.message, /y{100}\.\.\. \(10485760 chars\): y{300}\.\.\. \(10485760 chars\)/);
    assert.ok(err.errorName.length < 150);
  });

  it('foreignText(): bounded as quote() bounds, then every control character escaped (issue 43)', function () {
    assert.equal(foreignText('NAME_OK'), 'NAME_OK');
    assert.equal(foreignText('a\r\nb\tc\u001b[31m\u0000\u007f\u009b\u2028\u202e'), 'a\\r\\nb\\tc\\u001b[31m\\u0000\\u007f\\u009b\\u2028\\u202e');
    assert.equal(foreignText('<b>x</b>'), '<b>x</b>', 'HTML stays text as given');
    const long = foreignText('\u001b'.repeat(10) + BIG, 100);
    assert.equal(long, `${'\\u001b'.repeat(10)}${'y'.repeat(90)}... (10485770 chars)`);
  });

  it("a reply's own key of 10 MB in a schema error is quoted bounded", function () {
    const numbers = schema((z) => z.object({}).catchall(z.number()));
    let err;
    try {
      parseReply(numbers, { [BIG]: 'not a number' }, 'GET /x');
    } catch (e) {
      err = e;
    }
    assert.equal(err?.code, 'BAD_RESPONSE');
    assert.ok(bounded(err.message), err.message.slice(0, 200));
  });
});
