'use strict';
/**
 * Two accounts naming the same gateway account and the same iotgw-redis node behave as two
 * Node-RED instances would (each its own ApiClient and in-process gates): with Redis they
 * share one sliding window, one concurrency cap and one token, against the simulator's real
 * sliding window. Without Redis the same flow provokes 429s (the test can fail).
 */
const assert = require('node:assert/strict');
const { simulatorPerTest, helper, until, collect, DEMO_CREDS, ALL_NODES } = require('../helpers/harness');
const { describeRedis, accountsFlow } = require('../helpers/redis');

describeRedis('two accounts sharing one gateway account through Redis (simulator, real redis-server)', function (ctx) {
  let sim;
  simulatorPerTest({ terminal: { rateLimitCalls: 3, rateLimitWindowMs: 1500, maxConcurrent: 3 } }, (s) => (sim = s));
  afterEach(() => helper.unload());

  let prefix;
  beforeEach(() => (prefix = `t${Date.now()}:`));

  async function submitTogether(redis, perNode) {
    sim.terminal.configure({ acceptUnknownTerminals: true });
    await helper.load(ALL_NODES, accountsFlow(sim, { ids: ['A', 'B'], redis, redisUrl: ctx.server.url, keyPrefix: prefix, timeoutSeconds: 10 }), { gwA: DEMO_CREDS, gwB: DEMO_CREDS, r: {} });
    const ok = collect(helper.getNode('ok'));
    const caught = collect(helper.getNode('caught'));
    const dest = (i) => `3${String(i).padStart(7, '0')}SKY${(i % 65536).toString(16).toUpperCase().padStart(4, '0')}`;
    for (let i = 0; i < perNode; i++) {
      helper.getNode('modeA').receive({ payload: { DestinationID: dest(i), Mode: 1, WakeupInterval: 2 }, n: i });
      helper.getNode('modeB').receive({ payload: { DestinationID: dest(perNode + i), Mode: 1, WakeupInterval: 2 }, n: perNode + i });
    }
    await until(() => ok.length + caught.length === 2 * perNode, 30000, 'every msg ended');
    return { ok, caught };
  }

  it('with redis: 0 429s, each item accepted once, one token fetch for both', async function () {
    this.timeout(40000);
    const { ok, caught } = await submitTogether(true, 4);
    assert.equal(caught.length, 0, caught.map((c) => c.error && c.error.message).join('; '));
    assert.equal(sim.terminal.counters.throttled, 0, 'no 429 from the simulator');
    assert.equal(sim.server.callsTo('terminal/mode').length, 8, 'each item sent once');
    assert.equal(new Set(ok.map((m) => m.payload[0].DestinationID)).size, 8);
    assert.equal(sim.server.callsTo('terminal/auth').length, 1, 'one token fetch for both accounts');
  });

  it('the shared token lives in Redis as long as the gateway said (expires_in), not an assumed 10 minutes', async function () {
    this.timeout(40000);
    sim.terminal.configure({ tokenTtlSeconds: 90 });
    const { caught } = await submitTogether(true, 1);
    assert.equal(caught.length, 0, caught.map((c) => c.error && c.error.message).join('; '));
    assert.equal(sim.server.callsTo('terminal/auth').length, 1);
    const Redis = require('ioredis');
    const r = new Redis(ctx.server.url);
    try {
      const keys = (await r.keys(`${prefix}*`)).filter((k) => /:token$/.test(k));
      assert.equal(keys.length, 1, `one shared token key: ${keys.join(', ')}`);
      const pttl = await r.pttl(keys[0]);
      // expires_in 90 s, less the client's own 30 s skew: 60 s.
      assert.ok(pttl > 50_000 && pttl <= 60_000, `token ttl in Redis ${pttl} ms`);
    } finally {
      r.disconnect();
    }
  });

  it('control: without redis the two accounts provoke 429s (each spends the limit as if alone)', async function () {
    this.timeout(40000);
    await submitTogether(false, 4);
    assert.ok(sim.terminal.counters.throttled > 0, `throttled ${sim.terminal.counters.throttled}`);
    assert.equal(sim.server.callsTo('terminal/auth').length, 2);
  });
});
