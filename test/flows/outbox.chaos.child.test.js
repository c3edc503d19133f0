'use strict';
/**
 * Issue 45's chaos proof: the outbox of the three sending nodes (iotgw-send-message with
 * single destinations and `Destinations` messages, iotgw-terminal-mode, iotgw-cancel; outbox
 * on, shared/spec/nodes.md "Commands that survive the edge") in a child Node-RED, against
 * the simulator in this process, while
 * - input msgs (ENTRIES entries to 50 destinations, mixed msg.priority, some msg.ttl) come in
 *   over FEED_SECONDS through an http-in node, at the pace a user's flow would give them;
 * - the link drops in random windows (refused, black hole: sim.server.link.chaos), the
 *   simulator answers 5xx and 429 at random, and resets the connection after handling a
 *   send (`lost-reply`: the message exists, the reply is lost);
 * - Node-RED is SIGKILLed KILLS times at random moments, every third one while a send's
 *   reply is held by the simulator (the gateway created the messages, the reply never came).
 *
 * A msg the runtime never accepted (killed before its entries were durable) is fed again
 * after the restart, as a user's retry would: "accepted" is what the outboxes hold on disk
 * when the runtime is dead (read from a copy with the file store itself) or a msg whose
 * outcome the flow recorded. At the end (link up, the simulator's random faults still on):
 * - each entry was created at the gateway exactly once at each destination (the simulator's
 *   creation counts, each entry with a payload of its own), each cancellation target
 *   cancelled exactly once;
 * - each destination got its commands in acceptance order within each priority, per outbox
 *   (the simulator's message IDs rise in the order the msgs were accepted);
 * - each input msg ended exactly once (output 1; none on output 2, none caught), or once more
 *   across a kill that came between its outcome and the record of it (the same msg.outbox.key in
 *   a later life: docs/nodes.md), and only the msgs that outbox ended last before the kill (a
 *   batch's msgs end together: a kill can catch several, never one before another that was
 *   given once; the pinned run on 6be5818 had 17 across 3 kills), none EXPIRED
 *   (every TTL, 3600 s, had time);
 * - the account's limits were never passed: the simulator's own throttling counter is 0 (its
 *   injected 429s are not counted there);
 * - and the run had its faults, whatever its size: the link down at least once, a 5xx and a 429.
 *
 * Sizes: IOTGW_CHAOS_ENTRIES (default ENTRIES below), IOTGW_CHAOS_KILLS, IOTGW_CHAOS_FEED_SECONDS, IOTGW_CHAOS_SETTLE_SECONDS (the runtimes' iotgwOutboxSettleSeconds, 8),
 * IOTGW_CHAOS_SEED (the plan, the faults and the link windows are seeded; the kill moments
 * are too, the runtime's own timing is not).
 */
const assert = require('node:assert/strict');
const { startSimulator } = require('../../dist/simulator');
const { RedFleet, waitFor } = require('../helpers/child-red');
const { rng, chaosFlows, readRecords, outcomesById, keptOnDisk, touchedAtGateway, verdict, envInt, sleep, CHAOS_SIMULATOR, chaosPlan, startFaults, moments, ChaosFeeder, endFigures, assertVerdict, assertFaultsCame } = require('../helpers/outbox-chaos');
// The runtimes' iotgwOutboxSettleSeconds: the simulator shows a created message in its status
// feed at once, so a lost send that created nothing may be sent again 8 s after it rather than
// the product's 30 (a guess for the real gateway); what the run proves does not hang on the wait.
const SETTLE_SECONDS = envInt('IOTGW_CHAOS_SETTLE_SECONDS', 8);

// The default run (what npm test runs: 120 entries, 3 kills, 10 s of feeding, seed 45; about 55 s
// here, the machine shared) proves every promise above on a small scale: kills during the feed, the
// second while a reply is held, lost replies, black holes and refusals, 503s and 429s, each
// reconciled or retried. The former default (about 2 min here):
//   IOTGW_CHAOS_ENTRIES=300 IOTGW_CHAOS_KILLS=5 IOTGW_CHAOS_FEED_SECONDS=25 npx mocha --no-config --timeout 60000 --exit test/flows/outbox.chaos.child.test.js
// The run: IOTGW_CHAOS_ENTRIES=5000 IOTGW_CHAOS_KILLS=20 IOTGW_CHAOS_FEED_SECONDS=150, the
// same command (over 10 min here: each unknown send waits for reconciliation, up to 30 s when the
// gateway never got it).
const ENTRIES = envInt('IOTGW_CHAOS_ENTRIES', 120);
const KILLS = envInt('IOTGW_CHAOS_KILLS', 3);
const FEED_SECONDS = envInt('IOTGW_CHAOS_FEED_SECONDS', 10);
const SEED = envInt('IOTGW_CHAOS_SEED', 45);
const DESTINATIONS = 50;
const DRAIN_MS = envInt('IOTGW_CHAOS_DRAIN_SECONDS', 300) * 1000; // after the last feed, for every msg to end (the link up, the random faults on)
const HOLD_ROUTES = ['terminal/messages', 'terminal/messages', 'terminal/to_multiple', 'terminal/mode', 'terminal/cancel'];

/** The feeder of one runtime: `life` the msgs posted since it started (their acceptance is unknown until it is killed or ends). */
class Feeder extends ChaosFeeder {
  constructor(plan, t0) {
    super(plan, t0, FEED_SECONDS);
    this.life = new Set();
  }

  /** Until stop() or everything is posted. */
  async run(red, random) {
    this.stopped = false;
    while (!this.stopped && !this.done) {
      const batch = this.next();
      if (!batch.length) {
        await sleep(50 + random() * 200);
        continue;
      }
      for (const m of batch) {
        this.lastFeed.set(m.id, this.seq++);
        this.life.add(m.id);
      }
      let status;
      try {
        status = await ChaosFeeder.post(red.url, batch);
      } catch {
        if (this.stopped) return; // killed with the POST in flight: the kill decides
        status = 0;
      }
      if (status !== 200) {
        // Not taken (the flow not started yet): again, first.
        for (const m of batch) this.life.delete(m.id);
        this.again.unshift(...batch);
        await sleep(200);
      } else this.posts++;
    }
  }

  stop() {
    this.stopped = true;
  }
}

/** Kill moments (ms from the start), seeded, spread over the feed and a little after it, at least a restart apart. */
const killMoments = (random) => moments(random, KILLS, { feedSeconds: FEED_SECONDS, gap: Math.min(4000, (FEED_SECONDS * 1000 * 1.15) / (KILLS + 1) / 2), jitter: 0.8 });

describe(`outbox chaos (issue 45): ${ENTRIES} entries, ${KILLS} SIGKILLs, link drops, 5xx and 429 (child Node-RED)`, function () {
  this.timeout(FEED_SECONDS * 1000 * 1.2 + KILLS * 60000 + DRAIN_MS + 60000);
  let sim;
  let fleet;

  beforeEach(async function () {
    sim = await startSimulator(CHAOS_SIMULATOR);
    fleet = new RedFleet('iotgw-oxchaos-', { settings: { iotgwOutboxSettleSeconds: SETTLE_SECONDS } });
  });

  afterEach(async function () {
    await fleet.close();
    await sim.close();
  });

  it('each entry created once, in order per destination and priority, each msg ended once (an outcome at most once more across a kill), none expired, the limits kept', async function () {
    const random = rng(SEED + 1);
    const { plan, byId } = chaosPlan(sim, { seed: SEED, entries: ENTRIES, destinations: DESTINATIONS, tag: 1 });

    let red = await fleet.start();
    await red.deploy(chaosFlows(sim));
    startFaults(sim, SEED, 0.08, 0.05);

    const t0 = Date.now();
    const feeder = new Feeder(plan, t0);
    const figures = { seed: SEED, kills: 0, heldKills: 0, refed: 0, lostOutcomes: [], restartsMs: [] };
    const lifeEnds = []; // the records file's line count at each kill
    const lifeOf = (line) => lifeEnds.filter((n) => n <= line).length;
    let feeding = feeder.run(red, random);
    for (const [k, at] of killMoments(random).entries()) {
      await sleep(Math.max(0, t0 + at - Date.now()));
      let hold;
      if (k % 3 === 1) {
        hold = sim.inject({ route: HOLD_ROUTES[Math.floor(random() * HOLD_ROUTES.length)], kind: 'hold', times: 1 });
        await waitFor(() => hold.hits > 0, 45000, 'a held send').catch(() => {});
      }
      feeder.stop();
      await red.kill('SIGKILL');
      await feeding;
      lifeEnds.push(readRecords(fleet.recordsFile).lines.length);
      figures.kills++;
      if (hold) {
        if (hold.hits > 0) figures.heldKills++;
        sim.server.clearFaults(hold);
        sim.server.releaseHeld();
      }
      // What this life took: accepted (kept on disk, or its outcome recorded), or fed again.
      const ended = outcomesById(readRecords(fleet.recordsFile));
      const kept = await keptOnDisk(red.userDir);
      const again = [];
      for (const id of feeder.life) {
        if (ended.has(id) || kept.has(id)) continue;
        if (touchedAtGateway(sim, byId.get(id))) figures.lostOutcomes.push(id); // ended, forgotten, its outcome never recorded
        else again.push(byId.get(id));
      }
      again.sort((a, b) => feeder.lastFeed.get(a.id) - feeder.lastFeed.get(b.id));
      feeder.again.unshift(...again);
      figures.refed += again.length;
      feeder.life.clear();
      const s = Date.now();
      await red.start();
      figures.restartsMs.push(Date.now() - s);
      feeding = feeder.run(red, random);
    }
    await feeding;
    assert.ok(feeder.done, 'every msg was fed');
    figures.fedMs = Date.now() - t0;
    sim.server.link.stopChaos();
    await sim.server.link.up();

    const lost = new Set(figures.lostOutcomes); // they cannot end: asserted below
    const allEnded = () => {
      const by = outcomesById(readRecords(fleet.recordsFile));
      return plan.every((m) => by.has(m.id) || lost.has(m.id));
    };
    const left = () => `${plan.filter((m) => !outcomesById(readRecords(fleet.recordsFile)).has(m.id)).length} msgs without an outcome; ${red.lastLines()}`;
    await waitFor(allEnded, DRAIN_MS, 'every msg to end', left).catch((err) => {
      console.log(`      [figures so far] ${JSON.stringify(figures)}`);
      throw err;
    });
    await sleep(3000); // nothing else may come
    figures.totalMs = Date.now() - t0;

    const records = readRecords(fleet.recordsFile);
    const v = verdict(sim, plan, records, (id) => feeder.lastFeed.get(id), lifeOf);
    figures.repeatedAcrossKill = v.repeated.length;
    endFigures(figures, sim, plan);

    assert.equal(figures.kills, KILLS, 'every kill happened');
    assert.ok(KILLS < 3 || figures.heldKills >= 1, 'a kill came while a reply was held');
    assertFaultsCame(figures);
    assertVerdict(sim, records, v, { lostOutcomes: figures.lostOutcomes, lives: 'last', across: 'a kill' });
  });
});
