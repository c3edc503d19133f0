#!/usr/bin/env node
'use strict';
/**
 * node bench/outbox.js [--quick]   (after npm run build)
 *
 * The outbox's file store (issue 45), figures printed (BENCHMARKS.md is written by
 * bench/report.js from stored figures; this script only prints):
 * 1. accepted msgs per second into the outbox, durably (each accept resolves after the
 *    fdatasync that covers its record):
 *    - "as a flow sends them": msgs arrive one per event-loop turn (as Node-RED hands them to
 *      a node), each accept() called at once, not waiting for the ones before; each is
 *      acknowledged after its fsync, in acceptance order (checked), msgs that arrive during
 *      one fsync sharing the next (group commit): the figure the 5,000 msgs/s goal is about;
 *    - one at a time (the next accept only once the previous is durable): bounded by the
 *      disk's fsync latency, measured here too (fdatasync of a small append, median);
 *    - 64 at a time (64 producers each waiting for their own accept).
 * 2. 100,000 entries waiting: the store's size on disk, and in a fresh process (node
 *    --expose-gc) the time open() takes and the RSS above that process's idle RSS once they
 *    are loaded, after a forced GC: at once, and once V8 has shrunk its young generation
 *    (a few seconds idle: what a running Node-RED would show); with what that RSS holds
 *    (JS heap used, typed arrays). The same after accepting the 100,000 in one process.
 * A msg: one submit/messages item (a destination, a UserMessageID, a 16-byte payload)
 * and a small msg (topic, _msgid).
 */
const fs = require('node:fs');
const fsp = require('node:fs/promises');
const os = require('node:os');
const path = require('node:path');
const v8 = require('node:v8');
const { execFileSync } = require('node:child_process');
const { Outbox } = require('../dist/lib/outbox/outbox');
const { FileOutboxStore } = require('../dist/lib/outbox/file-store');

const QUICK = process.argv.includes('--quick');
const MB = 1048576;
const idle = { send: () => new Promise(() => {}), gatewayTime: () => Promise.reject(new Error('link down (bench)')) };
const reconciler = { reconcile: async (a, e) => e.map(() => ({ result: 'not-yet' })) };

/** node:fs/promises with its fdatasync calls counted. */
function countingFs(counter) {
  return {
    mkdir: fsp.mkdir, readdir: fsp.readdir, rename: fsp.rename, unlink: fsp.unlink,
    open: async (...args) => {
      const fh = await fsp.open(...args);
      const datasync = fh.datasync.bind(fh);
      fh.datasync = () => {
        counter.syncs++;
        return datasync();
      };
      return fh;
    },
  };
}

function outbox(dir, counter) {
  return new Outbox({
    name: 'bench', store: new FileOutboxStore(dir, { limitBytes: 256 * 1024 * 1024, ...(counter ? { fs: countingFs(counter) } : {}) }), sender: idle, reconciler,
    maxEntries: 1e6, maxBytes: 256 * 1024 * 1024, backoffMs: { first: 3600e3, max: 3600e3 },
  });
}

let n = 0;
function item() {
  n++;
  return [{ kind: 'message', item: { DestinationID: `01${String(n % 50).padStart(6, '0')}SKY${String(n % 97).padStart(3, '0')}`, UserMessageID: n, RawPayload: [16, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] } }];
}
const accept = (ob) => ob.accept(`m${n}`, { topic: 'bench', _msgid: `id${n}` }, item());

async function rate(ob, total, inFlight) {
  let next = 0;
  const t0 = process.hrtime.bigint();
  const worker = async () => {
    while (next < total) {
      next++;
      await accept(ob);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  return Math.round(total / s);
}

/** Msgs arriving one per event-loop turn, each accepted at once; acknowledged in order? */
async function asAFlowSends(ob, counter, total) {
  const acked = [];
  const all = [];
  const syncs0 = counter.syncs;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < total; i++) {
    all.push(accept(ob).then(() => acked.push(i)));
    await new Promise((r) => setImmediate(r)); // the next msg comes in the next turn
  }
  await Promise.all(all);
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  const inOrder = acked.every((x, i) => x === i);
  return { msgsPerSecond: Math.round(total / s), msgsPerFsync: +(total / (counter.syncs - syncs0)).toFixed(1), acknowledgedInAcceptanceOrder: inOrder };
}

/** fdatasync of a 200-byte append, as the store does it (FileHandle: write, then datasync). */
async function fsyncLatency(dir) {
  const fh = await fsp.open(path.join(dir, 'fsync-probe'), 'w');
  const buf = Buffer.alloc(200, 1);
  const times = [];
  for (let i = 0, pos = 0; i < (QUICK ? 200 : 2000); i++, pos += buf.length) {
    await fh.write(buf, 0, buf.length, pos);
    const t0 = process.hrtime.bigint();
    await fh.datasync();
    times.push(Number(process.hrtime.bigint() - t0) / 1e3);
  }
  await fh.close();
  times.sort((a, b) => a - b);
  return { medianUs: Math.round(times[times.length >> 1]), p90Us: Math.round(times[Math.floor(times.length * 0.9)]) };
}

function du(dir) {
  return fs.readdirSync(dir).reduce((a, f) => a + fs.statSync(path.join(dir, f)).size, 0);
}

const settle = (ms) => new Promise((r) => setTimeout(r, ms));

/** RSS and what holds it, after a forced GC. */
async function memory() {
  global.gc();
  await settle(200);
  global.gc();
  const m = process.memoryUsage();
  const young = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
  return { rss: m.rss, heapUsed: m.heapUsed, arrayBuffers: m.arrayBuffers, young: young ? young.space_size : 0 };
}

/** RSS above idle at once and settled (V8 shrinks its young generation after some seconds idle). */
async function above(idleMem) {
  const now = await memory();
  await settle(QUICK ? 3000 : 12000);
  const later = await memory();
  const mb = (x) => +(x / MB).toFixed(1);
  return {
    rssAboveIdleMB: mb(now.rss - idleMem.rss), rssAboveIdleSettledMB: mb(later.rss - idleMem.rss),
    heapUsedAboveIdleMB: mb(later.heapUsed - idleMem.heapUsed), typedArraysMB: mb(later.arrayBuffers - idleMem.arrayBuffers),
    youngGenerationMB: { atOnce: mb(now.young), settled: mb(later.young) },
  };
}

/** In a fresh process (argv: --load dir): idle RSS, open() time, RSS with the backlog loaded. */
async function load(dir) {
  const idleMem = await memory();
  const ob = outbox(dir);
  const t0 = process.hrtime.bigint();
  await ob.open();
  const openMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const mem = await above(idleMem);
  process.stdout.write(JSON.stringify({ waiting: ob.state().waiting, openMs: Math.round(openMs), ...mem }));
  await ob.close();
}

/** In a fresh process (argv: --fill dir count): idle RSS, then count accepted (256 in flight), RSS after. */
async function fillHere(dir, count) {
  const idleMem = await memory();
  const ob = outbox(dir);
  await ob.open();
  const perSecond = await rate(ob, count, 256);
  const mem = await above(idleMem);
  process.stdout.write(JSON.stringify({ acceptedPerSecond: perSecond, waiting: ob.state().waiting, ...mem }));
  await ob.close();
}

function child(args) {
  return JSON.parse(execFileSync(process.execPath, ['--expose-gc', __filename, ...args], { encoding: 'utf8' }));
}

async function rates(base) {
  const counter = { syncs: 0 };
  const ob = outbox(path.join(base, 'rates'), counter);
  await ob.open();
  const flow = await asAFlowSends(ob, counter, QUICK ? 2000 : 20000);
  const serial = await rate(ob, QUICK ? 500 : 3000, 1);
  const grouped = await rate(ob, QUICK ? 2000 : 20000, 64);
  await ob.close();
  return { asAFlowSendsThem: flow, oneAtATime: serial, sixtyFourAtATime: grouped, fdatasync: await fsyncLatency(base) };
}

async function main() {
  if (process.argv[2] === '--load') return load(process.argv[3]);
  if (process.argv[2] === '--fill') return fillHere(process.argv[3], Number(process.argv[4]));
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'iotgw-bench-outbox-'));
  try {
    const acceptPerSecond = await rates(base);
    const count = QUICK ? 10000 : 100000;
    const bigDir = path.join(base, 'backlog');
    const filled = child(['--fill', bigDir, String(count)]);
    const diskMB = +(du(bigDir) / MB).toFixed(1);
    const loaded = child(['--load', bigDir]);
    console.log(JSON.stringify({
      command: `node bench/outbox.js${QUICK ? ' --quick' : ''}`,
      machine: `${os.cpus().length} cores, load ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`, node: process.version,
      acceptPerSecond,
      backlog: { entries: count, diskMB, afterOpen: loaded, afterAcceptingInOneProcess: filled },
      goals: { acceptPerSecond: 5000, diskMB: 64, rssAboveIdleMB: 30, openAddsAtMostMs: 2000 },
    }, null, 2));
  } finally {
    fs.rmSync(base, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
