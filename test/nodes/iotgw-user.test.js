'use strict';
const assert = require('node:assert/strict');
const { simulatorPerTest, helper, startSimulator, load, until, collect, catchAll, useRuntime } = require('../helpers/harness');
const { simUuid } = require('../../dist/simulator/app');

const TOKEN = 'app-demo-token';
const ME = simUuid(2, 1);
const COLLEAGUE = simUuid(2, 3);
const OTHER_ACCOUNT_USER = simUuid(2, 2);

function appNode(sim, props = {}) {
  return { id: 'app', type: 'iotgw-app', name: 'sim', baseUrl: sim.appUrl, timeoutSeconds: 5, rateLimitCalls: 0, rateLimitWindowSeconds: 1, maxRetries: 0, ...props };
}

describe('iotgw-user against the simulator', function () {
  let sim;
  simulatorPerTest({ app: { rateLimitCalls: 0 } }, (s) => (sim = s));

  function flow(appProps, nodeProps = {}) {
    return [
      appNode(sim, appProps),
      { id: 'user', type: 'iotgw-user', app: 'app', wires: [['out']], ...nodeProps },
      { id: 'out', type: 'helper' },
      ...catchAll(),
    ];
  }
  const creds = (authToken = TOKEN) => ({ app: { authToken } });

  it('gets the user of the auth token for an empty payload, keeping the other msg properties', async function () {
    const n = await load(flow(), creds());
    const out = collect(n.get('out'));
    n.get('user').receive({ payload: '', keep: 'me' });
    await until(() => out.length === 1);
    assert.equal(out[0].keep, 'me');
    assert.equal(out[0].statusCode, 200);
    assert.equal(out[0].payload.id, ME);
    assert.equal(out[0].payload.username, 'demo');
    assert.equal(out[0].payload.ativo, true);
    assert.equal(typeof out[0].payload.tokenManager, 'string');
    const calls = sim.server.callsTo('app/user');
    assert.equal(calls.length, 1);
    assert.equal(calls[0].query, '', 'no query parameter for the current user');
    assert.equal(calls[0].headers.authorization, `Bearer ${TOKEN}`);
  });

  it('sends msg.payload as the user_id query value', async function () {
    const n = await load(flow(), creds());
    const out = collect(n.get('out'));
    n.get('user').receive({ payload: COLLEAGUE });
    await until(() => out.length === 1);
    assert.equal(out[0].payload.id, COLLEAGUE);
    assert.equal(out[0].payload.username, 'operator');
    assert.equal(sim.server.callsTo('app/user')[0].query, `?user_id=${COLLEAGUE}`);
  });

  it('lets the query name be set in the node and renamed by msg.query', async function () {
    const n = await load(flow({}, { param: 'uuid' }), creds());
    const out = collect(n.get('out'));
    n.get('user').receive({ payload: COLLEAGUE });
    await until(() => out.length === 1);
    assert.equal(sim.server.callsTo('app/user')[0].query, `?uuid=${COLLEAGUE}`);
    n.get('user').receive({ payload: 'ignored-by-rename', query: { uuid: null, userId: COLLEAGUE } });
    await until(() => out.length === 2);
    assert.equal(sim.server.callsTo('app/user')[1].query, `?userId=${COLLEAGUE}`);
    assert.equal(out[1].payload.id, COLLEAGUE);
  });

  it('refuses bad input before any request', async function () {
    const n = await load(flow(), creds());
    const caught = collect(n.get('caught'));
    const user = n.get('user');
    user.receive({ payload: 1712345678901 });
    user.receive({ payload: { id: COLLEAGUE } });
    user.receive({ payload: COLLEAGUE, query: 'user_id=x' });
    user.receive({ payload: 'x'.repeat(5000) });
    user.receive({ payload: '', query: { access: TOKEN } });
    await until(() => caught.length === 5);
    for (const c of caught) assert.equal(c.error.code, 'BAD_INPUT', c.error.message);
    assert.match(caught[0].error.message, /msg\.payload: must be the user ID as a string/);
    assert.match(caught[2].error.message, /msg\.query: must be an object/);
    assert.match(caught[3].error.message, /at most 4096 characters/);
    assert.match(caught[4].error.message, /msg\.query\.access: holds the config node's auth token; .*never in a URL/);
    assert.ok(!caught[4].error.message.includes(TOKEN));
    assert.equal(sim.server.calls.length, 0, 'no request was sent');
  });

  it('refuses to run without an auth token or with a non-loopback http:// base URL, sending nothing', async function () {
    const n = await load(
      [
        appNode(sim),
        { ...appNode(sim, { baseUrl: 'http://app.example.com/app' }), id: 'app2' },
        { id: 'user', type: 'iotgw-user', app: 'app', wires: [['out']] },
        { id: 'user2', type: 'iotgw-user', app: 'app2', wires: [['out']] },
        { id: 'user3', type: 'iotgw-user', app: '', wires: [['out']] },
        { id: 'out', type: 'helper' },
        ...catchAll(),
      ],
      { app: {}, app2: { authToken: TOKEN } },
    );
    const caught = collect(n.get('caught'));
    n.get('user').receive({ payload: '' });
    n.get('user2').receive({ payload: '' });
    n.get('user3').receive({ payload: '' });
    await until(() => caught.length === 3);
    const byNode = Object.fromEntries(caught.map((c) => [c.error.source.id, c.error]));
    assert.equal(byNode.user.code, 'BAD_INPUT');
    assert.match(byNode.user.message, /no auth token/);
    assert.equal(byNode.user2.code, 'BAD_INPUT');
    assert.match(byNode.user2.message, /http:\/\/ is allowed only for loopback/);
    assert.equal(byNode.user3.code, 'BAD_INPUT');
    assert.match(byNode.user3.message, /no iotgw-app config node is selected/);
    assert.equal(sim.server.calls.length, 0);
  });

  it('refuses a reply that is not a user record as BAD_RESPONSE', async function () {
    const n = await load(flow(), creds());
    const caught = collect(n.get('caught'));
    sim.inject({ route: 'app/user', status: 200, body: [{ id: ME }] });
    n.get('user').receive({ payload: '' });
    sim.inject({ route: 'app/user', status: 200, body: { id: ME, ativo: 'yes' } });
    n.get('user').receive({ payload: '' });
    await until(() => caught.length === 2);
    assert.deepEqual(caught.map((c) => c.error.code), ['BAD_RESPONSE', 'BAD_RESPONSE']);
    assert.ok(caught.some((c) => /at ativo/.test(c.error.message)));
  });

  it('never lets the auth token reach a msg, a status, a log line, an error or a URL', async function () {
    const n = await load(flow(), creds());
    const out = collect(n.get('out'));
    const caught = collect(n.get('caught'));
    const statuses = [];
    n.get('user').on('call:status', (c) => statuses.push(c.args[0]));
    const user = n.get('user');
    user.receive({ payload: '' });
    user.receive({ payload: 'not-a-uuid' });
    user.receive({ payload: OTHER_ACCOUNT_USER });
    await until(() => out.length + caught.length === 3);
    const seen = JSON.stringify([out, caught.map((c) => ({ ...c.error, message: c.error.message })), statuses, helper.log().args]);
    assert.ok(!seen.includes(TOKEN), 'the token appears nowhere in what the flow sees');
    for (const c of sim.server.calls) {
      assert.ok(!c.query.includes(TOKEN) && !c.path.includes(TOKEN), 'never in a URL');
      assert.equal(c.headers.authorization, `Bearer ${TOKEN}`);
    }
  });
});

describe('application API errors reach Catch with the codes of nodes.md and the server\'s own text', function () {
  let sim;
  useRuntime();
  afterEach(async function () {
    await helper.unload();
    await sim.close();
  });

  const TEXTS = {
    400: ['ERROR_CODE_INPUT_ERROR', 'Input error. Check the request payload for issues: user_id must be a user ID (UUID)'],
    401: ['ERROR_CODE_UNAUTHORIZED', 'This request requires authentication: the token is invalid or expired'],
    403: ['ERROR_CODE_ACCESS_DENIED', 'Access denied. Additional privileges are needed: the user belongs to another account'],
    404: ['ERROR_CODE_NOT_FOUND', 'Not found. The requested resource does not exist: no user with this ID'],
    429: ['ERROR_CODE_TOO_MANY_REQUESTS', 'Rate limited. Too many requests.'],
    500: ['ERROR_FATAL', 'Unexpected error.'],
  };
  const CODES = { 400: 'HTTP_ERROR', 401: 'UNAUTHORIZED', 403: 'FORBIDDEN', 404: 'NOT_FOUND', 429: 'RATE_LIMITED', 500: 'HTTP_ERROR' };

  for (const shape of ['platform', 'error']) {
    for (const status of [400, 401, 403, 404, 429, 500]) {
      it(`HTTP ${status} with the ${shape === 'platform' ? '{code, message, payload}' : '{error}'} body`, async function () {
        sim = await startSimulator({ app: { errorShape: shape, rateLimitCalls: status === 429 ? 1 : 0, rateLimitWindowMs: 60_000 } });
        const flow = [
          appNode(sim),
          { id: 'user', type: 'iotgw-user', app: 'app', wires: [['out']] },
          { id: 'out', type: 'helper' },
          ...catchAll(),
        ];
        const n = await load(flow, { app: { authToken: status === 401 ? 'wrong-token-123456' : TOKEN } });
        const out = collect(n.get('out'));
        const caught = collect(n.get('caught'));
        const statuses = [];
        n.get('user').on('call:status', (c) => statuses.push(c.args[0]));
        const payload = { 400: 'not-a-uuid', 403: OTHER_ACCOUNT_USER, 404: simUuid(2, 99) }[status] ?? '';
        if (status === 429) {
          n.get('user').receive({ payload: '' });
          await until(() => out.length === 1);
        }
        if (status === 500) sim.areas.app.failNext(1);
        n.get('user').receive({ payload, n: 'failing' });
        await until(() => caught.length === 1);
        const e = caught[0].error;
        assert.equal(caught[0].n, 'failing', 'the error carries its own msg');
        assert.equal(e.code, CODES[status]);
        assert.match(e.message, new RegExp(`HTTP ${status}`));
        const [code, text] = TEXTS[status];
        assert.ok(e.message.includes(text), `the server's text is in "${e.message}"`);
        assert.equal(e.message.includes(code), shape === 'platform', 'the platform code is quoted when the body has one');
        assert.ok(!e.message.includes('wrong-token-123456'));
        assert.equal(statuses.at(-1).fill, 'red');
        assert.equal(sim.server.callsTo('app/user').at(-1).status, status);
        assert.equal(out.length, status === 429 ? 1 : 0);
      });
    }
  }

  it('retries a 500 on a GET and then succeeds', async function () {
    sim = await startSimulator({ app: { rateLimitCalls: 0 } });
    const n = await load(
      [appNode(sim, { maxRetries: 1 }), { id: 'user', type: 'iotgw-user', app: 'app', wires: [['out']] }, { id: 'out', type: 'helper' }, ...catchAll()],
      { app: { authToken: TOKEN } },
    );
    const out = collect(n.get('out'));
    sim.areas.app.failNext(1);
    n.get('user').receive({ payload: '' });
    await until(() => out.length === 1, 8000);
    assert.deepEqual(sim.server.callsTo('app/user').map((c) => c.status), [500, 200]);
    assert.equal(out[0].payload.id, ME);
  });
});
