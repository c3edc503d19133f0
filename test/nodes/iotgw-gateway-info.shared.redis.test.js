'use strict';
/**
 * The INFO throttle group in the shared limiter (issue 35): two accounts naming the same
 * gateway account and one iotgw-redis node, each with an iotgw-gateway-info node, count their
 * info/* calls in one Redis window; the simulator's real INFO window then answers no 429.
 * Without Redis the same flow provokes 429s (the test can fail).
 */
const assert = require('node:assert/strict');
const { simulatorPerTest, helper, DEMO_CREDS, ALL_NODES } = require('../helpers/harness');
const { describeRedis, accountsFlow, sendTogether } = require('../helpers/redis');

describeRedis('the INFO group shared through Redis (simulator, real redis-server)', function (ctx) {
  let sim;
  simulatorPerTest({ terminal: { rateLimitCalls: 3, rateLimitWindowMs: 1500, maxConcurrent: 3 } }, (s) => (sim = s));
  afterEach(() => helper.unload());

  async function askTogether(redis, perNode) {
    const prefix = `info${Date.now()}:`;
    const flow = accountsFlow(sim, { ids: ['A', 'B'], redis, redisUrl: ctx.server.url, keyPrefix: prefix, timeoutSeconds: 10 });
    for (const x of ['A', 'B']) flow.push({ id: `info${x}`, z: 'flow', type: 'iotgw-gateway-info', gateway: `gw${x}`, what: 'broadcast', wires: [['ok']] });
    await helper.load(ALL_NODES, flow, { gwA: DEMO_CREDS, gwB: DEMO_CREDS, r: {} });
    return sendTogether(['infoA', 'infoB'], perNode, (k) => ({ n: k }));
  }

  it('with redis: both accounts pace info/* in one window, 0 429s', async function () {
    this.timeout(40000);
    const { ok, caught } = await askTogether(true, 4);
    assert.equal(caught.length, 0, caught.map((c) => c.error && c.error.message).join('; '));
    assert.equal(ok.length, 8);
    assert.equal(sim.terminal.counters.throttled, 0, 'no 429 from the simulator');
    assert.equal(sim.server.callsTo('terminal/broadcast-ids').length, 8, 'each call sent once');
  });

  it('without redis: the same flow is throttled by the simulator (the check above can fail)', async function () {
    this.timeout(40000);
    await askTogether(false, 4);
    assert.ok(sim.terminal.counters.throttled > 0, 'two in-process budgets overrun the account');
  });
});
