'use strict';
/**
 * Issue 26: the "test connection" routes of the account dialogs sit behind Node-RED's admin
 * authentication. A real Node-RED (child process) with adminAuth: POST
 * /iotgw-app/test-connection and /iotgw/test-connection answer 401 without a login and
 * for a read-only user (they ask for iotgw-app.write and iotgw-gateway.write), and test
 * for a user allowed to edit (permissions "*"), without echoing the credential.
 */
const assert = require('node:assert/strict');
const { authRedPerSuite } = require('../helpers/child-red');

const PASSWORD = 'editor-password-1';

describe('test connection routes with adminAuth (issue 26)', function () {
  this.timeout(60000);
  const ctx = authRedPerSuite([{ username: 'admin', permissions: '*' }, { username: 'viewer', permissions: 'read' }], PASSWORD);

  async function post(route, body, token) {
    const r = await fetch(`${ctx.red.url}${route}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    });
    return { status: r.status, text: await r.text() };
  }

  /** Each route, the body of a good account and its secret. */
  const ROUTES = {
    '/iotgw-app/test-connection': { secret: 'app-demo-token', body: () => ({ baseUrl: ctx.sim.appUrl, credentials: { authToken: 'app-demo-token' } }) },
    '/iotgw/test-connection': { secret: 'demo-secret', body: () => ({ baseUrl: ctx.sim.url, apiVersion: '1.0', credentials: { clientId: 'demo', clientSecret: 'demo-secret' } }) },
  };

  for (const [route, { secret, body }] of Object.entries(ROUTES)) {
    it(`POST ${route}: 401 without a login and for a read-only user; tests for a user allowed to edit`, async function () {
      ctx.sim.server.calls.length = 0;
      const anon = await post(route, body());
      assert.equal(anon.status, 401, anon.text);
      const viewer = await ctx.red.login('viewer', PASSWORD);
      const refused = await post(route, body(), viewer.access_token);
      assert.equal(refused.status, 401, refused.text);
      assert.deepEqual(ctx.sim.server.calls, [], 'a refused test calls nothing');
      const admin = await ctx.red.login('admin', PASSWORD);
      const ok = await post(route, body(), admin.access_token);
      assert.equal(ok.status, 200, ok.text);
      const r = JSON.parse(ok.text);
      assert.equal(r.ok, true, r.message);
      assert.equal(ctx.sim.server.calls.length, 1);
      assert.ok(!ok.text.includes(secret), ok.text);
    });
  }
});
