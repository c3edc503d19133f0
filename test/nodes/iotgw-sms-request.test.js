'use strict';
const assert = require('node:assert/strict');
const { simulatorPerTest, helper, load, until, collect, DEMO_CREDS, nodeFlow } = require('../helpers/harness');

describe('iotgw-sms-request against the simulator', function () {
  let sim;
  simulatorPerTest({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 } }, (s) => (sim = s));

  const flow = (nodeProps = {}, gw = {}) => nodeFlow(sim, { id: 'sms', type: 'iotgw-sms-request', wait: false, intervalSeconds: 0.1, timeLimitSeconds: 10, ...nodeProps }, { gw });

  it('looks a batch up with the broker headers and emits the envelope with its counters', async function () {
    const n = await load(flow());
    const out = collect(n.get('out'));
    n.get('sms').receive({ payload: 1, keep: true });
    await until(() => out.length === 1);
    const m = out[0];
    assert.equal(m.keep, true);
    assert.equal(m.statusCode, 200);
    assert.equal(m.payload.sendSmsRequest.id, 1);
    assert.equal(m.payload.sendSmsRequest.status, 'PROCESSED');
    assert.match(m.payload.sendSmsRequest.sendAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    assert.deepEqual([m.payload.successCount, m.payload.errorCount, m.payload.pendingCount], [90, 10, 0]);
    assert.equal(m.waited, undefined);
    const call = sim.server.callsTo('sms/request')[0];
    assert.equal(call.query, '?id=1');
    assert.equal(call.headers.client_id, 'sim-client');
    assert.equal(call.headers.access_token, 'sim-access-token');
  });

  it('waits until nothing is pending and reports completion with the counters', async function () {
    let clock = Date.now();
    sim.areas.broker.now = () => clock; // the batch drains only when the test moves the clock
    const id = sim.areas.broker.addSmsBatch({ total: 6, msPerMessage: 1000, failEvery: 3 });
    const n = await load(flow({ wait: true }));
    const out = collect(n.get('out'));
    const statuses = [];
    n.get('sms').on('call:status', (c) => statuses.push(c.args[0]));
    n.get('sms').receive({ payload: String(id) });
    await until(() => sim.server.callsTo('sms/request').length >= 2, 5000, 'two polls');
    assert.equal(out.length, 0, 'still waiting');
    clock += 10_000;
    await until(() => out.length === 1);
    const m = out[0];
    assert.equal(m.payload.pendingCount, 0);
    assert.deepEqual([m.payload.successCount, m.payload.errorCount], [4, 2]);
    assert.equal(m.payload.sendSmsRequest.status, 'PROCESSED');
    assert.equal(m.waited.complete, true);
    assert.ok(m.waited.polls >= 3, `polled ${m.waited.polls} times`);
    assert.equal(sim.server.callsTo('sms/request').length, m.waited.polls);
    assert.ok(statuses.some((s) => /pending/.test(s.text || '')), 'status shows the pending count while waiting');
    assert.equal(statuses.at(-1).fill, 'green');
    assert.match(statuses.at(-1).text, /4 sent, 2 failed/);
  });

  it('ends with TIMEOUT at the time limit, with the last counters in msg.payload', async function () {
    const n = await load(flow({ wait: true, intervalSeconds: 0.1, timeLimitSeconds: 0.35 }));
    const caught = collect(n.get('caught'));
    const out = collect(n.get('out'));
    n.get('sms').receive({ payload: 3 });
    await until(() => caught.length === 1);
    const m = caught[0];
    assert.equal(m.error.code, 'TIMEOUT');
    assert.match(m.error.message, /SMS batch 3: 50 still pending after [\d.]+ s \(time limit 0\.35 s\)/);
    assert.equal(m.payload.pendingCount, 50);
    assert.equal(m.waited.complete, false);
    assert.ok(m.waited.polls >= 2);
    assert.equal(out.length, 0);
    const polls = sim.server.callsTo('sms/request').length;
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(sim.server.callsTo('sms/request').length, polls, 'polling stopped');
  });

  it('msg.wait overrides the setting', async function () {
    const id = sim.areas.broker.addSmsBatch({ total: 3, msPerMessage: 60 });
    const n = await load(flow({ wait: false }));
    const out = collect(n.get('out'));
    n.get('sms').receive({ payload: 3 }); // never drains: waiting would end in TIMEOUT
    n.get('sms').receive({ payload: id, wait: true });
    await until(() => out.length === 2);
    const byId = Object.fromEntries(out.map((m) => [m.payload.sendSmsRequest.id, m]));
    assert.equal(byId[3].payload.pendingCount, 50, 'the stuck batch was not waited for');
    assert.equal(byId[3].waited, undefined);
    assert.equal(byId[id].payload.pendingCount, 0);
    assert.equal(byId[id].waited.complete, true);
  });

  it('maps every error body: 400 missing parameter, {valueInBytes}, 403, 404', async function () {
    const n = await load(flow());
    const caught = collect(n.get('caught'));
    const cases = [
      [{ payload: 1, query: { id: null, lote: 1 } }, 'HTTP_ERROR', /GET \/sms\/request: HTTP 400: Parâmetro id não encontrado/],
      [{ payload: 1, query: { note: 'x'.repeat(2000) } }, 'HTTP_ERROR', /HTTP 400: valueInBytes \d{4}/],
      [{ payload: 4 }, 'FORBIDDEN', /HTTP 403, the account is not allowed to do this: Acesso negado ao recurso/],
      [{ payload: 999 }, 'NOT_FOUND', /HTTP 404, not found: Requisição de SMS 999 não encontrada/],
    ];
    for (const [i, [msg]] of cases.entries()) {
      n.get('sms').receive(msg);
      await until(() => caught.length === i + 1);
    }
    cases.forEach(([, code, re], i) => {
      assert.equal(caught[i].error.code, code);
      assert.match(caught[i].error.message, re);
      assert.ok(!caught[i].error.message.includes('x'.repeat(50)), 'the query is never echoed');
    });
  });

  it('a wrong client_id gives UNAUTHORIZED with the API gateway text', async function () {
    const n = await load(flow(), { gw: { ...DEMO_CREDS, brokerClientId: 'nobody' } });
    const caught = collect(n.get('caught'));
    n.get('sms').receive({ payload: 1 });
    await until(() => caught.length === 1);
    assert.equal(caught[0].error.code, 'UNAUTHORIZED');
    assert.match(caught[0].error.message, /Client Id in the request, identified by HEADER client_id, is invalid/);
    assert.ok(!caught[0].error.message.includes('sim-access-token'));
  });

  it('refuses a missing or bad batch ID and a bad msg.wait before any request', async function () {
    const n = await load(flow());
    const caught = collect(n.get('caught'));
    for (const msg of [{}, { payload: 'abc' }, { payload: -1 }, { payload: 2.5 }, { payload: 1, wait: 'yes' }]) n.get('sms').receive(msg);
    await until(() => caught.length === 5);
    assert.ok(caught.every((c) => c.error.code === 'BAD_INPUT'));
    assert.match(caught[0].error.message, /msg\.payload: required, the SMS batch ID/);
    assert.match(caught[4].error.message, /msg\.wait: must be true or false/);
    assert.equal(sim.server.calls.length, 0, 'no request was sent');
  });

  it('a redeploy while waiting ends the msg once and stops polling', async function () {
    const n = await load(flow({ wait: true, intervalSeconds: 0.05, timeLimitSeconds: 60 }));
    const errors = [];
    n.get('sms').on('call:error', (c) => errors.push(c.args[0]));
    n.get('sms').receive({ payload: 3 });
    await until(() => sim.server.callsTo('sms/request').length >= 2);
    await helper.clearFlows();
    assert.equal(errors.length, 1);
    assert.equal(errors[0].code, 'NETWORK');
    const polls = sim.server.callsTo('sms/request').length;
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(sim.server.callsTo('sms/request').length, polls);
  });
});
