'use strict';
/**
 * Issue 5: hostile and bad input, property-based (fast-check). For every request node,
 * thousands of generated msgs of wrong types, sizes, encodings and shapes: each ends in
 * exactly one BAD_INPUT error that names the field, no request reaches the gateway (the
 * simulator's call log stays empty, not even a token fetch) and nothing crashes. Strings
 * that reach the URL (msg.query) are encoded, never raw on the wire; path segments are
 * encoded or refused.
 */
const assert = require('node:assert/strict');
const fc = require('fast-check');
const { helper, startSimulator, gatewayNode, load, DEMO_CREDS, useRuntime } = require('../helpers/harness');
const { LANDED, SPECS, configNode, credsFor, ledgerFlow, ledgerSender } = require('../helpers/faults');
const { pathSegment } = require('../../dist/lib/transport/http');

const RUNS = 3000;
const figures = { generated: 0, wire: 0 };

// ---- generators of bad values -------------------------------------------------------

/** A value that is not a plain JSON-ish scalar the nodes accept. */
const weird = fc.oneof(
  fc.constant(null),
  fc.constant(undefined),
  fc.boolean(),
  fc.double({ noNaN: false }),
  fc.constant(NaN),
  fc.constant(Infinity),
  fc.bigInt(),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 3 }),
  fc.constant(new Date(0)),
  fc.constant(Buffer.from('buffer')),
  fc.constant(new Map()),
);

/** Strings with what attackers and broken encoders send: control chars, CR/LF, traversal, URL syntax, lone surrogates, huge. */
const nastyString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 80 }),
  fc.constantFrom('\r\nX-Injected: 1', '../../etc/passwd', '?admin=true', '#frag', '%0d%0a', '\u0000', '\ud800', 'a/b', ' ', '\t', '..', '.'),
  fc.string({ minLength: 65, maxLength: 200 }).map((s) => s.padEnd(65, 'x')),
  fc.integer({ min: 5000, max: 70000 }).map((n) => 'A'.repeat(n)),
);

/** A msg.query that must be refused, with the field the error must name. */
const badQuery = fc.oneof(
  weird.filter((v) => v !== null && v !== undefined && !(v && typeof v === 'object' && [Object.prototype, null].includes(Object.getPrototypeOf(v)) && !Array.isArray(v))).map((q) => ({ query: q, field: 'msg.query' })),
  fc.string({ maxLength: 10 }).map((q) => ({ query: q, field: 'msg.query' })),
  fc
    .tuple(fc.string({ minLength: 1, maxLength: 10 }).filter((k) => k !== '__proto__'), fc.oneof(fc.constant(NaN), fc.constant(Infinity), fc.array(fc.integer(), { maxLength: 2 }), fc.object({ maxDepth: 1 }), fc.constant(new Date(0))))
    .map(([k, v]) => ({ query: { [k]: v }, field: `msg.query.${k}` })),
  fc.integer({ min: 4097, max: 20000 }).map((n) => ({ query: { long: 'q'.repeat(n) }, field: 'msg.query.long' })),
  fc.integer({ min: 201, max: 400 }).map((n) => ({ query: { ['k'.repeat(n)]: 'v' }, field: 'msg.query' })),
  fc.constant({ query: { '': 'v' }, field: 'msg.query' }),
);

// ---- per node type: generators of bad msgs ---------------------------------------------

/** A control character (C0 or DEL). */
const hasControl = (s) => [...s].some((c) => c.charCodeAt(0) < 32 || c.charCodeAt(0) === 127);

const VALID_MODE = { DestinationID: '01000001SKYA001', Mode: 0 };

/** A ModeMessage item that must be refused, and the field named. */
function badModeItem(where) {
  return fc.oneof(
    weird.filter((v) => typeof v !== 'string').map((v) => ({ item: v, field: where })),
    nastyString
      .filter((s) => s.trim() === '' || s.length > 64 || hasControl(s))
      .map((s) => ({ item: s, field: `${where}.DestinationID` })),
    fc.oneof(weird, fc.constant(''), nastyString.filter((s) => s.trim() === '' || s.length > 64 || hasControl(s))).map((d) => ({ item: { ...VALID_MODE, DestinationID: d }, field: `${where}.DestinationID` })),
    fc.oneof(weird, fc.integer().filter((m) => m < 0 || m > 3), fc.double().filter((m) => !Number.isInteger(m)), fc.string())  .filter((m) => m !== null && m !== undefined && !(Number.isInteger(m) && m >= 0 && m <= 3)).map((m) => ({ item: { ...VALID_MODE, Mode: m }, field: `${where}.Mode` })),
    fc.oneof(weird, fc.integer().filter((w) => w < 0 || w > 15), fc.string()).filter((w) => w !== null && w !== undefined && !(Number.isInteger(w) && w >= 0 && w <= 15)).map((w) => ({ item: { ...VALID_MODE, WakeupInterval: w }, field: `${where}.WakeupInterval` })),
    fc
      .oneof(
        fc.double().filter((u) => !Number.isSafeInteger(u)),
        fc.string({ minLength: 1 }).filter((u) => !/^\s*-?\d{1,19}\s*$/.test(u)),
        fc.bigInt().filter((u) => u > 9223372036854775807n || u < -9223372036854775808n),
        fc.constant('9223372036854775808'),
        fc.constant(true),
        fc.constant({}),
      )
      .map((u) => ({ item: { ...VALID_MODE, UserMessageID: u }, field: `${where}.UserMessageID` })),
    fc
      .string({ minLength: 1, maxLength: 12 })
      .filter((k) => !['DestinationID', 'Mode', 'WakeupInterval', 'UserMessageID', '__proto__'].includes(k))
      .map((k) => ({ item: { ...VALID_MODE, [k]: 1 }, field: `${where}.${k}` })),
  );
}

const modeMsgs = fc.oneof(
  badModeItem('msg.payload').map(({ item, field }) => ({ msg: { payload: item }, field })),
  // A bad item among good ones: the whole msg is refused, nothing is sent.
  fc
    .tuple(fc.integer({ min: 0, max: 5 }), fc.integer({ min: 0, max: 5 }))
    .chain(([before, after]) =>
      badModeItem(`msg.payload[${before}]`).map(({ item, field }) => ({
        msg: { payload: [...Array(before).fill(VALID_MODE), item, ...Array(after).fill(VALID_MODE)] },
        field,
      })),
    ),
  fc.constant({ msg: { payload: [] }, field: 'msg.payload' }),
  fc.oneof(weird, nastyString).filter((f) => f !== undefined && f !== null && !['any', 'IDP', 'OGx'].includes(f)).map((f) => ({ msg: { payload: VALID_MODE, terminalFamily: f }, field: 'msg.terminalFamily' })),
  badQuery.map(({ query, field }) => ({ msg: { payload: VALID_MODE, query }, field })),
);

/** A message ID that must be refused. */
const badId = fc.oneof(
  fc.constant(null),
  fc.constant(undefined),
  fc.boolean(),
  fc.double().filter((d) => !Number.isSafeInteger(d) || d <= 0),
  fc.integer({ max: 0 }),
  fc.constant(NaN),
  fc.string().filter((s) => !/^\s*\d{1,19}\s*$/.test(s) || BigInt(s.trim()) === 0n || BigInt(s.trim()) > 9223372036854775807n),
  fc.constantFrom('0x10', '1e5', '12a', '-5', '9223372036854775808', '99999999999999999999', '../1', '1\r\n2'),
  fc.bigInt({ max: 0n }),
  fc.bigInt({ min: 9223372036854775808n }),
  fc.constant(new Date(0)),
  fc.constant(Buffer.from('12')),
  fc.array(fc.integer(), { maxLength: 2 }).map((a) => [a]),
);

const cancelMsgs = fc.oneof(
  badId.map((id) => ({ msg: { payload: id }, field: 'msg.payload' })),
  fc.tuple(fc.integer({ min: 0, max: 4 }), badId).map(([i, id]) => ({ msg: { payload: [...Array(i).fill(7), id, 8] }, field: `msg.payload[${i}]` })),
  badId.filter((id) => id !== null && id !== undefined).map((id) => ({ msg: { payload: [{ ID: id }] }, field: 'msg.payload[0]' })),
  fc.constant({ msg: { payload: [{ DestinationID: 'x', ErrorID: 101 }] }, field: 'msg.payload[0].ID' }),
  fc.constant({ msg: { payload: [] }, field: 'msg.payload' }),
  badQuery.map(({ query, field }) => ({ msg: { payload: 42, query }, field })),
);

const pollerMsgs = fc.oneof(
  fc.oneof(weird, nastyString, fc.string()).filter((p) => !['poll', 'stop', 'start'].includes(p) && !(p && typeof p === 'object' && 'fromUTC' in p)).map((p) => ({ msg: { payload: p }, field: 'msg.payload' })),
  fc
    .oneof(weird, nastyString, fc.string(), fc.constantFrom('2024-01-01T00:00:00', '2024-01-01 00:00', '2024-01-01 00:00:00Z', '2024-01-01 00:00:00.000'))
    .filter((v) => !(typeof v === 'string' && /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/.test(v.trim())))
    .map((v) => ({ msg: { payload: { fromUTC: v } }, field: 'msg.payload.fromUTC' })),
  badQuery.map(({ query, field }) => ({ msg: { payload: 'poll', query }, field })),
);

/** An ID (referral, SMS batch) that must be refused: not a positive int64 in any accepted form. */
const badPositiveId = fc.oneof(
  fc.constantFrom(true, false, null, undefined, NaN, Infinity, -Infinity, 0, -1, 1.5, 2 ** 60, '', ' ', 'abc', '0x10', '1e3', '../1', '99999999999999999999'),
  fc.double().filter((d) => !Number.isSafeInteger(d) || d <= 0),
  fc.integer({ max: 0 }),
  fc.string({ maxLength: 30 }).filter((t) => !/^\s*-?\d+\s*$/.test(t)),
  fc.bigInt({ min: 9223372036854775808n }),
  fc.array(fc.integer(), { maxLength: 2 }),
  fc.dictionary(fc.string({ maxLength: 4 }), fc.integer(), { maxKeys: 2 }),
  fc.constant(new Date(0)),
  fc.constant(Buffer.from('7')),
);

const GOOD_CONTRACT = { customerId: 2, monthlyFee: 49.9, activationPrice: 10, planDesc: 'Plano', sharingType: 1, uplinkCount: 500, downlinkCount: 50, excessUplinkPrice: 0.02, excessDownlinkPrice: 0.1 };
// ('' and blank strings mean "not set" for these settings, so they are not bad.)
const notPositiveInt = fc.oneof(fc.constantFrom('x', null, true, 0, -1, 1.5, 2 ** 60, NaN), fc.double().filter((d) => !Number.isSafeInteger(d) || d < 1), fc.string({ maxLength: 8 }).filter((t) => t.trim() !== '' && !/^\s*\d+\s*$/.test(t)));
const unknownKey = fc.string({ minLength: 1, maxLength: 10 }).filter((k) => /^[A-Za-z_]\w*$/.test(k)).map((k) => `zz${k}`);
const notPlainObject = fc.oneof(fc.constantFrom(5, true, 'text', [1], new Date(0), Buffer.from('x')), fc.array(fc.integer(), { minLength: 1, maxLength: 3 }), fc.double(), fc.string({ minLength: 1, maxLength: 20 }));
const badUserString = fc.oneof(
  fc.integer({ min: 4097, max: 9000 }).map((n) => 'u'.repeat(n)),
  fc.tuple(fc.string({ maxLength: 10 }), fc.integer({ min: 0, max: 31 }), fc.string({ maxLength: 10 })).map(([a, c, b]) => `x${a}${String.fromCharCode(c)}${b}y`), // (inside: values are trimmed first)
);

const contractListMsgs = fc.oneof(
  fc.constantFrom(5n, () => 1, Symbol('op'), 'delete').map((op) => ({ msg: { payload: {}, operation: op }, field: 'msg.operation' })),
  fc.constantFrom(2n ** 70n, () => 1).map((v) => ({ msg: { payload: { pageSize: v } }, field: 'msg.payload.pageSize' })),
  fc.tuple(unknownKey, fc.anything()).map(([k, v]) => ({ msg: { payload: { [k]: v } }, field: `msg.payload.${k}` })),
  notPositiveInt.filter((v) => v !== null).map((v) => ({ msg: { payload: { customerId: v } }, field: 'msg.payload.customerId' })),
  badQuery.map(({ query, field }) => ({ msg: { payload: {}, query }, field })),
);
const contractCreateMsgs = fc.oneof(
  notPlainObject.map((p) => ({ msg: { payload: p }, field: 'msg.payload' })),
  notPositiveInt.map((v) => ({ msg: { payload: { ...GOOD_CONTRACT, customerId: v } }, field: 'msg.payload.customerId' })),
  badQuery.map(({ query, field }) => ({ msg: { payload: GOOD_CONTRACT, query }, field })),
);
const idMsgs = fc.oneof(
  badPositiveId.map((id) => ({ msg: { payload: id }, field: 'msg.payload' })),
  badQuery.map(({ query, field }) => ({ msg: { payload: 3, query }, field })),
);
const smsMsgs = fc.oneof(idMsgs, fc.oneof(fc.string(), fc.integer(), fc.constant({})).map((w) => ({ msg: { payload: 1, wait: w }, field: 'msg.wait' })));
const devicesMsgs = fc.oneof(
  fc.string({ maxLength: 20 }).filter((d) => !/^\s*[0-9a-fA-F]{16}\s*$/.test(d) && d.trim() !== '').map((d) => ({ msg: { payload: { devEui: d } }, field: 'msg.payload.devEui' })),
  fc.tuple(unknownKey, fc.anything()).map(([k, v]) => ({ msg: { payload: { [k]: v } }, field: `msg.payload.${k}` })),
  notPositiveInt.filter((v) => v !== null && v !== '').map((v) => ({ msg: { payload: { customerId: v } }, field: 'msg.payload.customerId' })),
  // Values no JSON text can show (BigInt, a function) must still give a clean BAD_INPUT.
  fc
    .tuple(fc.constantFrom('pageSize', 'page', 'devEui', 'receivable', 'allPages'), fc.constantFrom(5n, -1n, () => 1, Symbol('s')))
    .map(([k, v]) => ({ msg: { payload: { [k]: v } }, field: `msg.payload.${k}` })),
  badQuery.map(({ query, field }) => ({ msg: { payload: '', query }, field })),
);
const userMsgs = fc.oneof(
  notPlainObject.filter((p) => typeof p !== 'string').map((p) => ({ msg: { payload: p }, field: 'msg.payload' })),
  badUserString.map((p) => ({ msg: { payload: p }, field: 'msg.payload' })),
  badQuery.map(({ query, field }) => ({ msg: { payload: '', query }, field })),
);
const tagListMsgs = fc.oneof(
  fc
    .tuple(fc.constantFrom('page', 'perPage', 'offset'), fc.oneof(fc.constantFrom('x', -5, 1.5, 2e9, {}, [2], true), fc.string({ minLength: 1, maxLength: 6 }).filter((t) => t.trim() !== '' && !Number.isFinite(Number(t)))))
    .map(([k, v]) => ({ msg: { payload: 'go', [k]: v }, field: `msg.${k}` })),
  badQuery.map(({ query, field }) => ({ msg: { payload: 'go', query }, field })),
);
const tagConfigMsgs = fc.oneof(
  fc.oneof(fc.constant({}), fc.array(fc.integer(), { maxLength: 2 }), fc.constant(new Date(0)), badUserString).map((p) => ({ msg: { payload: p }, field: 'tagId' })),
  badQuery.map(({ query, field }) => ({ msg: { payload: 'x', query }, field })),
);

const TABLE = [
  { type: 'iotgw-terminal-mode', props: { mode: 0, wakeupInterval: 0, family: 'any' }, outputs: 2, gen: modeMsgs },
  { type: 'iotgw-cancel', props: {}, outputs: 1, gen: cancelMsgs },
  { type: 'iotgw-status-poller', props: { autoStart: false, intervalSeconds: 3600, startFrom: '-1h', output: 'record' }, outputs: 1, gen: pollerMsgs },
  ...['iotgw-lorawan-contract', 'iotgw-lorawan-referral', 'iotgw-lorawan-devices', 'iotgw-sms-request', 'iotgw-user', 'iotgw-tag-list', 'iotgw-tag-config'].flatMap((type) => {
    const gens = {
      'iotgw-lorawan-contract': [contractListMsgs, contractCreateMsgs],
      'iotgw-lorawan-referral': [idMsgs],
      'iotgw-lorawan-devices': [devicesMsgs],
      'iotgw-sms-request': [smsMsgs],
      'iotgw-user': [userMsgs],
      'iotgw-tag-list': [tagListMsgs],
      'iotgw-tag-config': [tagConfigMsgs],
    }[type];
    return SPECS.filter((sp) => sp.type === type).map((sp, i) => ({ type, label: sp.label, spec: sp, props: sp.props, outputs: sp.outputs, gen: gens[i], runs: 1000 }));
  }),
].filter((t) => LANDED.has(t.type));

/** fc.assert whose failure says what failed: fast-check 4 keeps the property's own error in `cause`, which mocha does not print. */
async function check(property, options) {
  try {
    await fc.assert(property, options);
  } catch (err) {
    if (!err || !err.cause) throw err;
    throw new Error(`${err.message}\nThe property's error: ${err.cause.stack ?? err.cause}`, { cause: err });
  }
}

describe('property: bad input ends in BAD_INPUT naming the field, with no request', function () {
  this.timeout(120000);
  let sim;
  useRuntime();
  after(function () {
    console.log(`      [figures] generated inputs: ${figures.generated}, wire checks: ${figures.wire}`);
  });
  beforeEach(async function () {
    sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 }, app: { rateLimitCalls: 0 } });
  });
  afterEach(async function () {
    await helper.unload();
    await sim.close();
  });

  /** Loads the node with a Catch and a Complete node; returns send(msg) -> Promise<{error?, sent}>. */
  async function harness(t) {
    const spec = t.spec ?? { type: t.type };
    const n = await load(ledgerFlow(configNode(spec, sim, gatewayNode), { ...spec, type: t.type, outputs: t.outputs, props: t.props }), credsFor(spec, DEMO_CREDS));
    return ledgerSender(n, t.outputs);
  }

  for (const t of TABLE) {
    it(`${t.label ?? t.type}: ${t.runs ?? RUNS} generated bad msgs`, async function () {
      const send = await harness(t);
      await check(
        fc.asyncProperty(t.gen, async ({ msg, field }) => {
          sim.server.clearCalls();
          const r = await send(msg);
          figures.generated++;
          assert.ok(r.error, `ended with an error, not ${JSON.stringify(r)}`);
          assert.equal(r.endings, 1, 'ended exactly once');
          assert.equal(r.sent, 0, 'nothing was sent on');
          assert.equal(r.error.code, 'BAD_INPUT', r.error.message);
          assert.ok(r.error.message.includes(field), `the error names ${field}: ${r.error.message}`);
          assert.ok(r.error.message.length < 2000, 'the message stays short');
          assert.equal(sim.server.calls.length, 0, 'no request was sent');
        }),
        { numRuns: t.runs ?? RUNS },
      );
      // No crash: the node still does its job with a good msg.
      sim.server.clearCalls();
      const good = t.spec ? t.spec.validMsg(1) : { 'iotgw-terminal-mode': { payload: VALID_MODE }, 'iotgw-cancel': { payload: 42 }, 'iotgw-status-poller': { payload: 'poll' } }[t.type];
      const r = await send(good);
      assert.ok(!r.error, r.error && r.error.message);
      assert.ok(sim.server.calls.length >= 1);
    });
  }

  if (LANDED.has('iotgw-status-poller')) {
    it('strings in msg.query reach the wire encoded: path unchanged, no raw CR/LF, space, # or non-ASCII, exact round trip', async function () {
      const send = await harness(TABLE.find((t) => t.type === 'iotgw-status-poller'));
      const key = fc.string({ unit: 'binary', minLength: 1, maxLength: 30 }).filter((k) => k.isWellFormed() && k !== '__proto__' && k !== 'FromUTC');
      const value = fc.oneof(
        fc.string({ unit: 'binary', maxLength: 200 }).filter((v) => v.isWellFormed()),
        fc.constantFrom('\r\nX-Injected: 1', '../../../etc/passwd', 'a?b=c&d=e', '#fragment', '%2e%2e%2f', 'x'.repeat(4096), ' / ? # [ ] @ ! $ & \' ( ) * + , ; ='),
      );
      await check(
        fc.asyncProperty(key, value, async (k, v) => {
          sim.server.clearCalls();
          const r = await send({ payload: 'poll', query: { [k]: v } });
          figures.wire++;
          assert.ok(!r.error, r.error && r.error.message);
          const call = sim.server.callsTo('terminal/status')[0];
          assert.ok(call, 'the poll went out');
          const raw = call.rawUrl;
          assert.equal(raw.split('?')[0], '/api/v1.0/get/subaccounts/fw_status_updates', 'the path is untouched');
          assert.ok(/^[\x21-\x7e]+$/.test(raw), `only printable ASCII on the wire: ${JSON.stringify(raw.slice(0, 80))}`);
          assert.ok(!raw.includes('#'), 'no raw #');
          assert.equal((raw.match(/\?/g) || []).length, 1, 'one ? only');
          const params = new URLSearchParams(raw.slice(raw.indexOf('?') + 1));
          assert.equal(params.get(k), v, 'the value arrives exactly as given');
          assert.ok(params.get('FromUTC'), 'our own parameter is intact');
          for (const name of Object.keys(call.headers)) assert.ok(!/injected/i.test(name), 'no injected header');
        }),
        { numRuns: 300 },
      );
    });
  }

  if (LANDED.has('iotgw-user')) {
    it('iotgw-user: a user ID from msg.payload reaches the query string encoded, exactly, never raw', async function () {
      const t = TABLE.find((x) => x.type === 'iotgw-user');
      const send = await harness(t);
      const value = fc.oneof(
        fc.string({ unit: 'binary', minLength: 1, maxLength: 300 }).filter((v) => v.isWellFormed() && v.trim() !== '' && !hasControl(v)),
        fc.constantFrom('../../admin', 'a?user_id=other', 'x#frag', 'a&user_id=b', '%0d%0aX: y', ' / ? # '),
      );
      await check(
        fc.asyncProperty(value, async (v) => {
          sim.server.clearCalls();
          await send({ payload: v });
          figures.wire++;
          const call = sim.server.callsTo('app/user')[0];
          assert.ok(call, 'the request went out');
          const raw = call.rawUrl;
          assert.equal(raw.split('?')[0], '/app/auth/user', 'the path is untouched');
          assert.ok(/^[\x21-\x7e]+$/.test(raw), `only printable ASCII on the wire: ${JSON.stringify(raw.slice(0, 80))}`);
          const params = new URLSearchParams(raw.slice(raw.indexOf('?') + 1));
          assert.deepEqual(params.getAll('user_id'), [v.trim()], 'one user_id, exactly the value given');
        }),
        { numRuns: 300 },
      );
    });
  }

  it('path segments: any string is encoded so that it stays one segment, or refused with BAD_INPUT', function () {
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary', maxLength: 100 }), fc.constantFrom('..', '.', '../x', 'a/b', '?q', '#f', '\r\n', '%2f')), (s) => {
        figures.generated++;
        let seg;
        try {
          seg = pathSegment(s, 'referralId');
        } catch (err) {
          assert.equal(err.code, 'BAD_INPUT');
          assert.ok(err.message.startsWith('referralId'), 'names the field');
          return;
        }
        if (!s.isWellFormed()) return; // lone surrogates cannot be encoded losslessly (encodeURIComponent throws; covered above)
        assert.ok(/^[A-Za-z0-9\-_.!~*'()%]*$/.test(seg), `encoded: ${seg}`);
        assert.ok(seg !== '.' && seg !== '..', 'no dot segment');
        assert.equal(decodeURIComponent(seg), s, 'round trip');
      }),
      { numRuns: 2000 },
    );
  });
});

