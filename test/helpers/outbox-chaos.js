'use strict';
/**
 * The outbox chaos run's parts (issue 45, "Proof"): the plan of input msgs (seeded), the
 * child Node-RED's flow, what the flow recorded, what the outbox kept on disk, and the
 * checks at the end; the run's sizes, faults, feed and figures. test/flows/outbox.chaos.child.test.js
 * and test/flows/outbox.chaos.redis.child.test.js drive them.
 *
 * Every entry carries a payload of its own (RawPayload bytes 128, 1, then its number; a mode
 * entry a (destination, mode, wake-up) pair of its own; a cancellation a message of its own),
 * so the simulator's creation counts (src/simulator/terminal-creations.ts) say for each entry
 * how many times the gateway created it, and its message IDs (increasing) the order.
 */
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { childGateway } = require('./child-red');
const { creationKey, modePayload } = require('../../dist/simulator/terminal-creations');

// mulberry32, the simulator's own seeded PRNG: the run is replayed from its seed.
const { rng } = require('../../dist/simulator/faults');

/** `count` terminals of the demo account, registered, online (or offline: `online` false), in PrimeID order. */
function demoTerminals(sim, count, online) {
  const out = [];
  for (let i = 0; out.length < count && i < 3000; i++) {
    const s = sim.terminal.fleet.at(i);
    const t = s && sim.terminal.terminals.get(s.id);
    if (t && t.account === 'demo' && s.registered === 1 && t.online === online) out.push(t);
  }
  if (out.length < count) throw new Error(`the fleet has ${out.length} such terminals, not ${count}`);
  return out;
}

/** The (mode, wake-up) pairs a terminal of `family` accepts, shuffled. */
function modePairs(family, random) {
  const pairs = [];
  for (let mode = 0; mode <= (family === 'IDP' ? 1 : 3); mode++) {
    for (let w = 0; w <= (family === 'IDP' && mode === 1 ? 10 : 15); w++) pairs.push([mode, w]);
  }
  for (let i = pairs.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [pairs[i], pairs[j]] = [pairs[j], pairs[i]];
  }
  return pairs;
}

const rawOf = (n) => {
  const b = Buffer.alloc(6);
  b[0] = 128;
  b[1] = 1;
  b.writeUInt32BE(n, 2);
  return [...b];
};

/**
 * The plan: input msgs until they hold `entries` entries, each msg {id, kind (node: send,
 * mode, cancel), payload, priority?, ttl?, entries: [{outbox, dests, key(dest)}]}. Kinds:
 * one or a few messages to single destinations, a `Destinations` message (2 to 5), a mode
 * change, a cancellation of one of `cancelTargets` (message IDs, each cancelled once).
 */
function makePlan({ seed, entries, dests, cancelTargets }) {
  const random = rng(seed);
  const pick = (a) => a[Math.floor(random() * a.length)];
  const pairs = new Map(dests.map((t) => [t.id, modePairs(t.family, random)]));
  const targets = [...cancelTargets];
  const msgs = [];
  let n = 0;
  let total = 0;
  while (total < entries) {
    const id = `c${msgs.length}`;
    const r = random();
    const m = { id };
    if (r < 0.55) {
      const count = random() < 0.7 ? 1 : 2 + Math.floor(random() * 3);
      const items = [];
      for (let i = 0; i < count; i++) items.push({ DestinationID: pick(dests).id, RawPayload: rawOf(n++) });
      Object.assign(m, { kind: 'send', payload: count === 1 ? items[0] : items, entries: items.map((it) => ({ outbox: 'send', dests: [it.DestinationID], raw: it.RawPayload })) });
    } else if (r < 0.7) {
      const set = new Set();
      const k = 2 + Math.floor(random() * 4);
      while (set.size < k) set.add(pick(dests).id);
      const raw = rawOf(n++);
      Object.assign(m, { kind: 'send', payload: { Destinations: [...set], RawPayload: raw }, entries: [{ outbox: 'send', dests: [...set], raw }] });
    } else if (r < 0.88 || targets.length === 0) {
      let t = pick(dests);
      for (let tries = 0; pairs.get(t.id).length === 0 && tries < 1000; tries++) t = pick(dests);
      const [mode, w] = pairs.get(t.id).pop();
      Object.assign(m, { kind: 'mode', payload: { DestinationID: t.id, Mode: mode, WakeupInterval: w }, entries: [{ outbox: 'mode', dests: [t.id], mode: [mode, w] }] });
    } else {
      const target = targets.pop();
      Object.assign(m, { kind: 'cancel', payload: target, entries: [{ outbox: 'cancel', cancel: target }] });
    }
    if (random() < 0.6) m.priority = Math.floor(random() * 10);
    if (random() < 0.1) m.ttl = 3600;
    total += m.entries.length;
    msgs.push(m);
  }
  return msgs;
}

/** An entry's creation key for destination `dest` (terminal-creations.ts's). */
function entryKey(e, dest) {
  return e.mode ? creationKey(dest, modePayload(e.mode[0], e.mode[1])) : creationKey(dest, { RawPayload: e.raw });
}

/** The settings of a sending node with its outbox on (shared/spec/nodes.md). */
const outboxSettings = (name) => ({ outbox: 'on', outboxName: name, ttlSeconds: 3600, outboxMaxEntries: 10000, outboxMaxBytes: 67108864, whenFull: 'reject' });

/** A function node (tab1) appending one JSON line per msg: `expr` the object. */
const recorder = (id, expr) => ({ id, z: 'tab1', type: 'function', func: `global.get('append')(JSON.stringify({ ...${expr}, by: env.get('IOTGW_TAG') }) + '\\n');\nreturn null;`, outputs: 0, wires: [] });

/**
 * The flow: POST /chaos/feed with an array of planned msgs -> one msg each to its sending node
 * (outbox on) -> output 1 "ok", output 2 "rej", a Catch of the three "err", a Complete "done";
 * each a line through the synchronous append (child-red.js), with the msg's chaosId and the
 * runtime's IOTGW_TAG (`by`, a fleet's instance: RedFleet.start(tag)).
 * `gateway`: props of the account (gw1); `redis`: props of an iotgw-redis node (r) the account
 * names, so the outboxes live in Redis (a fleet's, outbox.chaos.redis.child.test.js).
 */
function chaosFlows(sim, gateway = {}, { redis } = {}) {
  const route = `const out = [[], [], []];
const at = { send: 0, mode: 1, cancel: 2 };
for (const m of msg.payload) {
  const o = { chaosId: m.id, topic: m.id, payload: m.payload };
  if (m.priority !== undefined) o.priority = m.priority;
  if (m.ttl !== undefined) o.ttl = m.ttl;
  out[at[m.kind]].push(o);
}
node.send([out[0], out[1], out[2], null]);
msg.payload = 'fed';
return [null, null, null, msg];`;
  const sending = [['send', 'iotgw-send-message', { transportType: '', messageLifetime: '', messageClass: '', maxRawBytes: 1023 }], ['mode', 'iotgw-terminal-mode', { mode: 0, wakeupInterval: 0, family: 'any' }], ['cancel', 'iotgw-cancel', {}]];
  // Flow nodes have a place (x, y): without one the runtime takes a node for a config node, and
  // a config node whose id is a type name (catch) would depend on itself at the next start.
  const placed = (nodes) => nodes.map((n, i) => (n.z ? { x: 200, y: 40 * (i + 1), ...n } : n));
  return placed([
    { id: 'tab1', type: 'tab', label: 'outbox chaos' },
    ...(redis ? [{ id: 'r', type: 'iotgw-redis', ...redis }] : []),
    childGateway(sim, { rateLimitCalls: 10, rateLimitWindowSeconds: 1, maxConcurrent: 3, timeoutSeconds: 5, ...(redis ? { redis: 'r' } : {}), ...gateway }),
    { id: 'feed', z: 'tab1', type: 'http in', url: '/chaos/feed', method: 'post', upload: false, wires: [['route']] },
    { id: 'route', z: 'tab1', type: 'function', func: route, outputs: 4, wires: [['send'], ['mode'], ['cancel'], ['fedres']] },
    { id: 'fedres', z: 'tab1', type: 'http response', statusCode: '200', wires: [] },
    ...sending.map(([id, type, props]) => ({ id, z: 'tab1', type, gateway: 'gw1', ...props, ...outboxSettings(`chaos-${id}`), wires: [['ok'], ['rej']] })),
    recorder('ok', "{ t: 'ok', id: msg.chaosId, outbox: msg.outbox }"),
    recorder('rej', "{ t: 'rej', id: msg.chaosId, p: JSON.stringify(msg.payload).slice(0, 200) }"),
    { id: 'caught', z: 'tab1', type: 'catch', scope: ['send', 'mode', 'cancel'], uncaught: false, wires: [['err']] },
    // u: the error says the outcome is UNKNOWN (read on the whole message: the recorder keeps 200 characters of it).
    recorder('err', "{ t: 'err', id: msg.chaosId, code: msg.error && msg.error.code, m: String(msg.error && msg.error.message).slice(0, 200), u: /the outcome is UNKNOWN/.test(String(msg.error && msg.error.message)) || undefined }"),
    { id: 'completed', z: 'tab1', type: 'complete', scope: ['send', 'mode', 'cancel'], uncaught: false, wires: [['done']] },
    recorder('done', "{ t: 'done', id: msg.chaosId }"),
  ]);
}

/** The records the flow wrote (a torn last line after a kill is counted, not read). */
function readRecords(file) {
  const out = { lines: [], torn: 0 };
  if (!fs.existsSync(file)) return out;
  for (const l of fs.readFileSync(file, 'utf8').split('\n')) {
    if (!l) continue;
    try {
      out.lines.push(JSON.parse(l));
    } catch {
      out.torn++;
    }
  }
  return out;
}

/** chaosId -> outcome records (ok, rej, err). */
function outcomesById(records) {
  const by = new Map();
  records.lines.forEach((r, line) => {
    if (r.t === 'done') return;
    const list = by.get(r.id) ?? [];
    list.push({ ...r, line });
    by.set(r.id, list);
  });
  return by;
}

/**
 * The one repeat the outbox allows (docs/nodes.md, "One outcome per msg"): a msg's outcome given
 * again once after the kill that came between the first and the record that it was given, so
 * the two are in different lives of the runtime and carry the same msg.outbox.key. Usually the
 * next life; a later one when the next was killed before its outbox had opened (a kill soon
 * after a restart: seen with seed 13, the outcome given in lives 1 and 3).
 * `lifeOf(line)`: the life (0 before the first kill) in which the records file got that line.
 */
function repeatAcrossKill(got, lifeOf) {
  if (got.length !== 2 || got.some((r) => r.t !== 'ok')) return false;
  const [a, b] = got;
  return lifeOf(b.line) > lifeOf(a.line) && typeof a.outbox?.key === 'string' && a.outbox.key === b.outbox?.key;
}

/**
 * The chaosIds of the msgs the outboxes of user directory `userDir` hold on disk (read from a
 * copy, with the file store itself, while Node-RED is dead): accepted, whatever the flow saw.
 */
async function keptOnDisk(userDir) {
  const { FileOutboxStore } = require('../../dist/lib/outbox/file-store');
  const root = path.join(userDir, 'iotgw-outbox');
  const ids = new Set();
  if (!fs.existsSync(root)) return ids;
  const copy = fs.mkdtempSync(path.join(os.tmpdir(), 'iotgw-oxcopy-'));
  try {
    for (const name of fs.readdirSync(root)) {
      const dir = path.join(copy, name);
      fs.cpSync(path.join(root, name), dir, { recursive: true });
      const store = new FileOutboxStore(dir);
      const opened = await store.open();
      for (const m of opened.msgs) {
        const json = await store.msgJson(m.key);
        if (json && typeof json.chaosId === 'string') ids.add(json.chaosId);
      }
      await store.close();
    }
  } finally {
    fs.rmSync(copy, { recursive: true, force: true });
  }
  return ids;
}

/**
 * The msgs a fleet's outboxes hold in Redis (RedisOutboxStore's keys under `prefix`, outbox-lua.ts:
 * `mj` the msgs' JSON, `mh` their heads with the first seq): [{outbox, id (chaosId), seq}].
 * `redis`: an ioredis client on the master.
 */
const IN_REDIS = `local out = {}
for _, mj in ipairs(redis.call('KEYS', ARGV[1] .. '*:outbox:*:mj')) do
  local base = string.sub(mj, 1, -4)
  local name = string.match(base, ':outbox:(.*)$')
  local kv = redis.call('HGETALL', mj)
  for i = 1, #kv, 2 do
    local id = string.match(kv[i + 1], '"chaosId":"([^"]*)"')
    local head = redis.call('HGET', base .. ':mh', kv[i])
    if id then table.insert(out, name .. ' ' .. id .. ' ' .. ((head and string.match(head, '^{"s":(%d+)')) or '')) end
  end
end
return out`;
async function inRedis(redis, prefix) {
  const rows = await redis.eval(IN_REDIS, 0, prefix);
  return rows.map((r) => {
    const [outbox, id, seq] = r.split(' ');
    return { outbox: outbox.replace(/^chaos-/, ''), id, seq: seq ? Number(seq) : undefined };
  });
}

/** The process id of the instance that holds the drain lease of outbox `name` (its value: `<pid>-<tag>:<fence>`, iotgw-redis.ts), or undefined. */
async function leaseHolder(redis, prefix, name) {
  const keys = await redis.keys(`${prefix}*:lease:outbox:${name}`);
  const v = keys.length ? await redis.get(keys[0]) : null;
  const pid = v && /^(\d+)-/.exec(v);
  return pid ? Number(pid[1]) : undefined;
}

/** Did the gateway create (or cancel) anything of msg `m`? */
function touchedAtGateway(sim, m) {
  const c = sim.terminal.creations;
  return m.entries.some((e) => (e.cancel ? (c.cancels.get(e.cancel)?.asked ?? 0) > 0 : e.dests.some((d) => c.count(d, e.mode ? modePayload(e.mode[0], e.mode[1]) : { RawPayload: e.raw }) > 0)));
}

/**
 * What the end of a run shows, each a list of problems (empty when the promise held):
 * - `ended`: each msg ended exactly once, on output 1 (no entry of the plan is rejected), or
 *   twice across a kill as repeatAcrossKill allows (those in `repeated`);
 * - `created`: each entry created exactly once at each of its destinations;
 * - `order`: per outbox, destination and priority, the gateway's message IDs rise in acceptance
 *   order (`acceptedAt(id)`: the feed that got the msg accepted, then the item's place; or a
 *   list of {group, at}: msgs are compared within each group only, a fleet's instance, whose
 *   accepts have an order, undefined `at` leaving a msg out of that group);
 * - `cancelled`: each target cancelled exactly once; `expired`: none (every TTL had time).
 */
function verdict(sim, plan, records, acceptedAt, lifeOf, unsure = new Set()) {
  const by = outcomesById(records);
  const c = sim.terminal.creations;
  const created = new Map(c.list().map((x) => [creationKey(x.DestinationID, x), x]));
  const v = { ended: [], repeated: [], created: [], order: [], cancelled: [], expired: [], unsure: [] };
  const lines = new Map();
  for (const m of plan) {
    // `unsure`: msgs that ended with an error saying their outcome is UNKNOWN (not fed again): their
    // entries created once or not at all; a later outcome (they were kept) is then their one outcome.
    const got = (by.get(m.id) ?? []).filter((r) => !(unsure.has(m.id) && r.t === 'err' && r.u));
    const notKept = unsure.has(m.id) && got.length === 0;
    if (notKept) v.unsure.push(m.id);
    else if (repeatAcrossKill(got, lifeOf)) v.repeated.push(m.id);
    else if (got.length !== 1 || got[0].t !== 'ok') v.ended.push(`${m.id}: ${got.length ? got.map((r) => `${r.t}${r.code ? ` ${r.code}` : ''}${r.m ? ` "${r.m}"` : ''} (line ${r.line}, life ${lifeOf(r.line)}${r.by ? `, by ${r.by}` : ''}${r.outbox?.key ? `, key ${r.outbox.key}` : ''})`).join(', ') : 'no outcome'}`);
    if (got.some((r) => r.t === 'err' && /EXPIRED|TTL ended/.test(`${r.code} ${r.m}`))) v.expired.push(m.id);
    m.entries.forEach((e, i) => {
      if (e.cancel) {
        const n = c.cancels.get(e.cancel)?.cancelled ?? 0;
        if (notKept ? n > 1 : n !== 1) v.cancelled.push(`${m.id}: message ${e.cancel} cancelled ${n} times`);
        return;
      }
      for (const d of e.dests) {
        const x = created.get(entryKey(e, d));
        if (notKept ? x && x.count > 1 : !x || x.count !== 1) v.created.push(`${m.id}[${i}] to ${d}: created ${x ? x.count : 0} times${notKept ? ' (its outcome UNKNOWN: once or not at all)' : ''}`);
        if (!x) continue;
        const at = acceptedAt(m.id);
        for (const o of Array.isArray(at) ? at : [{ group: '', at }]) {
          if (o.at === undefined) continue;
          const line = `${e.outbox} ${d} p${m.priority ?? 4}${o.group ? ` (${o.group})` : ''}`;
          if (!lines.has(line)) lines.set(line, []);
          lines.get(line).push({ at: o.at * 1000 + i, gw: BigInt(x.ids[0]), what: `${m.id}[${i}]` });
        }
      }
    });
  }
  for (const [line, list] of lines) {
    list.sort((a, b) => a.at - b.at);
    for (let i = 1; i < list.length; i++) if (list[i].gw < list[i - 1].gw) v.order.push(`${line}: ${list[i].what} (ID ${list[i].gw}) created before ${list[i - 1].what} (ID ${list[i - 1].gw}), accepted before it`);
  }
  const kinds = new Map(plan.map((m) => [m.id, m.kind]));
  v.notLast = repeatsNotLast(records, new Set(v.repeated), (id) => kinds.get(id), lifeOf);
  return v;
}

/**
 * Which outcomes given again were not among the last an outbox gave before a kill: a list of
 * problems. An outbox emits a msg's outcome, then writes that it was given (its `forget`,
 * queued in emission order), so a kill can only catch the msgs it emitted last: in each life
 * and outbox (`kindOf(id)`), once a msg's first outcome is one given again, every later
 * outcome of that outbox in that life must be given again too. Outputs 1 and 2 only (a caught
 * error reaches its recorder by another path, whose order this does not know).
 */
function repeatsNotLast(records, repeated, kindOf, lifeOf) {
  const seen = new Set();
  const firstRepeat = new Map(); // life and outbox -> the id of its first outcome given again
  const problems = [];
  records.lines.forEach((r, line) => {
    if ((r.t !== 'ok' && r.t !== 'rej') || seen.has(r.id)) return;
    seen.add(r.id);
    const group = `life ${lifeOf(line)}, outbox ${kindOf(r.id)}`;
    if (repeated.has(r.id)) {
      if (!firstRepeat.has(group)) firstRepeat.set(group, r.id);
    } else if (firstRepeat.has(group)) {
      problems.push(`${group}: ${r.id} given once after ${firstRepeat.get(group)} was given again`);
    }
  });
  return problems;
}

/** The first few of a list of problems, and how many. */
const some = (list, n = 8) => (list.length ? `${list.length}: ${list.slice(0, n).join('; ')}${list.length > n ? '; ...' : ''}` : 'none');

// ---- The run's parts both chaos files share: sizes, the simulator, the plan, the faults, the feed, the end ----

/** A size from the environment (IOTGW_CHAOS_*), or `dflt`. */
const envInt = (name, dflt) => (process.env[name] ? Number.parseInt(process.env[name], 10) : dflt);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const SEND_ROUTES = ['terminal/messages', 'terminal/to_multiple', 'terminal/mode', 'terminal/cancel'];
const READ_ROUTES = ['terminal/status', 'terminal/fw_messages', 'terminal/info', 'terminal/auth'];
/** The simulator's options: the account's limits (10 calls a second, 3 at a time), terminals that stay online. */
const CHAOS_SIMULATOR = { terminal: { rateLimitCalls: 10, rateLimitWindowMs: 1000, maxConcurrent: 3, offlineTimeoutMs: 24 * 3600 * 1000 } };

/**
 * The run's plan on `sim`'s demo terminals: `destinations` online ones, and one cancellation
 * target per 12 entries, a message the simulator holds for one of 4 offline terminals (its
 * payload 129, `tag`, its number: each run's own). {plan, byId}.
 */
function chaosPlan(sim, { seed, entries, destinations, tag }) {
  const dests = demoTerminals(sim, destinations, true);
  const offline = demoTerminals(sim, 4, false);
  const targets = [];
  for (let i = 0; i < Math.ceil(entries / 12); i++) targets.push(sim.terminal.acceptMessage(offline[i % offline.length], { RawPayload: Buffer.from([129, tag, i >> 8, i & 255]).toString('base64') }).toString());
  const plan = makePlan({ seed, entries, dests, cancelTargets: targets });
  return { plan, byId: new Map(plan.map((m) => [m.id, m])) };
}

/** The faults, seeded: the link down in random windows; on each send route 5xx, 503, 429 and a lost reply, on each read route 5xx, 503 and 429, each with `probability`. */
function startFaults(sim, seed, probability, readProbability = probability) {
  sim.server.link.chaos({ seed, upMs: [4000, 15000], downMs: [500, 5000] });
  // Each kind at least once whatever the seed and size (assertFaultsCame): a 429 and a 500 on
  // the first sends that arrive, then the seeded random ones (a small run could draw no 429).
  sim.inject({ route: 'terminal/messages', kind: 'rate-limit', times: 1 });
  sim.inject({ route: 'terminal/messages', kind: 'server-error', times: 1 });
  for (const route of SEND_ROUTES) sim.inject({ route, kinds: ['server-error', 'unavailable', 'rate-limit', 'lost-reply'], probability, seed: seed + route.length, times: 'all' });
  for (const route of READ_ROUTES) sim.inject({ route, kinds: ['server-error', 'unavailable', 'rate-limit'], probability: readProbability, seed: seed + route.length, times: 'all' });
}

/** Moments (ms from the start) of `n` events, seeded, spread over `feedSeconds` and a little after it, each moved by up to `jitter` / 2 of its share, at least `gap` ms apart. */
function moments(random, n, { feedSeconds, gap, jitter }) {
  const span = feedSeconds * 1000 * 1.15;
  const out = [];
  for (let i = 0; i < n; i++) out.push((span * (i + 0.5 + (random() - 0.5) * jitter)) / n);
  out.sort((a, b) => a - b);
  for (let i = 1; i < out.length; i++) out[i] = Math.max(out[i], out[i - 1] + gap);
  return out;
}

/**
 * The plan fed at its pace (plan.length msgs over `feedSeconds` from `t0`), at most 20 msgs a
 * POST; msgs to feed again (not accepted before a kill) go first. The chaos files' feeders
 * add their run(): to which runtime, and what a failed POST means.
 */
class ChaosFeeder {
  constructor(plan, t0, feedSeconds) {
    Object.assign(this, { plan, t0, feedSeconds, cursor: 0, again: [], seq: 0, lastFeed: new Map(), posts: 0 });
  }

  get done() {
    return this.cursor >= this.plan.length && this.again.length === 0;
  }

  next() {
    if (this.again.length) return this.again.splice(0, 20);
    const due = Math.min(this.plan.length, Math.ceil((this.plan.length * (Date.now() - this.t0)) / (this.feedSeconds * 1000)));
    const batch = this.plan.slice(this.cursor, Math.min(due, this.cursor + 20));
    this.cursor += batch.length;
    return batch;
  }

  /** POSTs `batch` (without the plan's entries) to the feed of the runtime at `url`: the status; throws when the runtime does not answer. */
  static async post(url, batch) {
    const r = await fetch(`${url}/chaos/feed`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(batch.map(({ entries: _entries, ...m }) => m)) });
    await r.text();
    return r.status;
  }
}

/** The end's figures, added to `figures` and printed: the link's windows, the faults injected, the simulator's counters, the creations, the restarts' range. */
function endFigures(figures, sim, plan) {
  figures.link = { windows: sim.server.link.windows, swallowed: sim.server.link.swallowed };
  figures.injected = sim.server.injected;
  figures.counters = sim.terminal.counters;
  figures.creations = { total: sim.terminal.creations.total, entries: plan.reduce((n, m) => n + m.entries.length, 0), msgs: plan.length };
  figures.restartsMs = `${Math.min(...figures.restartsMs)}..${Math.max(...figures.restartsMs)}`;
  console.log(`      [figures] ${JSON.stringify(figures)}`);
}

/**
 * The verdict's promises, asserted (`v`: verdict()'s, `order` its order problems that count and
 * `among` whose order they are, `lives`: the kills (and failovers) a repeat may come across, or
 * 'last': any number, each among the outcomes an outbox gave last before a kill (v.notLast),
 * `across` their words).
 */
function assertVerdict(sim, records, v, { order = v.order, among = '', lostOutcomes, lives, across }) {
  assert.equal(records.torn, 0, 'no torn record line');
  assert.equal(v.created.length, 0, `each entry created once at each destination: ${some(v.created)}`);
  assert.equal(v.cancelled.length, 0, `each target cancelled once: ${some(v.cancelled)}`);
  assert.equal(order.length, 0, `acceptance order per destination and priority${among}: ${some(order)}`);
  assert.equal(lostOutcomes.length, 0, `no msg's outcome lost: ${some(lostOutcomes)}`);
  assert.equal(v.ended.length, 0, `each msg ended once, on output 1 (or once more across ${across}, with the same msg.outbox.key): ${some(v.ended)}`);
  if (lives === 'last') assert.equal(v.notLast.length, 0, `an outcome given again only for the msgs an outbox ended last before a kill: ${some(v.notLast)} (given again: ${some(v.repeated)})`);
  else assert.ok(v.repeated.length <= lives, `at most one outcome given again per ${across.replace(/^a /, '')}: ${some(v.repeated)}`);
  assert.equal(v.expired.length, 0, `none expired: ${some(v.expired)}`);
  assert.equal(sim.terminal.counters.throttled, 0, "the account's limits were never passed");
}

/** The run had its kinds of faults whatever its size: the link down at least once, a 5xx and a 429 answered. */
function assertFaultsCame(figures) {
  const w = figures.link.windows;
  const i = figures.injected;
  assert.ok((w.refused ?? 0) + (w['black-hole'] ?? 0) > 0, `the link dropped: ${JSON.stringify(w)}`);
  assert.ok((i['server-error'] ?? 0) + (i.unavailable ?? 0) > 0, `a 5xx came: ${JSON.stringify(i)}`);
  assert.ok((i['rate-limit'] ?? 0) > 0, `a 429 came: ${JSON.stringify(i)}`);
}

module.exports = {
  rng, demoTerminals, makePlan, entryKey, chaosFlows, readRecords, outcomesById, repeatAcrossKill, repeatsNotLast, keptOnDisk, inRedis, leaseHolder, touchedAtGateway, verdict, some,
  envInt, sleep, SEND_ROUTES, READ_ROUTES, CHAOS_SIMULATOR, chaosPlan, startFaults, moments, ChaosFeeder, endFigures, assertVerdict, assertFaultsCame,
};
