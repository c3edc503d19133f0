'use strict';
/**
 * Issue 16: hostile servers. Each test starts its own loopback server that answers as an
 * attacker (or a broken gateway) would, and drives real nodes in a real Node-RED runtime
 * against it:
 *  - a 200 reply nested 200,000 levels (400 KB, under the size cap) is BAD_RESPONSE and
 *    never reaches a msg (it used to kill Node-RED when a Complete node cloned the msg);
 *  - a 200 reply that echoes the account's secrets (bearer token, client secret, broker
 *    access token) reaches msg.payload with them cut out;
 *  - Retry-After variants: a huge value is bounded by twice the group's window, a date in
 *    the past, a negative or a garbage value counts as absent (the retry waits the window,
 *    it is not sent back to back);
 *  - a cyclic request body is BAD_INPUT, with nothing sent.
 */
const assert = require('node:assert/strict');
const http = require('node:http');
const { helper, gatewayNode, load, useRuntime } = require('../helpers/harness');
const { parseJson, jsonTooDeep, MAX_JSON_DEPTH } = require('../../dist/lib/common/int64');
const { parseRetryAfter, rateLimitWait } = require('../../dist/lib/transport/http');

const CREDS = { clientId: 'hostile-client', clientSecret: 'client-secret-"Zq\\81x', brokerClientId: 'broker-client', brokerAccessToken: 'broker-token-Hh42k' };
const ISSUED_TOKEN = 'issued-bearer-Tt77m';
const SECRETS = [CREDS.clientSecret, CREDS.brokerAccessToken, ISSUED_TOKEN];

/** A loopback server whose answers the test sets; records every request with its time. */
async function hostileServer() {
  const s = { requests: [], handler: null };
  s.server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      s.requests.push({ method: req.method, url: req.url, headers: req.headers, body, at: Date.now() });
      if (req.url.endsWith('/auth/token')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ access_token: ISSUED_TOKEN, token_type: 'bearer', expires_in: 3600 }));
      }
      s.handler(req, res, body);
    });
  });
  await new Promise((r) => s.server.listen(0, '127.0.0.1', r));
  s.url = `http://127.0.0.1:${s.server.address().port}`;
  s.json = (res, status, value, headers = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(typeof value === 'string' ? value : JSON.stringify(value));
  };
  s.close = () => {
    s.server.closeAllConnections();
    return new Promise((r) => s.server.close(r));
  };
  return s;
}

/** Loads `nodeType` against the hostile server with Catch and Complete nodes; returns send(msg). */
async function flow(srv, nodeType, props = {}, gwProps = {}, wires = 1) {
  const outs = Array.from({ length: wires }, (_, i) => `out${i}`);
  const n = await load(
    [
      gatewayNode({ url: srv.url }, { maxRetries: 3, rateLimitCalls: 0, ...gwProps }),
      { id: 'dut', type: nodeType, gateway: 'gw', lingerMs: 0, ...props, wires: [outs] },
      ...outs.map((id) => ({ id, type: 'helper' })),
      { id: 'c1', type: 'catch', scope: ['dut'], uncaught: false, wires: [['caught']] },
      { id: 'caught', type: 'helper' },
      { id: 'c2', type: 'complete', scope: ['dut'], uncaught: false, wires: [['completed']] },
      { id: 'completed', type: 'helper' },
    ],
    { gw: CREDS },
  );
  const got = { outs: [], completed: [], caught: [] };
  for (const o of outs) n.get(o).on('input', (m) => got.outs.push(m));
  n.get('completed').on('input', (m) => got.completed.push(m));
  n.get('caught').on('input', (m) => got.caught.push(m));
  return (msg) =>
    new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no ending within 15 s: ${JSON.stringify(got).slice(0, 300)}`)), 15000);
      const check = () => {
        if (got.caught.length || got.completed.length) {
          clearTimeout(t);
          // A second ending (a bug) gets the chance to show up.
          setTimeout(() => resolve({ ...got }), 50);
        } else setTimeout(check, 5);
      };
      n.get('dut').receive(msg);
      check();
    });
}

const deep = (levels) => '['.repeat(levels) + ']'.repeat(levels);

describe('hostile servers (issue 16)', function () {
  this.timeout(60000);
  let srv;
  useRuntime();
  beforeEach(async function () {
    srv = await hostileServer();
  });
  afterEach(async function () {
    await helper.unload();
    await srv.close();
  });

  describe('nesting', function () {
    it('parseJson refuses more than 64 levels (brackets inside strings do not count) and keeps 64', function () {
      assert.equal(MAX_JSON_DEPTH, 64);
      assert.deepEqual(parseJson(`{"a":${deep(63)}}`).a.length, 1);
      assert.throws(() => parseJson(`{"a":${deep(64)}}`), /nested deeper than 64 levels/);
      assert.throws(() => parseJson(deep(200000)), /nested deeper than 64 levels/);
      assert.throws(() => parseJson(`[${'{"a":'.repeat(100)}1${'}'.repeat(100)}]`), /nested deeper/);
      assert.equal(jsonTooDeep(JSON.stringify({ s: '['.repeat(1000), t: '\\"[[[[' + '{'.repeat(100) })), false);
      assert.equal(jsonTooDeep(`["\\\\", ${deep(70)}]`), true, 'an escaped backslash ends the string');
      // Wide is fine: 10,000 siblings at depth 2.
      assert.equal(parseJson(JSON.stringify(Array.from({ length: 10000 }, (_, i) => [i]))).length, 10000);
    });

    for (const wires of [1, 2]) {
      it(`a 400 KB reply nested 200,000 levels is BAD_RESPONSE, not a crash (Complete node watching, ${wires} wire${wires > 1 ? 's' : ''})`, async function () {
        const text = `[{"id":1,"planDesc":"x","extra":${deep(200000)}}]`;
        assert.ok(text.length > 400000 && text.length < 32 * 1024 * 1024);
        srv.handler = (req, res) => srv.json(res, 200, text);
        const send = await flow(srv, 'iotgw-lorawan-contract', { operation: 'list' }, {}, wires);
        const got = await send({ payload: {} });
        assert.equal(got.outs.length, 0, 'nothing reached a msg');
        assert.equal(got.completed.length, 0);
        assert.equal(got.caught.length, 1, 'ended once, with an error');
        assert.equal(got.caught[0].error.code, 'BAD_RESPONSE', got.caught[0].error.message);
        assert.match(got.caught[0].error.message, /nested deeper than 64 levels/);
        // Still alive: a normal reply goes through.
        srv.handler = (req, res) => srv.json(res, 200, [{ id: 2, planDesc: 'ok', extra: JSON.parse(`{"a":${deep(60)}}`) }]);
        const ok = await send({ payload: {} });
        assert.equal(ok.outs.length, wires, ok.caught[0] && ok.caught[0].error.message);
        assert.equal(ok.outs[0].payload[0].id, 2);
      });
    }

    it('a deep error body (HTTP 500) ends in HTTP_ERROR, not a crash', async function () {
      srv.handler = (req, res) => srv.json(res, 500, `{"message":${deep(200000)}}`);
      const send = await flow(srv, 'iotgw-lorawan-contract', { operation: 'list' }, { maxRetries: 0 });
      const got = await send({ payload: {} });
      assert.equal(got.caught.length, 1);
      assert.equal(got.caught[0].error.code, 'HTTP_ERROR', got.caught[0].error.message);
    });
  });

  describe('echoed secrets', function () {
    it('a broker reply that echoes the access token reaches msg.payload with the token cut out', async function () {
      srv.handler = (req, res) =>
        srv.json(res, 200, [{ id: 1, planDesc: `plan for ${req.headers.access_token}`, createdBy: req.headers.access_token, echo: { headers: req.headers, [req.headers.access_token]: 1 } }]);
      const send = await flow(srv, 'iotgw-lorawan-contract', { operation: 'list' });
      const got = await send({ payload: {} });
      assert.equal(got.outs.length, 1, got.caught[0] && got.caught[0].error.message);
      const text = JSON.stringify(got.outs[0]);
      for (const s of SECRETS) assert.ok(!text.includes(s), `${s} is not in the msg`);
      assert.equal(got.outs[0].payload[0].planDesc, 'plan for [credential]');
      assert.equal(got.outs[0].payload[0].echo.headers.client_id, 'broker-client', 'a client ID is a name, not a secret: kept');
      assert.equal(srv.requests[0].headers.access_token, CREDS.brokerAccessToken, 'the real token was sent');
    });

    it('a terminal reply that echoes the bearer token and the client secret (also JSON-escaped) has them cut out', async function () {
      srv.handler = (req, res, body) => {
        const ids = JSON.parse(body);
        srv.json(res, 200, {
          ErrorID: 0,
          Cancellations: ids.map((id) => ({ ID: id, CancellationStatus: 1, ErrorID: 0, Note: `you sent ${req.headers.authorization} as ${CREDS.clientSecret}` })),
          Token: ISSUED_TOKEN,
        });
      };
      const send = await flow(srv, 'iotgw-cancel');
      const got = await send({ payload: 42 });
      assert.equal(got.outs.length, 1, got.caught[0] && got.caught[0].error.message);
      const text = JSON.stringify(got.outs[0]);
      for (const s of SECRETS) assert.ok(!text.includes(s), `${s} is not in the msg`);
      assert.equal(got.outs[0].payload[0].Note, 'you sent Bearer [credential] as [credential]');
      assert.equal(got.outs[0].payload[0].ID, 42);
    });
  });

  describe('Retry-After', function () {
    const RETRY_AFTER_ASKED_MS = 300000; // what the server asks for: 5 minutes
    it('parses delta-seconds and HTTP dates; past, negative, garbage, huge and conflicting values count as absent', function () {
      const now = Date.parse('2026-01-01T00:00:00Z');
      assert.equal(parseRetryAfter('5', now), 5000);
      assert.equal(parseRetryAfter(' 1.5 ', now), 1500);
      assert.equal(parseRetryAfter('Thu, 01 Jan 2026 00:00:07 GMT', now), 7000);
      assert.equal(parseRetryAfter('0', now), 0, '0 means now');
      for (const v of ['Wed, 31 Dec 2025 23:59:00 GMT', '-5', '-0.5', 'soon', '1e3', '0x10', '', '  ', 'NaN', 'Infinity', '99999999999', 'Fri, 01 Jan 2100 00:00:00 GMT', ['2', '9'], '5; drop table']) {
        assert.equal(parseRetryAfter(v, now), undefined, JSON.stringify(v));
      }
      assert.equal(parseRetryAfter(['3', '3'], now), 3000, 'the same value twice is fine');
    });

    it('the wait is bounded by twice the window, or 30 s without one, and by maxRetryWaitMs', function () {
      assert.equal(rateLimitWait(300000, 1000, 700, 300000), 2000);
      assert.equal(rateLimitWait(1500, 1000, 700, 300000), 1500);
      assert.equal(rateLimitWait(undefined, 1000, 700, 300000), 1000, 'absent: the window');
      assert.equal(rateLimitWait(undefined, undefined, 700, 300000), 700, 'absent, no window: the backoff');
      assert.equal(rateLimitWait(300000, undefined, 700, 300000), 30000, 'no window: 30 s at most');
      assert.equal(rateLimitWait(300000, 0, 700, 300000), 30000);
      assert.equal(rateLimitWait(300000, 600000, 700, 300000), 300000, 'maxRetryWaitMs still caps');
    });

    /** Cancel (SEND group, window 300 ms): the first call gets 429 with `retryAfter`, the retry succeeds. */
    async function gapAfter(retryAfter) {
      let n = 0;
      srv.handler = (req, res, body) => {
        if (req.url.endsWith('/auth/token')) return;
        if (n++ === 0) return srv.json(res, 429, { Message: 'slow down' }, retryAfter === undefined ? {} : { 'retry-after': retryAfter });
        srv.json(res, 200, { ErrorID: 0, Cancellations: JSON.parse(body).map((id) => ({ ID: id, CancellationStatus: 1, ErrorID: 0 })) });
      };
      const send = await flow(srv, 'iotgw-cancel', {}, { rateLimitCalls: 5, rateLimitWindowSeconds: 0.3 });
      const started = Date.now();
      const got = await send({ payload: 7 });
      assert.equal(got.outs.length, 1, got.caught[0] && got.caught[0].error.message);
      const calls = srv.requests.filter((r) => r.url.includes('cancellations'));
      assert.equal(calls.length, 2, 'one 429, one retry');
      return { gap: calls[1].at - calls[0].at, total: Date.now() - started };
    }

    // A bounded wait retries within the test (its timeout is far below the 300 s asked for);
    // the gap is checked from below only (a loaded machine may retry late, never early).
    it('Retry-After: 300 (5 minutes) is bounded by twice the window (600 ms here)', async function () {
      const { gap } = await gapAfter('300');
      assert.ok(gap >= 250, `retried after ${gap} ms`);
      assert.ok(gap < RETRY_AFTER_ASKED_MS / 5, `retried after ${gap} ms: the 300 s asked for was not bounded`);
    });

    it('an HTTP date 5 minutes ahead is bounded the same way', async function () {
      const { gap } = await gapAfter(new Date(Date.now() + RETRY_AFTER_ASKED_MS).toUTCString());
      assert.ok(gap >= 250, `retried after ${gap} ms`);
      assert.ok(gap < RETRY_AFTER_ASKED_MS / 5, `retried after ${gap} ms: the date 300 s ahead was not bounded`);
    });

    for (const [label, value] of [
      ['a date in the past', new Date(Date.now() - 3600000).toUTCString()],
      ['a negative value', '-30'],
      ['garbage', 'after lunch'],
    ]) {
      it(`${label} counts as absent: the retry waits out the window, not back to back`, async function () {
        const { gap } = await gapAfter(value);
        assert.ok(gap >= 250, `retried after ${gap} ms (the window is 300 ms)`);
      });
    }
  });

  describe('cyclic bodies', function () {
    it('a cyclic contract body is BAD_INPUT naming where, with nothing sent (not NETWORK)', async function () {
      srv.handler = (req, res) => srv.json(res, 200, { id: 1 });
      const send = await flow(srv, 'iotgw-lorawan-contract', { operation: 'create' });
      const payload = { customerId: 2, planDesc: 'Plano', extra: { list: [] } };
      payload.extra.list.push(payload.extra);
      const got = await send({ payload });
      assert.equal(got.caught.length, 1);
      assert.equal(got.caught[0].error.code, 'BAD_INPUT', got.caught[0].error.message);
      assert.match(got.caught[0].error.message, /msg\.payload\.extra\.list\[0\] refers back to msg\.payload\.extra \(a cycle\)/);
      assert.equal(srv.requests.length, 0, 'no request, not even a token');
    });
  });
});
