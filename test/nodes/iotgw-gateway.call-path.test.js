'use strict';
/**
 * Issue 17 (per-call overhead) in a real runtime against the simulator: with one call per
 * msg (maxBatchSize 1) and several msgs in flight, every msg ends exactly once, the status
 * is not rewritten per msg but its last state is the idle one; closing the node while msgs
 * are in flight aborts their calls and finishes only once each of them has ended (a
 * pending count, not a set of promises).
 */
const assert = require('node:assert/strict');
const { recordStatuses, simulatorPerTest, helper, gatewayNode, load, until, collect, catchAll, modeNode, nodeFlow } = require('../helpers/harness');

describe('call path: one call per msg, several in flight', function () {
  let sim;
  simulatorPerTest({ terminal: { rateLimitCalls: 0, maxConcurrent: 0, acceptUnknownTerminals: true } }, (s) => (sim = s));

  it('ends every msg once, throttles the status and leaves it idle', async function () {
    this.timeout(30000);
    const n = await load(nodeFlow(sim, modeNode(), { gw: { rateLimitCalls: 0, maxConcurrent: 3, maxBatchSize: 1 }, outs: ['ok', 'no'] }));
    const mode = n.get('mode');
    const statuses = recordStatuses(mode);
    const ok = collect(n.get('ok'));
    const no = collect(n.get('no'));
    const caught = collect(n.get('caught'));
    const N = 200;
    let sent = 0;
    // Three in flight: each msg that ends lets the next one in.
    const next = () => {
      if (sent >= N) return;
      const i = sent++;
      mode.receive({ payload: { DestinationID: `${String(10000000 + i)}SKY${i.toString(16).toUpperCase().padStart(4, '0')}`, Mode: 0 }, i });
    };
    n.get('ok').on('input', next);
    n.get('caught').on('input', next);
    for (let k = 0; k < 3; k++) next();
    await until(() => ok.length + no.length + caught.length >= N, 20000, 'every msg to end');
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(ok.length, N, JSON.stringify(caught.slice(0, 2).map((m) => m.error)));
    assert.equal(no.length + caught.length, 0);
    assert.deepEqual([...new Set(ok.map((m) => m.i))].length, N, 'each msg once');
    for (const m of ok) assert.equal(m.payload.length, 1);
    // One call per msg.
    assert.equal(sim.server.callsTo('terminal/mode').length, N);
    // Not a status per msg, and the last one is the idle status.
    assert.ok(statuses.length < N / 2, `${statuses.length} status updates for ${N} msgs`);
    assert.deepEqual(statuses.at(-1), {});
  });

  it('closing waits until every msg in flight has ended', async function () {
    this.timeout(30000);
    sim.server.latencyMs = 400;
    const n = await load([
      gatewayNode(sim, { rateLimitCalls: 0, maxConcurrent: 3, maxBatchSize: 1 }),
      { id: 'mode', type: 'iotgw-terminal-mode', gateway: 'gw', mode: 0, wakeupInterval: 0, family: 'any', wires: [['ok'], []] },
      { id: 'ok', type: 'helper' },
      ...catchAll(),
    ]);
    const mode = n.get('mode');
    const ok = collect(n.get('ok'));
    const caught = collect(n.get('caught'));
    for (let i = 0; i < 5; i++) mode.receive({ payload: { DestinationID: `0100000${i}SKYB00${i}`, Mode: 0 } });
    await until(() => sim.server.callsTo('terminal/mode').length >= 1, 3000, 'a call to start');
    // Each msg ends with done() or done(err): Node-RED's onComplete hook sees it.
    let completed = 0;
    helper._RED.hooks.add('onComplete.calltest', (ev) => {
      if (ev.node?.id === 'mode') completed++;
    });
    try {
      assert.equal(completed, 0, 'all 5 still in flight');
      // Closing aborts the calls in flight; it finishes once each msg has ended.
      const endedAtClose = await mode.close(false).then(() => completed);
      assert.equal(endedAtClose, 5, 'each of the 5 msgs ended before close finished');
    } finally {
      helper._RED.hooks.remove('onComplete.calltest');
    }
    await until(() => ok.length + caught.length === 5, 3000, 'the 5 msgs to arrive');
    for (const m of caught) assert.match(m.error.message, /aborted|closed/);
  });
});
