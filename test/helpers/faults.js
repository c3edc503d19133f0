'use strict';
/**
 * Shared fixtures of the issue-5 tests (reliability, properties, secrets): one entry per
 * request node type with a valid input, the simulator route it calls and what each fault
 * kind must end in. Node types still being built are added here as they land; the tests
 * iterate over `landedSpecs()`, so a spec whose type is not in package.json yet is skipped
 * by construction (not by a skipped test).
 */
const assert = require('node:assert/strict');
const pkg = require('../../package.json');

const LANDED = new Set(Object.keys(pkg['node-red'].nodes));

/**
 * What a fault hitting a node's only request must end in: 'ok' (the node copes: retried,
 * renewed or tolerated) or an error code. `method` is the HTTP method of the node's call.
 */
function expectedOutcome(kind, method) {
  const get = method === 'GET';
  switch (kind) {
    case 'unavailable':
      // A 503 can come from a proxy after the work was done: only a GET goes again (issue 43).
      return get ? 'ok' : 'RATE_LIMITED';
    case 'rate-limit':
    case 'token-expiry':
    case 'extra-fields':
      return 'ok';
    case 'server-error':
      return get ? 'ok' : 'HTTP_ERROR';
    case 'reset':
    case 'lost-reply': // handled, then the socket cut before a byte of the reply (issue 45)
      return get ? 'ok' : 'NETWORK';
    case 'slow':
    case 'hold': // handled, the reply held until the client gives up (issue 45)
      return get ? 'ok' : 'TIMEOUT';
    case 'malformed-json':
    case 'truncated-json':
    case 'html':
    case 'content-type':
    case 'oversized':
    case 'wrong-types':
      return 'BAD_RESPONSE';
    default:
      throw new Error(`no expectation for fault kind ${kind}`);
  }
}

/** Request node types of the package: how to drive one with a valid msg. */
const SPECS = [
  {
    type: 'iotgw-terminal-mode',
    props: { mode: 0, wakeupInterval: 0, family: 'any', lingerMs: 0 },
    outputs: 2,
    route: 'terminal/mode',
    method: 'POST',
    validMsg: (i) => ({ payload: { DestinationID: i % 2 ? '01000001SKYA001' : '01000003SKYB003', Mode: 0, UserMessageID: i + 1 } }),
    /** int64 edges in the reply's ID fields are passed on exactly. */
    int64: 'ok',
  },
  {
    type: 'iotgw-cancel',
    props: { lingerMs: 0 },
    outputs: 1,
    route: 'terminal/cancel',
    method: 'POST',
    validMsg: (i) => ({ payload: 1000 + i }),
    // A result whose ID is not the one asked for is refused (it is someone else's result).
    int64: 'BAD_RESPONSE',
  },
  {
    type: 'iotgw-status-poller',
    props: { autoStart: false, intervalSeconds: 3600, startFrom: '-1h', output: 'batch' },
    outputs: 1,
    route: 'terminal/status',
    method: 'GET',
    validMsg: () => ({ payload: 'poll' }),
    int64: 'ok',
    /** Poll msgs end with done(); the records are new msgs. */
    passesMsgOn: false,
  },
  // ---- LoRaWAN broker and SMS (areas b, c): broker headers from the gateway config node ----
  {
    type: 'iotgw-lorawan-contract',
    props: { operation: 'list' },
    outputs: 1,
    route: 'broker/contract-list',
    method: 'GET',
    validMsg: () => ({ payload: {} }),
    int64: 'ok',
  },
  {
    type: 'iotgw-lorawan-contract',
    label: 'iotgw-lorawan-contract (create)',
    props: { operation: 'create' },
    outputs: 1,
    route: 'broker/contract-create',
    method: 'POST',
    validMsg: (i) => ({
      payload: { customerId: 2, monthlyFee: 49.9, activationPrice: 10, planDesc: `Plano ${i}`, sharingType: 1, uplinkCount: 500, downlinkCount: 50, excessUplinkPrice: 0.02, excessDownlinkPrice: 0.1 },
    }),
    int64: 'ok',
  },
  {
    type: 'iotgw-lorawan-referral',
    props: {},
    outputs: 1,
    route: 'broker/referrals',
    method: 'DELETE',
    // Each referral can be removed once: a fresh ID per msg.
    validMsg: (i) => ({ payload: 1 + (i % 499) }),
    int64: 'ok',
  },
  {
    type: 'iotgw-lorawan-devices',
    props: { page: 1, pageSize: 20 },
    outputs: 1,
    route: 'broker/devices',
    method: 'GET',
    validMsg: () => ({ payload: '' }),
    int64: 'ok',
  },
  {
    type: 'iotgw-sms-request',
    props: { wait: false, intervalSeconds: 0.1, timeLimitSeconds: 10 },
    outputs: 1,
    route: 'sms/request',
    method: 'GET',
    validMsg: () => ({ payload: 1 }),
    int64: 'ok',
  },
  // ---- application API (area d): its own config node ----
  {
    type: 'iotgw-user',
    config: 'app',
    props: {},
    outputs: 1,
    route: 'app/user',
    method: 'GET',
    validMsg: () => ({ payload: '' }),
    int64: 'ok',
  },
  {
    type: 'iotgw-tag-list',
    config: 'app',
    props: { walk: 'page', page: '', perPage: '', offset: '', token: '', tokenType: 'str', search: '', searchType: 'str' },
    outputs: 1,
    route: 'app/tags',
    method: 'GET',
    validMsg: () => ({ payload: 'go' }),
    int64: 'ok',
  },
  {
    type: 'iotgw-tag-config',
    config: 'app',
    props: { token: '', tokenType: 'str', tagId: 'payload', tagIdType: 'msg', serialNumber: '', serialNumberType: 'str', chipset: '', chipsetType: 'str', version: '', versionType: 'str' },
    outputs: 1,
    route: 'app/tag-config',
    method: 'GET',
    validMsg: () => ({ payload: require('../../dist/simulator/app').simUuid(3, 1) }),
    int64: 'ok',
    // The configuration is a free-form object (the interface fixes no field), passed on as is:
    // fields of other types are not an error for this node.
    outcomes: { 'wrong-types': 'ok' },
  },
];

/** The config node a spec needs, for the simulator `sim`. */
function configNode(spec, sim, gatewayNode, props = {}) {
  if (spec.config === 'app') {
    return { id: 'gw', type: 'iotgw-app', name: 'sim', baseUrl: sim.appUrl, timeoutSeconds: props.timeoutSeconds ?? 5, rateLimitCalls: props.rateLimitCalls ?? 0, rateLimitWindowSeconds: props.rateLimitWindowSeconds ?? 1, maxRetries: props.maxRetries ?? 3 };
  }
  return gatewayNode(sim, props);
}

/** Credentials for the flow of a spec (the config node always has the id "gw"). */
function credsFor(spec, gwCreds) {
  return spec.config === 'app' ? { gw: { authToken: 'app-demo-token' } } : { gw: gwCreds };
}

function landedSpecs() {
  return SPECS.filter((s) => LANDED.has(s.type));
}

/** What a fault kind should end in for a spec. */
function outcomeFor(spec, kind) {
  if (spec.outcomes && spec.outcomes[kind]) return spec.outcomes[kind];
  if (kind === 'int64-edges') return spec.int64;
  return expectedOutcome(kind, spec.method);
}

/**
 * A flow around one node under test: its outputs go to helper nodes, a Complete node
 * reports every done() and a Catch node every done(err) of that node, so each input msg
 * (tagged with `rid`) can be accounted for exactly once. With `prefix`, every id (the config
 * node's included) starts with it, so that several such flows load side by side (sideBySide).
 */
function ledgerFlow(gw, spec, extraProps = {}, prefix = '') {
  const p = (id) => `${prefix}${id}`;
  const outs = Array.from({ length: spec.outputs }, (_, i) => p(`out${i}`));
  return [
    { ...gw, id: p(gw.id) },
    { id: p('dut'), type: spec.type, [spec.config === 'app' ? 'app' : 'gateway']: p(gw.id), ...spec.props, ...extraProps, wires: outs.map((o) => [o]) },
    ...outs.map((id) => ({ id, type: 'helper' })),
    { id: p('ledger-complete'), type: 'complete', scope: [p('dut')], uncaught: false, wires: [[p('completed')]] },
    { id: p('completed'), type: 'helper' },
    { id: p('ledger-catch'), type: 'catch', scope: [p('dut')], uncaught: false, wires: [[p('caught')]] },
    { id: p('caught'), type: 'helper' },
  ];
}

/** Listens to a loaded ledger flow and accounts for every msg by its `rid`. */
class Ledger {
  constructor(n, outputs) {
    this.completed = [];
    this.caught = [];
    this.sent = [];
    this.other = []; // errors without a rid (a poller's own reports)
    n.get('completed').on('input', (m) => this.completed.push(m));
    n.get('caught').on('input', (m) => (m.rid === undefined ? this.other.push(m) : this.caught.push(m)));
    for (let i = 0; i < outputs; i++) n.get(`out${i}`).on('input', (m) => this.sent.push(m));
  }

  /** How many of these rids have ended (done or done(err)). */
  endedCount(rids) {
    const set = new Set(rids);
    return this.completed.filter((m) => set.has(m.rid)).length + this.caught.filter((m) => set.has(m.rid)).length;
  }

  /** Asserts that each rid ended exactly once; returns {rid: 'ok' | code}. */
  assertEachEndedOnce(rids) {
    const out = {};
    const count = new Map(rids.map((r) => [r, 0]));
    for (const m of this.completed) if (count.has(m.rid)) (count.set(m.rid, count.get(m.rid) + 1), (out[m.rid] = 'ok'));
    for (const m of this.caught) if (count.has(m.rid)) (count.set(m.rid, count.get(m.rid) + 1), (out[m.rid] = m.error && m.error.code));
    for (const [rid, c] of count) assert.equal(c, 1, `msg ${rid} ended ${c} times (expected exactly one done() or done(err))`);
    for (const m of this.caught) {
      if (count.has(m.rid)) assert.equal(this.sent.filter((s) => s.rid === m.rid).length, 0, `msg ${m.rid} ended with an error but was also sent on`);
    }
    return out;
  }
}

/**
 * Sends msgs one at a time into a loaded ledger flow (ledgerFlow) and accounts for each:
 * returns send(msg) -> Promise<{error} | {ok: true}, with `endings` (how many times the msg
 * ended) and `sent` (how many msgs the node sent for it)>, settled a turn after its first
 * ending so that a second one (a bug) shows up in `endings`.
 */
function ledgerSender(n, outputs) {
  const waiting = new Map();
  const endings = new Map();
  const sent = new Map();
  const end = (rid, how) => {
    endings.set(rid, (endings.get(rid) ?? 0) + 1);
    const w = waiting.get(rid);
    if (w) {
      waiting.delete(rid);
      setImmediate(() => w({ ...how, endings: endings.get(rid), sent: sent.get(rid) ?? 0 }));
    }
  };
  n.get('caught').on('input', (m) => m.rid !== undefined && end(m.rid, { error: m.error }));
  n.get('completed').on('input', (m) => end(m.rid, { ok: true }));
  for (let i = 0; i < outputs; i++) n.get(`out${i}`).on('input', (m) => sent.set(m.rid, (sent.get(m.rid) ?? 0) + 1));
  let rid = 0;
  return (msg) =>
    new Promise((resolve) => {
      const id = ++rid;
      waiting.set(id, resolve);
      n.get('dut').receive({ ...msg, rid: id });
    });
}

/** Sentinel credentials: recognisable, so that any leak is found by a plain search. */
const SENTINELS = {
  token: 'SENTINEL-TOKEN-7f3a9c1e5b2d4086',
  clientId: 'SENTINEL-CLIENT-ID-2b8e6d4f',
  clientSecret: 'SENTINEL-SECRET-c4e1a7f93d5b2068',
  brokerClientId: 'SENTINEL-BROKER-ID-5d9f1b3e',
  brokerAccessToken: 'SENTINEL-BROKER-TOKEN-8a2c6e0f4b7d',
  authToken: 'SENTINEL-APP-TOKEN-3e7b1d9f5a2c',
};

/** The simulator of the fault tests: its own limits off. */
const FAULT_SIM = { terminal: { rateLimitCalls: 0, maxConcurrent: 0 }, app: { rateLimitCalls: 0 }, broker: { rateLimitCalls: 0 } };

/** Mocha hooks: the runtime for the describe block, and its figures printed after it; returns the figures. */
function useFaultRuntime() {
  const { useRuntime } = require('./harness');
  const figures = { faults: 0, msgs: 0 };
  useRuntime();
  after(function () {
    console.log(`      [figures] faults injected: ${figures.faults}, msgs accounted for: ${figures.msgs}`);
  });
  return figures;
}

/**
 * The set-up the fault tests share: a real Node-RED runtime (useRuntime) and, for each
 * test, a fresh simulator with its limits off. Returns a holder whose `sim` is the current
 * test's simulator and whose `figures` (faults injected, msgs accounted for; the tests add the
 * msgs) are printed once at the end. Given the `figures` of an enclosing useFaultRuntime, it
 * uses that runtime instead of one of its own.
 */
function useFaultSim({ figures: outer } = {}) {
  const { helper, startSimulator } = require('./harness');
  const holder = { sim: undefined, figures: outer ?? useFaultRuntime() };
  const { figures } = holder;
  beforeEach(async function () {
    holder.sim = await startSimulator(FAULT_SIM);
  });
  afterEach(async function () {
    figures.faults += holder.sim.server.injectedTotal;
    await helper.unload();
    await holder.sim.close();
  });
  return holder;
}

/** The gateway's limits in the fault tests: a limiter window of 1 s (a 429 without Retry-After waits it out). */
const faultGwProps = () => ({ rateLimitCalls: 1000, rateLimitWindowSeconds: 1, timeoutSeconds: 2 });

/**
 * Side by side, for each of `specs`: a simulator of its own (its own account, routes, fault
 * queue and counters) and a ledger flow of its own (ledgerFlow, ids prefixed `s<i>-`, the
 * config node with `configProps`), all in one loaded flow; then `run({ sim, n, spec })` for
 * every spec at once, `n.get(id)` reading that spec's own nodes. The runs spend their time
 * waiting (timeouts, backoffs, Retry-After), so together they take about as long as the
 * longest, not the sum. One mocha test per spec, `title(spec)`, awaits its run and fails with
 * its error. After them: every run settled, the flow unloaded, the simulators closed (their
 * injected faults added to `figures.faults`). The describe block needs the runtime
 * (useFaultRuntime).
 */
function sideBySide(specs, { title, figures, configProps = faultGwProps() }, run) {
  const { gatewayNode, helper, load, startSimulator, DEMO_CREDS } = require('./harness');
  const sims = [];
  const runs = [];
  before(async function () {
    const flow = [];
    const creds = {};
    for (const [i, spec] of specs.entries()) {
      const sim = await startSimulator(FAULT_SIM);
      sims.push(sim);
      flow.push(...ledgerFlow(configNode(spec, sim, gatewayNode, configProps), spec, {}, `s${i}-`));
      creds[`s${i}-gw`] = credsFor(spec, DEMO_CREDS).gw;
    }
    const n = await load(flow, creds);
    specs.forEach((spec, i) => {
      const own = { get: (id) => n.get(`s${i}-${id}`) };
      // Settled with its error (or undefined): a failing run fails its own test, not the hook.
      runs.push(Promise.resolve().then(() => run({ sim: sims[i], n: own, spec })).then(() => undefined, (err) => err));
    });
  });
  after(async function () {
    await Promise.all(runs);
    await helper.unload();
    for (const sim of sims) {
      figures.faults += sim.server.injectedTotal;
      await sim.close();
    }
  });
  specs.forEach((spec, i) => {
    it(title(spec), async function () {
      const err = await runs[i];
      if (err) throw err;
    });
  });
}

/** The fault kinds of the per-kind runs: every kind the simulator injects but 'status' and 'echo'. */
function runKinds() {
  const { FAULT_KINDS } = require('../../dist/simulator/server');
  return FAULT_KINDS.filter((k) => k !== 'status' && k !== 'echo');
}

/**
 * The per-kind fault run of one node type (test/flows/faults.test.js: every node type side by
 * side, sideBySide), on its loaded ledger flow `n` against its simulator `sim`: the fault kinds
 * `spec.kinds` (default: runKinds()) in turn, each msg ending once with the outcome the fault
 * calls for, then a msg that goes through.
 */
async function faultKindsRun({ sim, n, spec }, figures) {
  const assert = require('node:assert/strict');
  const { until } = require('./harness');
  const KINDS = spec.kinds ?? runKinds();
  sim.terminal.seedBacklog(5);
  const ledger = new Ledger(n, spec.outputs);
  const dut = n.get('dut');
  const rids = [];
  let i = 0;
  const run = async (rid, msg) => {
    rids.push(rid);
    dut.receive({ ...msg, rid });
    await until(() => ledger.endedCount([rid]) >= 1, 30000, `${spec.label ?? spec.type}: msg ${rid} to end`);
    return ledger.assertEachEndedOnce([rid])[rid];
  };
  for (const kind of KINDS) {
    if (spec.type === 'iotgw-status-poller') await run(`${kind}-reset`, { payload: { fromUTC: '2000-01-01 00:00:00' } });
    const before = sim.server.callsTo(spec.route).length;
    const fault = sim.inject({ route: spec.route, kind, retryAfter: kind === 'rate-limit' ? 1 : undefined, sizeBytes: 40 * 1024 * 1024 });
    const got = await run(`${kind}-fault`, spec.validMsg(i++));
    assert.equal(got, outcomeFor(spec, kind), `${spec.type} under ${kind}: ended with ${got}`);
    assert.equal(fault.hits, 1, `${kind} was injected`);
    const calls = sim.server.callsTo(spec.route).slice(before);
    if (spec.method !== 'GET' && ['unavailable', 'server-error', 'reset', 'lost-reply', 'slow', 'hold', 'malformed-json', 'html', 'oversized'].includes(kind)) {
      assert.equal(calls.length, 1, `${kind}: a POST the gateway answered is not sent again`);
    }
    if (kind === 'rate-limit' || (kind === 'unavailable' && spec.method === 'GET')) {
      assert.equal(calls.length, 2, `${kind}: sent again once`);
      assert.equal(calls[1].body, calls[0].body, `${kind}: the same items in the same order`);
      // Retry-After: 1 s; without it the group window (1 s) or, for calls outside any
      // throttle group, the first backoff step (1 s +-25 %).
      const least = kind === 'rate-limit' ? 990 : 740;
      assert.ok(calls[1].at - calls[0].at >= least, `${kind}: sent again only after the wait (${calls[1].at - calls[0].at} ms)`);
    }
    if (kind === 'int64-edges' && spec.type === 'iotgw-terminal-mode') {
      const ids = ledger.sent.filter((m) => m.rid === `${kind}-fault`).flatMap((m) => m.payload.map((r) => r.ID));
      assert.deepEqual(ids, ['9223372036854775807'], 'the int64 edge came out exact');
    }
    // The node keeps working after the fault.
    assert.equal(await run(`${kind}-after`, spec.validMsg(i++)), 'ok', `${spec.type} works again after ${kind}`);
  }
  if (spec.type === 'iotgw-status-poller' && KINDS.includes('int64-edges')) {
    // The records of the int64-edges poll came out with exact IDs.
    const edgeBatches = ledger.sent.filter((m) => Array.isArray(m.payload) && m.payload.some((r) => r.ID === '9223372036854775807'));
    assert.ok(edgeBatches.length >= 1, 'records with int64-edge IDs were emitted exactly');
    assert.deepEqual(edgeBatches[0].payload.map((r) => r.ID).slice(0, 3), ['9223372036854775807', '9223372036854775806', 9007199254740991]);
  }
  assert.equal(sim.server.faults.length, 0, 'every fault was used');
  ledger.assertEachEndedOnce(rids);
  figures.msgs += rids.length;
}

/**
 * Mocha tests: faultKindsRun for each landed node type, side by side (sideBySide), the kinds of
 * each type in two halves, each on a node and simulator of its own, also side by side: a run is
 * a row of waits (Retry-After, backoffs, 2 s timeouts; about 17 s for all the kinds of a GET
 * node), so the halves take about half as long (every kind still meets every type, and each
 * node runs a row of faults, its working msg after each).
 */
function faultKindsTests(figures) {
  const kinds = runKinds();
  const halves = [kinds.filter((_, i) => i % 2 === 0), kinds.filter((_, i) => i % 2 === 1)];
  const specs = landedSpecs().flatMap((spec) => halves.map((half, h) => ({ ...spec, kinds: half, half: h + 1 })));
  sideBySide(specs, { figures, title: (spec) => `${spec.label ?? spec.type}, fault kinds ${spec.half} of 2 (${spec.kinds.join(', ')}): each ends each msg once with the right outcome, then the node still works` }, (run) =>
    faultKindsRun(run, figures),
  );
}

module.exports = { faultKindsTests, sideBySide, useFaultRuntime, SPECS, landedSpecs, configNode, credsFor, outcomeFor, expectedOutcome, ledgerFlow, Ledger, ledgerSender, SENTINELS, LANDED, useFaultSim, faultGwProps };
