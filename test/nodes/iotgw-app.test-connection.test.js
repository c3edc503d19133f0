'use strict';
/**
 * Issue 26: the iotgw-app dialog's "test connection" button calls POST
 * /iotgw-app/test-connection on the runtime's admin API, which makes one harmless call with
 * the dialog's values: GET /auth/user, the token's own user (after the login with an email
 * and password). Here against the simulator in a real Node-RED runtime: a good token, a
 * good login, a wrong token or password, a dead port, a base URL without its path, the
 * stored credential of a deployed node standing in for an unchanged password field
 * (`__PWRD__`), and no credential ever in the answer.
 *
 * Issue 34: the stored credentials only of a deployed iotgw-app, only to its deployed base
 * URL and TLS setting: another URL, another node type (iotgw-gateway, core mqtt-broker and
 * http request) or a node not deployed is refused, and nothing reaches the posted host.
 */
const assert = require('node:assert/strict');
const { simulatorPerTest, load, helper, ALL_NODES } = require('../helpers/harness');
const { freePort } = require('../helpers/net');
const { startRecorder } = require('../helpers/recorder');
const { lendingFlow, borrowTries } = require('../helpers/lending');

const TOKEN = 'app-demo-token';
const LOGIN = { email: 'demo@example.com', password: 'demo-password' };

describe('iotgw-app: test connection (issue 26)', function () {
  this.timeout(20000);
  let sim;
  simulatorPerTest({ app: { rateLimitCalls: 0 } }, (s) => (sim = s));

  const appNode = () => ({ id: 'app', type: 'iotgw-app', name: 'sim', baseUrl: sim.appUrl, timeoutSeconds: 5, rateLimitCalls: 0 });
  async function test(body) {
    const res = await helper.request().post('/iotgw-app/test-connection').send(body).expect(200);
    return res.body;
  }
  const shows = (r, ...secrets) => secrets.filter((s) => JSON.stringify(r).includes(s));

  it('a good auth token: GET /auth/user names the user reached, one call and nothing else', async function () {
    await load([appNode()], {});
    const r = await test({ baseUrl: sim.appUrl, credentials: { authToken: TOKEN } });
    assert.equal(r.ok, true, r.message);
    assert.equal(r.message, 'GET /auth/user: the application API accepted the auth token (user "Demo User")');
    assert.equal(typeof r.ms, 'number');
    assert.deepEqual(sim.server.calls.map((c) => c.route), ['app/user']);
    assert.deepEqual(shows(r, TOKEN), []);
  });

  it('a good email and password: the login at the login path, then GET /auth/user; neither is echoed', async function () {
    await load([appNode()], {});
    const r = await test({ baseUrl: sim.appUrl, loginPath: '/auth/login', credentials: { ...LOGIN, authToken: '' } });
    assert.equal(r.ok, true, r.message);
    assert.match(r.message, /^GET \/auth\/user: logged in at POST \/auth\/login; the application API accepted the login token \(user "Demo User"\)$/);
    assert.deepEqual(sim.server.calls.map((c) => c.route), ['app/login', 'app/user']);
    assert.deepEqual(shows(r, LOGIN.password, LOGIN.email), []);
  });

  it('a wrong token or password: UNAUTHORIZED, saying what to check, without the secret', async function () {
    await load([appNode()], {});
    const token = await test({ baseUrl: sim.appUrl, credentials: { authToken: 'wrong-token-4321' } });
    assert.equal(token.ok, false);
    assert.equal(token.code, 'UNAUTHORIZED');
    assert.match(token.message, /Check the auth token/);
    const login = await test({ baseUrl: sim.appUrl, credentials: { email: LOGIN.email, password: 'wrong-password-1' } });
    assert.equal(login.code, 'UNAUTHORIZED');
    assert.match(login.message, /POST \/auth\/login: the login was refused \(HTTP 40[13]\)\. Check the email and password/);
    assert.deepEqual(shows([token, login], 'wrong-token-4321', 'wrong-password-1', LOGIN.email), []);
  });

  it('a dead port: says nothing listens there and how to start the simulator', async function () {
    await load([appNode()], {});
    const port = await freePort();
    const r = await test({ baseUrl: `http://127.0.0.1:${port}/app`, credentials: { authToken: TOKEN } });
    assert.equal(r.ok, false);
    assert.equal(r.code, 'NETWORK');
    assert.match(r.message, new RegExp(`nothing listens at 127\\.0\\.0\\.1:${port}: is the simulator running\\?`));
    assert.deepEqual(shows(r, TOKEN), []);
  });

  it('a base URL without its path: NOT_FOUND with the hint to check the path; a typo of localhost: the settings error', async function () {
    await load([appNode()], {});
    const r = await test({ baseUrl: sim.url, credentials: { authToken: TOKEN } });
    assert.equal(r.code, 'NOT_FOUND');
    assert.match(r.message, /GET \/auth\/user/);
    assert.match(r.message, new RegExp(`the base URL ${sim.url.replace(/[.]/g, '\\.')} may lack its path`));
    const typo = await test({ baseUrl: 'http://locahost:1881/app', credentials: { authToken: TOKEN } });
    assert.equal(typo.code, 'BAD_INPUT');
    assert.match(typo.message, /looks like a typo of localhost/);
    const none = await test({ baseUrl: sim.appUrl, credentials: {} });
    assert.equal(none.code, 'BAD_INPUT');
    assert.match(none.message, /no auth token and no email\/password/);
    assert.equal(sim.server.callsTo('app/user').length, 0, 'only the first test reached the API, at the wrong path');
  });

  it('an unchanged password field (__PWRD__) uses the stored credential of the deployed node', async function () {
    await load([appNode()], { app: { authToken: TOKEN } });
    const r = await test({ id: 'app', baseUrl: sim.appUrl, credentials: { authToken: '__PWRD__' } });
    assert.equal(r.ok, true, r.message);
    // Without the node's id nothing is stored: the placeholder is never sent as a token.
    const none = await test({ baseUrl: sim.appUrl, credentials: { authToken: '__PWRD__' } });
    assert.equal(none.code, 'BAD_INPUT');
    assert.equal(sim.server.callsTo('app/user').length, 1, 'only the first test reached the API');
    assert.deepEqual(shows([r, none], TOKEN), []);
  });

  it('issue 34: a stored credential goes only to its deployed base URL and TLS setting; other URLs, types and ids are refused, nothing reaches the posted host', async function () {
    const rec = await startRecorder();
    try {
      const f = lendingFlow(sim, rec);
      await helper.load([...ALL_NODES, ...f.core], f.nodes, f.credentials);
      const secrets = f.secrets;
      const unchanged = { authToken: '__PWRD__', email: '', password: '__PWRD__' };
      for (const [what, body] of Object.entries(borrowTries(rec, 'app', sim.appUrl))) {
        const r = await test({ ...body, credentials: unchanged });
        assert.equal(r.code, 'BAD_INPUT', `${what}: ${r.message}`);
        assert.match(r.message, /^credentials\.(authToken|password): left as it is, but .*type the secret again/, what);
        assert.deepEqual(shows(r, ...secrets), [], what);
      }
      assert.match((await test({ id: 'gw', baseUrl: rec.url, credentials: unchanged })).message, /no deployed iotgw-app node with this id/);
      assert.deepEqual(rec.requests, [], 'nothing reached the posted host');
      assert.deepEqual(sim.server.calls, [], 'nor the application API');
      const ok = await test({ id: 'app', baseUrl: sim.appUrl, credentials: { authToken: '__PWRD__' } });
      assert.equal(ok.ok, true, ok.message);
    } finally {
      await rec.close();
    }
  });
});
