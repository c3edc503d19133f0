'use strict';
/**
 * Issue 26: the gateway dialog's "test connection" button calls POST /iotgw/test-connection
 * on the runtime's admin API, which makes one harmless call with the dialog's values (the
 * token endpoint for a client ID and secret, GET info/service for a bearer token). Here
 * against the simulator in a real Node-RED runtime: a good account, a wrong secret, a dead
 * port, the stored secret of a deployed node standing in for an unchanged password field
 * (`__PWRD__`), and no credential ever in the answer.
 */
const assert = require('node:assert/strict');
const { simulatorPerTest, gatewayNode, load, helper, DEMO_CREDS } = require('../helpers/harness');
const { freePort } = require('../helpers/net');

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
});
