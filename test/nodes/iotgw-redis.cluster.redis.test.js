'use strict';
/**
 * Issue 28 with real parts: a Redis Cluster (three masters with a replica each,
 * `redis-cli --cluster create ... --cluster-replicas 1`) on loopback; two gateway accounts
 * (two simulators: two base URLs) whose keys land on different masters, both naming one
 * `iotgw-redis` node in cluster mode. A burst of 2,000 msgs on account A while the master
 * of A's slot is SIGKILLed: each item accepted once, 0 x 429, and account B, whose master
 * lives on, is unaffected.
 */
const assert = require('node:assert/strict');
const { helper, until, collect, startSimulator, DEMO_CREDS, ALL_NODES } = require('../helpers/harness');
const { describeRedis } = require('../helpers/redis');
const { gatewaySettings, migrateGatewayConfig } = require('../../dist/nodes/iotgw-gateway');
const { accountHash } = require('../../dist/lib/account/redis/keys');
const { keySlot } = require('../../dist/lib/account/redis/connection');

const BURST = 2000;
const TERMINAL = { rateLimitCalls: 3, rateLimitWindowMs: 1500, maxConcurrent: 3 };

function gw(id, sim) {
  return { id, type: 'iotgw-gateway', baseUrl: sim.url, apiVersion: '1.0', rateLimitCalls: 3, rateLimitWindowSeconds: 1.5, maxConcurrent: 3, maxBatchSize: 100, timeoutSeconds: 20, redis: 'r' };
}

const slotOf = (sim) => keySlot(`{${accountHash({ baseUrl: gatewaySettings(migrateGatewayConfig(gw('x', sim))).baseUrl, clientId: DEMO_CREDS.clientId })}}`);

describeRedis('iotgw-redis cluster mode: a master of one account dies during a burst (real redis-server cluster)', function (ctx) {
  this.timeout(180000);
  const sims = [];

  after(async () => {
    await helper.unload();
    for (const s of sims) await s.close();
  });

  it('each item accepted once, 0 x 429, the other account unaffected', async function () {
    // Two accounts on different masters: a second simulator (another base URL) until its slot's master differs.
    const simA = await startSimulator({ terminal: TERMINAL });
    sims.push(simA);
    let simB;
    for (let i = 0; i < 20 && !simB; i++) {
      const s = await startSimulator({ terminal: TERMINAL });
      sims.push(s);
      if (ctx.cluster.masterOfSlot(slotOf(s)) !== ctx.cluster.masterOfSlot(slotOf(simA))) simB = s;
    }
    assert.ok(simB, 'found two accounts on different masters');
    for (const s of [simA, simB]) s.terminal.configure({ acceptUnknownTerminals: true });
    const slotA = slotOf(simA);
    const masterB = ctx.cluster.masterOfSlot(slotOf(simB));

    await helper.load(
      ALL_NODES,
      [
        { id: 'flow', type: 'tab', label: 'test' },
        { id: 'r', type: 'iotgw-redis', mode: 'cluster', nodes: ctx.cluster.nodeList, url: 'redis://127.0.0.1:6379/0', keyPrefix: 'cluster:' },
        gw('gwA', simA),
        gw('gwB', simB),
        { id: 'modeA', z: 'flow', type: 'iotgw-terminal-mode', gateway: 'gwA', mode: 0, wakeupInterval: 0, family: 'any', wires: [['okA'], ['badA']] },
        { id: 'modeB', z: 'flow', type: 'iotgw-terminal-mode', gateway: 'gwB', mode: 0, wakeupInterval: 0, family: 'any', wires: [['okB'], ['badB']] },
        { id: 'okA', z: 'flow', type: 'helper' },
        { id: 'badA', z: 'flow', type: 'helper' },
        { id: 'okB', z: 'flow', type: 'helper' },
        { id: 'badB', z: 'flow', type: 'helper' },
        { id: 'catcher', z: 'flow', type: 'catch', scope: null, uncaught: false, wires: [['caught']] },
        { id: 'caught', z: 'flow', type: 'helper' },
      ],
      { gwA: DEMO_CREDS, gwB: DEMO_CREDS, r: {} },
    );
    const okA = collect(helper.getNode('okA'));
    const okB = collect(helper.getNode('okB'));
    const badA = collect(helper.getNode('badA'));
    const badB = collect(helper.getNode('badB'));
    const caught = collect(helper.getNode('caught'));
    const dest = (i) => `3${String(i).padStart(7, '0')}SKY${(i % 65536).toString(16).toUpperCase().padStart(4, '0')}`;
    const accepted = (list) => list.flatMap((m) => m.payload.map((p) => p.DestinationID));
    const B_MSGS = 200;
    for (let i = 0; i < BURST; i++) helper.getNode('modeA').receive({ payload: { DestinationID: dest(i), Mode: 1, WakeupInterval: 2 }, n: i });
    for (let i = 0; i < B_MSGS; i++) helper.getNode('modeB').receive({ payload: { DestinationID: dest(100000 + i), Mode: 1, WakeupInterval: 2 }, n: i });
    await until(() => accepted(okA).length >= 300, 60000, 'the burst to be under way');
    const atKill = accepted(okA).length;
    const oldMaster = ctx.cluster.masterOfSlot(slotA);
    const { failoverMs } = await ctx.cluster.killMasterOf(slotA);
    // Each msg holds one item and ends once: accepted (ok), rejected (bad) or caught.
    await until(() => okA.length + okB.length + badA.length + badB.length + caught.length >= BURST + B_MSGS, 150000, 'every msg to end');
    const acceptedA = accepted(okA);
    const acceptedB = accepted(okB);
    const shared = caught.filter((c) => c.error && c.error.code === 'SHARED_STATE');
    console.log(`      [figures] ${JSON.stringify({ atKill, oldMaster, newMaster: ctx.cluster.masterOfSlot(slotA), masterB, failoverMs, acceptedA: acceptedA.length, uniqueA: new Set(acceptedA).size, acceptedB: acceptedB.length, sharedStateFailures: shared.length, otherFailures: caught.length - shared.length, throttledA: simA.terminal.counters.throttled, throttledB: simB.terminal.counters.throttled })}`);
    assert.ok(atKill < BURST, 'the kill came during the burst');
    assert.notEqual(ctx.cluster.masterOfSlot(slotA), oldMaster, "A's slot moved to its replica");
    assert.equal(ctx.cluster.masterOfSlot(slotOf(simB)), masterB, "B's master lived on");
    assert.equal(new Set(acceptedA).size, acceptedA.length, 'each item of A accepted once');
    assert.equal(caught.length - shared.length, 0, `only SHARED_STATE failures: ${caught.map((c) => c.error && c.error.message).join('; ').slice(0, 500)}`);
    assert.equal(badA.length + badB.length, 0, 'no item rejected');
    assert.equal(simA.terminal.counters.throttled, 0, 'no 429 for A through the failover');
    assert.equal(simB.terminal.counters.throttled, 0, 'no 429 for B');
    assert.equal(acceptedB.length, B_MSGS, 'B unaffected: every item accepted');
    assert.equal(new Set(acceptedB).size, B_MSGS, 'B: each item once');
    assert.equal(caught.filter((c) => c.error && c.error.source && c.error.source.id === 'modeB').length, 0, 'B: no failure');
    // An item in flight through the failover went out once or failed SHARED_STATE: accepted + failed = the burst.
    assert.equal(acceptedA.length + shared.length, BURST, `every item of A accepted once or failed SHARED_STATE (${acceptedA.length} accepted, ${shared.length} failed)`);

  });
}, { cluster: true });
