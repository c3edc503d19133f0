'use strict';
/**
 * Issues 5 and 20: the status poller's mark with Node-RED's DEFAULT settings (no
 * contextStorage: the default context store is memory), kept by the poller's own durable
 * file under the user directory and written with every reply, against a real Node-RED
 * child process stopped in the middle of draining a large backlog from the strict
 * simulator (FromUTC inclusive, 100 records a second, 500 a reply), the stop arranged by the
 * simulator (it holds the 11th poll open until the runtime is redeployed, stopped or killed):
 * - redeploy (full deploy over the admin API): no record lost, none repeated;
 * - clean restart (SIGINT, then start again): no record lost, none repeated;
 * - hard kill (SIGKILL, then start again): no record lost, at most one reply (500) repeated;
 * - a {fromUTC} reset, then a hard kill: the reset position is where the poller resumes.
 * The simulator runs in this process; records go to a file through a synchronous write.
 * The tests share the runtime (RedFleet.running: a test after a failed one starts its own; the
 * stops start it again anyway); between two tests the flow is emptied, the mark removed.
 */
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { waitFor, holdCall, held, drained, backlogMissing, lineCount, recordLines, childGateway, statusPoller, appendNode, fleetPerFile } = require('../helpers/child-red');

// 20 replies of 500 (each reply's last second comes again: 400 new records a reply); the stop
// comes after 4,100 records, so 10 full replies follow it.
const BACKLOG = 8000;
const REPLY = 500;
const HOLD_AFTER = 10; // the simulator holds the 11th poll open: the stop comes in the middle of the drain

function flows(sim) {
  return [
    { id: 'tab1', type: 'tab', label: 'restart test' },
    childGateway(sim),
    statusPoller('append1'),
    appendNode('append1', "msg.topic + ' ' + msg.payload.StatusUTC"),
  ];
}

const readRecords = (file) => recordLines(file).map(([id, day, time]) => ({ id, utc: `${day} ${time}` }));

/** The mark as the poller's own file has it on disk (undefined before the first write). */
function markOnDisk(userDir) {
  const f = path.join(userDir, 'iotgw-feeds', 'status-poller-poller1.json');
  try {
    return JSON.parse(fs.readFileSync(f, 'utf8'));
  } catch {
    return undefined;
  }
}

/** Every backlog ID exactly accounted for: returns {unique, duplicates, missing}. */
function tally(records, sim) {
  const seen = new Map();
  for (const r of records) seen.set(r.id, (seen.get(r.id) ?? 0) + 1);
  void sim;
  return { unique: seen.size, duplicates: records.length - seen.size, missing: backlogMissing(seen, BACKLOG) };
}

const figures = {};

describe('reliability: the status poller across redeploy, restart and hard kill (child Node-RED)', function () {
  this.timeout(120000);
  let sim;
  let red;
  let recordsFile;
  const run = fleetPerFile(
    'iotgw-rec-',
    (s) => {
      sim = s;
      sim.terminal.seedBacklog(BACKLOG);
    },
    { simOptions: { terminal: { rateLimitCalls: 0, maxConcurrent: 0 } } },
  );

  async function startRed() {
    recordsFile = run.fleet.recordsFile;
    red = await run.fleet.running();
    const types = await red.nodeTypes();
    assert.ok(types.includes('iotgw-status-poller'), 'the package is installed in the child Node-RED');
  }

  after(function () {
    console.log(`      [figures] ${JSON.stringify(figures)}`);
  });

  /** The runtime up, the flow deployed, and its drain in the middle: a poll held open at the simulator (holdCall). */
  async function drainUntilHeld() {
    await startRed();
    const hold = holdCall(sim, 'terminal/status', HOLD_AFTER);
    await red.deploy(flows(sim));
    await held(hold, 'the held poll');
  }

  const drainToEnd = () => drained(() => lineCount(recordsFile) >= BACKLOG, () => readRecords(recordsFile), { what: 'the backlog to drain' });

  it('redeploy in the middle of the drain: nothing lost, nothing repeated', async function () {
    await drainUntilHeld();
    await red.deploy(flows(sim)); // full redeploy: every node is closed and started again
    const atRedeploy = lineCount(recordsFile);
    const t = tally(await drainToEnd(), sim);
    figures.redeploy = { atRedeploy, ...t };
    assert.ok(atRedeploy < BACKLOG, 'the redeploy came in the middle of the drain');
    assert.equal(t.missing, 0, 'no record lost');
    assert.equal(t.duplicates, 0, 'no record repeated');
  });

  it('clean restart (SIGINT) in the middle of the drain: nothing lost, nothing repeated', async function () {
    await drainUntilHeld();
    const exit = await red.kill('SIGINT');
    const atStop = lineCount(recordsFile);
    assert.ok(atStop < BACKLOG, 'stopped in the middle of the drain');
    assert.equal(exit.signal === 'SIGKILL', false);
    assert.ok(markOnDisk(red.userDir), 'the mark is on disk');
    await red.start();
    const t = tally(await drainToEnd(), sim);
    figures.cleanRestart = { atStop, ...t };
    assert.equal(t.missing, 0, 'no record lost');
    assert.equal(t.duplicates, 0, 'no record repeated');
  });

  it("hard kill (SIGKILL) in the middle of the drain, Node-RED's default context settings: nothing lost, at most one reply repeated", async function () {
    await drainUntilHeld();
    await red.kill('SIGKILL');
    const before = readRecords(recordsFile);
    const mark = markOnDisk(red.userDir);
    assert.ok(before.length < BACKLOG, 'killed in the middle of the drain');
    assert.ok(mark, 'a mark reached the disk before the kill');
    assert.match(mark.fromUtc, /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    await red.start();
    const all = await drainToEnd();
    const t = tally(all, sim);
    const counts = new Map();
    for (const r of all) counts.set(r.id, (counts.get(r.id) ?? 0) + 1);
    const repeated = [...counts].filter(([, c]) => c > 1).map(([id]) => id);
    figures.hardKill = { atKill: before.length, persistedMark: mark.fromUtc, ...t };
    assert.equal(t.missing, 0, 'no record lost');
    assert.ok(t.duplicates <= REPLY, `at most one reply repeated (${t.duplicates})`);
    assert.ok(repeated.every((id) => counts.get(id) === 2), 'a record repeats at most once');
    // Only records at or after the persisted mark's second can repeat.
    const ids = new Map(before.map((r) => [r.id, r.utc]));
    assert.ok(repeated.every((id) => ids.get(id) >= mark.fromUtc), 'only records at or after the persisted mark repeat');
  });

  it('a {fromUTC} reset is where the poller resumes after a hard kill', async function () {
    await startRed();
    const f = flows(sim);
    f.find((n) => n.id === 'poller1').autoStart = false;
    f.push({ id: 'inject1', z: 'tab1', type: 'inject', props: [{ p: 'payload' }], payload: '{"fromUTC":"2001-02-03 04:05:06"}', payloadType: 'json', once: true, onceDelay: 0.1, repeat: '', wires: [['poller1']] });
    await red.deploy(f);
    await waitFor(() => markOnDisk(red.userDir) !== undefined, 10000, 'the reset mark on disk');
    assert.equal(markOnDisk(red.userDir).fromUtc, '2001-02-03 04:05:06');
    await red.deploy(flows(sim).map((n) => (n.id === 'poller1' ? { ...n, autoStart: false } : n))); // the inject is gone
    await red.kill('SIGKILL');
    await red.start();
    assert.equal(sim.server.callsTo('terminal/status').length, 0, 'no poll yet');
    await red.deploy(flows(sim)); // autoStart again
    await waitFor(() => sim.server.callsTo('terminal/status').length >= 1, 10000, 'the first poll');
    assert.equal(new URLSearchParams(sim.server.callsTo('terminal/status')[0].query).get('FromUTC'), '2001-02-03 04:05:06', 'resumed from the reset position');
  });
});
