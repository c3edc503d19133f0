'use strict';
/**
 * Issue 5: secrets. Every node runs with recognisable sentinel credentials through good
 * calls, faults, refused credentials, bad input and a server that quotes the request's
 * credentials in its error text; none of the sentinels may appear in any log line, status
 * text, error (message or object), emitted msg or debug output. Session keys stay out of
 * device output unless asked for; a non-loopback http:// base URL is refused; a tls-config
 * node that turns verification off gets a warning.
 */
const assert = require('node:assert/strict');
const util = require('node:util');
const { helper, startSimulator, gatewayNode, until, ALL_NODES, useRuntime } = require('../helpers/harness');
const { landedSpecs, SENTINELS: S, LANDED } = require('../helpers/faults');

const DEBUG = require('@node-red/nodes/core/common/21-debug.js');
const TLS = require('@node-red/nodes/core/network/05-tls.js');

const SECRET_VALUES = Object.values(S);
/** Finds a sentinel, or a recognisable part of one, in any text. */
function leak(text) {
  for (const v of SECRET_VALUES) {
    if (text.includes(v)) return v;
    const tail = v.split('-').pop(); // the random part alone
    if (tail.length >= 8 && text.includes(tail)) return `${v} (its random part)`;
  }
  return undefined;
}

const dump = (v) => util.inspect(v, { depth: 12, maxArrayLength: 1000, maxStringLength: 100000, breakLength: Infinity, showHidden: false });

/** Loads a flow with the test helper plus the debug and tls-config nodes. */
function loadWith(flow, creds) {
  const nodes = [{ id: 'flow', type: 'tab', label: 'secrets' }, ...flow.map((n) => (['iotgw-gateway', 'iotgw-app', 'tls-config'].includes(n.type) || n.z ? n : { z: 'flow', ...n }))];
  return new Promise((resolve, reject) => {
    helper.load([...ALL_NODES, DEBUG, TLS], nodes, creds, () => resolve()).catch(reject);
  });
}

/** Everything the runtime recorded through the helper's spies: logs, statuses, errors, warnings, sends. */
function recorded() {
  const P = helper._NodePrototype;
  const parts = [];
  for (const m of ['log', 'status', 'warn', 'error', 'debug', 'trace', 'send']) {
    for (const args of P[m].args) parts.push(`${m}: ${dump(args)}`);
  }
  for (const args of helper._logSpy.args) parts.push(`runtime-log: ${dump(args)}`);
  return parts;
}

describe('secrets: sentinel credentials never leak', function () {
  this.timeout(60000);
  let sim;
  useRuntime();
  beforeEach(async function () {
    sim = await startSimulator({
      terminal: { rateLimitCalls: 0, maxConcurrent: 0 },
      broker: { clientId: S.brokerClientId, accessToken: S.brokerAccessToken },
      app: { rateLimitCalls: 0 },
    });
    sim.terminal.accounts.set(S.clientId, { clientId: S.clientId, clientSecret: S.clientSecret, staticTokens: [S.token], superAccount: true, subaccounts: ['demo'] });
    const app = sim.areas.app;
    if (app && app.accounts) app.accounts[0].tokens[app.accounts[0].users[0].id] = S.authToken;
  });
  afterEach(async function () {
    await helper.unload();
    await sim.close();
  });

  it('every node type, through good calls, faults, refused credentials, bad input and an echoing server', async function () {
    const specs = landedSpecs();
    const flow = [
      gatewayNode(sim, { id: 'gw', timeoutSeconds: 2, maxRetries: 1 }),
      gatewayNode(sim, { id: 'gwStatic', timeoutSeconds: 2, maxRetries: 1 }),
      gatewayNode(sim, { id: 'gwWrong', timeoutSeconds: 2, maxRetries: 1 }),
      { id: 'app', type: 'iotgw-app', name: 'sim', baseUrl: sim.appUrl, timeoutSeconds: 2, rateLimitCalls: 0, rateLimitWindowSeconds: 1, maxRetries: 1 },
      { id: 'appWrong', type: 'iotgw-app', name: 'sim', baseUrl: sim.appUrl, timeoutSeconds: 2, rateLimitCalls: 0, rateLimitWindowSeconds: 1, maxRetries: 1 },
      { id: 'dbg', type: 'debug', active: true, tosidebar: true, console: true, tostatus: true, complete: 'true', targetType: 'full', statusVal: '', statusType: 'auto' },
      { id: 'catcher', type: 'catch', scope: null, uncaught: false, wires: [['dbg', 'caught']] },
      { id: 'caught', type: 'helper' },
      { id: 'stat', type: 'status', scope: null, wires: [['dbg']] },
    ];
    const duts = [];
    specs.forEach((spec, i) => {
      const cfgs = spec.config === 'app' ? ['app', 'appWrong'] : ['gw', 'gwStatic', 'gwWrong'];
      for (const cfg of cfgs) {
        const id = `n${i}-${cfg}`;
        duts.push({ id, spec, cfg });
        flow.push({ id, type: spec.type, [spec.config === 'app' ? 'app' : 'gateway']: cfg, ...spec.props, wires: Array.from({ length: spec.outputs }, () => ['dbg']) });
      }
    });
    const creds = {
      gw: { clientId: S.clientId, clientSecret: S.clientSecret, brokerClientId: S.brokerClientId, brokerAccessToken: S.brokerAccessToken },
      gwStatic: { token: S.token, brokerClientId: S.brokerClientId, brokerAccessToken: S.brokerAccessToken },
      gwWrong: { clientId: S.clientId, clientSecret: `${S.clientSecret}-WRONG`, brokerClientId: S.brokerClientId, brokerAccessToken: `${S.brokerAccessToken}-WRONG` },
      app: { authToken: S.authToken },
      appWrong: { authToken: `${S.authToken}-WRONG` },
    };
    await loadWith(flow, creds);
    const caught = [];
    helper.getNode('caught').on('input', (m) => caught.push(m));

    let sent = 0;
    const drive = async (msgFor, label) => {
      const before = caught.length + helper._NodePrototype.send.callCount;
      for (const d of duts) {
        helper.getNode(d.id).receive({ ...msgFor(d), label });
        sent++;
      }
      // Every msg of the round ends in an output or a caught error.
      await until(() => caught.filter((m) => m.label === label).length + countSends(label) >= duts.length, 20000, `round ${label}`).catch(() => {});
      return caught.length + helper._NodePrototype.send.callCount - before;
    };
    const countSends = (label) => helper._NodePrototype.send.args.filter((a) => JSON.stringify(a[0] ?? null, (k, v) => (typeof v === 'bigint' ? String(v) : v)).includes(`"label":"${label}"`)).length;

    await drive((d) => d.spec.validMsg(1), 'good');
    // Faults on every route, including a server that quotes the credentials it got.
    for (const kind of ['echo', 'token-expiry', 'html', 'server-error', 'rate-limit', 'truncated-json']) {
      for (const spec of specs) sim.inject({ route: spec.route, kind, times: 3, retryAfter: 0 });
      await drive((d) => d.spec.validMsg(2), `fault-${kind}`);
      sim.server.clearFaults();
    }
    // The token endpoint quotes the form it got (client ID and secret) in a 500, while the
    // token is being renewed.
    for (const spec of specs) sim.inject({ route: spec.route, kind: 'token-expiry', times: 3 });
    sim.inject({ route: 'terminal/auth', kind: 'echo', status: 500, times: 20 });
    await drive((d) => d.spec.validMsg(3), 'auth-echo');
    assert.ok(sim.server.calls.some((c) => c.route === 'terminal/auth' && c.faultKinds && c.faultKinds.includes('echo') && c.body.includes(S.clientSecret)), 'the token endpoint echoed the secret');
    sim.server.clearFaults();
    assert.ok(caught.some((m) => /\[credential\]/.test(m.error.message)), 'the quoted credentials were cut out of the error texts');
    await drive(() => ({ payload: { not: 'valid' }, query: 7 }), 'bad-input');
    // The echoing server must have been reached and have quoted the sentinels (the test can fail).
    const echoed = sim.server.calls.filter((c) => c.faultKinds && c.faultKinds.includes('echo'));
    assert.ok(echoed.length >= specs.length, 'the echo fault was injected');
    assert.ok(caught.some((m) => m.label === 'fault-echo'), 'the echo replies became errors');
    assert.ok(sim.server.calls.some((c) => String(c.headers.authorization).includes(S.token)), 'the sentinel token was really used on the wire');

    await new Promise((r) => setTimeout(r, 300));
    const parts = recorded();
    for (const m of caught) parts.push(`caught: ${dump(m)} ${m.error && m.error.message}`);
    for (const d of duts) parts.push(`status: ${dump(helper.getNode(d.id) && helper.getNode(d.id).status.args)}`);
    // The broker reports the creator's client ID as data (`createdBy` of contracts and SMS
    // batches): that is the service's own record, not the node repeating its credential.
    const serverData = new RegExp(`createdBy: '${S.brokerClientId}'`, 'g');
    const found = parts.map((p) => p.replace(serverData, "createdBy: '(the service's record)'")).map((p) => [leak(p), p]).filter(([l]) => l);
    const where = ([l, p]) => {
      const v = l.split(' ')[0];
      const at = p.includes(v) ? p.indexOf(v) : p.indexOf(v.split('-').pop());
      return `${l} in ...${p.slice(Math.max(0, at - 300), at + 100)}`;
    };
    assert.equal(found.length, 0, `a sentinel leaked: ${found.slice(0, 3).map(where).join('\n')}`);
    assert.ok(parts.length > 100, `much was checked (${parts.length} records)`);
    console.log(`      [figures] sentinel check: ${sent} msgs over ${duts.length} nodes, ${parts.length} recorded log/status/error/send/debug entries, 0 leaks`);
  });

  if (LANDED.has('iotgw-lorawan-devices')) {
    it('session keys (nwkskey, appskey) are absent from device output unless asked for', async function () {
      await loadWith(
        [
          gatewayNode(sim, { id: 'gw' }),
          { id: 'plain', type: 'iotgw-lorawan-devices', gateway: 'gw', page: 1, pageSize: 50, wires: [['out']] },
          { id: 'keys', type: 'iotgw-lorawan-devices', gateway: 'gw', page: 1, pageSize: 50, includeKeys: true, wires: [['outKeys']] },
          { id: 'out', type: 'helper' },
          { id: 'outKeys', type: 'helper' },
        ],
        { gw: { clientId: S.clientId, clientSecret: S.clientSecret, brokerClientId: S.brokerClientId, brokerAccessToken: S.brokerAccessToken } },
      );
      const out = [];
      const outKeys = [];
      helper.getNode('out').on('input', (m) => out.push(m));
      helper.getNode('outKeys').on('input', (m) => outKeys.push(m));
      helper.getNode('plain').receive({ payload: '' });
      helper.getNode('keys').receive({ payload: '' });
      await until(() => out.length === 1 && outKeys.length === 1, 5000, 'both pages');
      const wire = sim.server.callsTo('broker/devices');
      assert.ok(wire.length === 2);
      const plain = JSON.stringify(out[0].payload);
      assert.ok(!/nwkskey|appskey/i.test(plain), 'no session key fields by default');
      assert.ok(/nwkskey/i.test(JSON.stringify(outKeys[0].payload)), 'present when asked for');
    });
  }

  it('refuses a non-loopback http:// base URL before any request, for every config node type', async function () {
    const bad = ['http://10.1.2.3:8080', 'http://example.com', 'http://127.0.0.1.nip.io', 'http://localhost.evil.example', 'http://[::ffff:7f00:1]', `http://user:${S.clientSecret}@127.0.0.1:1`];
    const flow = [];
    const creds = {};
    bad.forEach((url, i) => {
      flow.push(gatewayNode(sim, { id: `g${i}`, baseUrl: url }), { id: `m${i}`, type: 'iotgw-terminal-mode', gateway: `g${i}`, mode: 0, wakeupInterval: 0, family: 'any', wires: [[], []] });
      creds[`g${i}`] = { clientId: S.clientId, clientSecret: S.clientSecret };
      if (LANDED.has('iotgw-user')) {
        flow.push({ id: `a${i}`, type: 'iotgw-app', name: '', baseUrl: url.replace(/^http:\/\/[^/]*/, (h) => h) + '/app', timeoutSeconds: 2 }, { id: `u${i}`, type: 'iotgw-user', app: `a${i}`, wires: [[]] });
        creds[`a${i}`] = { authToken: S.authToken };
      }
    });
    flow.push({ id: 'catcher', type: 'catch', scope: null, uncaught: false, wires: [['caught']] }, { id: 'caught', type: 'helper' });
    await loadWith(flow, creds);
    const caught = [];
    helper.getNode('caught').on('input', (m) => caught.push(m));
    const ids = flow.filter((n) => /^[mu]\d+$/.test(n.id)).map((n) => n.id);
    for (const id of ids) helper.getNode(id).receive({ payload: id.startsWith('m') ? { DestinationID: '01000001SKYA001', Mode: 0 } : '' });
    await until(() => caught.length >= ids.length, 5000, 'every msg refused');
    for (const m of caught) {
      assert.equal(m.error.code, 'BAD_INPUT', m.error.message);
      assert.match(m.error.message, /baseUrl|http:\/\//);
      assert.equal(leak(m.error.message), undefined, 'no credential in the message');
    }
    assert.equal(sim.server.calls.length, 0, 'nothing was sent');
    const logs = recorded().join('\n');
    assert.equal(leak(logs), undefined, 'no credential in the logs');
  });

  it('a tls-config node that turns certificate verification off makes each config node type warn', async function () {
    await loadWith(
      [
        { id: 'tlsOff', type: 'tls-config', name: '', cert: '', key: '', ca: '', certname: '', keyname: '', caname: '', servername: '', verifyservercert: false },
        { id: 'tlsOn', type: 'tls-config', name: '', cert: '', key: '', ca: '', certname: '', keyname: '', caname: '', servername: '', verifyservercert: true },
        gatewayNode(sim, { id: 'gwOff', baseUrl: 'https://127.0.0.1:9', tls: 'tlsOff' }),
        gatewayNode(sim, { id: 'gwOn', baseUrl: 'https://127.0.0.1:9', tls: 'tlsOn' }),
        ...(LANDED.has('iotgw-app')
          ? [
              { id: 'appOff', type: 'iotgw-app', name: '', baseUrl: 'https://127.0.0.1:9/app', timeoutSeconds: 2, tls: 'tlsOff' },
              { id: 'appOn', type: 'iotgw-app', name: '', baseUrl: 'https://127.0.0.1:9/app', timeoutSeconds: 2, tls: 'tlsOn' },
            ]
          : []),
      ],
      { gwOff: { token: S.token }, gwOn: { token: S.token }, appOff: { authToken: S.authToken }, appOn: { authToken: S.authToken } },
    );
    const warnings = helper._NodePrototype.warn.thisValues.map((n, i) => [n.id, String(helper._NodePrototype.warn.args[i][0])]);
    assert.ok(warnings.some(([id, w]) => id === 'gwOff' && /verification OFF/i.test(w)), `a warning for gwOff: ${JSON.stringify(warnings)}`);
    if (LANDED.has('iotgw-app')) assert.ok(warnings.some(([id, w]) => id === 'appOff' && /verification OFF/i.test(w)), 'a warning for the app config node too');
    assert.ok(!warnings.some(([id]) => id === 'gwOn' || id === 'appOn'), 'no warning with verification on');
    assert.equal(leak(JSON.stringify(warnings)), undefined);
  });
});
