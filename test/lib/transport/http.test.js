'use strict';
/**
 * Issue 17 (per-call overhead): the ApiClient's call path without an AbortController and a
 * timer per call keeps its guarantees, against a real loopback server:
 *  - every call times out at its own deadline (one timer per client, armed for the earliest);
 *  - the caller's signal aborts every call it carries (one listener per signal), and the
 *    client keeps working for other signals;
 *  - the size cap holds with and without Content-Length;
 *  - secrets are cut out of replies, also after the token changed (kept per auth state);
 *  - a header value with CR/LF is refused also after valid values were cached.
 */
const assert = require('node:assert/strict');
const http = require('node:http');
const { ApiClient } = require('../../../dist/lib/transport/http');
const { listenLoopback } = require('../../helpers/net');

/** A loopback HTTP server answering with `handler`: {url, close()}. */
const server = (handler) => listenLoopback(http.createServer(handler));

describe('ApiClient call path (units against a loopback server)', function () {
  this.timeout(15000);
  let srv;
  let client;
  afterEach(async () => {
    await client?.close();
    await srv?.close();
    client = undefined;
    srv = undefined;
  });

  it('each call times out at its own deadline, and a call after the others works', async function () {
    let hang = true;
    srv = await server((req, res) => {
      req.resume();
      if (!hang) res.end(JSON.stringify({ ok: 1 }), () => {});
      // else: never answers
    });
    client = new ApiClient({ label: 't', baseUrl: srv.url, timeoutMs: 400, maxConcurrent: 8, maxRetries: 0 });
    const ends = [];
    const calls = [0, 150, 300].map(
      (delay, i) =>
        new Promise((r) => setTimeout(r, delay)).then(() => {
          const start = Date.now();
          return client.request({ method: 'GET', path: '/slow' }).then(
            () => assert.fail('no reply expected'),
            (e) => ends.push({ i, code: e.code, after: Date.now() - start, message: e.message }),
          );
        }),
    );
    await Promise.all(calls);
    assert.equal(ends.length, 3);
    for (const e of ends) {
      assert.equal(e.code, 'TIMEOUT', e.message);
      assert.match(e.message, /GET \/slow: no complete reply within 0.4 s/);
      // Not before its own deadline (a shared or restarted deadline would end a later call early).
      assert.ok(e.after >= 390, `timed out after ${e.after} ms, before its own 400 ms`);
    }
    // Each at its own deadline, so in the order they started (a later deadline never ends an earlier call first).
    assert.deepEqual(ends.map((e) => e.i), [0, 1, 2]);
    hang = false;
    const res = await client.request({ method: 'GET', path: '/fast' });
    assert.deepEqual(res.body, { ok: 1 });
  });

  it("the caller's signal aborts every call it carries; calls of another signal go on", async function () {
    const waiting = [];
    srv = await server((req, res) => {
      req.resume();
      if (req.url === '/hang') waiting.push(res);
      else res.end(JSON.stringify({ ok: 2 }));
    });
    // A timeout no test waits for: only the abort can end these calls (and it says so: NETWORK, "aborted").
    client = new ApiClient({ label: 't', baseUrl: srv.url, timeoutMs: 600000, maxConcurrent: 8, maxRetries: 0 });
    const a = new AbortController();
    const b = new AbortController();
    const aborted = [1, 2, 3].map(() => client.request({ method: 'GET', path: '/hang', signal: a.signal }).then(() => 'answered', (e) => e));
    const other = client.request({ method: 'GET', path: '/hang', signal: b.signal }).then((r) => r.body, (e) => e);
    while (waiting.length < 4) await new Promise((r) => setTimeout(r, 10));
    a.abort(new Error('node closed'));
    for (const e of await Promise.all(aborted)) {
      assert.ok(e instanceof Error, String(e));
      assert.equal(e.code, 'NETWORK');
      assert.match(e.message, /aborted \(node closed\)/);
    }
    // The other signal's call is still waiting for its reply, and gets it.
    for (const res of waiting) if (!res.writableEnded) res.end(JSON.stringify({ ok: 3 }));
    assert.deepEqual(await other, { ok: 3 });
    // A call with an already aborted signal is not sent.
    const before = waiting.length;
    await assert.rejects(client.request({ method: 'GET', path: '/hang', signal: a.signal }), (e) => e.code === 'NETWORK');
    assert.equal(waiting.length, before);
    assert.deepEqual((await client.request({ method: 'GET', path: '/x', signal: b.signal })).body, { ok: 2 });
  });

  it('refuses a reply over the size cap with and without Content-Length, reads one under it', async function () {
    const big = JSON.stringify({ data: 'x'.repeat(5000) });
    srv = await server((req, res) => {
      req.resume();
      if (req.url === '/declared') res.end(big); // Content-Length set by end()
      else {
        // Chunked: no Content-Length.
        res.setHeader('content-type', 'application/json');
        res.write(big.slice(0, 2000));
        setTimeout(() => res.end(big.slice(2000)), 20);
      }
    });
    client = new ApiClient({ label: 't', baseUrl: srv.url, timeoutMs: 5000, maxConcurrent: 2, maxRetries: 0, maxResponseBytes: 4096 });
    for (const path of ['/declared', '/chunked']) {
      await assert.rejects(client.request({ method: 'GET', path }), (e) => e.code === 'BAD_RESPONSE' && /larger than 4096 bytes/.test(e.message));
    }
    const roomy = new ApiClient({ label: 't', baseUrl: srv.url, timeoutMs: 5000, maxConcurrent: 2, maxRetries: 0, maxResponseBytes: 8192 });
    try {
      for (const path of ['/declared', '/chunked']) assert.equal((await roomy.request({ method: 'GET', path })).body.data.length, 5000);
    } finally {
      await roomy.close();
    }
  });

  it('cuts the current token out of replies, also after it changed', async function () {
    srv = await server((req, res) => {
      req.resume();
      // Echoes the bearer token it got, as a careless server would.
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ echo: `got ${String(req.headers.authorization).slice(7)}` }));
    });
    client = new ApiClient({ label: 't', baseUrl: srv.url, timeoutMs: 5000, maxConcurrent: 2, maxRetries: 0 });
    let token = 'first-token-AAAA';
    const auth = { headers: async () => ({ authorization: `Bearer ${token}` }), secrets: () => [token] };
    for (let i = 0; i < 2; i++) {
      assert.deepEqual((await client.request({ method: 'POST', path: '/echo', body: [1], auth })).body, { echo: 'got [credential]' });
    }
    token = 'second-token-BBBB';
    assert.deepEqual((await client.request({ method: 'POST', path: '/echo', body: [1], auth })).body, { echo: 'got [credential]' });
    const other = { headers: async () => ({ authorization: 'Bearer third-token-CCCC' }), secrets: () => ['third-token-CCCC'] };
    assert.deepEqual((await client.request({ method: 'POST', path: '/echo', body: [1], auth: other })).body, { echo: 'got [credential]' });
  });

  it('refuses a header value with CR or LF, also once other values were checked', async function () {
    let seen = 0;
    srv = await server((req, res) => {
      req.resume();
      seen++;
      res.setHeader('content-type', 'application/json');
      res.end('{"ok":true}');
    });
    client = new ApiClient({ label: 't', baseUrl: srv.url, timeoutMs: 5000, maxConcurrent: 2, maxRetries: 0 });
    const auth = (v) => ({ headers: async () => ({ authorization: v }) });
    for (let i = 0; i < 3; i++) assert.deepEqual((await client.request({ method: 'GET', path: '/h', auth: auth('Bearer good-token-1') })).body, { ok: true });
    await assert.rejects(client.request({ method: 'GET', path: '/h', auth: auth('Bearer good-token-1\r\nx-injected: 1') }), (e) => e.code === 'BAD_INPUT' && /CR, LF or NUL/.test(e.message));
    await assert.rejects(client.request({ method: 'GET', path: '/h', headers: { 'x-a': 'a\u0000b' } }), (e) => e.code === 'BAD_INPUT');
    assert.equal(seen, 3, 'nothing sent for the refused values');
  });
});
