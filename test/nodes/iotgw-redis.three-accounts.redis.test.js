'use strict';
/**
 * Three accounts (three gateway config nodes, each its own ApiClient and in-process gates,
 * as three Node-RED instances would have) on ONE Node-RED runtime, naming the same gateway
 * account and the same iotgw-redis node, submit together against the simulator's real
 * sliding window: 0 429s, each item accepted once, one token fetch. Three accounts on one
 * runtime rather than three child runtimes (three child Node-REDs are too slow on this CI).
 * The control without Redis provokes 429s, so the test can fail.
 */
const assert = require('node:assert/strict');
const { simulatorPerTest, helper, until, collect, DEMO_CREDS, ALL_NODES } = require('../helpers/harness');
const { describeRedis, accountsFlow } = require('../helpers/redis');

const IDS = ['A', 'B', 'C'];

describeRedis('three accounts sharing one gateway account through Redis (simulator, real redis-server)', function (ctx) {
  let sim;
  simulatorPerTest({ terminal: { rateLimitCalls: 3, rateLimitWindowMs: 1500, maxConcurrent: 3 } }, (s) => (sim = s));
  afterEach(() => helper.unload());

  async function submitTogether(redis, perNode) {
    sim.terminal.configure({ acceptUnknownTerminals: true });
    await helper.load(ALL_NODES, accountsFlow(sim, { ids: IDS, redis, redisUrl: ctx.server.url, keyPrefix: `three${Date.now()}:`, timeoutSeconds: 20 }), { gwA: DEMO_CREDS, gwB: DEMO_CREDS, gwC: DEMO_CREDS, r: {} });
    const ok = collect(helper.getNode('ok'));
    const bad = collect(helper.getNode('bad'));
    const caught = collect(helper.getNode('caught'));
    const dest = (i) => `3${String(i).padStart(7, '0')}SKY${(i % 65536).toString(16).toUpperCase().padStart(4, '0')}`;
    let n = 0;
    for (let i = 0; i < perNode; i++) {
      for (const x of IDS) {
        helper.getNode(`mode${x}`).receive({ payload: { DestinationID: dest(n), Mode: 1, WakeupInterval: 2 }, n });
        n++;
      }
    }
    await until(() => ok.length + bad.length + caught.length === IDS.length * perNode, 60000, 'every msg ended');
    return { ok, bad, caught };
  }

  it('with redis: 0 429s, each item accepted once, one token fetch for all three', async function () {
    this.timeout(70000);
    const per = 4;
    const { ok, bad, caught } = await submitTogether(true, per);
    assert.equal(caught.length, 0, caught.map((c) => c.error && c.error.message).join('; '));
    assert.equal(bad.length, 0, 'no item rejected');
    assert.equal(sim.terminal.counters.throttled, 0, 'no 429 from the simulator');
    const calls = sim.server.callsTo('terminal/mode');
    assert.equal(calls.length, 3 * per, 'each item sent once');
    assert.equal(ok.length, 3 * per, 'every msg sent once');
    const dests = ok.map((m) => m.payload[0].DestinationID);
    assert.equal(new Set(dests).size, 3 * per, 'each item accepted once');
    assert.deepEqual(new Set(ok.map((m) => m.n)).size, 3 * per);
    assert.equal(sim.server.callsTo('terminal/auth').length, 1, 'one token fetch for the three accounts');
  });

  it('control: without redis the three accounts provoke 429s (each spends the limit as if alone)', async function () {
    this.timeout(70000);
    await submitTogether(false, 4);
    assert.ok(sim.terminal.counters.throttled > 0, `throttled ${sim.terminal.counters.throttled}`);
    assert.equal(sim.server.callsTo('terminal/auth').length, 3);
  });
});
