'use strict';
/**
 * Issue 5: a closed node leaves nothing behind. 20 full redeploys while every node type
 * has work in flight (a reply slower than the timeout, msgs waiting for a rate-limit slot,
 * a running poller), then the flows stop: the process has the same timers, sockets and
 * listeners as before, the simulator sees no open connection, and every input msg was
 * ended exactly once (counted through Node-RED's onComplete hook).
 */
const assert = require('node:assert/strict');
const { hooks, events } = require('@node-red/util');
const { helper, startSimulator, gatewayNode, load, until, DEMO_CREDS } = require('../helpers/harness');
const { landedSpecs, configNode } = require('../helpers/faults');

const REDEPLOYS = 20;
const CREDS = { gw: DEMO_CREDS, app: { authToken: 'app-demo-token' } };

function resources() {
  const out = {};
  for (const r of process.getActiveResourcesInfo()) out[r] = (out[r] ?? 0) + 1;
  return out;
}

/**
 * The kinds of which `now` holds more than `base` (none: nothing was left behind). Fewer is
 * fine: a mocha worker runs other files before this one, and what they left closing (a
 * connection attempt, a socket) may end during this test; what this test leaves shows as more.
 */
function beyond(now, base) {
  return Object.fromEntries(Object.entries(now).filter(([k, n]) => n > (base[k] ?? 0)));
}

/** The resources once two readings 500 ms apart agree (what earlier files of the worker left has settled), at most `ms`. */
async function settledResources(ms) {
  const end = Date.now() + ms;
  let last = resources();
  for (;;) {
    await new Promise((r) => setTimeout(r, 500));
    const now = resources();
    if (JSON.stringify(now) === JSON.stringify(last) || Date.now() > end) return now;
    last = now;
  }
}

function listeners() {
  const out = {};
  for (const name of ['exit', 'uncaughtException', 'unhandledRejection', 'SIGINT', 'SIGTERM', 'warning']) out[`process:${name}`] = process.listenerCount(name);
  for (const name of events.eventNames()) out[`runtime:${String(name)}`] = events.listenerCount(name);
  return out;
}

describe('reliability: nothing left behind after many redeploys', function () {
  this.timeout(90000);
  let sim;
  before(async function () {
    await new Promise((r) => helper.startServer(r));
    sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 }, app: { rateLimitCalls: 0 } });
  });
  after(async function () {
    hooks.remove('onComplete.handles');
    await sim.close();
    await new Promise((r) => helper.stopServer(r));
  });

  function flow() {
    const nodes = [
      gatewayNode(sim, { rateLimitCalls: 2, rateLimitWindowSeconds: 60, timeoutSeconds: 30 }),
      { ...configNode({ config: 'app' }, sim, gatewayNode, { rateLimitCalls: 2, rateLimitWindowSeconds: 60, timeoutSeconds: 30 }), id: 'app' },
    ];
    for (const spec of landedSpecs()) {
      // (An id equal to a type name confuses Node-RED's config-node ordering.)
      nodes.push({ id: `dut-${spec.label ?? spec.type}`, z: 'flow', type: spec.type, ...(spec.config === 'app' ? { app: 'app' } : { gateway: 'gw' }), ...spec.props, ...(spec.type === 'iotgw-status-poller' ? { autoStart: true, intervalSeconds: 1 } : {}), wires: [] });
    }
    return nodes;
  }

  let sent = 0;
  const ended = new Map();
  function traffic(round) {
    // A poll whose reply never comes before the redeploy; SEND calls beyond the 2 allowed wait for a slot.
    // GETs of the other areas hang too, so that every kind of client has a request open.
    const held = landedSpecs()
      .filter((spec) => spec.method === 'GET')
      .map((spec) => sim.inject({ route: spec.route, kind: 'slow', phase: 'before', delayMs: 60000 }));
    for (const spec of landedSpecs()) {
      const node = helper.getNode(`dut-${spec.label ?? spec.type}`);
      for (let k = 0; k < 4; k++) {
        const rid = `${round}-${spec.label ?? spec.type}-${k}`;
        ended.set(rid, 0);
        sent++;
        node.receive({ ...spec.validMsg(k), rid });
      }
    }
    return held;
  }

  it(`${REDEPLOYS} redeploys with work in flight leave no timer, socket, listener or unfinished msg`, async function () {
    hooks.add('onComplete.handles', (evt) => {
      const rid = evt.msg && evt.msg.rid;
      if (rid !== undefined && ended.has(rid)) ended.set(rid, ended.get(rid) + 1);
    });
    // Warm up (lazy runtime state), then take the baseline with no flow running.
    await load(flow(), CREDS);
    traffic('warmup');
    await new Promise((r) => setTimeout(r, 150));
    await helper.unload();
    sim.server.clearFaults();
    await until(() => sim.server.openSockets === 0, 5000, 'the warm-up connections to close');
    const baseRes = await settledResources(10000);
    const baseListeners = listeners();

    await load(flow(), CREDS);
    const held = []; // every slow fault injected, and so the requests the simulator held
    const heldSoFar = () => held.reduce((n, f) => n + f.hits, 0);
    for (let round = 0; round < REDEPLOYS; round++) {
      const before = heldSoFar();
      held.push(...traffic(round));
      // The redeploy comes while the simulator holds a request of this round open (a condition, not a pause).
      await until(() => heldSoFar() > before, 30000, `a held request in round ${round}`);
      assert.ok(sim.server.openSockets > 0, 'requests were in flight at the redeploy');
      await helper.setFlows([{ id: 'flow', type: 'tab', label: 'test' }, ...flow()], 'full', CREDS);
    }
    await helper.unload();
    sim.server.clearFaults();

    // Every msg ended exactly once (aborted work ends with done(err), never silently).
    await until(() => [...ended.values()].every((c) => c >= 1), 5000, 'every msg to end');
    for (const [rid, c] of ended) assert.equal(c, 1, `msg ${rid} ended ${c} times`);
    await until(() => sim.server.openSockets === 0, 5000, 'the simulator to see every connection closed');
    let now;
    await until(
      () => {
        now = resources();
        return Object.keys(beyond(now, baseRes)).length === 0;
      },
      5000,
      'the active resources to return to the baseline',
    ).catch(() => assert.deepEqual(beyond(now, baseRes), {}, `active handles after the redeploys beyond the baseline ${JSON.stringify(baseRes)}`));
    assert.deepEqual(listeners(), baseListeners, 'listeners after the redeploys');
    console.log(`      [figures] redeploys: ${REDEPLOYS}, msgs in flight ended: ${sent}, resources: ${JSON.stringify(now)}`);
  });
});
