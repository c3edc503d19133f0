'use strict';
/**
 * Issue 17 (per-call overhead): the ApiClient's call path without an AbortController and a
 * timer per call keeps its guarantees, against a real loopback server:
 *  - every call times out at its own deadline (one timer per client, armed for the earliest);
 *  - the caller's signal aborts every call it carries (one listener per signal), and the
 *    client keeps working for other signals;
 *  - the size cap holds with and without Content-Length;
 *  - secrets are cut out of replies, also after the token changed (kept per auth state);
 *  - a plain request body is serialised exactly as stringifyJson does (BigInt exact).
 */
const assert = require('node:assert/strict');
const http = require('node:http');
const { ApiClient, plainJson } = require('../dist/lib/http');
const { stringifyJson } = require('../dist/lib/int64');

async function server(handler) {
  const sockets = new Set();
  const srv = http.createServer(handler);
  srv.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${srv.address().port}`,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((r) => srv.close(r));
    },
  };
}

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
    const t0 = Date.now();
    const ends = [];
    const calls = [0, 150, 300].map(
      (delay) =>
        new Promise((r) => setTimeout(r, delay)).then(() => {
          const start = Date.now();
          return client.request({ method: 'GET', path: '/slow' }).then(
            () => assert.fail('no reply expected'),
            (e) => ends.push({ code: e.code, after: Date.now() - start, message: e.message }),
          );
        }),
    );
    await Promise.all(calls);
    assert.equal(ends.length, 3);
    for (const e of ends) {
      assert.equal(e.code, 'TIMEOUT', e.message);
      assert.match(e.message, /GET \/slow: no complete reply within 0.4 s/);
      assert.ok(e.after >= 390 && e.after < 800, `timed out after ${e.after} ms, expected about 400`);
    }
    assert.ok(Date.now() - t0 < 1400);
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
    client = new ApiClient({ label: 't', baseUrl: srv.url, timeoutMs: 5000, maxConcurrent: 8, maxRetries: 0 });
    const a = new AbortController();
    const b = new AbortController();
    const aborted = [1, 2, 3].map(() => client.request({ method: 'GET', path: '/hang', signal: a.signal }).then(() => 'answered', (e) => e));
    const other = client.request({ method: 'GET', path: '/hang', signal: b.signal }).then((r) => r.body, (e) => e);
    while (waiting.length < 4) await new Promise((r) => setTimeout(r, 10));
    const t = Date.now();
    a.abort(new Error('node closed'));
    for (const e of await Promise.all(aborted)) {
      assert.ok(e instanceof Error, String(e));
      assert.equal(e.code, 'NETWORK');
      assert.match(e.message, /aborted \(node closed\)/);
    }
    assert.ok(Date.now() - t < 1000);
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

  it('serialises plain bodies exactly as stringifyJson does, and leaves anything else to it', function () {
    const same = [
      [{ DestinationID: '01000001SKY1234', Mode: 0, WakeupInterval: 0 }],
      [{ DestinationID: 'x"\\\n\u2028\ud800', Mode: 3, WakeupInterval: 15, UserMessageID: 9223372036854775807n }],
      { a: [1, -0, 1.5, 1e21, NaN, Infinity, null, undefined, () => 1, true, false, ''], b: undefined, c: { d: [[], {}] }, 'k"ey': -12n },
      'text',
      12,
      null,
      Object.assign(Object.create(null), { z: 1 }),
    ];
    for (const v of same) assert.equal(plainJson(v), stringifyJson(v));
    assert.equal(plainJson([{ UserMessageID: 12345678901234567890n }]), '[{"UserMessageID":12345678901234567890}]');
    for (const v of [{ when: new Date(0) }, [{ toJSON: () => 1 }], new Map(), [Symbol('s')].map(() => ({ s: Symbol('s'), ok: 1 }))]) {
      const out = plainJson(v);
      if (out !== undefined) assert.equal(out, stringifyJson(v));
    }
    assert.equal(plainJson({ when: new Date(0) }), undefined);
    assert.equal(plainJson([{ toJSON: () => 1 }]), undefined);
    const cyclic = { a: {} };
    cyclic.a.b = cyclic;
    assert.equal(plainJson(cyclic), undefined, 'a cycle is left to stringifyJson (which reports it)');
  });
});
