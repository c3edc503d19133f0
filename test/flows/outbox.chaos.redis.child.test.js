'use strict';
/**
 * Issue 45's second chaos proof: "the same through Redis with three instances, one of them
 * SIGKILLed mid-drain and the Redis master failed over: nothing lost, nothing twice".
 *
 * Three child Node-REDs (A, B, C) run the file chaos run's flow (test/helpers/outbox-chaos.js:
 * iotgw-send-message with single destinations and `Destinations` messages, iotgw-terminal-mode,
 * iotgw-cancel, outbox on), their account naming an iotgw-redis in sentinel mode on a Sentinel
 * set (a master, a replica, three sentinels: test/helpers/redis.js), so the three share each
 * outbox (nodes.md "A fleet": one instance drains, the others accept only). The simulator runs
 * in this process. Meanwhile
 * - input msgs (ENTRIES entries, mixed msg.priority, some msg.ttl) are fed over FEED_SECONDS,
 *   each POST to one of the live instances at random;
 * - the link drops in random windows, the simulator answers 5xx and 429 at random and resets
 *   the connection after handling a send (`lost-reply`);
 * - KILLS times the instance that drains an outbox is SIGKILLed while the simulator holds
 *   the reply of one of its sends (the gateway created the messages, the reply never came),
 *   then started again; FAILOVERS times the Redis master is SIGKILLed mid-drain (Sentinel
 *   promotes the replica), and started again a few seconds later as the new master's replica.
 *
 * Accepted: a msg the outboxes hold in Redis once its instance is dead, or whose outcome the
 * flow recorded. A msg the killed instance never accepted, or whose acceptance ended with
 * SHARED_STATE or STORAGE (nothing is acknowledged as accepted), is fed again, as a user's
 * retry would (if that msg had been kept all the same, its entries are created twice: the
 * verdict says so); one whose error says its outcome is UNKNOWN (Redis answered neither the
 * accept nor its withdrawal) is not: its entries may still be sent, so they must be created
 * once (with its outcome then) or not at all. At the end (link up, the random faults still on):
 * - each entry was created at the gateway exactly once at each destination, each cancellation
 *   target cancelled exactly once (the simulator counts by payload);
 * - order: each destination got its commands in acceptance order within each priority and
 *   outbox: among the msgs one instance accepted (it takes them one at a time, in feed order),
 *   and among all msgs seen in Redis with their seq (the fleet's acceptance order; a poll every
 *   200 ms sees most of them);
 * - each input msg ended exactly once on output 1, or once more across a kill or a failover
 *   (the same msg.outbox.key: an outcome emitted whose record in Redis was lost with the
 *   instance or the master, docs/nodes.md), none expired;
 * - the account's limits were never passed (the simulator's throttling counter is 0), and
 *   nothing is left in Redis.
 * - and the run had its faults, whatever its size: the link down at least once, a 5xx and a 429.
 *
 * Sizes: IOTGW_CHAOS_ENTRIES, IOTGW_CHAOS_KILLS, IOTGW_CHAOS_FAILOVERS, IOTGW_CHAOS_FEED_SECONDS,
 * IOTGW_CHAOS_DESTINATIONS, IOTGW_CHAOS_FAULT_PROBABILITY (0.08), IOTGW_CHAOS_SEED,
 * IOTGW_CHAOS_DRAIN_SECONDS; IOTGW_CHAOS_LEASE_SECONDS (the runtimes' iotgwRedisLeaseSeconds, default 10:
 * a shorter lease makes takeovers, and a holder that stalls past its lease, more likely);
 * IOTGW_CHAOS_TRACE=1 for a trace.
 */
const assert = require('node:assert/strict');
const Redis = require('ioredis');
const { startSimulator } = require('../../dist/simulator');
const { RedFleet, waitFor } = require('../helpers/child-red');
const { waitUntil } = require('../helpers/wait');
const { SentinelSet, findRedisServer } = require('../helpers/redis');
const { rng, chaosFlows, readRecords, outcomesById, inRedis, leaseHolder, touchedAtGateway, verdict, envInt, sleep, SEND_ROUTES, CHAOS_SIMULATOR, chaosPlan, startFaults, moments, ChaosFeeder, endFigures, assertVerdict, assertFaultsCame } = require('../helpers/outbox-chaos');

// The default run (what npm test runs: 100 entries, 1 kill, 1 failover, 10 s of feeding, 8% faults,
// seed 7: about 1 min here, the machine shared) keeps every promise on a small scale: the drainer
// killed with a reply held, the master failed over (the issue's one kill and one failover), link
// drops, 500s and 429s. The sizes grow by the variables above; the former default (about 1.5 min here):
//   IOTGW_CHAOS_ENTRIES=300 IOTGW_CHAOS_KILLS=2 IOTGW_CHAOS_FEED_SECONDS=30 npx mocha --no-config --timeout 60000 --exit test/flows/outbox.chaos.redis.child.test.js
// Its floor is the kill's: the drainer is killed at about 3 s, the others take its outbox once its
// lease has lapsed (10 s, settings.js iotgwRedisLeaseSeconds) and reconcile its held send, whose
// settle time counts from that open (IOTGW_CHAOS_SETTLE_SECONDS, 8; the product's default 30): about 50 s of test whatever the sizes (a trace of the
// default run: the send outbox 'reconciling' from 15 s to 41 s, the failover's place changes nothing).
// The time after the feed is mostly reconciliation: a send answered 500 (the request may have been
// handled) is absent only once the gateway's records are the settle time past it, and nothing
// else of its outbox is sent meanwhile (drain.ts), so a seed whose 500s land on sends takes longer
// (seed 46: 2.5 min with 200 entries and one kill). IOTGW_CHAOS_TRACE=1 prints a line every 5 s
// (what waits in Redis, in which state, who drains).
const ENTRIES = envInt('IOTGW_CHAOS_ENTRIES', 100);
const KILLS = envInt('IOTGW_CHAOS_KILLS', 1);
const FAILOVERS = envInt('IOTGW_CHAOS_FAILOVERS', 1);
const FEED_SECONDS = envInt('IOTGW_CHAOS_FEED_SECONDS', 10);
const SEED = envInt('IOTGW_CHAOS_SEED', 7);
// Fewer destinations than the file run's 50: more commands per destination and priority to order.
const DESTINATIONS = envInt('IOTGW_CHAOS_DESTINATIONS', 12);
const DRAIN_MS = envInt('IOTGW_CHAOS_DRAIN_SECONDS', 300) * 1000;
const LEASE_SECONDS = envInt('IOTGW_CHAOS_LEASE_SECONDS', 0); // 0: the runtimes' default (10 s)
// The runtimes' iotgwOutboxSettleSeconds (8; the product's default 30 is a guess for the real
// gateway, whose feed may lag: the simulator's shows a created message at once).
const SETTLE_SECONDS = envInt('IOTGW_CHAOS_SETTLE_SECONDS', 8);
// The chance of a random fault per send (5xx, 503, 429, a reply lost) and per read (5xx, 503, 429).
// Each 500 on a send costs its outbox a 30 s pause: the request may have been handled, so the
// send is reconciled, absent only once the gateway's records are 30 s past it.
const FAULTS = Number(process.env.IOTGW_CHAOS_FAULT_PROBABILITY ?? 0.08);
const PREFIX = 'oxchaos:';
const TAGS = ['A', 'B', 'C'];
const OUTBOX_OF = { 'terminal/messages': 'send', 'terminal/to_multiple': 'send', 'terminal/mode': 'mode', 'terminal/cancel': 'cancel' };
// An acceptance that failed (nothing acknowledged as accepted): the msg is fed again.
// (The recorder keeps 200 characters of the message: "accepting into the outbox" may be cut.)
// Not one whose outcome is UNKNOWN (the recorder's `u`: the store could not withdraw it, its
// entries may still be sent, docs/nodes.md): fed again, it could be created twice. Such a msg's
// entries must be created once or not at all (verdict's `unsure`).
const ACCEPT_FAILED = /^(SHARED_STATE|STORAGE) .*(accepting into the|is not open)/s;

/** A wait that reads the records file: every 500 ms (child-red.js's waitFor looks every 25 ms). */
const waitUntilEvery = (pred, ms, what, detail) => waitUntil(pred, ms, what, { detail, every: 500 });

/** For the trace: per outbox, its entries by state (w waiting again, s sending, e ended) and the most attempts of one. */
const STATES = `local out = {}
for _, sk in ipairs(redis.call('KEYS', ARGV[1] .. '*:outbox:*:s')) do
  local base = string.sub(sk, 1, -3)
  local n = { w = 0, s = 0, e = 0 }
  for _, v in ipairs(redis.call('HVALS', sk)) do local c = string.sub(v, 1, 1) n[c] = (n[c] or 0) + 1 end
  local most = 0
  for _, v in ipairs(redis.call('HVALS', base .. ':a')) do most = math.max(most, tonumber(v)) end
  table.insert(out, string.match(base, ':outbox:(.*)$') .. ' w' .. n.w .. ' s' .. n.s .. ' e' .. n.e .. ' a' .. most)
end
return out`;

/**
 * Feeds the plan to the live instances, each POST to one of them at random.
 * `lastFeed(id)`: {tag, life, seq} of the msg's last feed (the instance life that accepted it,
 * and the order it was fed in).
 */
class FleetFeeder extends ChaosFeeder {
  constructor(plan, t0, instances, figures) {
    super(plan, t0, FEED_SECONDS);
    Object.assign(this, { instances, figures });
  }

  /** Until stop(), or everything is posted and `until()` holds (more may be fed again until then). */
  async run(random, until = () => true) {
    while (!this.stopped && !(this.done && until())) {
      const live = this.instances.filter((i) => i.feedable);
      const batch = live.length ? this.next() : [];
      if (!batch.length) {
        await sleep(50 + random() * 200);
        continue;
      }
      const inst = live[Math.floor(random() * live.length)];
      for (const m of batch) {
        this.lastFeed.set(m.id, { tag: inst.tag, life: inst.lives, seq: this.seq++ });
        inst.life.add(m.id);
      }
      let status = 0;
      try {
        status = await ChaosFeeder.post(inst.red.url, batch);
      } catch {
        // Killed with the POST in flight: the kill decides (the msgs are in its life).
        if (!inst.feedable) continue;
        this.figures.postErrors++;
      }
      if (status === 200) this.posts++;
      else if (status !== 0) {
        for (const m of batch) inst.life.delete(m.id);
        this.again.unshift(...batch); // not taken (the flow not started yet): again, first
        await sleep(200);
      }
    }
  }
}

/** The events in turn: kills, with the failovers spread among them. */
function events() {
  const n = KILLS + FAILOVERS;
  const kinds = Array(n).fill('kill');
  for (let j = 0; j < FAILOVERS; j++) kinds[Math.min(n - 1, Math.floor(((j + 0.5) * n) / FAILOVERS))] = 'failover';
  return kinds;
}

(findRedisServer() ? describe : describe.skip)(`outbox chaos through Redis (issue 45): ${ENTRIES} entries, 3 instances, ${KILLS} SIGKILLs mid-drain, ${FAILOVERS} master failover(s), link drops, 5xx and 429 (child Node-RED, sentinels)`, function () {
  this.timeout(FEED_SECONDS * 1000 * 1.2 + (KILLS + FAILOVERS) * 90000 + DRAIN_MS + 120000);
  let sim;
  let fleet;
  let set;
  let redis;

  beforeEach(async function () {
    sim = await startSimulator(CHAOS_SIMULATOR);
    fleet = new RedFleet('iotgw-oxchaosr-', { settings: { iotgwOutboxSettleSeconds: SETTLE_SECONDS, ...(LEASE_SECONDS ? { iotgwRedisLeaseSeconds: LEASE_SECONDS } : {}) } });
    set = await new SentinelSet().start();
    redis = new Redis({ sentinels: set.sentinels.map((s) => ({ host: '127.0.0.1', port: s.port })), name: set.name, lazyConnect: true });
    redis.on('error', () => {}); // it follows the failover
    await redis.connect();
  });

  afterEach(async function () {
    redis?.disconnect();
    await fleet.close();
    await set.destroy();
    await sim.close();
  });

  it('each entry created once, in order per destination and priority, each msg ended once (an outcome at most once more across a kill or failover), none expired, the limits kept, nothing left in Redis', async function () {
    const random = rng(SEED + 1);
    const { plan, byId } = chaosPlan(sim, { seed: SEED, entries: ENTRIES, destinations: DESTINATIONS, tag: 2 });
    const flows = chaosFlows(sim, {}, { redis: { mode: 'sentinel', sentinels: set.sentinelList, masterName: set.name, url: 'redis://127.0.0.1:6379/0', keyPrefix: PREFIX } });
    const file = fleet.recordsFile;

    // The three start and deploy side by side (one after another cost two starts more).
    const instances = await Promise.all(
      TAGS.map(async (tag) => {
        const red = await fleet.start(tag);
        await red.deploy(flows);
        return { tag, red, life: new Set(), lives: 0, feedable: true };
      }),
    );
    startFaults(sim, SEED, FAULTS);

    const figures = { seed: SEED, kills: 0, heldKills: 0, failovers: [], refed: 0, acceptFailures: 0, acceptFailed: [], acceptUnknown: [], postErrors: 0, lostOutcomes: [], restartsMs: [], killedAt: [] };
    const t0 = Date.now();
    const feeder = new FleetFeeder(plan, t0, instances, figures);

    // The fleet's acceptance order: each msg's seq in Redis (outbox-lua.ts), as a poll sees it.
    const seqOf = new Map();
    let polling = true;
    let traced = 0;
    const poll = (async () => {
      while (polling) {
        try {
          const rows = await inRedis(redis, PREFIX);
          for (const r of rows) if (r.seq !== undefined && !seqOf.has(`${r.outbox} ${r.id}`)) seqOf.set(`${r.outbox} ${r.id}`, r.seq);
          // IOTGW_CHAOS_TRACE=1: a line every 5 s (what waits in Redis, what ended, who drains).
          if (process.env.IOTGW_CHAOS_TRACE && Date.now() - traced > 5000) {
            traced = Date.now();
            const holders = await Promise.all(['send', 'mode', 'cancel'].map((o) => leaseHolder(redis, PREFIX, `chaos-${o}`)));
            const tagOf = (pid) => instances.find((i) => i.red.proc?.pid === pid)?.tag ?? '-';
            const states = await Promise.all(instances.map(async (i) => (i.feedable ? (await fetch(`${i.red.url}/iotgw/accounts`).then((r) => r.json()).catch(() => [])) : [])));
            const outboxes = states.flat().flatMap((a) => a.outboxes ?? []).filter((o) => o.waiting > 0).map((o) => `${o.name} ${o.waiting} ${o.state}`);
            const st = await redis.eval(STATES, 0, PREFIX);
            console.log(`      [trace] ${Math.round((Date.now() - t0) / 1000)} s: ${rows.length} msgs in Redis (${st.join(', ')}), ${outcomesById(readRecords(file)).size} ended, drainers ${holders.map(tagOf).join('/')}, link ${JSON.stringify(sim.server.link.describe().state)}; ${outboxes.join(', ')}; ${JSON.stringify(sim.terminal.counters)}`);
          }
        } catch {
          /* the failover: the next poll */
        }
        await sleep(200);
      }
    })();

    // Acceptances that failed (SHARED_STATE, STORAGE: nothing acknowledged as accepted) are fed again; their lines leave the verdict.
    const acceptFailed = new Set();
    const unsure = new Set();
    let scanned = 0;
    const refeedFailed = () => {
      const lines = readRecords(file).lines;
      for (; scanned < lines.length; scanned++) {
        const r = lines[scanned];
        if (r.t === 'err' && r.u) {
          // UNKNOWN (an accept not withdrawn, or a send the gateway's records cannot tell): never fed again.
          if (!unsure.has(r.id)) figures.acceptUnknown.push(r.id);
          unsure.add(r.id);
          continue;
        }
        if (r.t !== 'err' || !ACCEPT_FAILED.test(`${r.code} ${r.m}`)) continue;
        acceptFailed.add(scanned);
        figures.acceptFailures++;
        const said = `${r.code} ${r.m}`.replace(/127\.0\.0\.1:\d+/g, 'host:port').slice(0, 240);
        if (!figures.acceptFailed.includes(said) && figures.acceptFailed.length < 3) figures.acceptFailed.push(said);
        feeder.again.push(byId.get(r.id));
      }
      return true;
    };
    const watching = (async () => {
      while (polling) {
        refeedFailed();
        await sleep(500);
      }
    })();

    // A life boundary for the outcomes given again: the records' line count at each kill and failover.
    const lifeEnds = [];
    const lifeOf = (line) => lifeEnds.filter((n) => n <= line).length;

    /** The drainer of a held send's outbox, SIGKILLed with the reply held; what its life took decided; started again. */
    const killMidDrain = async (k) => {
      // The next send of any outbox is held (the first to come; another one that comes before the kill is held too).
      const holds = SEND_ROUTES.map((route) => ({ route, fault: sim.inject({ route, kind: 'hold', times: 1 }) }));
      await waitFor(() => holds.some((h) => h.fault.hits > 0), 45000, 'a held send').catch(() => {});
      const hold = (holds.find((h) => h.fault.hits > 0) ?? holds[Math.floor(random() * holds.length)]).fault;
      const route = holds.find((h) => h.fault === hold).route;
      const pid = await leaseHolder(redis, PREFIX, `chaos-${OUTBOX_OF[route]}`).catch(() => undefined);
      const holder = instances.find((i) => i.red.alive && i.red.proc.pid === pid);
      const victim = holder ?? instances[k % instances.length];
      victim.feedable = false;
      await victim.red.kill('SIGKILL');
      lifeEnds.push(readRecords(file).lines.length);
      figures.kills++;
      if (hold.hits > 0 && holder) figures.heldKills++;
      for (const h of holds) sim.server.clearFaults(h.fault);
      sim.server.releaseHeld();
      await sleep(300); // a script the dead instance sent runs (or not) by now
      // What its life took: accepted (in Redis, or its outcome recorded), or fed again.
      const kept = new Set((await inRedis(redis, PREFIX)).map((r) => r.id));
      // Each read of the records parses the whole file: once per look, never once per msg (the
      // simulator runs in this process: a busy test process slows its replies past the timeout).
      const ended = () => outcomesById(readRecords(file));
      const endedNow = ended();
      const again = [];
      const touched = [];
      for (const id of victim.life) {
        if (endedNow.has(id) || kept.has(id)) continue;
        if (touchedAtGateway(sim, byId.get(id))) touched.push(id); // sent by a drainer: its record comes
        else again.push(byId.get(id));
      }
      const allIn = () => {
        const by = ended();
        return touched.every((id) => by.has(id));
      };
      await waitUntilEvery(allIn, 10000, 'the outcomes of sent msgs').catch(() => {});
      const endedLast = ended();
      figures.lostOutcomes.push(...touched.filter((id) => !endedLast.has(id)));
      again.sort((a, b) => feeder.lastFeed.get(a.id).seq - feeder.lastFeed.get(b.id).seq);
      feeder.again.unshift(...again);
      figures.refed += again.length;
      victim.life.clear();
      const s = Date.now();
      victim.red = await fleet.start(victim.tag);
      await victim.red.deploy(flows);
      figures.restartsMs.push(Date.now() - s);
      figures.killedAt.push(Date.now() - t0);
      victim.lives++;
      victim.feedable = true;
    };

    /** The master SIGKILLed mid-drain (a replica promoted), then started again as the new master's replica. */
    const failover = async () => {
      const before = set.masterPort();
      const waiting = (await inRedis(redis, PREFIX)).length;
      const { dead, failoverMs } = await set.killMaster();
      lifeEnds.push(readRecords(file).lines.length);
      await sleep(3000);
      await set.rejoin(dead);
      figures.failovers.push({ at: Date.now() - t0, from: before, to: set.masterPort(), failoverMs, waiting });
    };

    let feeding = feeder.run(rng(SEED + 2));
    const kinds = events();
    for (const [k, at] of moments(random, kinds.length, { feedSeconds: FEED_SECONDS, gap: 8000, jitter: 0.6 }).entries()) {
      await sleep(Math.max(0, t0 + at - Date.now()));
      if (kinds[k] === 'kill') await killMidDrain(k);
      else await failover();
    }
    await feeding;
    figures.fedMs = Date.now() - t0;
    // Link up; what was fed again after its acceptance failed must end too.
    sim.server.link.stopChaos();
    await sim.server.link.up();
    const outcomes = () => outcomesById({ lines: readRecords(file).lines.map((r, i) => (acceptFailed.has(i) ? { t: 'done' } : r)) });
    const lost = new Set(figures.lostOutcomes);
    const left = () => {
      const by = outcomes();
      return plan.filter((m) => !by.has(m.id) && !lost.has(m.id));
    };
    feeding = feeder.run(rng(SEED + 3), () => refeedFailed() && left().length === 0);
    await waitUntilEvery(() => refeedFailed() && feeder.done && left().length === 0, DRAIN_MS, 'every msg to end', () => `${left().length} msgs without an outcome (${left().slice(0, 5).map((m) => m.id)}); ${instances.map((i) => `${i.tag}: ${i.red.lastLines().slice(-800)}`).join('\n')}`).catch((err) => {
      console.log(`      [figures so far] ${JSON.stringify(figures)}`);
      throw err;
    });
    feeder.stopped = true;
    await feeding;
    await sleep(3000); // nothing else may come
    polling = false;
    await Promise.all([poll, watching]);
    refeedFailed();
    figures.totalMs = Date.now() - t0;

    const records = readRecords(file);
    const clean = { torn: records.torn, lines: records.lines.map((r, i) => (acceptFailed.has(i) ? { t: 'done' } : r)) };
    // Order groups: the instance life that accepted the msg (its feed order), and the fleet's seqs seen in Redis.
    const orderOf = (id) => {
      const f = feeder.lastFeed.get(id);
      const m = byId.get(id);
      return [{ group: `${f.tag}${f.life}`, at: f.seq }, { group: 'seq', at: seqOf.get(`${m.entries[0].outbox} ${id}`) }];
    };
    const v = verdict(sim, plan, clean, orderOf, lifeOf, unsure);
    figures.unknownNotKept = v.unsure.length;
    const leftInRedis = await inRedis(redis, PREFIX);
    // Across instances the fleet's order is the seqs' (the accepts' order in Redis): the drainer
    // never sends an entry before an older one of its priority it has not read (fleet.ts).
    figures.seqOrder = v.order.filter((o) => / \(seq\): /.test(o)).length;
    figures.repeatedAcrossKill = v.repeated.length;
    figures.seqsSeen = seqOf.size;
    figures.by = Object.fromEntries(TAGS.map((t) => [t, records.lines.filter((r) => r.t === 'ok' && r.by === t).length]));
    endFigures(figures, sim, plan);
    if (process.env.IOTGW_CHAOS_TRACE) for (const i of instances) console.log(`      --- ${i.tag}\n${i.red.output.slice(-6000)}`);

    assert.equal(figures.kills, KILLS, 'every kill happened');
    assert.ok(KILLS < 1 || figures.heldKills >= 1, "a drainer was killed while its send's reply was held");
    assert.equal(figures.failovers.length, FAILOVERS, 'every failover happened');
    for (const f of figures.failovers) assert.notEqual(f.to, f.from, 'a replica was promoted');
    assertFaultsCame(figures);
    assertVerdict(sim, records, v, { among: " (one instance's feed order, and the fleet's seqs)", lostOutcomes: figures.lostOutcomes, lives: figures.kills + figures.failovers.length, across: 'a kill or failover' });
    assert.deepEqual(leftInRedis, [], 'nothing left in Redis');
  });
});
