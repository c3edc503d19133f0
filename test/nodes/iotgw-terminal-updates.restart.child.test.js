'use strict';
/**
 * The terminal updates node (issue 35) against a real Node-RED child process with Node-RED's
 * default settings, draining the simulator's terminal changes feed (a fleet of 12,000
 * terminals over 30 days, then a crowded second of 700 changes, 500 a reply), stopped in the
 * middle of the drain:
 * - full redeploy: each (PrimeID, UpdateUTC) once;
 * - SIGKILL, then start again: none skipped, at most one reply (500) again, once.
 * The stop is arranged by the simulator, not by timing: the 8th request is held until the
 * test has redeployed or killed, so the drain is always in the middle. The mark lives in its
 * default place (a file under the user directory). Records reach a file through a synchronous write.
 * The tests share the runtimes (RedFleet.running: a test that needs another tag, or follows a
 * failed one, starts its own); between two tests the flow is emptied, the mark removed.
 */
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { waitFor, drained, lineCount, recordLines, childGateway, appendNode, fleetPerFile } = require('../helpers/child-red');

const FLEET = 12000;
const REPLY = 500;
const HELD = 8;

/**
 * The flow: the node and a function that appends `PrimeID|UpdateUTC`. With `stopAt` (a
 * PrimeID) and IOTGW_TAG "block", the function writes STOP after that record and then holds
 * Node-RED's event loop (`hold`: Atomics.wait, blocked without a core spinning, its coverage
 * written first): the rest of its reply is not emitted and its mark not written until the test
 * kills the process.
 */
function flows(sim, stopAt) {
  const line = "msg.topic + '|' + msg.payload.UpdateUTC.replace(' ', 'T')";
  const append = stopAt
    ? {
        id: 'append1',
        z: 'tab1',
        type: 'function',
        func: `global.get('append')(${line} + '\\n');\nif (msg.topic === ${JSON.stringify(stopAt)} && env.get('IOTGW_TAG') === 'block') { global.get('append')('STOP\\n'); global.get('hold')(120000); }\nreturn null;`,
        outputs: 0,
        wires: [],
      }
    : appendNode('append1', line);
  return [
    { id: 'tab1', type: 'tab', label: 'terminal updates restart test' },
    childGateway(sim),
    { id: 'tu1', z: 'tab1', type: 'iotgw-terminal-updates', gateway: 'gw1', intervalSeconds: 1, startFrom: '-31d', output: 'record', contextStore: '', autoStart: true, wires: [['append1']] },
    append,
  ];
}

const lines = (file) => recordLines(file).map((l) => l[0]).filter((l) => l !== 'STOP');

describe('reliability: terminal updates across redeploy and SIGKILL (child Node-RED)', function () {
  this.timeout(180000);
  // The held request (HELD): whether it came, its release(), and what the replies before it served.
  const hold = { held: false, release: undefined, served: new Set() };
  let sim;
  let red;
  let file;
  let reachable;

  // Let go first after each test: the fleet's reset and the simulator's close come after it.
  afterEach(() => hold.release?.());
  const run = fleetPerFile('iotgw-tu-', seed, { simOptions: { terminal: { rateLimitCalls: 0, maxConcurrent: 0 }, fleet: { size: FLEET } } });

  function seed(s) {
    sim = s;
    const crowdSec = Math.floor(Date.now() / 1000) - 30;
    const crowd = sim.terminal.fleet.crowd(700, crowdSec, 0);
    // Every terminal once at its current UpdateUTC; of the crowded second only a reply's worth can be fetched.
    const unreachable = new Set(crowd.slice(REPLY));
    const key = (id) => `${id}|${sim.terminal.fleet.get(id).updateSec}`;
    reachable = new Set(Array.from({ length: FLEET }, (_, i) => sim.terminal.fleet.primeId(i)).filter((id) => !unreachable.has(id)).map(key));
    // The request HELD waits for release(): the test stops Node-RED while the drain is surely in its middle.
    const route = sim.server.routes.find((r) => r.name === 'terminal/terminal-updates');
    const real = route.handler;
    let n = 0;
    const gate = new Promise((r) => (hold.release = r));
    hold.held = false;
    hold.served = new Set();
    route.handler = async (req) => {
      if (++n === HELD) {
        hold.held = true;
        await gate;
      }
      const reply = await real(req);
      // What the replies before the held one served (the node emits all of it before it asks again).
      if (n < HELD) for (const t of reply.body?.Terminals ?? []) hold.served.add(`${t.PrimeID}|${t.UpdateUTC.replace(' ', 'T')}`);
      return reply;
    };
  }

  async function startRed(tag) {
    file = run.fleet.recordsFile;
    red = await run.fleet.running(tag);
    assert.ok((await red.nodeTypes()).includes('iotgw-terminal-updates'));
  }

  /** A line's key as `reachable` has it: PrimeID|seconds. */
  const keyOf = (line) => {
    const [id, t] = line.split('|');
    return `${id}|${Date.parse(`${t}Z`) / 1000}`;
  };

  /** Everything reachable in, then one more poll: how often each came, what is missing. */
  async function drainedTally() {
    const got = await drained(() => lineCount(file) >= reachable.size && new Set(lines(file)).size >= reachable.size, () => lines(file).map(keyOf), { ms: 120000 });
    const counts = new Map();
    for (const k of got) counts.set(k, (counts.get(k) ?? 0) + 1);
    return { got, counts, missing: [...reachable].filter((k) => !counts.has(k)), repeated: [...counts].filter(([, c]) => c > 1), strange: [...counts.keys()].filter((k) => !reachable.has(k)) };
  }

  it('SIGKILL in the middle of a reply (emitted in part, its mark not written): that reply again, nothing skipped, each at most twice', async function () {
    hold.release(); // no held request: the function node holds Node-RED in the middle of the 6th reply
    const order = [...sim.terminal.fleet.updatesFrom(0)].map((s) => s.id);
    const stopAt = order[5 * REPLY + 10];
    await startRed('block');
    await red.deploy(flows(sim, stopAt));
    // If it times out: how far the drain got and what the runtime said (a loaded CI run once stalled here).
    const detail = () => `${lines(file).length} of ${5 * REPLY + 11} records before the stop, ${sim.server.callsTo('terminal/terminal-updates').length} requests; ${red.lastLines()}`;
    await waitFor(() => recordLines(file).some((l) => l[0] === 'STOP'), 60000, 'the function to hold Node-RED in the middle of a reply', detail);
    await red.kill('SIGKILL', { blocked: true });
    const atKill = lines(file).length;
    const mark = JSON.parse(fs.readFileSync(path.join(red.userDir, 'iotgw-feeds', 'terminal-updates-tu1.json'), 'utf8'));
    await red.start(); // without IOTGW_TAG: the same flow no longer holds
    red.tag = undefined; // (the next test may run on it)
    const r = await drainedTally();
    console.log(`      [figures] SIGKILL mid-reply at ${atKill} (mark ${mark.fromUtc}): ${r.got.length} emitted, ${r.missing.length} missing, ${r.repeated.length} repeated`);
    assert.deepEqual(r.missing, [], 'none skipped');
    assert.ok(r.repeated.length >= 1, 'the part of the reply emitted before the kill comes again (its mark was not written)');
    assert.ok(r.repeated.length <= REPLY, `${r.repeated.length} repeated: at most the one reply in flight`);
    assert.ok(r.repeated.every(([, c]) => c === 2), 'an update repeats at most once');
    assert.deepEqual(r.strange, []);
  });
  it('full redeploy in the middle of the drain: each update emitted once', async function () {
    await startRed();
    await red.deploy(flows(sim));
    await waitFor(() => hold.held && new Set(lines(file)).size >= hold.served.size, 60000, 'the drain up to the held request');
    await red.deploy(flows(sim));
    const atRedeploy = lines(file).length;
    hold.release();
    const r = await drainedTally();
    console.log(`      [figures] redeploy at ${atRedeploy}: ${r.got.length} emitted, ${r.missing.length} missing, ${r.repeated.length} repeated`);
    assert.ok(atRedeploy < reachable.size, 'the redeploy came in the middle of the drain');
    assert.deepEqual(r.missing, []);
    assert.deepEqual(r.repeated, []);
    assert.deepEqual(r.strange, [], 'nothing but the fleet');
    assert.ok(fs.existsSync(path.join(red.userDir, 'iotgw-feeds', 'terminal-updates-tu1.json')), 'the mark is a file under the user directory');
  });

  it('SIGKILL in the middle of the drain, then start again: none skipped, at most one reply again, once', async function () {
    await startRed();
    await red.deploy(flows(sim));
    await waitFor(() => hold.held && new Set(lines(file)).size >= hold.served.size, 60000, 'the drain up to the held request');
    await red.kill('SIGKILL');
    const atKill = lines(file).length;
    assert.ok(atKill < reachable.size, 'killed in the middle of the drain');
    hold.release();
    await red.start();
    const r = await drainedTally();
    console.log(`      [figures] SIGKILL at ${atKill}: ${r.got.length} emitted, ${r.missing.length} missing, ${r.repeated.length} repeated`);
    assert.deepEqual(r.missing, [], 'none skipped');
    assert.ok(r.repeated.length <= REPLY, `${r.repeated.length} repeated: at most the one reply in flight`);
    assert.ok(r.repeated.every(([, c]) => c === 2), 'an update repeats at most once');
    assert.deepEqual(r.strange, []);
  });

});
