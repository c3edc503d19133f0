'use strict';
/**
 * Issue 16, point 2: integer inputs accept only what the user typed as a plain decimal
 * integer. "0x10", "1e3", "1.0", "+5", "1_000" and the like are BAD_INPUT naming the
 * field (they used to be sent as 16, 1000, 1, ...), and `Mode: null` / `WakeupInterval:
 * null` in a ModeMessage are BAD_INPUT instead of being replaced by the node's defaults.
 * Property-based (fast-check) over every integer input of the broker, SMS and app nodes,
 * in a real Node-RED runtime against the simulator; every request that reaches the
 * simulator for a bad msg is counted as leaked (goal 0).
 */
const assert = require('node:assert/strict');
const fc = require('fast-check');
const { helper, startSimulator, gatewayNode, load, DEMO_CREDS, useRuntime } = require('../helpers/harness');
const { SPECS, configNode, credsFor, ledgerFlow, ledgerSender } = require('../helpers/faults');

const RUNS = Number(process.env.IOTGW_HOSTILE_RUNS || 300);
const figures = { tried: 0, leaked: 0, crashes: 0 };

/** Strings that Number() reads as an integer but that are not a plain decimal integer. */
const notPlainDecimal = fc.oneof(
  fc.integer({ min: 1, max: 99999 }).map((n) => `0x${n.toString(16)}`),
  fc.integer({ min: 1, max: 99999 }).map((n) => `0X${n.toString(16).toUpperCase()}`),
  fc.integer({ min: 1, max: 4095 }).map((n) => `0o${n.toString(8)}`),
  fc.integer({ min: 1, max: 4095 }).map((n) => `0b${n.toString(2)}`),
  fc.tuple(fc.integer({ min: 1, max: 99 }), fc.integer({ min: 0, max: 4 }), fc.constantFrom('e', 'E', 'e+')).map(([a, e, s]) => `${a}${s}${e}`),
  fc.tuple(fc.integer({ min: 1, max: 9999 }), fc.integer({ min: 1, max: 4 })).map(([a, k]) => `${a}.${'0'.repeat(k)}`),
  fc.integer({ min: 1, max: 9999 }).map((a) => `${a}.`),
  fc.integer({ min: 1, max: 9999 }).map((a) => `+${a}`),
  fc.integer({ min: 1000, max: 99999 }).map((a) => String(a).replace(/^(\d)/, '$1_')),
  fc.integer({ min: 1, max: 9999 }).map((a) => `${a}n`),
  fc.constantFrom('0x10', '1e3', '1.0', 'Infinity', '-Infinity', 'NaN', '１２', '١٢', '1 2', '\u200b10', '0.1e1'),
);

/** Nodes and fields that take an integer (the lowest good value is 1 for all of them). */
const TARGETS = [
  { spec: SPECS.find((s) => s.type === 'iotgw-lorawan-contract' && s.props.operation === 'list'), fields: ['customerId', 'page', 'pageSize'], msg: (f, v) => ({ payload: { [f]: v } }), name: (f) => `msg.payload.${f}` },
  { spec: SPECS.find((s) => s.type === 'iotgw-lorawan-devices'), fields: ['customerId', 'page', 'pageSize'], msg: (f, v) => ({ payload: { [f]: v } }), name: (f) => `msg.payload.${f}` },
  { spec: SPECS.find((s) => s.type === 'iotgw-lorawan-referral'), fields: ['payload'], msg: (f, v) => ({ payload: v }), name: () => 'msg.payload' },
  { spec: SPECS.find((s) => s.type === 'iotgw-sms-request'), fields: ['payload'], msg: (f, v) => ({ payload: v }), name: () => 'msg.payload' },
  { spec: SPECS.find((s) => s.type === 'iotgw-tag-list'), fields: ['page', 'perPage', 'offset'], msg: (f, v) => ({ payload: 'go', [f]: v }), name: (f) => `msg.${f}` },
].filter((t) => t.spec);

describe('hostile inputs: integers only as typed, no null defaults (issue 16)', function () {
  this.timeout(180000);
  let sim;
  useRuntime();
  after(function () {
    console.log(`      [figures] hostile inputs tried: ${figures.tried}, requests leaked: ${figures.leaked}, crashes: ${figures.crashes}`);
  });
  beforeEach(async function () {
    sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 }, app: { rateLimitCalls: 0 } });
  });
  afterEach(async function () {
    await helper.unload();
    await sim.close();
  });

  /** The node under test with Catch and Complete nodes; returns send(msg) -> {error?, endings, sent}. */
  async function harness(spec, props = spec.props) {
    const n = await load(ledgerFlow(configNode(spec, sim, gatewayNode), { ...spec, props }), credsFor(spec, DEMO_CREDS));
    return ledgerSender(n, spec.outputs);
  }

  /** Checks one bad msg: one BAD_INPUT naming the field, nothing on the wire. */
  async function expectRefused(send, msg, field) {
    sim.server.clearCalls();
    const r = await send(msg);
    figures.tried++;
    figures.leaked += sim.server.calls.length;
    assert.ok(r.error, `${JSON.stringify(msg)} was refused, not ${JSON.stringify(r)}`);
    assert.equal(r.endings, 1, 'ended exactly once');
    assert.equal(r.sent, 0, 'nothing was sent on');
    assert.equal(r.error.code, 'BAD_INPUT', r.error.message);
    assert.ok(r.error.message.includes(field), `the error names ${field}: ${r.error.message}`);
    assert.equal(sim.server.calls.length, 0, `no request was sent for ${JSON.stringify(msg)}`);
  }

  for (const t of TARGETS) {
    it(`${t.spec.type}: ${t.fields.join(', ')} refuse numbers not typed as plain decimals (${RUNS} generated)`, async function () {
      const send = await harness(t.spec);
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...t.fields), notPlainDecimal, async (f, v) => {
          try {
            await expectRefused(send, t.msg(f, v), t.name(f));
          } catch (err) {
            if (!(err instanceof assert.AssertionError)) figures.crashes++;
            throw err;
          }
        }),
        { numRuns: RUNS },
      );
      // Still alive, and a plain decimal string is sent exactly as typed.
      sim.server.clearCalls();
      const f = t.fields[0];
      const r = await send(t.msg(f, '2'));
      assert.ok(!r.error, r.error && r.error.message);
      assert.ok(sim.server.calls.length >= 1, 'the good msg went out');
      const raw = sim.server.calls.map((c) => c.rawUrl).join(' ');
      assert.match(raw, t.spec.type === 'iotgw-tag-list' || f === 'payload' ? /2/ : new RegExp(`${f}=2(&|$)`), raw);
    });
  }

  it('contract create: customerId as a string, hex or exponent is BAD_INPUT', async function () {
    const spec = SPECS.find((s) => s.type === 'iotgw-lorawan-contract' && s.props.operation === 'create');
    const send = await harness(spec);
    for (const v of ['0x10', '1e3', '1.0', '16', 1.5, null]) {
      await expectRefused(send, { payload: { ...spec.validMsg(1).payload, customerId: v } }, 'msg.payload.customerId');
    }
  });

  it('terminal mode: Mode null and WakeupInterval null are BAD_INPUT, not the node defaults', async function () {
    const spec = SPECS.find((s) => s.type === 'iotgw-terminal-mode');
    const send = await harness(spec, { ...spec.props, mode: 1, wakeupInterval: 5 });
    const base = { DestinationID: '01000001SKYA001' };
    await expectRefused(send, { payload: { ...base, Mode: null } }, 'msg.payload.Mode');
    await expectRefused(send, { payload: { ...base, Mode: 1, WakeupInterval: null } }, 'msg.payload.WakeupInterval');
    await expectRefused(send, { payload: [{ ...base, Mode: 0 }, { ...base, Mode: null, WakeupInterval: null }] }, 'msg.payload[1].Mode');
    await expectRefused(send, { payload: { ...base, Mode: '1' } }, 'msg.payload.Mode');
    // Missing (not null) still takes the node's defaults.
    sim.server.clearCalls();
    const r = await send({ payload: { ...base } });
    assert.ok(!r.error, r.error && r.error.message);
    const body = sim.server.callsTo('terminal/mode')[0]?.body;
    assert.ok(body, 'the ModeMessage went out');
    assert.match(body, /"Mode":1/);
    assert.match(body, /"WakeupInterval":5/);
  });
});
