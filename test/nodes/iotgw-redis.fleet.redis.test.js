'use strict';
/**
 * Issue 19 with real parts: two Node-RED runtimes (child processes) running the same flow,
 * one gateway account shared through a real redis-server, against the simulator's strict
 * feed and real sliding window. One poller is active, the other stands by; a SIGKILL of the
 * active one during a 6,000-record drain (15 replies of 500, each reply's last second again:
 * the kill after 6 of them, 9 after the takeover; the stop arranged by the simulator, which
 * holds A's 7th poll open until A is killed): the standby takes over, nothing is lost, at
 * most one reply (500 records) comes again, and the shared budget provokes no 429.
 */
const assert = require('node:assert/strict');
const { waitFor, holdCall, held, drained, backlogMissing, lineCount, recordLines, statusPoller, appendNode, fleetPerTest, fleetFlows } = require('../helpers/child-red');
const { describeRedis } = require('../helpers/redis');

const BACKLOG = 6000;
const REPLY = 500;
const LEASE_S = 5;
const HOLD_AFTER = 6; // A's 7th poll is held: the kill comes after 2,500 records (40%)

const flows = (sim, redisUrl) => fleetFlows(sim, { url: redisUrl, keyPrefix: 'fleet:' }, [statusPoller('append1'), appendNode('append1', "env.get('IOTGW_TAG') + ' ' + msg.topic")]);

const read = (file) => recordLines(file).map(([tag, id]) => ({ tag, id }));

describeRedis('fleet: two Node-RED instances, one account, Redis (child Node-RED, real redis-server)', function (ctx) {
  this.timeout(120000);
  // Leases of 5 s (settings.js iotgwRedisLeaseSeconds; 10 s by default): the takeover is what
  // this test proves, not the lease's length (the restart test reads that).
  const run = fleetPerTest('iotgw-fleet-', (sim) => sim.terminal.seedBacklog(BACKLOG), { fleetOptions: { settings: { iotgwRedisLeaseSeconds: LEASE_S } } });

  it('SIGKILL of the active poller during a 6,000-record drain: the standby takes over, 0 lost, at most one reply repeated, 0 429s', async function () {
    const { sim, fleet } = run;
    const recordsFile = fleet.recordsFile;
    const startRed = (tag) => fleet.start(tag);
    const hold = holdCall(sim, 'terminal/status', HOLD_AFTER);
    const a = await startRed('A');
    await a.deploy(flows(sim, ctx.server.url));
    await waitFor(() => read(recordsFile).length > 0, 30000, 'A to start polling');
    const b = await startRed('B');
    await b.deploy(flows(sim, ctx.server.url));
    await held(hold, "A's 7th poll held by the simulator");
    const beforeKill = read(recordsFile);
    assert.equal(beforeKill.filter((r) => r.tag === 'B').length, 0, 'B stood by while A was active');
    const tKill = Date.now();
    await a.kill('SIGKILL');
    const atKill = read(recordsFile).length;
    await waitFor(() => read(recordsFile).some((r) => r.tag === 'B'), 90000, 'B to take over');
    const takeoverS = (Date.now() - tKill) / 1000;
    const all = await drained(() => lineCount(recordsFile) >= BACKLOG && new Set(read(recordsFile).map((r) => r.id)).size >= BACKLOG, () => read(recordsFile), { what: 'the backlog to drain' });
    const ids = new Set(all.map((r) => r.id));
    const missing = backlogMissing(ids, BACKLOG);
    const repeated = all.length - ids.size;
    console.log(`      [figures] ${JSON.stringify({ atKill, takeoverS, missing, repeated, throttled: sim.terminal.counters.throttled, tokenFetches: sim.server.callsTo('terminal/auth').length })}`);
    assert.ok(atKill < BACKLOG, 'the kill came in the middle of the drain');
    assert.equal(missing, 0, 'no record lost');
    assert.ok(repeated <= REPLY, `at most one reply repeated (${repeated})`);
    // Behaviour, not speed: B took over (waited for above), and only once A's lease (5 s,
    // renewed every third of it: at least two thirds of it left at the kill) had lapsed: never two pollers at once.
    assert.ok(takeoverS >= (LEASE_S * 2) / 3, `B polled only once A's lease had lapsed: ${takeoverS} s after the kill`);
    assert.equal(sim.terminal.counters.throttled, 0, 'no 429: one shared budget');
  });
});
