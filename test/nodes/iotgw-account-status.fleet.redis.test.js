'use strict';
/**
 * The account's figures of a fleet (issue 27) with real parts: two Node-RED runtimes (child
 * processes, this package installed) running the same flow, one gateway account shared
 * through a real redis-server, against the simulator. Each instance makes two SEND calls;
 * each instance's `GET /iotgw/accounts` (the sidebar's admin route) and its
 * iotgw-account-status node report the fleet's `used` (4, not its own 2), `shared: "redis"`,
 * and the status poller active on one instance and on `standby` on the other.
 */
const assert = require('node:assert/strict');
const { startSimulator } = require('../../dist/simulator');
const { waitFor, recordLines, childGateway, statusPoller, appendNode, RedFleet } = require('../helpers/child-red');
const { describeRedis } = require('../helpers/redis');

function flows(sim, redisUrl) {
  return [
    { id: 'tab1', type: 'tab', label: 'fleet' },
    { id: 'r', type: 'iotgw-redis', url: redisUrl, keyPrefix: 'figures:' },
    childGateway(sim, { name: 'fleet account', rateLimitCalls: 10, rateLimitWindowSeconds: 60, maxBatchSize: 1, redis: 'r' }),
    { ...statusPoller('sink'), name: 'status feed', intervalSeconds: 2, startFrom: '' },
    { id: 'sink', z: 'tab1', type: 'function', func: 'return null;', outputs: 0, wires: [] },
    // Two SEND calls per instance, once, at deploy.
    { id: 'go', z: 'tab1', type: 'inject', once: true, onceDelay: 0.2, repeat: '', topic: '', payload: '', payloadType: 'date', wires: [['two']] },
    {
      id: 'two',
      z: 'tab1',
      type: 'function',
      func: "node.send({payload: {DestinationID: '01000001SKYA001', Mode: 0}});\nnode.send({payload: {DestinationID: '01000002SKYA002', Mode: 0}});\nreturn null;",
      outputs: 1,
      wires: [['mode']],
    },
    { id: 'mode', z: 'tab1', type: 'iotgw-terminal-mode', gateway: 'gw1', mode: 0, wakeupInterval: 0, family: 'any', lingerMs: 0, wires: [[], []] },
    // The status node: its msgs reach the records file as "<tag> <json>".
    { id: 'status', z: 'tab1', type: 'iotgw-account-status', account: 'gw1', intervalSeconds: 1, wires: [['rec']] },
    appendNode('rec', "env.get('IOTGW_TAG') + ' ' + JSON.stringify(msg.payload)"),
  ];
}

async function accounts(red) {
  const r = await fetch(`${red.url}/iotgw/accounts`, { headers: { accept: 'application/json' } });
  assert.equal(r.status, 200);
  return r.json();
}

describeRedis('account figures of a fleet: two Node-RED instances, one account, Redis (child Node-RED, real redis-server)', function (ctx) {
  this.timeout(120000);
  let sim;
  let fleet;

  beforeEach(async function () {
    sim = await startSimulator({ terminal: { rateLimitCalls: 10, rateLimitWindowMs: 60000, maxConcurrent: 3 } });
    fleet = new RedFleet('iotgw-figures-');
  });

  afterEach(async function () {
    await fleet.close();
    await sim.close();
  });

  it("each instance reports the fleet's used, shared: redis, and the standby poller as standby", async function () {
    const a = await fleet.start('A');
    await a.deploy(flows(sim, ctx.server.url));
    await waitFor(() => sim.server.callsTo('terminal/mode').length === 2, 30000, "A's two calls");
    const b = await fleet.start('B');
    await b.deploy(flows(sim, ctx.server.url));
    await waitFor(() => sim.server.callsTo('terminal/mode').length === 4, 30000, "B's two calls");

    let figs;
    const t0 = Date.now();
    for (;;) {
      figs = { A: (await accounts(a))[0], B: (await accounts(b))[0] };
      const states = [figs.A.feeds[0]?.state, figs.B.feeds[0]?.state].sort().join(',');
      if (states === 'active,standby' && figs.A.groups.SEND.used === 4 && figs.B.groups.SEND.used === 4) break;
      if (Date.now() - t0 > 30000) assert.fail(`figures did not settle: ${JSON.stringify(figs)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    for (const f of [figs.A, figs.B]) {
      assert.equal(f.account, 'fleet account');
      assert.equal(f.shared, 'redis');
      assert.equal(f.groups.SEND.limit, 10);
      assert.equal(f.groups.SEND.used, 4, "the fleet's calls, not this instance's 2");
      assert.equal(f.feeds.length, 1);
      assert.equal(f.feeds[0].type, 'status');
      assert.equal(f.feeds[0].node, 'status feed');
      const text = JSON.stringify(f);
      for (const secret of ['demo-secret', ctx.server.url]) assert.ok(!text.includes(secret), `${secret} in ${text}`);
    }
    const active = figs.A.feeds[0].state === 'active' ? figs.A : figs.B;
    assert.ok(active.feeds[0].mark, 'the active poller has a mark');
    // The status node says the same in its msgs.
    await waitFor(
      () => recordLines(fleet.recordsFile).filter(([tag]) => tag === 'B').some(([, ...rest]) => JSON.parse(rest.join(' ')).groups.SEND.used === 4),
      15000,
      "B's status node to report the fleet's used",
    );
  });
});
