'use strict';
/**
 * Batching under any load (issue 17), in a real Node-RED runtime against the simulator,
 * items per call counted at the simulator: a batch is cut when a call can actually leave
 * (concurrency and rate slot held), so a burst fills its calls even with lingerMs 0, and
 * a free slot sends a partial batch at once (a request/reply flow is not paced by lingerMs).
 */
const assert = require('node:assert/strict');
const { simulatorPerTest, helper, gatewayNode, modeNode, until, collect, catchAll, DEMO_CREDS, ALL_NODES } = require('../helpers/harness');

const fnNode = require('@node-red/nodes/core/function/10-function.js');

describe('batching under load (terminal mode, cancel)', function () {
  this.timeout(60000);
  let sim;
  // The simulator enforces 3 concurrent calls: holding the concurrency slot before the batch
  // is cut must never provoke a refusal.
  simulatorPerTest({ terminal: { rateLimitCalls: 0, maxConcurrent: 3, acceptUnknownTerminals: true, sendingAfterMs: 60000, receivedAfterMs: 120000 } }, (s) => (sim = s));

  async function loadWith(nodes) {
    const flow = [{ id: 'flow', type: 'tab', label: 'test' }, ...nodes.map((n) => (n.type === 'iotgw-gateway' ? n : { z: 'flow', ...n }))];
    await helper.load([...ALL_NODES, fnNode], flow, { gw: DEMO_CREDS });
    return { get: (id) => helper.getNode(id) };
  }

  /** A function node that sends `count` msgs at once, each with one item built by `item(i)`. */
  function burst(count, item, target) {
    return {
      id: 'burst',
      type: 'function',
      func: `const item = ${item}; for (let i = 0; i < ${count}; i++) node.send({ payload: item(i), n: i }); return null;`,
      outputs: 1,
      wires: [[target]],
    };
  }

  /** The terminal-mode node (id mode, `lingerMs`, `wires`), helper nodes `helpers` and a catch-all. */
  const modeAnd = (lingerMs, wires, helpers) => [modeNode({ lingerMs, wires }), ...helpers.map((id) => ({ id, type: 'helper' })), ...catchAll()];

  const modeItem = "(i) => ({ DestinationID: '3' + String(i).padStart(7, '0') + 'SKY' + (i % 65536).toString(16).toUpperCase().padStart(4, '0'), Mode: 1, WakeupInterval: 2 })";

  function itemsPerCall(route) {
    const calls = sim.server.callsTo(route);
    const items = calls.map((c) => JSON.parse(c.body).length);
    return { calls: calls.length, items: items.reduce((a, b) => a + b, 0), statuses: calls.map((c) => c.status) };
  }

  for (const lingerMs of [0, 50]) {
    it(`a burst of 8,000 msgs (limits off, maxBatchSize 100, maxConcurrent 3, lingerMs ${lingerMs}) leaves in calls of at least 90 items`, async function () {
      const n = await loadWith([
        gatewayNode(sim, { rateLimitCalls: 0, maxConcurrent: 3, maxBatchSize: 100 }),
        burst(8000, modeItem, 'mode'),
        ...modeAnd(lingerMs, [['ok'], ['bad']], ['ok', 'bad']),
      ]);
      const ok = collect(n.get('ok'));
      const caught = collect(n.get('caught'));
      n.get('burst').receive({ payload: 'go' });
      const bad = collect(n.get('bad'));
      await until(() => ok.length + bad.length + caught.length === 8000, 45000, '8,000 results');
      assert.equal(bad.length, 0, JSON.stringify(bad[0]?.payload));
      assert.equal(caught.length, 0, caught[0]?.error?.message);
      const { calls, items, statuses } = itemsPerCall('terminal/mode');
      assert.equal(items, 8000);
      assert.ok(statuses.every((s) => s === 200), `every call accepted (statuses: ${[...new Set(statuses)]})`);
      assert.ok(items / calls >= 90, `${(items / calls).toFixed(1)} items per call (${calls} calls)`);
      for (const m of ok) assert.equal(m.payload[0].DestinationID.slice(0, 8), `3${String(m.n).padStart(7, '0')}`, 'each msg gets its own result');
    });
  }

  it('a burst of 8,000 cancellations (lingerMs 0) leaves in calls of at least 90 IDs', async function () {
    const n = await loadWith([
      gatewayNode(sim, { rateLimitCalls: 0, maxConcurrent: 3, maxBatchSize: 100 }),
      burst(8000, '(i) => i + 1', 'cancel'),
      { id: 'cancel', type: 'iotgw-cancel', gateway: 'gw', lingerMs: 0, wires: [['out']] },
      { id: 'out', type: 'helper' },
      ...catchAll(),
    ]);
    const out = collect(n.get('out'));
    const caught = collect(n.get('caught'));
    n.get('burst').receive({ payload: 'go' });
    await until(() => out.length + caught.length === 8000, 45000, '8,000 results');
    assert.equal(caught.length, 0, caught[0]?.error?.message);
    const { calls, items } = itemsPerCall('terminal/cancel');
    assert.equal(items, 8000);
    assert.ok(items / calls >= 90, `${(items / calls).toFixed(1)} IDs per call (${calls} calls)`);
  });

  it('a request/reply flow is not paced by lingerMs: a free slot sends at once', async function () {
    this.timeout(150000);
    // lingerMs at its highest (5 s): paced by it, the loop would take at least rounds x 5 s
    // = 150 s, past the wait below; a free slot sending at once takes a second or two.
    const rounds = 30;
    const lingerMs = 5000;
    // Each result triggers the next msg: one msg in flight, so every call is a partial batch.
    const n = await loadWith([
      gatewayNode(sim, { rateLimitCalls: 0, maxConcurrent: 3, maxBatchSize: 100 }),
      {
        id: 'loop',
        type: 'function',
        func: `const i = msg.n === undefined ? 0 : msg.n + 1; if (i >= ${rounds}) { node.send([null, { done: true }]); return null; } return [{ n: i, payload: { DestinationID: '01000001SKYA001', Mode: 1, WakeupInterval: 2 } }, null];`,
        outputs: 2,
        wires: [['mode'], ['end']],
      },
      ...modeAnd(lingerMs, [['loop'], ['bad']], ['end', 'bad']),
    ]);
    const end = collect(n.get('end'));
    const caught = collect(n.get('caught'));
    n.get('loop').receive({ payload: 'go' });
    // The wait's limit is what makes this a test: 60 s is far more than 30 round trips take on a
    // loaded machine and far less than the 150 s lingering would take (a behaviour, not a speed).
    await until(() => end.length === 1 || caught.length > 0, 60000, `${rounds} round trips (paced by lingerMs they would take ${(rounds * lingerMs) / 1000} s)`);
    assert.equal(caught.length, 0, caught[0]?.error?.message);
    assert.equal(itemsPerCall('terminal/mode').calls, rounds);
  });
});
