#!/usr/bin/env node
'use strict';
/**
 * node bench/outbox.js [--quick]   (after npm run build)
 *
 * The outbox's file store (issue 45), figures printed (BENCHMARKS.md is written by
 * bench/report.js from stored figures; this script only prints):
 * 1. accepted msgs per second into the file store, durably (each accept resolves after its
 *    record is fdatasync'ed): one msg at a time (a node takes its next msg only then), and
 *    64 at a time (several nodes on one outbox: one sync for many accepts);
 * 2. 100,000 entries waiting: the store's size on disk, and in a fresh process the time
 *    open() takes and the RSS above that process's idle RSS once they are loaded.
 * A msg: one submit/messages item (a destination, a UserMessageID, a 16-byte payload)
 * and a small msg (topic, _msgid).
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { Outbox } = require('../dist/lib/outbox/outbox');
const { FileOutboxStore } = require('../dist/lib/outbox/file-store');

const QUICK = process.argv.includes('--quick');
const idle = { send: () => new Promise(() => {}), gatewayTime: () => Promise.reject(new Error('link down (bench)')) };
const reconciler = { reconcile: async (a, e) => e.map(() => ({ result: 'not-yet' })) };

function outbox(dir, extra = {}) {
  return new Outbox({
    name: 'bench', store: new FileOutboxStore(dir, { limitBytes: 256 * 1024 * 1024 }), sender: idle, reconciler,
    maxEntries: 1e6, maxBytes: 256 * 1024 * 1024, backoffMs: { first: 3600e3, max: 3600e3 }, ...extra,
  });
}

let n = 0;
function item() {
  n++;
  return [{ kind: 'message', item: { DestinationID: `01${String(n % 50).padStart(6, '0')}SKY${String(n % 97).padStart(3, '0')}`, UserMessageID: n, RawPayload: [16, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] } }];
}

async function rate(ob, total, inFlight) {
  let next = 0;
  const t0 = process.hrtime.bigint();
  const worker = async () => {
    while (next < total) {
      next++;
      await ob.accept(`m${n}`, { topic: 'bench', _msgid: `id${n}` }, item());
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  return Math.round(total / s);
}

function du(dir) {
  return fs.readdirSync(dir).reduce((a, f) => a + fs.statSync(path.join(dir, f)).size, 0);
}

async function fill(dir, count) {
  const ob = outbox(dir);
  await ob.open();
  const perSecond = await rate(ob, count, 256);
  await ob.close();
  return perSecond;
}

/** In a fresh process (argv: --load dir): idle RSS, open() time, RSS with the backlog loaded. */
async function load(dir) {
  global.gc?.();
  await new Promise((r) => setTimeout(r, 200));
  const idleRss = process.memoryUsage().rss;
  const ob = outbox(dir);
  const t0 = process.hrtime.bigint();
  await ob.open();
  const openMs = Number(process.hrtime.bigint() - t0) / 1e6;
  global.gc?.();
  await new Promise((r) => setTimeout(r, 200));
  global.gc?.();
  const rss = process.memoryUsage().rss;
  const heap = process.memoryUsage().heapUsed;
  process.stdout.write(JSON.stringify({ waiting: ob.state().waiting, openMs: Math.round(openMs), rssAboveIdleMB: +((rss - idleRss) / 1048576).toFixed(1), heapUsedMB: +(heap / 1048576).toFixed(1) }));
  await ob.close();
}

async function main() {
  if (process.argv[2] === '--load') return load(process.argv[3]);
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'iotgw-bench-outbox-'));
  try {
    const serialDir = path.join(base, 'serial');
    const ob = outbox(serialDir);
    await ob.open();
    const serial = await rate(ob, QUICK ? 500 : 3000, 1);
    const grouped = await rate(ob, QUICK ? 2000 : 20000, 64);
    await ob.close();
    const count = QUICK ? 10000 : 100000;
    const bigDir = path.join(base, 'backlog');
    const fillRate = await fill(bigDir, count);
    const diskMB = +(du(bigDir) / 1048576).toFixed(1);
    const loaded = JSON.parse(execFileSync(process.execPath, ['--expose-gc', __filename, '--load', bigDir], { encoding: 'utf8' }));
    console.log(JSON.stringify({
      machine: `${os.cpus().length} cores, load ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`, node: process.version,
      acceptPerSecond: { oneAtATime: serial, sixtyFourAtATime: grouped, filling256AtATime: fillRate },
      backlog: { entries: count, diskMB, ...loaded },
      goals: { acceptPerSecond: 5000, diskMB: 64, rssAboveIdleMB: 30 },
    }, null, 2));
  } finally {
    fs.rmSync(base, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
