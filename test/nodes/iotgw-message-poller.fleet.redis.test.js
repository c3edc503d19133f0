'use strict';
/**
 * Issue 19 for the message poller: two Node-RED runtimes (child processes) running the same
 * flow, one gateway account shared through a real redis-server, against the simulator's
 * strict from-mobile feed. One poller is active, the other shows "standby"; every message
 * is emitted once in all (the lease and the mark come from the account, not the node).
 */
const assert = require('node:assert/strict');
const { startSimulator } = require('../../dist/simulator');
const { waitFor, recordLines, childGateway, appendNode, RedFleet } = require('../helpers/child-red');
const { describeRedis } = require('../helpers/redis');

const COUNT = 1000;

function flows(sim, redisUrl, prefix) {
  return [
    { id: 'tab1', type: 'tab', label: 'fleet' },
    { id: 'r', type: 'iotgw-redis', url: redisUrl, keyPrefix: prefix },
    childGateway(sim, { rateLimitCalls: 2, rateLimitWindowSeconds: 1, redis: 'r' }),
    {
      id: 'mp1',
      z: 'tab1',
      type: 'iotgw-message-poller',
      gateway: 'gw1',
      intervalSeconds: 1,
      startFrom: '-1h',
      output: 'record',
      contextStore: '',
      autoStart: true,
      fullAt: 100,
      sinFilter: '',
      mobileFilter: '',
      includeRaw: false,
      wires: [['append1']],
    },
    appendNode('append1', "env.get('IOTGW_TAG') + ' M ' + String(msg.payload.ID)"),
    { id: 'st1', z: 'tab1', type: 'status', scope: ['mp1'], wires: [['append2']] },
    appendNode('append2', "env.get('IOTGW_TAG') + ' S ' + String(msg.status.text || '').replace(/\\s+/g, '_')"),
  ];
}

const read = (file) => recordLines(file).map(([tag, kind, value]) => ({ tag, kind, value }));
const messages = (file) => read(file).filter((r) => r.kind === 'M');

describeRedis('message poller fleet: two Node-RED instances, one account, Redis (child Node-RED, real redis-server)', function (ctx) {
  this.timeout(120000);
  let sim;
  let fleet;
  let recordsFile;

  beforeEach(async function () {
    sim = await startSimulator({ terminal: { rateLimitCalls: 2, rateLimitWindowMs: 1000, maxConcurrent: 3 } });
    const now = Math.floor(Date.now() / 1000);
    sim.terminal.mobile.seed({ count: COUNT, perSecond: 10, startSec: now - 600 });
    fleet = new RedFleet('iotgw-mfleet-');
    recordsFile = fleet.recordsFile;
  });

  afterEach(async function () {
    await fleet.close();
    await sim.close();
  });

  const startRed = (tag) => fleet.start(tag);

  it('one poller active, the other on "standby": each message emitted once in all', async function () {
    const ids = sim.terminal.mobile.fromMobile.items.map((m) => String(m.ID));
    assert.equal(ids.length, COUNT);
    const prefix = `mfleet${Date.now()}:`;
    const a = await startRed('A');
    await a.deploy(flows(sim, ctx.server.url, prefix));
    await waitFor(() => messages(recordsFile).length > 0, 30000, 'A to start polling');
    const b = await startRed('B');
    await b.deploy(flows(sim, ctx.server.url, prefix));
    await waitFor(() => read(recordsFile).some((r) => r.tag === 'B' && r.kind === 'S' && r.value.startsWith('standby')), 30000, 'B to show standby');
    await waitFor(() => new Set(messages(recordsFile).map((r) => r.value)).size >= COUNT, 60000, 'every message');
    // A few more intervals: a second active poller would emit them all again.
    await new Promise((r) => setTimeout(r, 3000));
    const all = messages(recordsFile);
    const seen = new Set(all.map((r) => r.value));
    for (const id of ids) assert.ok(seen.has(id), `message ${id} emitted`);
    assert.equal(all.length, COUNT, `each message once in all (${all.length} msgs for ${COUNT} messages)`);
    assert.equal(all.filter((r) => r.tag === 'B').length, 0, 'B stood by while A was active');
    assert.equal(sim.terminal.counters.throttled, 0, 'no 429: one shared budget');
  });
});
