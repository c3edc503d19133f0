'use strict';
/**
 * Issue 26: the gateway dialog's "test connection" button calls POST /iotgw/test-connection
 * on the runtime's admin API, which makes one harmless call with the dialog's values (the
 * token endpoint for a client ID and secret, GET info/service for a bearer token). Here
 * against the simulator in a real Node-RED runtime: a good account, a wrong secret, a dead
 * port, the stored secret of a deployed node standing in for an unchanged password field
 * (`__PWRD__`), and no credential ever in the answer.
 *
 * Issue 34: a stored secret goes only to the deployed base URL (and TLS setting) of a
 * deployed iotgw-gateway; another URL, another node type (iotgw-app, mqtt-broker, http
 * request) or a node not deployed is refused and nothing reaches the posted host (a loopback
 * recorder); one test at a time per user; an internal failure is INTERNAL, not NETWORK; a
 * credential that is not text is BAD_INPUT; 10 MB of a server's error text come back bounded.
 */
const assert = require('node:assert/strict');
const sinon = require('sinon');
const { simulatorPerTest, gatewayNode, load, helper, until, ALL_NODES, DEMO_CREDS } = require('../helpers/harness');
const { freePort } = require('../helpers/net');
const { startRecorder } = require('../helpers/recorder');
const { lendingFlow, borrowTries } = require('../helpers/lending');
const { ApiClient } = require('../../dist/lib/transport/http');


describe('iotgw-gateway: test connection (issue 26)', function () {
  this.timeout(20000);
  let sim;
  simulatorPerTest({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 } }, (s) => (sim = s));

  async function test(body) {
    const res = await helper.request().post('/iotgw/test-connection').send(body).expect(200);
    return res.body;
  }

  it('a good account: the token endpoint issues a token, one call and nothing else', async function () {
    await load([gatewayNode(sim)]);
    const r = await test({ baseUrl: sim.url, apiVersion: '1.0', credentials: { clientId: 'demo', clientSecret: 'demo-secret' } });
    assert.equal(r.ok, true, r.message);
    assert.match(r.message, /POST \/api\/v1\.0\/auth\/token: the gateway accepted the client ID and secret/);
    assert.deepEqual(sim.server.calls.map((c) => c.route), ['terminal/auth']);
    assert.ok(!JSON.stringify(r).includes('demo-secret'));
  });

  it('a wrong secret: UNAUTHORIZED, saying what to check, without the secret', async function () {
    await load([gatewayNode(sim)]);
    const r = await test({ baseUrl: sim.url, apiVersion: '1.0', credentials: { clientId: 'demo', clientSecret: 'wrong-secret-123' } });
    assert.equal(r.ok, false);
    assert.equal(r.code, 'UNAUTHORIZED');
    assert.match(r.message, /client ID and client secret/);
    assert.ok(!JSON.stringify(r).includes('wrong-secret-123'));
  });

  it('a dead port: says nothing listens there and how to start the simulator', async function () {
    await load([gatewayNode(sim)]);
    const port = await freePort();
    const r = await test({ baseUrl: `http://127.0.0.1:${port}`, apiVersion: '1.0', credentials: { clientId: 'demo', clientSecret: 'demo-secret' } });
    assert.equal(r.ok, false);
    assert.equal(r.code, 'NETWORK');
    assert.match(r.message, new RegExp(`nothing listens at 127\\.0\\.0\\.1:${port}: is the simulator running\\?`));
  });

  it('an unchanged password field (__PWRD__) uses the stored secret of the deployed node', async function () {
    await load([gatewayNode(sim)], { gw: DEMO_CREDS });
    const r = await test({ id: 'gw', baseUrl: sim.url, apiVersion: '1.0', credentials: { clientId: 'demo', clientSecret: '__PWRD__' } });
    assert.equal(r.ok, true, r.message);
    // Without the node's id nothing is stored: the placeholder is never sent as a secret.
    const none = await test({ baseUrl: sim.url, apiVersion: '1.0', credentials: { clientId: 'demo', clientSecret: '__PWRD__' } });
    assert.equal(none.ok, false);
    assert.equal(none.code, 'BAD_INPUT');
    assert.equal(sim.server.callsTo('terminal/auth').length, 1, 'only the first test reached the gateway');
  });

  it('a bearer token: GET info/service; a bad base URL: the settings error; no credentials: says which', async function () {
    await load([gatewayNode(sim)]);
    const token = await test({ baseUrl: sim.url, apiVersion: '1.0', credentials: { token: 'not-a-token-9876' } });
    assert.equal(token.ok, false);
    assert.equal(token.code, 'UNAUTHORIZED');
    assert.ok(!JSON.stringify(token).includes('not-a-token-9876'));
    assert.deepEqual(sim.server.calls.map((c) => c.route), ['terminal/info']);
    const typo = await test({ baseUrl: 'http://locahost:1881', credentials: { clientId: 'demo', clientSecret: 'demo-secret' } });
    assert.equal(typo.code, 'BAD_INPUT');
    assert.match(typo.message, /looks like a typo of localhost/);
    const empty = await test({ baseUrl: sim.url, credentials: {} });
    assert.equal(empty.code, 'BAD_INPUT');
    assert.match(empty.message, /client ID and secret, or a bearer token/);
  });

  describe('issue 34: stored secrets, callers, failures', function () {
    let rec;
    beforeEach(async function () {
      rec = await startRecorder();
    });
    afterEach(async function () {
      await rec.close();
    });

    /** The deployed flow: nodes of five types, each with a secret (test/helpers/lending.js). */
    async function deployed() {
      const f = lendingFlow(sim, rec);
      await helper.load([...ALL_NODES, ...f.core], f.nodes, f.credentials);
      return f;
    }
    const unchanged = { clientId: 'demo', clientSecret: '__PWRD__', token: '__PWRD__' };

    it('a stored secret goes only to its deployed base URL and TLS setting: other URLs, types and ids are refused, nothing reaches the posted host', async function () {
      const { secrets } = await deployed();
      for (const [what, body] of Object.entries(borrowTries(rec, 'gw', sim.url))) {
        const r = await test({ apiVersion: '1.0', ...body, credentials: unchanged });
        assert.equal(r.ok, false, what);
        assert.equal(r.code, 'BAD_INPUT', `${what}: ${r.message}`);
        assert.match(r.message, /^credentials\.clientSecret: left as it is, but .*type the secret again/, what);
        assert.deepEqual(secrets.filter((x) => r.message.includes(x)), [], what);
      }
      assert.match((await test({ id: 'gw', baseUrl: rec.url, credentials: unchanged })).message, /the base URL is not the deployed one/);
      assert.match((await test({ id: 'mqtt', baseUrl: rec.url, credentials: unchanged })).message, /no deployed iotgw-gateway node with this id/);
      assert.deepEqual(rec.requests, [], 'nothing reached the posted host');
      assert.deepEqual(sim.server.calls, [], 'nor the gateway');
      // Where it is deployed, the stored secret still tests.
      const ok = await test({ id: 'gw', baseUrl: sim.url, apiVersion: '1.0', credentials: unchanged });
      assert.equal(ok.ok, true, ok.message);
      assert.equal(sim.server.callsTo('terminal/auth').length, 1);
    });

    it('one test at a time per user: a second one while the first runs is refused with 429 (both routes), the next one runs', async function () {
      await load([gatewayNode(sim)]);
      rec.hold();
      const body = { baseUrl: rec.url, apiVersion: '1.0', credentials: { token: 'typed-token-1' } };
      const first = helper.request().post('/iotgw/test-connection').send(body).then((r) => r);
      await until(() => rec.requests.length === 1, 20000, 'the first test at the recorder');
      const second = await helper.request().post('/iotgw/test-connection').send(body);
      assert.equal(second.status, 429);
      assert.equal(second.body.code, 'RATE_LIMITED');
      assert.match(second.body.message, /another test connection of yours is still running/);
      const other = await helper.request().post('/iotgw-app/test-connection').send({ baseUrl: rec.url, credentials: { authToken: 'typed-token-2' } });
      assert.equal(other.status, 429, 'one at a time over both routes');
      rec.release();
      const done = await first;
      assert.equal(done.status, 200);
      assert.equal(done.body.code, 'UNAUTHORIZED');
      const third = await test(body);
      assert.equal(third.code, 'UNAUTHORIZED', 'after the first one answered, the next one runs');
      assert.equal(rec.requests.length, 2, 'the refused tests reached nothing');
    });

    it('an internal failure is INTERNAL (a dead port stays NETWORK); a credential that is not text is BAD_INPUT', async function () {
      await load([gatewayNode(sim)]);
      const stub = sinon.stub(ApiClient.prototype, 'request').rejects(new TypeError('x is not a function'));
      try {
        const r = await test({ baseUrl: sim.url, apiVersion: '1.0', credentials: { token: 'typed-token-1' } });
        assert.equal(r.code, 'INTERNAL', r.message);
        assert.match(r.message, /unexpected TypeError/);
      } finally {
        stub.restore();
      }
      const port = await freePort();
      assert.equal((await test({ baseUrl: `http://127.0.0.1:${port}`, credentials: { token: 'typed-token-1' } })).code, 'NETWORK');
      for (const credentials of [{ token: { a: 1 } }, { clientId: 'demo', clientSecret: ['x'] }, 'token']) {
        const r = await test({ baseUrl: sim.url, apiVersion: '1.0', credentials });
        assert.equal(r.code, 'BAD_INPUT', r.message);
        assert.match(r.message, /^credentials(\.token|\.clientSecret)?: must be (text|an object of text fields)/);
      }
      assert.deepEqual(sim.server.calls, []);
    });

    it('a server error text of 10 MB comes back bounded, with its length', async function () {
      await rec.close();
      const big = 'x'.repeat(10 * 1024 * 1024);
      rec = await startRecorder({ reply: (_req, res) => res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ message: big })) });
      await load([gatewayNode(sim)]);
      const r = await test({ baseUrl: rec.url, apiVersion: '1.0', credentials: { clientId: 'demo', clientSecret: 'typed-secret-1' } });
      assert.equal(r.ok, false);
      assert.ok(r.message.length < 1000, `${r.message.length} characters`);
      assert.match(r.message, /x{300}\.\.\. \(10485760 chars\)/);
    });
  });
});
