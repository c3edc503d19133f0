'use strict';
/**
 * Terminal updates on an account shared through a real redis-server (issue 35), and the
 * shared feed's name (issue 34): two Node-RED runtimes (child processes).
 * - the same flow on both: one poller active, the other on "standby"; each update once in all;
 * - flows built separately (other node ids): by default each poller is its own feed, so both
 *   emit every update (the documented default); with the same `feedName` they are one feed:
 *   one emits, each update once in all.
 * The tests share the two runtimes (fleetPerFile): between two tests their flows are emptied;
 * each test has its own simulator and key prefix. After the drain, each test watches the feed's
 * next two polls (each feed's: four when both poll) answered: nothing more may come of them.
 */
const assert = require('node:assert/strict');
const { waitFor, drained, lineCount, recordLines, appendNode, fleetPerFile, fleetFlows, FLEET_SIM } = require('../helpers/child-red');
const { describeRedis } = require('../helpers/redis');

// Terminals of the simulator's fleet, one update each: two full replies of 500 and one of 200
// per feed (the default fleet of 3,000 made 7 replies a feed on a budget of 2 calls a second).
const FLEET = 1200;

function flows(sim, redisUrl, prefix, { id = 'tu1', feedName = '' } = {}) {
  return fleetFlows(sim, { url: redisUrl, keyPrefix: prefix }, [
    { id, z: 'tab1', type: 'iotgw-terminal-updates', gateway: 'gw1', intervalSeconds: 1, startFrom: '-31d', output: 'record', contextStore: '', autoStart: true, fullAt: 500, feedName, wires: [['append1']] },
    appendNode('append1', "env.get('IOTGW_TAG') + ' U ' + msg.topic + '|' + msg.payload.UpdateUTC.replace(' ', 'T')"),
    { id: 'st1', z: 'tab1', type: 'status', scope: [id], wires: [['append2']] },
    appendNode('append2', "env.get('IOTGW_TAG') + ' S ' + String(msg.status.text || '').replace(/\\s+/g, '_')"),
  ]);
}

const read = (file) => recordLines(file).map(([tag, kind, value]) => ({ tag, kind, value }));
const updates = (file) => read(file).filter((r) => r.kind === 'U');

describeRedis('terminal updates fleet: two Node-RED instances, one account, Redis (child Node-RED, real redis-server)', function (ctx) {
  this.timeout(150000);
  const run = fleetPerFile('iotgw-tufleet-', () => {}, { simOptions: { ...FLEET_SIM, fleet: { size: FLEET } } });

  /** A runs `flowA`; once it emits, B runs `flowB`; both drained. Returns what each emitted. */
  async function twoInstances(flowA, flowB, { standby }) {
    const file = run.fleet.recordsFile;
    const a = await run.fleet.running('A');
    await a.deploy(flowA);
    await waitFor(() => updates(file).length > 0, 60000, 'A to start polling');
    const b = await run.fleet.running('B');
    await b.deploy(flowB);
    if (standby) await waitFor(() => read(file).some((r) => r.tag === 'B' && r.kind === 'S' && r.value.startsWith('standby')), 60000, 'B to show standby');
    const everyUpdate = standby ? () => new Set(updates(file).map((r) => r.value)).size >= FLEET : () => ['A', 'B'].every((t) => updates(file).filter((r) => r.tag === t).length >= FLEET);
    const enough = () => lineCount(file) >= (standby ? FLEET : 2 * FLEET) && everyUpdate();
    // Then two more polls of each feed polled (one feed when B stands by, two when each polls its own).
    const polls = { sim: run.sim, route: 'terminal/terminal-updates', count: standby ? 2 : 4 };
    const all = await drained(enough, () => updates(file), { ms: 120000, what: 'every update', polls });
    return { all, byA: all.filter((r) => r.tag === 'A'), byB: all.filter((r) => r.tag === 'B') };
  }

  it('the same flow on both: one poller active, the other on "standby"; each update once in all', async function () {
    const prefix = `tufleet${Date.now()}:`;
    const f = flows(run.sim, ctx.server.url, prefix);
    const { all, byB } = await twoInstances(f, f, { standby: true });
    assert.equal(new Set(all.map((r) => r.value)).size, FLEET, 'every terminal');
    assert.equal(all.length, FLEET, `each update once in all (${all.length} msgs)`);
    assert.equal(byB.length, 0, 'B stood by while A was active');
  });

  it('flows built separately share nothing by default: both pollers emit every update', async function () {
    const prefix = `tusep${Date.now()}:`;
    const { byA, byB } = await twoInstances(flows(run.sim, ctx.server.url, prefix, { id: 'tuA' }), flows(run.sim, ctx.server.url, prefix, { id: 'tuB' }), { standby: false });
    assert.equal(new Set(byA.map((r) => r.value)).size, FLEET);
    assert.equal(new Set(byB.map((r) => r.value)).size, FLEET, 'the default feed is the node id: B polls a feed of its own');
  });

  it('flows built separately with the same feedName: one feed, one emits, each update once in all', async function () {
    const prefix = `tuname${Date.now()}:`;
    const { all, byB } = await twoInstances(
      flows(run.sim, ctx.server.url, prefix, { id: 'tuA', feedName: 'fleet-updates' }),
      flows(run.sim, ctx.server.url, prefix, { id: 'tuB', feedName: 'fleet-updates' }),
      { standby: true },
    );
    assert.equal(new Set(all.map((r) => r.value)).size, FLEET, 'every terminal');
    assert.equal(all.length, FLEET, `each update once in all (${all.length} msgs)`);
    assert.equal(byB.length, 0, 'B stood by: the same shared feed');
  });

  it('two pollers of one Node-RED naming the same feed: one is refused (an error naming the other), the other emits each update once', async function () {
    const prefix = `tuclash${Date.now()}:`;
    const file = run.fleet.recordsFile;
    const one = (id, out) => ({ id, z: 'tab1', type: 'iotgw-terminal-updates', gateway: 'gw1', intervalSeconds: 1, startFrom: '-31d', output: 'record', contextStore: '', autoStart: true, fullAt: 500, feedName: 'same', wires: [[out]] });
    const f = fleetFlows(run.sim, { url: ctx.server.url, keyPrefix: prefix }, [
      one('tuA', 'appendA'),
      one('tuB', 'appendB'),
      appendNode('appendA', "'A U ' + msg.topic + '|' + msg.payload.UpdateUTC.replace(' ', 'T')"),
      appendNode('appendB', "'B U ' + msg.topic + '|' + msg.payload.UpdateUTC.replace(' ', 'T')"),
    ]);
    const red = await run.fleet.running('A');
    await red.deploy(f);
    // If it times out: how far it got, from which node, and what the runtime said (a loaded CI run once stalled here).
    const detail = () => {
      const got = updates(file);
      return `${new Set(got.map((r) => r.value)).size} of ${FLEET} terminals (${got.length} msgs: A ${got.filter((r) => r.tag === 'A').length}, B ${got.filter((r) => r.tag === 'B').length}); ${red.lastLines()}`;
    };
    const polls = { sim: run.sim, route: 'terminal/terminal-updates', count: 2 };
    const all = await drained(() => lineCount(file) >= FLEET && new Set(updates(file).map((r) => r.value)).size >= FLEET, () => updates(file), { ms: 120000, what: 'every update', polls, detail });
    assert.equal(all.length, FLEET, 'each update once');
    const emitter = all[0].tag;
    assert.ok(all.every((r) => r.tag === emitter), 'one node emitted');
    const other = emitter === 'A' ? 'tuB' : 'tuA';
    assert.match(red.output, new RegExp(`${other}.*the feed terminal-updates-same is already read by node tu${emitter}`), 'the other is refused, with one error naming the node that reads the feed');
  });
});
