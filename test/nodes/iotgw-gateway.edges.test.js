'use strict';
/**
 * Issue 13, area (a) edges against the simulator in a real Node-RED runtime: throttling as
 * HTTP 200 + ErrorID, base URLs as users paste them, echoed fields in another case or order,
 * a token endpoint answering 200 + error, a 401 in mid-session, status records with only
 * ID and ErrorID, and the 65 s default timeout.
 */
const assert = require('node:assert/strict');
const { simulatorPerTest, gatewayNode, load, until, collect, catchAll, DEMO_CREDS, modeNode, nodeFlow } = require('../helpers/harness');
const { migrateGatewayConfig, gatewaySettings } = require('../../dist/nodes/iotgw-gateway');
const { resolveGatewayBase } = require('../../dist/lib/transport/endpoints');

const T1 = '01000001SKYA001';
const T3 = '01000003SKYB003';

describe('real-service edges of the terminal gateway (issue 13)', function () {
  this.timeout(20000);
  let sim;
  simulatorPerTest({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 } }, (s) => (sim = s));

  const flow = (gw = {}, nodeProps = {}) => nodeFlow(sim, modeNode({ lingerMs: 0, ...nodeProps }), { gw, outs: ['ok', 'bad'] });

  describe('throttling as HTTP 200 + ErrorID (point 1)', function () {
    it('waits out the window after two 200 + 24579 replies, then sends the same items once', async function () {
      sim.terminal.configure({ throttleAs: 'errorId', throttleNext: 2, retryAfter: false });
      const windowMs = 700;
      const n = await load(flow({ rateLimitCalls: 5, rateLimitWindowSeconds: windowMs / 1000 }));
      const ok = collect(n.get('ok'));
      const caught = collect(n.get('caught'));
      n.get('mode').receive({ payload: [{ DestinationID: T1, UserMessageID: 1 }, { DestinationID: T3, UserMessageID: 2 }] });
      await until(() => ok.length + caught.length === 1, 10000, 'the result');
      assert.equal(caught.length, 0, caught[0]?.error?.message);
      const calls = sim.server.callsTo('terminal/mode');
      assert.equal(calls.length, 3, 'two throttled calls, then the one that went through');
      for (const c of calls) assert.deepEqual(JSON.parse(c.body).map((i) => i.DestinationID), [T1, T3], 'the same items each time');
      for (let i = 1; i < calls.length; i++) {
        const gap = calls[i].at - calls[i - 1].at;
        assert.ok(gap >= windowMs - 5, `waited ${gap} ms between attempts ${i} and ${i + 1}, the window is ${windowMs} ms`);
      }
      assert.equal(sim.terminal.counters.submitted, 2, 'each item accepted exactly once');
      assert.equal(sim.terminal.counters.throttled, 2);
      assert.deepEqual(ok[0].payload.map((r) => r.UserMessageID), [1, 2]);
    });

    it('treats 200 + 24581 on status updates the same way: the poller waits and loses no record', async function () {
      sim.terminal.seedBacklog(30);
      sim.terminal.configure({ throttleAs: 'errorId', throttleNext: 2 });
      const n = await load([
        gatewayNode(sim, { rateLimitCalls: 5, rateLimitWindowSeconds: 0.4 }),
        { id: 'poller', type: 'iotgw-status-poller', gateway: 'gw', intervalSeconds: 3600, startFrom: '-1h', output: 'record', contextStore: '', autoStart: false, fullAt: 500, addNames: true, wires: [['out']] },
        { id: 'out', type: 'helper' },
        ...catchAll(),
      ]);
      const out = collect(n.get('out'));
      const caught = collect(n.get('caught'));
      n.get('poller').receive({ payload: 'poll' });
      await until(() => out.length >= 30 || caught.length > 0, 10000, '30 records');
      assert.equal(caught.length, 0, caught[0]?.error?.message);
      assert.equal(out.length, 30);
      const calls = sim.server.callsTo('terminal/status');
      assert.equal(calls.length, 3, 'two throttled GETs, then the one that answered');
      assert.equal(new Set(calls.map((c) => c.query)).size, 1, 'the same FromUTC each time');
      for (let i = 1; i < calls.length; i++) assert.ok(calls[i].at - calls[i - 1].at >= 395, `waited the window before attempt ${i + 1}`);
    });

    it('gives RATE_LIMITED (not GATEWAY_ERROR) when the retries run out, and nothing was accepted', async function () {
      sim.terminal.configure({ throttleAs: 'errorId', throttleNext: 100 });
      const n = await load(flow({ rateLimitCalls: 5, rateLimitWindowSeconds: 0.1, maxRetries: 2 }));
      const caught = collect(n.get('caught'));
      n.get('mode').receive({ payload: T1 });
      await until(() => caught.length === 1, 10000, 'the error');
      assert.equal(caught[0].error.code, 'RATE_LIMITED');
      assert.match(caught[0].error.message, /ErrorID 24579/);
      assert.equal(sim.server.callsTo('terminal/mode').length, 3);
      assert.equal(sim.terminal.counters.submitted, 0);
    });
  });

  describe('base URLs as pasted (point 2)', function () {
    it('resolves every form to the same endpoint, never doubled; /v1 of a base is kept', function () {
      for (const b of ['https://h.example', 'https://h.example/', 'https://h.example/api/v1.0', 'https://h.example/api/v1.0/', 'https://h.example/api/v1.0//']) {
        assert.equal(resolveGatewayBase(b, '1.0').endpoint, 'https://h.example/api/v1.0/', b);
      }
      assert.equal(resolveGatewayBase('https://h.example/gw/v1/', '1.0').endpoint, 'https://h.example/gw/v1/api/v1.0/');
      assert.equal(resolveGatewayBase('https://h.example/gw/v1/api/v1.0/', '1.0').endpoint, 'https://h.example/gw/v1/api/v1.0/');
      const r = resolveGatewayBase('https://h.example/api/v2.1/', '1.0');
      assert.equal(r.apiVersion, '2.1');
      assert.equal(r.versionInUrl, '2.1');
    });

    it('accepts a base URL with /api/v1.0/ against a gateway under a base ending in /v1', async function () {
      sim.terminal.configure({ basePath: '/gw/v1' });
      const n = await load(flow({ baseUrl: `${sim.url}/gw/v1/api/v1.0/` }));
      const ok = collect(n.get('ok'));
      const caught = collect(n.get('caught'));
      n.get('mode').receive({ payload: T1 });
      await until(() => ok.length + caught.length === 1);
      assert.equal(caught.length, 0, caught[0]?.error?.message);
      const paths = sim.server.calls.map((c) => c.path);
      assert.ok(paths.includes('/gw/v1/api/v1.0/auth/token'), paths.join());
      assert.ok(paths.includes('/gw/v1/api/v1.0/terminal/mode'), paths.join());
      assert.ok(!paths.some((p) => p.includes('/api/v1.0/api/')), 'never doubled');
    });

    it('the simulator refuses a doubled path with 404 (as the real service)', async function () {
      const res = await fetch(`${sim.url}/api/v1.0/api/v1.0/auth/token`, { method: 'POST' });
      assert.equal(res.status, 404);
    });

    it('timeoutSeconds defaults to 65 when absent; a saved value is kept', function () {
      const fresh = migrateGatewayConfig({ baseUrl: 'https://h.example' });
      assert.equal(fresh.timeoutSeconds, 65);
      assert.equal(gatewaySettings(fresh).timeoutMs, 65000);
      const saved = migrateGatewayConfig({ baseUrl: 'https://h.example', timeoutSeconds: 30 });
      assert.equal(gatewaySettings(saved).timeoutMs, 30000);
      assert.equal(gatewaySettings(migrateGatewayConfig({ baseUrl: 'https://h.example', timeoutSeconds: '' })).timeoutMs, 65000);
    });
  });

  describe('echoed fields (point 4)', function () {
    it('matches results by UserMessageID when the gateway answers in another order', async function () {
      sim.terminal.configure({ resultOrder: 'reversed' });
      const n = await load(flow());
      const ok = collect(n.get('ok'));
      const caught = collect(n.get('caught'));
      n.get('mode').receive({ payload: [{ DestinationID: T1, UserMessageID: 11 }, { DestinationID: T3, UserMessageID: 33 }] });
      await until(() => ok.length + caught.length === 1);
      assert.equal(caught.length, 0, caught[0]?.error?.message);
      assert.deepEqual(ok[0].payload.map((r) => [r.UserMessageID, r.DestinationID]), [
        [11, T1],
        [33, T3],
      ]);
    });

    it('accepts DestinationID echoed in lower case or padded with spaces', async function () {
      for (const echo of ['lower', 'padded']) {
        sim.terminal.configure({ echoDestination: echo });
        const n = await load(flow());
        const ok = collect(n.get('ok'));
        const caught = collect(n.get('caught'));
        n.get('mode').receive({ payload: [T1, T3] });
        await until(() => ok.length + caught.length === 1);
        assert.equal(caught.length, 0, `${echo}: ${caught[0]?.error?.message}`);
        assert.equal(ok[0].payload.length, 2);
        const { helper } = require('../helpers/harness');
        await helper.unload();
      }
    });

    it('matches cancellations by the echoed ID when the gateway answers in another order', async function () {
      const n = await load([gatewayNode(sim), { id: 'cancel', type: 'iotgw-cancel', gateway: 'gw', lingerMs: 0, wires: [['out']] }, { id: 'out', type: 'helper' }, ...catchAll()]);
      const out = collect(n.get('out'));
      const caught = collect(n.get('caught'));
      sim.terminal.configure({ resultOrder: 'reversed' });
      n.get('cancel').receive({ payload: [424242, 434343] });
      await until(() => out.length + caught.length === 1);
      assert.equal(caught.length, 0, caught[0]?.error?.message);
      assert.deepEqual(out[0].payload.map((c) => c.ID), [424242, 434343]);
      const sent = JSON.parse(sim.server.callsTo('terminal/cancel')[0].body);
      assert.deepEqual(sent, [424242, 434343]);
    });

    it('still refuses a result for another terminal (BAD_RESPONSE)', async function () {
      sim.terminal.configure({ resultOrder: 'reversed' });
      const n = await load(flow());
      const caught = collect(n.get('caught'));
      n.get('mode').receive({ payload: [T1, T3] }); // no UserMessageID: by position, and the order is wrong
      await until(() => caught.length === 1);
      assert.equal(caught[0].error.code, 'BAD_RESPONSE');
    });
  });

  describe('tokens (point 5)', function () {
    it('a token endpoint answering 200 + error is UNAUTHORIZED', async function () {
      sim.terminal.configure({ tokenErrorAs: 'ok-with-error' });
      const n = await load(flow(), { gw: { ...DEMO_CREDS, clientSecret: 'wrong-secret' } });
      const caught = collect(n.get('caught'));
      n.get('mode').receive({ payload: T1 });
      await until(() => caught.length === 1);
      assert.equal(caught[0].error.code, 'UNAUTHORIZED');
      assert.doesNotMatch(caught[0].error.message, /wrong-secret/);
    });

    it('a 401 in mid-session fetches a new token once and repeats the call once', async function () {
      const n = await load(flow());
      const ok = collect(n.get('ok'));
      const caught = collect(n.get('caught'));
      n.get('mode').receive({ payload: T1 });
      await until(() => ok.length === 1);
      sim.terminal.expireTokens();
      n.get('mode').receive({ payload: T3 });
      await until(() => ok.length + caught.length === 2);
      assert.equal(caught.length, 0, caught[0]?.error?.message);
      assert.equal(sim.server.callsTo('terminal/auth').length, 2);
      assert.equal(sim.server.callsTo('terminal/mode').length, 3, 'first call, refused call, repeated call');
      assert.equal(sim.terminal.counters.submitted, 2);
    });
  });

  describe('the tracker and unknown messages (point 8)', function () {
    it('resolves a status record with only ID and ErrorID > 0 as failed, with the error name', async function () {
      const n = await load([
        gatewayNode(sim),
        { id: 'poll', type: 'iotgw-status-poller', gateway: 'gw', intervalSeconds: 1, wires: [[]] },
        { id: 'track', type: 'iotgw-message-tracker', gateway: 'gw', timeoutDays: 1, wires: [['d'], ['f'], ['c'], ['t']] },
        { id: 'd', type: 'helper' },
        { id: 'f', type: 'helper' },
        { id: 'c', type: 'helper' },
        { id: 't', type: 'helper' },
        ...catchAll(),
      ]);
      const failed = collect(n.get('f'));
      const delivered = collect(n.get('d'));
      n.get('track').receive({ payload: [{ ID: 777001, DestinationID: T1, ErrorID: 0 }] });
      await new Promise((r) => setTimeout(r, 100));
      sim.terminal.addUnknownStatus(777001, 106);
      await until(() => failed.length === 1, 10000, 'the failed outcome');
      assert.equal(delivered.length, 0);
      assert.equal(failed[0].payload.ErrorID, 106);
      assert.equal(failed[0].payload.ErrorName, 'MESSAGE_NOT_FOUND');
      assert.equal(failed[0].payload.outcome, 'failed');
    });
  });
});
