'use strict';
const assert = require('node:assert/strict');
const { simulatorPerTest, helper, gatewayNode, load, until, collect, modeNode, nodeFlow } = require('../helpers/harness');
const { connectProxy, setProxyEnv } = require('../helpers/net');

const ITEM = { DestinationID: '01000001SKYA001', Mode: 1, WakeupInterval: 2 };

describe('iotgw-gateway: auth, limits, retries and faults', function () {
  let sim;
  simulatorPerTest({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 } }, (s) => (sim = s));

  const modeFlow = (gw = {}) => nodeFlow(sim, modeNode({ lingerMs: 0 }), { gw, outs: ['ok', 'bad'] });

  it('fetches a token once with client credentials and reuses it', async function () {
    const n = await load(modeFlow());
    const ok = collect(n.get('ok'));
    for (let i = 0; i < 3; i++) {
      n.get('mode').receive({ payload: ITEM });
      await until(() => ok.length === i + 1);
    }
    const auth = sim.server.callsTo('terminal/auth');
    assert.equal(auth.length, 1);
    assert.equal(auth[0].headers['content-type'], 'application/x-www-form-urlencoded');
    assert.match(auth[0].body, /grant_type=client_credentials/);
    const bearers = new Set(sim.server.callsTo('terminal/mode').map((c) => c.headers.authorization));
    assert.equal(bearers.size, 1);
  });

  it('renews an expired token once after a 401 and sends the call again', async function () {
    const n = await load(modeFlow());
    const ok = collect(n.get('ok'));
    n.get('mode').receive({ payload: ITEM });
    await until(() => ok.length === 1);
    sim.terminal.expireTokens();
    n.get('mode').receive({ payload: ITEM });
    await until(() => ok.length === 2);
    assert.equal(sim.server.callsTo('terminal/auth').length, 2);
    assert.deepEqual(sim.server.callsTo('terminal/mode').map((c) => c.status), [200, 401, 200]);
    assert.equal(sim.terminal.counters.submitted, 2, 'the refused call was not processed, so nothing is doubled');
  });

  it('wrong client credentials: UNAUTHORIZED, without the secret in the message', async function () {
    const n = await load(modeFlow(), { gw: { clientId: 'demo', clientSecret: 'not-the-secret-XYZ' } });
    const caught = collect(n.get('caught'));
    n.get('mode').receive({ payload: ITEM });
    await until(() => caught.length === 1);
    assert.equal(caught[0].error.code, 'UNAUTHORIZED');
    assert.doesNotMatch(caught[0].error.message, /not-the-secret-XYZ/);
    assert.match(caught[0].error.message, /client ID and client secret/);
    assert.equal(sim.server.callsTo('terminal/mode').length, 0);
  });

  it('a static bearer token works, and a bad one is UNAUTHORIZED after one try', async function () {
    let n = await load(modeFlow(), { gw: { token: 'demo-token' } });
    const ok = collect(n.get('ok'));
    n.get('mode').receive({ payload: ITEM });
    await until(() => ok.length === 1);
    assert.equal(sim.server.callsTo('terminal/auth').length, 0);
    await helper.unload();
    sim.server.clearCalls();
    n = await load(modeFlow(), { gw: { token: 'wrong-token' } });
    const caught = collect(n.get('caught'));
    n.get('mode').receive({ payload: ITEM });
    await until(() => caught.length === 1);
    assert.equal(caught[0].error.code, 'UNAUTHORIZED');
    assert.equal(caught[0].statusCode, 401, 'msg.statusCode carries the failed reply\'s status');
    assert.equal(sim.server.callsTo('terminal/mode').length, 1);
  });

  it('resolves ${ENV_VAR} in credentials', async function () {
    process.env.IOTGW_TEST_SECRET = 'demo-secret';
    try {
      const n = await load(modeFlow(), { gw: { clientId: 'demo', clientSecret: '${IOTGW_TEST_SECRET}' } });
      const ok = collect(n.get('ok'));
      n.get('mode').receive({ payload: ITEM });
      await until(() => ok.length === 1);
    } finally {
      delete process.env.IOTGW_TEST_SECRET;
    }
  });

  it('no credentials at all: BAD_INPUT and no request', async function () {
    const n = await load(modeFlow(), {});
    const caught = collect(n.get('caught'));
    n.get('mode').receive({ payload: ITEM });
    await until(() => caught.length === 1);
    assert.equal(caught[0].error.code, 'BAD_INPUT');
    assert.equal(sim.server.calls.length, 0);
  });

  it('refuses http:// to a non-loopback host before any request', async function () {
    const n = await load([{ ...modeFlow()[0], baseUrl: 'http://gateway.example.com' }, ...modeFlow().slice(1)]);
    const caught = collect(n.get('caught'));
    n.get('mode').receive({ payload: ITEM });
    await until(() => caught.length === 1);
    assert.equal(caught[0].error.code, 'BAD_INPUT');
    assert.match(caught[0].error.message, /http:\/\/ is allowed only for loopback/);
  });

  it('a 429 without Retry-After waits out the window, then sends the same items again in order', async function () {
    sim.terminal.configure({ rateLimitCalls: 1, rateLimitWindowMs: 1000 });
    // The node does not pace itself (limit off), so the gateway's 429 drives the wait.
    const n = await load(modeFlow({ rateLimitCalls: 0, rateLimitWindowSeconds: 1 }));
    const ok = collect(n.get('ok'));
    n.get('mode').receive({ payload: [ITEM, { ...ITEM, UserMessageID: 2 }] });
    await until(() => ok.length === 1);
    n.get('mode').receive({ payload: [{ ...ITEM, UserMessageID: 3 }, { ...ITEM, UserMessageID: 4 }] });
    await until(() => ok.length === 2, 8000);
    const calls = sim.server.callsTo('terminal/mode');
    assert.deepEqual(calls.map((c) => c.status), [200, 429, 200]);
    assert.equal(calls[1].body, calls[2].body, 'the refused items went again, intact and in order');
    assert.ok(calls[2].at - calls[1].at >= 900, `waited about the window (${calls[2].at - calls[1].at} ms)`);
  });

  it('honours Retry-After on 429; a POST answered 503 is not sent again (a 503 can come after the work: issue 43)', async function () {
    const n = await load(modeFlow());
    const ok = collect(n.get('ok'));
    const caught = collect(n.get('caught'));
    sim.inject({ route: 'terminal/mode', status: 429, headers: { 'retry-after': '1' }, times: 2 });
    n.get('mode').receive({ payload: ITEM });
    await until(() => ok.length === 1, 30000);
    const calls = sim.server.callsTo('terminal/mode');
    assert.deepEqual(calls.map((c) => c.status), [429, 429, 200]);
    assert.ok(calls[1].at - calls[0].at >= 900);
    assert.ok(calls[2].at - calls[1].at >= 900);
    assert.equal(sim.terminal.counters.submitted, 1);
    sim.inject({ route: 'terminal/mode', status: 503, headers: { 'retry-after': '1' } });
    n.get('mode').receive({ payload: ITEM });
    await until(() => caught.length === 1, 30000);
    assert.equal(caught[0].error.code, 'RATE_LIMITED');
    assert.match(caught[0].error.message, /HTTP 503.*not sent again/);
    assert.equal(sim.server.callsTo('terminal/mode').length, 4, 'the 503 POST sent once');
  });

  it('gives up with RATE_LIMITED when the retries run out', async function () {
    const n = await load(modeFlow({ maxRetries: 1 }));
    const caught = collect(n.get('caught'));
    sim.inject({ route: 'terminal/mode', status: 429, headers: { 'retry-after': '0' }, times: 5 });
    n.get('mode').receive({ payload: ITEM });
    await until(() => caught.length === 1, 8000);
    assert.equal(caught[0].error.code, 'RATE_LIMITED');
    assert.equal(sim.server.callsTo('terminal/mode').length, 2);
  });

  it('a submit the gateway answered too slowly is reported as TIMEOUT and never sent again', async function () {
    const n = await load(modeFlow({ timeoutSeconds: 0.3 }));
    const caught = collect(n.get('caught'));
    sim.inject({ route: 'terminal/mode', phase: 'after', delayMs: 800 });
    n.get('mode').receive({ payload: ITEM });
    await until(() => caught.length === 1);
    assert.equal(caught[0].error.code, 'TIMEOUT');
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(sim.server.callsTo('terminal/mode').length, 1, 'not re-sent');
    assert.equal(sim.terminal.counters.submitted, 1, 'the gateway did take it');
  });

  it('a 500 on a submit is HTTP_ERROR and is not retried', async function () {
    const n = await load(modeFlow());
    const caught = collect(n.get('caught'));
    sim.inject({ route: 'terminal/mode', status: 500, body: { Message: 'boom' } });
    n.get('mode').receive({ payload: ITEM });
    await until(() => caught.length === 1);
    assert.equal(caught[0].error.code, 'HTTP_ERROR');
    assert.match(caught[0].error.message, /HTTP 500: boom/);
    assert.equal(sim.server.callsTo('terminal/mode').length, 1);
  });

  it('retries a GET after a reset connection and a 500', async function () {
    sim.terminal.seedBacklog(5);
    const n = await load([
      gatewayNode(sim, { timeoutSeconds: 2 }),
      { id: 'poller', type: 'iotgw-status-poller', gateway: 'gw', intervalSeconds: 3600, startFrom: '-1d', output: 'batch', autoStart: false, wires: [['out']] },
      { id: 'out', type: 'helper' },
    ]);
    const out = collect(n.get('out'));
    sim.inject({ route: 'terminal/status', reset: true, status: 200, body: { ErrorID: 0, Statuses: [] } });
    sim.inject({ route: 'terminal/status', status: 500 });
    n.get('poller').receive({ payload: 'poll' });
    await until(() => out.length === 1, 10000);
    assert.equal(out[0].payload.length, 5);
    assert.deepEqual(sim.server.callsTo('terminal/status').map((c) => c.status), [200, 500, 200]);
  });

  it('malformed JSON and HTML replies are BAD_RESPONSE; the node keeps working', async function () {
    const n = await load(modeFlow());
    const ok = collect(n.get('ok'));
    const caught = collect(n.get('caught'));
    sim.inject({ route: 'terminal/mode', status: 200, text: '{"Submissions": [', headers: { 'content-type': 'application/json' } });
    sim.inject({ route: 'terminal/mode', status: 200, text: '<html><body>Gateway</body></html>', headers: { 'content-type': 'text/html' } });
    sim.inject({ route: 'terminal/mode', status: 200, body: { Submissions: [{ ID: 'abc', ErrorID: 'x' }] } });
    for (let i = 1; i <= 3; i++) {
      n.get('mode').receive({ payload: ITEM });
      await until(() => caught.length === i);
    }
    assert.deepEqual(caught.map((c) => c.error.code), ['BAD_RESPONSE', 'BAD_RESPONSE', 'BAD_RESPONSE']);
    n.get('mode').receive({ payload: ITEM });
    await until(() => ok.length === 1);
  });

  it('a top-level ErrorID is GATEWAY_ERROR with the catalogue name', async function () {
    const n = await load(modeFlow());
    const caught = collect(n.get('caught'));
    sim.terminal.configure({ maxBatch: 1 });
    n.get('mode').receive({ payload: [ITEM, ITEM] });
    await until(() => caught.length === 1);
    assert.equal(caught[0].error.code, 'GATEWAY_ERROR');
    assert.match(caught[0].error.message, /ErrorID 104 \(TOO_MANY_MESSAGES/);
  });

  it('shares one SEND budget between the nodes of an account', async function () {
    sim.terminal.configure({ rateLimitCalls: 2, rateLimitWindowMs: 1000 });
    const n = await load([
      ...modeFlow({ rateLimitCalls: 2, rateLimitWindowSeconds: 1 }),
      { id: 'cancel', type: 'iotgw-cancel', gateway: 'gw', lingerMs: 0, wires: [['cancelled']] },
      { id: 'cancelled', type: 'helper' },
    ]);
    const ok = collect(n.get('ok'));
    const cancelled = collect(n.get('cancelled'));
    n.get('mode').receive({ payload: ITEM });
    await until(() => ok.length === 1);
    n.get('mode').receive({ payload: ITEM });
    n.get('cancel').receive({ payload: ok[0].payload });
    n.get('mode').receive({ payload: ITEM });
    await until(() => ok.length === 3 && cancelled.length === 1, 8000);
    const statuses = [...sim.server.callsTo('terminal/mode'), ...sim.server.callsTo('terminal/cancel')].map((c) => c.status);
    assert.ok(statuses.every((s) => s === 200), `no 429 provoked: ${statuses}`);
    // Two mode msgs that wait for the same slot may share a call: 3 or 4 calls.
    assert.ok(statuses.length >= 3 && statuses.length <= 4, `${statuses.length} calls`);
    const times = [...sim.server.callsTo('terminal/mode'), ...sim.server.callsTo('terminal/cancel')].map((c) => c.at).sort((a, b) => a - b);
    assert.ok(times[2] - times[0] >= 950, 'the third call waited for the shared window');
  });

  it('a proxy in the environment is not used for a loopback base URL (test/nodes/iotgw-gateway.proxy.test.js covers other hosts)', async function () {
    const proxy = await connectProxy();
    const restore = setProxyEnv({ http_proxy: `http://127.0.0.1:${proxy.port}` });
    try {
      const n = await load(modeFlow());
      const ok = collect(n.get('ok'));
      n.get('mode').receive({ payload: ITEM });
      await until(() => ok.length === 1);
      assert.equal(proxy.connects.length, 0, 'loopback requests never go through a proxy');
    } finally {
      restore();
      await helper.unload();
      proxy.close();
    }
  });
});
