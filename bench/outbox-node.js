#!/usr/bin/env node
'use strict';
/**
 * The outbox through a real Node-RED node (issue 45, "Proof": accepts per second, goal 5,000
 * msgs/s durably; Node-RED's start with 100,000 entries waiting at most 2 s longer).
 *
 *   npm run build && node bench/outbox-node.js [--msgs 20000] [--runs 3] [--backlog 100000] [--starts 2]
 *
 * A child Node-RED (bench/lib/red.js), a simulator in this process whose link is refused (an
 * outage: nothing drains while msgs are accepted).
 * 1. Accepts per second: a function node sends --msgs msgs at once (one submit/messages
 *    item each: a destination of 50, a 16-byte RawPayload, a topic), as a flow that fans
 *    out an array does; the clock stops when all are durable: for iotgw-send-message with
 *    the outbox on, when its engine holds them all as waiting (each counted only after the
 *    fdatasync that covers it); for the baselines (bench/sync-node), when each msg's line
 *    was appended and fdatasync'ed: `each` (one at a time, the next after the previous is
 *    synced) and `group` (group commit: the disk's ceiling for a node). Median of --runs,
 *    each in the same runtime. fdatasyncs counted.
 * 2. Start with a backlog: --backlog entries accepted (as above), Node-RED stopped
 *    (SIGINT), then started again on that user directory, and on one whose outbox is empty
 *    (--starts each, alternated): the time from spawn to "Started flows" in its log, and to
 *    the node's status showing the backlog ("outbox: 100,000 waiting") or "outbox: empty";
 *    the runtime's RSS 10 s after start (after a GC) with and without the backlog.
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { startSimulator } = require('../dist/simulator');
const { ChildRed, makeUserDir } = require('./lib/red');
const { childGateway } = require('../test/helpers/child-red');
const { demoTerminals } = require('../test/helpers/outbox-chaos');

const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const MB = 1048576;

/** The function node that fires `n` msgs (?n=) at `target` and stops the clock when `done()` says all are durable. */
function fireFunc(kind, dests) {
  const done = kind === 'outbox' ? "b.outboxWaiting('bench')" : "b.count('synced')";
  const syncs = kind === 'outbox' ? "b.outboxSyncs('bench')" : "b.count('syncs')";
  return `const b = global.get('bench');
const n = Number(msg.req.query.n);
const dests = ${JSON.stringify(dests)};
const base = ${done};
const syncs0 = ${syncs};
const t0 = b.now();
for (let i = 0; i < n; i++) {
  const raw = Buffer.alloc(16, i & 255);
  raw.writeUInt32BE(i, 0);
  node.send([{ topic: 'bench', payload: { DestinationID: dests[i % dests.length], RawPayload: raw.toString('base64') } }, null]);
}
const iv = setInterval(() => {
  if (${done} - base >= n) {
    clearInterval(iv);
    b.inc('acceptMs', b.now() - t0);
    b.inc('runSyncs', ${syncs} - syncs0);
  }
}, 1);
return [null, { req: msg.req, res: msg.res, payload: 'fired' }];`;
}

function flows(sim, kind, dests, file) {
  const target =
    kind === 'outbox'
      ? { id: 'target', type: 'iotgw-send-message', gateway: 'gw1', transportType: '', messageLifetime: '', messageClass: '', maxRawBytes: 1023, outbox: 'on', outboxName: 'bench', ttlSeconds: 86400, outboxMaxEntries: 1000000, outboxMaxBytes: 256 * MB, whenFull: 'reject', wires: [[], []] }
      : { id: 'target', type: 'bench-sync', file, mode: kind, wires: [] };
  const status = `if (/waiting|empty/.test(msg.status.text || '') && !context.get('seen')) { context.set('seen', true); global.get('bench').inc('statusAt', Date.now()); global.get('bench').inc(/empty/.test(msg.status.text) ? 'statusEmpty' : 'statusWaiting', 1); }
return null;`;
  const placed = (nodes) => nodes.map((x, i) => (x.z === undefined && x.type !== 'tab' && !x.type.startsWith('iotgw-gateway') ? { z: 'tab1', x: 200, y: 40 * (i + 1), ...x } : x));
  return placed([
    { id: 'tab1', type: 'tab', label: 'outbox bench' },
    childGateway(sim, { timeoutSeconds: 10 }),
    { id: 'fire', type: 'http in', url: '/bench/fire', method: 'get', upload: false, wires: [['func']] },
    { id: 'func', type: 'function', func: fireFunc(kind, dests), outputs: 2, wires: [['target'], ['res']] },
    { id: 'res', type: 'http response', statusCode: '200', wires: [] },
    target,
    { id: 'st', type: 'status', scope: ['target'], wires: [['stf']] },
    { id: 'stf', type: 'function', func: status, outputs: 0, wires: [] },
  ]);
}

/** Fires n msgs; resolves {ms, syncs} once all are durable. */
async function fire(red, n) {
  await red.reset();
  const r = await fetch(`${red.url}/bench/fire?n=${n}`);
  if (!r.ok) throw new Error(`fire: HTTP ${r.status}`);
  for (;;) {
    const s = await red.stats();
    if (s.counters.acceptMs) return { ms: s.counters.acceptMs, syncs: s.counters.runSyncs };
    await sleep(50);
  }
}

async function rates(sim, dests, msgs, runs) {
  const out = {};
  const kinds = process.argv.includes('--kinds') ? process.argv[process.argv.indexOf('--kinds') + 1].split(',') : ['outbox', 'each', 'group'];
  for (const kind of kinds) {
    const dir = makeUserDir('link', { sync: true });
    const red = await new ChildRed(dir).start();
    try {
      await red.deploy(flows(sim, kind, dests, path.join(dir, 'sync-queue.log')));
      await sleep(2000);
      const got = [];
      for (let i = 0; i < runs; i++) got.push(await fire(red, kind === 'each' ? Math.min(msgs, 3000) : msgs));
      const n = kind === 'each' ? Math.min(msgs, 3000) : msgs;
      const perS = got.map((g) => Math.round(n / (g.ms / 1000)));
      out[kind] = { msgs: n, msgsPerSecond: median(perS), runs: perS, msgsPerSync: +(n / median(got.map((g) => g.syncs))).toFixed(1) };
      process.stdout.write(`  ${kind}: ${JSON.stringify(out[kind])}\n`);
    } finally {
      await red.stop();
    }
  }
  return out;
}

/** Starts Node-RED on `dir`: ms from spawn to "Started flows" and to the node's first outbox status; RSS 10 s in. */
async function timedStart(dir) {
  const red = new ChildRed(dir, { ownDir: false });
  const t0 = Date.now();
  let startedAt;
  const startP = red.start(120000);
  // The child's stdout is read by the launcher as it comes; look for the line as it arrives.
  const watch = setInterval(() => {
    if (!startedAt && /Started flows/.test(red.output)) startedAt = Date.now();
  }, 2);
  await startP;
  let s;
  for (;;) {
    s = await red.stats();
    if (s.counters.statusAt && startedAt) break;
    if (Date.now() - t0 > 120000) throw new Error(`no status within 120 s: ${red.lastLines()}`);
    await sleep(20);
  }
  clearInterval(watch);
  await sleep(Math.max(0, 10000 - (Date.now() - t0)));
  await red.gc();
  await sleep(500);
  const rss = red.procMem().rss;
  await red.stop();
  return { flowsStartedMs: startedAt - t0, statusMs: s.counters.statusAt - t0, status: s.counters.statusWaiting ? 'waiting' : 'empty', rssMB: +(rss / MB).toFixed(1) };
}

async function starts(sim, dests, backlog, count) {
  const info = (dir) => fs.writeFileSync(path.join(dir, 'settings.js'), fs.readFileSync(path.join(dir, 'settings.js'), 'utf8').replace("level: 'warn'", "level: 'info'"));
  const full = makeUserDir('link');
  const empty = makeUserDir('link');
  try {
    for (const dir of [full, empty]) {
      info(dir);
      const red = await new ChildRed(dir, { ownDir: false }).start();
      await red.deploy(flows(sim, 'outbox', dests));
      await sleep(2000);
      if (dir === full) await fire(red, backlog);
      await red.stop();
    }
    const logDir = path.join(full, 'iotgw-outbox', 'bench');
    const diskMB = +(fs.readdirSync(logDir).reduce((a, f) => a + fs.statSync(path.join(logDir, f)).size, 0) / MB).toFixed(1);
    const with_ = [];
    const without = [];
    for (let i = 0; i < count; i++) {
      without.push(await timedStart(empty));
      with_.push(await timedStart(full));
      process.stdout.write(`  start ${i + 1}: without ${JSON.stringify(without[i])}, with ${JSON.stringify(with_[i])}\n`);
    }
    const m = (xs, k) => median(xs.map((x) => x[k]));
    return {
      backlog, diskMB,
      withoutBacklog: { flowsStartedMs: m(without, 'flowsStartedMs'), statusMs: m(without, 'statusMs'), rssMB: m(without, 'rssMB') },
      withBacklog: { flowsStartedMs: m(with_, 'flowsStartedMs'), statusMs: m(with_, 'statusMs'), rssMB: m(with_, 'rssMB') },
      runs: { without, with: with_ },
    };
  } finally {
    fs.rmSync(full, { recursive: true, force: true });
    fs.rmSync(empty, { recursive: true, force: true });
  }
}

async function main() {
  const sim = await startSimulator({ terminal: { rateLimitCalls: 5, rateLimitWindowMs: 60000, maxConcurrent: 3 } });
  const dests = demoTerminals(sim, 50, true).map((t) => t.id);
  sim.server.link.refuse();
  try {
    const only = process.argv.includes('--start-only') ? null : await rates(sim, dests, arg('--msgs', 20000), arg('--runs', 3));
    const start = process.argv.includes('--rate-only') ? null : await starts(sim, dests, arg('--backlog', 100000), arg('--starts', 2));
    console.log(JSON.stringify({
      command: `node ${process.argv.slice(1).map((a) => path.relative(process.cwd(), a) || a).join(' ')}`,
      machine: `${os.cpus().length} cores (${os.cpus()[0].model}), load ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`, node: process.version,
      acceptsThroughTheNode: only, startWithBacklog: start,
    }, null, 2));
  } finally {
    await sim.server.link.up();
    await sim.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
