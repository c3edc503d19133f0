'use strict';
/**
 * Issue 13, areas (b)(c)(d) edges against the simulator in a real Node-RED runtime: a
 * separate LoRaWAN/SMS base URL, broker tokens fetched from the API gateway's OAuth endpoint
 * and renewed when they end mid-run, application logins with email/password renewed after a
 * 401, prices as numeric strings, and device paging whose end is an empty page.
 */
const assert = require('node:assert/strict');
const { simulatorPerTest, gatewayNode, load, until, collect, catchAll, DEMO_CREDS, nodeFlow } = require('../helpers/harness');

const OAUTH_CREDS = { clientId: 'demo', clientSecret: 'demo-secret', brokerClientId: 'sim-client', brokerClientSecret: 'sim-client-secret' };

describe('real-service edges of the broker and the application API (issue 13)', function () {
  this.timeout(30000);
  let sim;
  simulatorPerTest({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 } }, (s) => (sim = s));

  const brokerFlow = (gw = {}, nodeProps = {}) => nodeFlow(sim, { id: 'contract', type: 'iotgw-lorawan-contract', operation: 'list', ...nodeProps }, { gw });

  it('brokerBaseUrl: the LoRaWAN/SMS endpoints on their own base ending in /v1 (point 3)', async function () {
    sim.areas.broker.configure({ basePath: '/v1' });
    const n = await load(brokerFlow({ brokerBaseUrl: `${sim.url}/v1/` }));
    const out = collect(n.get('out'));
    const caught = collect(n.get('caught'));
    n.get('contract').receive({ payload: {} });
    await until(() => out.length + caught.length === 1);
    assert.equal(caught.length, 0, caught[0]?.error?.message);
    assert.deepEqual(sim.server.callsTo('broker/contract-list').map((c) => c.path), ['/v1/lorawan/broker/contract']);
  });

  it('without brokerBaseUrl a broker under /v1 is not found (the switch is real)', async function () {
    sim.areas.broker.configure({ basePath: '/v1' });
    const n = await load(brokerFlow());
    const caught = collect(n.get('caught'));
    n.get('contract').receive({ payload: {} });
    await until(() => caught.length === 1);
    assert.equal(caught[0].error.code, 'NOT_FOUND');
  });

  it('broker tokens from brokerTokenUrl end in the middle of 100 requests: 0 failures (point 6)', async function () {
    // Tokens declare an hour but are revoked after 150 ms; the pasted token is not accepted.
    sim.areas.broker.configure({ basePath: '/v1', staticTokenValid: false, tokenExpiresIn: 3600, tokenLifetimeMs: 150 });
    const n = await load(brokerFlow({ brokerBaseUrl: `${sim.url}/v1`, brokerTokenUrl: `${sim.url}/v1/oauth/access-token` }), { gw: OAUTH_CREDS });
    const out = collect(n.get('out'));
    const caught = collect(n.get('caught'));
    for (let i = 0; i < 100; i++) {
      n.get('contract').receive({ payload: {}, i });
      await until(() => out.length + caught.length === i + 1, 10000, `reply ${i}`);
      await new Promise((r) => setTimeout(r, 5));
    }
    assert.equal(caught.length, 0, caught[0]?.error?.message);
    assert.equal(out.length, 100);
    const issued = sim.areas.broker.tokenCounters.issued;
    assert.ok(issued >= 3, `tokens issued: ${issued} (they must have ended mid-run)`);
    assert.ok(sim.areas.broker.counters.unauthorized >= issued - 1, 'each renewal followed a 401');
    const tokenCalls = sim.server.callsTo('broker/token');
    assert.equal(tokenCalls.length, issued, 'one fetch per renewal, cached in between');
    assert.match(String(tokenCalls[0].headers.authorization), /^Basic /);
    assert.ok(!sim.server.callsTo('broker/contract-list').some((c) => String(c.query).includes('secret')), 'no secret in a URL');
  });

  it('a wrong broker client secret is UNAUTHORIZED and the secret is in no message', async function () {
    sim.areas.broker.configure({ staticTokenValid: false });
    const n = await load(brokerFlow({ brokerTokenUrl: `${sim.url}/oauth/access-token` }), { gw: { ...OAUTH_CREDS, brokerClientSecret: 'not-the-secret' } });
    const caught = collect(n.get('caught'));
    n.get('contract').receive({ payload: {} });
    await until(() => caught.length === 1);
    assert.equal(caught[0].error.code, 'UNAUTHORIZED');
    assert.doesNotMatch(JSON.stringify(caught[0]), /not-the-secret/);
  });

  it('a pasted broker access token works as before when no token URL is set', async function () {
    const n = await load(brokerFlow(), { gw: DEMO_CREDS });
    const out = collect(n.get('out'));
    n.get('contract').receive({ payload: {} });
    await until(() => out.length === 1);
    assert.equal(sim.server.callsTo('broker/token').length, 0);
  });

  it('contract creation accepts prices as numeric strings and sends them as given (point 7)', async function () {
    const n = await load(brokerFlow({}, { operation: 'create' }), { gw: DEMO_CREDS });
    const out = collect(n.get('out'));
    const caught = collect(n.get('caught'));
    const body = { customerId: 2, planDesc: 'Plano', monthlyFee: '49.90', activationPrice: '10', excessUplinkPrice: '0.10', excessDownlinkPrice: 0.05 };
    n.get('contract').receive({ payload: body });
    await until(() => out.length + caught.length === 1);
    assert.equal(caught.length, 0, caught[0]?.error?.message);
    assert.deepEqual(JSON.parse(sim.server.callsTo('broker/contract-create')[0].body), body);
    assert.equal(sim.areas.broker.contracts.at(-1).excessUplinkPrice, '0.10');
    n.get('contract').receive({ payload: { ...body, excessUplinkPrice: 'cheap', monthlyFee: '-1' } });
    await until(() => caught.length === 1);
    assert.equal(caught[0].error.code, 'BAD_INPUT');
    assert.match(caught[0].error.message, /excessUplinkPrice: must be a number or a numeric string/);
    assert.match(caught[0].error.message, /monthlyFee/);
  });

  it('device paging ends at an empty page when the service gives no last/totalPages (point 7)', async function () {
    sim.areas.broker.configure({ pageEnd: 'no-last', deviceCount: 250 });
    const n = await load([
      gatewayNode(sim),
      { id: 'devices', type: 'iotgw-lorawan-devices', gateway: 'gw', page: 1, pageSize: 100, allPages: true, wires: [['out']] },
      { id: 'out', type: 'helper' },
      ...catchAll(),
    ], { gw: DEMO_CREDS });
    const out = collect(n.get('out'));
    const caught = collect(n.get('caught'));
    n.get('devices').receive({ payload: {} });
    await until(() => caught.length > 0 || out.some((m) => m.parts && m.parts.count !== undefined && out.length === m.parts.count), 10000, 'the last page');
    assert.equal(caught.length, 0, caught[0]?.error?.message);
    assert.equal(out.reduce((a, m) => a + m.payload.length, 0), 250);
    assert.equal(sim.server.callsTo('broker/devices').length, 4, '3 pages with devices, then the empty one');
  });

  it('tag paging ends at an empty page when the platform gives no nextPage (point 7)', async function () {
    sim.areas.app.configure({ rateLimitCalls: 0, omitNextPage: true, tagCount: 45 });
    const n = await load([
      { id: 'app', type: 'iotgw-app', name: 'sim', baseUrl: sim.appUrl, timeoutSeconds: 5, rateLimitCalls: 0, rateLimitWindowSeconds: 1, maxRetries: 0 },
      { id: 'tags', type: 'iotgw-tag-list', app: 'app', walk: 'all', page: '', perPage: 20, wires: [['out']] },
      { id: 'out', type: 'helper' },
      ...catchAll(),
    ], { app: { authToken: 'app-demo-token' } });
    const out = collect(n.get('out'));
    const caught = collect(n.get('caught'));
    n.get('tags').receive({ payload: '' });
    await until(() => caught.length > 0 || out.some((m) => m.parts?.count !== undefined), 10000, 'the last page');
    assert.equal(caught.length, 0, caught[0]?.error?.message);
    assert.equal(out.reduce((a, m) => a + m.payload.length, 0), 45);
    assert.equal(sim.server.callsTo('app/tags').length, 4, '20 + 20 + 5, then the empty page');
  });

  describe('application API login (point 6)', function () {
    function appFlow(props = {}) {
      return [
        { id: 'app', type: 'iotgw-app', name: 'sim', baseUrl: sim.appUrl, timeoutSeconds: 5, rateLimitCalls: 0, rateLimitWindowSeconds: 1, maxRetries: 0, ...props },
        { id: 'user', type: 'iotgw-user', app: 'app', wires: [['out']] },
        { id: 'out', type: 'helper' },
        ...catchAll(),
      ];
    }

    it('logs in with email/password, and again when the token ends mid-run: 100 requests, 0 failures', async function () {
      sim.areas.app.configure({ rateLimitCalls: 0, loginTokenLifetimeMs: 150 });
      const n = await load(appFlow(), { app: { email: 'demo@example.com', password: 'demo-password' } });
      const out = collect(n.get('out'));
      const caught = collect(n.get('caught'));
      for (let i = 0; i < 100; i++) {
        n.get('user').receive({ payload: '' });
        await until(() => out.length + caught.length === i + 1, 10000, `reply ${i}`);
        await new Promise((r) => setTimeout(r, 5));
      }
      assert.equal(caught.length, 0, caught[0]?.error?.message);
      assert.equal(out.length, 100);
      assert.ok(out.every((m) => m.payload.username === 'demo'));
      const logins = sim.areas.app.loginCounters.logins;
      assert.ok(logins >= 3, `logins: ${logins} (the token must have ended mid-run)`);
      assert.equal(sim.server.callsTo('app/login').length, logins, 'cached between logins');
      const login = sim.server.callsTo('app/login')[0];
      assert.equal(login.path, '/app/auth/login');
      assert.deepEqual(JSON.parse(login.body), { email: 'demo@example.com', password: 'demo-password' });
    });

    it('uses loginPath, and a refused login is UNAUTHORIZED without the password in it', async function () {
      const n = await load(appFlow({ loginPath: 'auth/login/' }), { app: { email: 'demo@example.com', password: 'wrong-password' } });
      const caught = collect(n.get('caught'));
      n.get('user').receive({ payload: '' });
      await until(() => caught.length === 1);
      assert.equal(caught[0].error.code, 'UNAUTHORIZED');
      assert.doesNotMatch(JSON.stringify(caught[0]), /wrong-password/);
      assert.equal(sim.server.callsTo('app/login')[0].path, '/app/auth/login/');
    });

    it('refuses a query holding the login token or the password, sending nothing and naming neither value', async function () {
      sim.areas.app.configure({ rateLimitCalls: 0 });
      const n = await load(appFlow(), { app: { email: 'demo@example.com', password: 'demo-password' } });
      const out = collect(n.get('out'));
      const caught = collect(n.get('caught'));
      n.get('user').receive({ payload: '' });
      await until(() => out.length + caught.length === 1);
      assert.equal(caught.length, 0, caught[0]?.error?.message);
      const auth = sim.server.callsTo('app/user')[0].headers.authorization;
      const loginToken = /^Bearer (.+)$/.exec(auth)[1];
      const before = sim.server.calls.length;
      n.get('user').receive({ payload: '', query: { t: loginToken } });
      n.get('user').receive({ payload: '', query: { q: `x-${'demo-password'}-y` } });
      await until(() => caught.length === 2);
      assert.match(caught[0].error.message, /msg\.query\.t: holds the config node's login token; it is sent only in the Authorization header, never in a URL/);
      assert.match(caught[1].error.message, /msg\.query\.q: holds the config node's password; it is sent only in the login request's body, never in a URL/);
      for (const c of caught) {
        assert.equal(c.error.code, 'BAD_INPUT');
        assert.ok(!JSON.stringify(c.error).includes(loginToken) && !JSON.stringify(c.error).includes('demo-password'));
      }
      assert.equal(sim.server.calls.length, before, 'no request was sent');
    });

    it('a pasted auth token works as before', async function () {
      const n = await load(appFlow(), { app: { authToken: 'app-demo-token' } });
      const out = collect(n.get('out'));
      n.get('user').receive({ payload: '' });
      await until(() => out.length === 1);
      assert.equal(sim.server.callsTo('app/login').length, 0);
    });
  });
});
