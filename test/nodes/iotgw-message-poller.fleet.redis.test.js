'use strict';
/**
 * Issue 19 for the message poller: two Node-RED runtimes (child processes) running the same
 * flow, one gateway account shared through a real redis-server, against the simulator's
 * strict from-mobile feed. One poller is active, the other shows "standby"; every message
 * is emitted once in all (the lease and the mark come from the account, not the node).
 */
const assert = require('node:assert/strict');
const { messagePollerNode } = require('../helpers/flows');
const { waitFor, drained, recordLines, appendNode, fleetPerTest, fleetFlows } = require('../helpers/child-red');
const { describeRedis } = require('../helpers/redis');

const COUNT = 1000;

function flows(sim, redisUrl, prefix) {
  return fleetFlows(sim, { url: redisUrl, keyPrefix: prefix }, [
    messagePollerNode({ id: 'mp1', z: 'tab1', gateway: 'gw1', intervalSeconds: 1, fullAt: 100, includeRaw: false, wires: [['append1']] }),
    appendNode('append1', "env.get('IOTGW_TAG') + ' M ' + String(msg.payload.ID)"),
    { id: 'st1', z: 'tab1', type: 'status', scope: ['mp1'], wires: [['append2']] },
    appendNode('append2', "env.get('IOTGW_TAG') + ' S ' + String(msg.status.text || '').replace(/\\s+/g, '_')"),
  ]);
}

const read = (file) => recordLines(file).map(([tag, kind, value]) => ({ tag, kind, value }));
const messages = (file) => read(file).filter((r) => r.kind === 'M');

describeRedis('message poller fleet: two Node-RED instances, one account, Redis (child Node-RED, real redis-server)', function (ctx) {
  this.timeout(120000);
  const run = fleetPerTest('iotgw-mfleet-', (sim) => sim.terminal.mobile.seed({ count: COUNT, perSecond: 10, startSec: Math.floor(Date.now() / 1000) - 600 }));

  it('one poller active, the other on "standby": each message emitted once in all', async function () {
    const { sim, fleet } = run;
    const recordsFile = fleet.recordsFile;
    const startRed = (tag) => fleet.start(tag);
    const ids = sim.terminal.mobile.fromMobile.items.map((m) => String(m.ID));
    assert.equal(ids.length, COUNT);
    const prefix = `mfleet${Date.now()}:`;
    const a = await startRed('A');
    await a.deploy(flows(sim, ctx.server.url, prefix));
    await waitFor(() => messages(recordsFile).length > 0, 30000, 'A to start polling');
    const b = await startRed('B');
    await b.deploy(flows(sim, ctx.server.url, prefix));
    await waitFor(() => read(recordsFile).some((r) => r.tag === 'B' && r.kind === 'S' && r.value.startsWith('standby')), 30000, 'B to show standby');
    // A few more intervals after the last: a second active poller would emit them all again.
    const all = await drained(() => new Set(messages(recordsFile).map((r) => r.value)).size >= COUNT, () => messages(recordsFile), { what: 'every message', settleMs: 3000 });
    const seen = new Set(all.map((r) => r.value));
    for (const id of ids) assert.ok(seen.has(id), `message ${id} emitted`);
    assert.equal(all.length, COUNT, `each message once in all (${all.length} msgs for ${COUNT} messages)`);
    assert.equal(all.filter((r) => r.tag === 'B').length, 0, 'B stood by while A was active');
    assert.equal(sim.terminal.counters.throttled, 0, 'no 429: one shared budget');
  });
});
