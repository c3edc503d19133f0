'use strict';
/**
 * The message poller against a real Node-RED child process, stopped in the middle of
 * draining 2,000 from-mobile messages (600 of them in one second):
 * - full redeploy: each message emitted once;
 * - SIGKILL, then start again: none skipped, at most one reply (500) repeated, once.
 * The stop comes while the simulator holds the second poll open (arranged, not timed).
 * The mark lives in its default place (a file under the user directory, written with
 * every reply). Messages reach a file through a synchronous write.
 */
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { holdCall, held, drained, recordLines, childGateway, appendNode, fleetPerTest } = require('../helpers/child-red');

const utc = (sec) => new Date(sec * 1000).toISOString().slice(0, 19).replace('T', ' ');

function flows(sim, startFrom) {
  return [
    { id: 'tab1', type: 'tab', label: 'message poller restart test' },
    childGateway(sim),
    { id: 'mp1', z: 'tab1', type: 'iotgw-message-poller', gateway: 'gw1', intervalSeconds: 1, startFrom, output: 'record', contextStore: '', autoStart: true, wires: [['append1']] },
    appendNode('append1', 'String(msg.payload.ID)'),
  ];
}

const lines = (file) => recordLines(file).map((l) => l[0]);

describe('reliability: the message poller across redeploy and SIGKILL (child Node-RED)', function () {
  this.timeout(120000);
  let sim;
  let red;
  let file;
  let reachable;
  let startFrom;
  // The stop is arranged by the simulator: it holds the second poll open (holdCall) until the runtime is redeployed or killed.
  const run = fleetPerTest('iotgw-mp-', (s) => {
    sim = s;
    const base = Math.floor(Date.now() / 1000) - 600;
    sim.terminal.mobile.seed({ count: 1400, perSecond: 10, startSec: base });
    sim.terminal.mobile.seed({ count: 600, perSecond: 600, startSec: base + 140 });
    const ids = sim.terminal.mobile.fromMobile.items.map((m) => String(m.ID));
    const crowded = sim.terminal.mobile.fromMobile.items.filter((m) => m.sec === base + 140).map((m) => String(m.ID));
    // The real service serves at most 500 of one second: the rest of it cannot be fetched.
    const unreachable = new Set(crowded.slice(500));
    reachable = ids.filter((id) => !unreachable.has(id));
    startFrom = utc(base);
  }, { simOptions: { terminal: { rateLimitCalls: 0, maxConcurrent: 0 } }, fleetOptions: { defaultContext: false } });

  beforeEach(async function () {
    file = run.fleet.recordsFile;
    red = await run.fleet.start();
    assert.ok((await red.nodeTypes()).includes('iotgw-message-poller'));
  });

  /** Every reachable message in, then one more poll: what came, how often, what is missing or repeated. */
  async function drainedTally() {
    const got = await drained(() => new Set(lines(file)).size >= reachable.length, () => lines(file));
    const counts = new Map();
    for (const id of got) counts.set(id, (counts.get(id) ?? 0) + 1);
    return { got, counts, missing: reachable.filter((id) => !counts.has(id)), repeated: [...counts].filter(([, c]) => c > 1) };
  }

  it('full redeploy in the middle of the drain: each message emitted once', async function () {
    const hold = holdCall(sim, 'terminal/re_messages', 1);
    await red.deploy(flows(sim, startFrom));
    await held(hold, 'the second poll, held');
    await red.deploy(flows(sim, startFrom));
    const atRedeploy = lines(file).length;
    const r = await drainedTally();
    console.log(`      [figures] redeploy at ${atRedeploy}: ${r.got.length} emitted, ${r.missing.length} missing, ${r.repeated.length} repeated`);
    assert.ok(atRedeploy < reachable.length, 'the redeploy came in the middle of the drain');
    assert.deepEqual(r.missing, []);
    assert.deepEqual(r.repeated, []);
    assert.equal(r.got.length, reachable.length);
    assert.ok(fs.readdirSync(path.join(red.userDir, 'iotgw-feeds')).length >= 1, 'the mark is a file under the user directory');
  });

  it('SIGKILL in the middle of the drain, then start again: none skipped, at most one reply repeated, once', async function () {
    const hold = holdCall(sim, 'terminal/re_messages', 1);
    await red.deploy(flows(sim, startFrom));
    await held(hold, 'the second poll, held');
    await red.kill('SIGKILL');
    const atKill = lines(file).length;
    assert.ok(atKill < reachable.length, 'killed in the middle of the drain');
    await red.start();
    const r = await drainedTally();
    console.log(`      [figures] SIGKILL at ${atKill}: ${r.got.length} emitted, ${r.missing.length} missing, ${r.repeated.length} repeated`);
    assert.deepEqual(r.missing, [], 'none skipped');
    assert.ok(r.repeated.length <= 500, `${r.repeated.length} repeated: at most the one reply in flight`);
    assert.ok(r.repeated.every(([, c]) => c === 2), 'a message repeats at most once');
    assert.equal(r.got.length, reachable.length + r.repeated.length);
  });
});
