'use strict';
/**
 * Issue 34: the "test connection" routes lent any node's stored secrets to any host. A real
 * Node-RED (child process) with adminAuth, as the attack was measured: a user whose only
 * permissions are iotgw-app.write and iotgw-gateway.write (no flows.write: may not deploy)
 * posts the id of every node that holds a secret (the gateway, the app, a Redis, a core
 * mqtt-broker and http request node) with a base URL of their own: every test is refused
 * and the loopback server at that URL receives nothing. `${HOME}` in a posted field is not
 * resolved for that user (FORBIDDEN), and is for the admin (who may deploy). One test at a
 * time per user: the same user's second one is refused while another user's runs.
 */
const assert = require('node:assert/strict');
const { authRedPerSuite } = require('../helpers/child-red');
const { startRecorder } = require('../helpers/recorder');

const PASSWORD = 'editor-password-1';
const STORED = {
  gw1: { clientId: 'demo', clientSecret: 'demo-secret', token: 'gw-stored-token-1' },
  app1: { authToken: 'app-demo-token', email: 'demo@example.com', password: 'app-stored-pass-1' },
  redis1: { password: 'redis-stored-pass-1' },
  mqtt1: { user: 'mq', password: 'mqtt-stored-pass-1' },
  http1: { user: 'hu', password: 'http-stored-pass-1' },
};
const SECRETS = Object.values(STORED).flatMap((c) => Object.entries(c).filter(([k]) => !/^(clientId|email|user)$/.test(k)).map(([, v]) => v));

describe('test connection routes: stored secrets and callers, with adminAuth (issue 34)', function () {
  this.timeout(60000);
  const ctx = authRedPerSuite([{ username: 'admin', permissions: '*' }, { username: 'editor', permissions: ['iotgw-app.write', 'iotgw-gateway.write'] }], PASSWORD);
  let sim;
  let red;
  let rec;
  let admin;
  let editor;

  before(async function () {
    ({ sim, red } = ctx);
    rec = await startRecorder();
    admin = (await red.login('admin', PASSWORD)).access_token;
    editor = (await red.login('editor', PASSWORD)).access_token;
    const flows = [
      { id: 'tab1', type: 'tab', label: 'secrets' },
      { id: 'gw1', type: 'iotgw-gateway', baseUrl: sim.url, apiVersion: '1.0', timeoutSeconds: 10, credentials: STORED.gw1 },
      { id: 'app1', type: 'iotgw-app', baseUrl: sim.appUrl, timeoutSeconds: 10, credentials: STORED.app1 },
      { id: 'redis1', type: 'iotgw-redis', url: 'redis://127.0.0.1:1/0', credentials: STORED.redis1 },
      { id: 'mqtt1', type: 'mqtt-broker', broker: '127.0.0.1', port: '1', autoConnect: false, credentials: STORED.mqtt1 },
      { id: 'http1', z: 'tab1', type: 'http request', method: 'GET', url: rec.url, authType: 'basic', wires: [[]], credentials: STORED.http1 },
    ];
    const r = await fetch(`${red.url}/flows`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${admin}`, 'Node-RED-Deployment-Type': 'full' },
      body: JSON.stringify(flows),
    });
    assert.equal(r.status, 204, await r.text());
    // The editor user may not read or deploy flows (as in the issue: 401 on /flows).
    assert.equal((await fetch(`${red.url}/flows`, { headers: { authorization: `Bearer ${editor}` } })).status, 401);
  });
  after(async function () {
    if (rec) await rec.close();
  });

  async function post(route, body, token) {
    const r = await fetch(`${red.url}${route}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify(body),
    });
    const text = await r.text();
    return { status: r.status, text, body: JSON.parse(text) };
  }
  const ROUTES = {
    '/iotgw/test-connection': { clientId: 'demo', clientSecret: '__PWRD__', token: '__PWRD__' },
    '/iotgw-app/test-connection': { authToken: '__PWRD__', email: '', password: '__PWRD__' },
  };

  for (const [route, unchanged] of Object.entries(ROUTES)) {
    it(`POST ${route}: no node's stored secret reaches a posted host (each id of each type; the own type at another URL)`, async function () {
      rec.requests.length = 0;
      sim.server.calls.length = 0;
      for (const id of Object.keys(STORED)) {
        const r = await post(route, { id, baseUrl: rec.url, apiVersion: '1.0', credentials: unchanged }, editor);
        assert.equal(r.status, 200, r.text);
        assert.equal(r.body.ok, false, `${id}: ${r.text}`);
        assert.equal(r.body.code, 'BAD_INPUT', `${id}: ${r.text}`);
        assert.match(r.body.message, /left as it is, but .*type the secret again/, id);
        assert.deepEqual(SECRETS.filter((s) => r.text.includes(s)), [], id);
      }
      assert.deepEqual(rec.requests, [], 'nothing reached the posted host');
      assert.deepEqual(SECRETS.filter((s) => rec.text().includes(s)), []);
      assert.deepEqual(sim.server.calls, [], 'nor the deployed one');
    });
  }

  it('the own type at its deployed base URL still tests with the stored secret, for the editor too', async function () {
    const gw = await post('/iotgw/test-connection', { id: 'gw1', baseUrl: sim.url, apiVersion: '1.0', credentials: ROUTES['/iotgw/test-connection'] }, editor);
    assert.equal(gw.body.ok, true, gw.text);
    const app = await post('/iotgw-app/test-connection', { id: 'app1', baseUrl: sim.appUrl, credentials: { authToken: '__PWRD__' } }, editor);
    assert.equal(app.body.ok, true, app.text);
    assert.deepEqual(SECRETS.filter((s) => gw.text.includes(s) || app.text.includes(s)), []);
  });

  it('${HOME} in a posted field: FORBIDDEN for a user who may not deploy, nothing sent; resolved for the admin', async function () {
    rec.requests.length = 0;
    const home = process.env.HOME;
    assert.ok(home && home.length >= 2, 'the test needs a HOME');
    for (const [route, credentials] of [
      ['/iotgw/test-connection', { token: '${HOME}' }],
      ['/iotgw-app/test-connection', { authToken: '${HOME}' }],
    ]) {
      const r = await post(route, { baseUrl: rec.url, apiVersion: '1.0', credentials }, editor);
      assert.equal(r.body.code, 'FORBIDDEN', r.text);
      assert.match(r.body.message, /\$\{HOME\} is resolved only for a user who may deploy \(permission flows\.write\)/);
      assert.ok(!r.text.includes(home), r.text);
    }
    const url = await post('/iotgw-app/test-connection', { baseUrl: '${IOTGW_ANY_URL}', credentials: { authToken: 'typed-token-1' } }, editor);
    assert.equal(url.body.code, 'FORBIDDEN', url.text);
    assert.deepEqual(rec.requests, [], 'nothing reached the posted host');
    const byAdmin = await post('/iotgw/test-connection', { baseUrl: rec.url, apiVersion: '1.0', credentials: { token: '${HOME}' } }, admin);
    assert.equal(byAdmin.body.code, 'UNAUTHORIZED', byAdmin.text);
    assert.equal(rec.requests.length, 1);
    assert.equal(rec.requests[0].headers.authorization, `Bearer ${home}`, 'resolved for a user who may deploy');
  });

  it('one test at a time per user: the same user is refused (429) while another user tests', async function () {
    rec.requests.length = 0;
    rec.hold();
    try {
      const body = { baseUrl: rec.url, apiVersion: '1.0', credentials: { token: 'typed-token-1' } };
      const first = post('/iotgw/test-connection', body, editor);
      const deadline = Date.now() + 30000;
      while (rec.requests.length < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
      assert.equal(rec.requests.length, 1, 'the first test reached the recorder');
      const again = await post('/iotgw-app/test-connection', { baseUrl: rec.url, credentials: { authToken: 'typed-token-2' } }, editor);
      assert.equal(again.status, 429, again.text);
      assert.equal(again.body.code, 'RATE_LIMITED');
      const other = post('/iotgw/test-connection', body, admin);
      while (rec.requests.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
      assert.equal(rec.requests.length, 2, "another user's test runs beside it");
      rec.release();
      assert.equal((await first).body.code, 'UNAUTHORIZED');
      assert.equal((await other).body.code, 'UNAUTHORIZED');
      const next = await post('/iotgw/test-connection', body, editor);
      assert.equal(next.status, 200, next.text);
    } finally {
      rec.release();
    }
  });
});
