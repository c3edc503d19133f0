#!/usr/bin/env node
'use strict';
/**
 * The outbox's drain after an outage (issue 45, "Proof": "after a 30-minute outage with 2,000
 * waiting, the drain runs at 100% of the SEND limit with 0 x 429 and new commands are not
 * starved").
 *
 *   npm run build && OUTAGE_MINUTES=30 node bench/outbox-drain.js [--backlog 2000] [--calls 5 --window-seconds 60]
 *
 * A simulator in this process with the gateway's SEND limit (default 5 calls per sliding
 * 60 s, 3 concurrent); a child Node-RED (test/helpers/child-red.js) whose iotgw-send-message
 * has the outbox on (TTL 2 h) and the account's limit set to the same. The link is refused
 * (`sim.server.link.refuse()`), the backlog fed through an http-in route (priority 4, one
 * entry per msg, 50 destinations), the link kept down OUTAGE_MINUTES (default 30; a shorter
 * value for a quick check), then up. During the drain a new command (priority 0) is fed every
 * 10 s; the flow records each outcome with its time. Printed: the SEND calls the simulator
 * served after the link came back (items per call, calls per sliding window against the
 * limit), the entries drained per minute against the limit (calls x 100), the simulator's
 * 429 count, and how long each new command took from input to its outcome.
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { startSimulator } = require('../dist/simulator');
const { ChildRed, makeUserDir, childGateway } = require('../test/helpers/child-red');
const { demoTerminals } = require('../test/helpers/outbox-chaos');

const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (s) => process.stdout.write(`[${new Date().toISOString().slice(11, 19)}] ${s}\n`);

function flows(sim, calls, windowSeconds) {
  const rec = (id, expr) => ({ id, z: 'tab1', type: 'function', x: 300, y: 100, func: `global.get('append')(JSON.stringify(${expr}) + '\\n');\nreturn null;`, outputs: 0, wires: [] });
  return [
    { id: 'tab1', type: 'tab', label: 'outbox drain' },
    childGateway(sim, { rateLimitCalls: calls, rateLimitWindowSeconds: windowSeconds, maxConcurrent: 3, timeoutSeconds: 10 }),
    { id: 'feed', z: 'tab1', type: 'http in', x: 100, y: 40, url: '/bench/feed', method: 'post', upload: false, wires: [['split']] },
    {
      id: 'split', z: 'tab1', type: 'function', x: 200, y: 40, outputs: 2, wires: [['send'], ['res']],
      func: 'for (const m of msg.payload) node.send([{ topic: m.id, benchId: m.id, fedAt: Date.now(), priority: m.priority, payload: m.payload }, null]);\nreturn [null, { req: msg.req, res: msg.res, payload: "fed" }];',
    },
    { id: 'res', z: 'tab1', type: 'http response', x: 300, y: 40, statusCode: '200', wires: [] },
    {
      id: 'send', z: 'tab1', type: 'iotgw-send-message', x: 300, y: 60, gateway: 'gw1', transportType: '', messageLifetime: '', messageClass: '', maxRawBytes: 1023,
      outbox: 'on', outboxName: 'drain', ttlSeconds: 7200, outboxMaxEntries: 10000, outboxMaxBytes: 67108864, whenFull: 'reject', wires: [['ok'], ['rej']],
    },
    rec('ok', "{ t: 'ok', id: msg.benchId, fedAt: msg.fedAt, at: Date.now(), outbox: msg.outbox }"),
    rec('rej', "{ t: 'rej', id: msg.benchId, at: Date.now() }"),
    { id: 'caught', z: 'tab1', type: 'catch', x: 100, y: 160, scope: ['send'], uncaught: false, wires: [['err']] },
    rec('err', "{ t: 'err', id: msg.benchId, code: msg.error && msg.error.code, at: Date.now() }"),
    { id: 'st', z: 'tab1', type: 'status', x: 100, y: 200, scope: ['send'], wires: [['stat']] },
    rec('stat', "{ t: 'status', text: msg.status.text, at: Date.now() }"),
  ];
}

function readLines(file) {
  if (!fs.existsSync(file)) return [];
  const text = fs.readFileSync(file, 'utf8');
  // A line being written as it is read (no newline yet) is left for the next read.
  return text.slice(0, text.lastIndexOf('\n') + 1).split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

async function feed(red, msgs) {
  for (let i = 0; i < msgs.length; i += 200) {
    const r = await fetch(`${red.url}/bench/feed`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(msgs.slice(i, i + 200)) });
    if (!r.ok) throw new Error(`feed: HTTP ${r.status}`);
  }
}

const raw = (n) => Buffer.from([128, 1, (n >> 24) & 255, (n >> 16) & 255, (n >> 8) & 255, n & 255]).toString('base64');

/** The most SEND calls in any sliding window of `windowMs` (the simulator's own count). */
function maxInWindow(times, windowMs) {
  let most = 0;
  for (let i = 0, j = 0; i < times.length; i++) {
    while (times[i] - times[j] >= windowMs) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

async function main() {
  const outageMin = Number(process.env.OUTAGE_MINUTES ?? 30);
  const backlog = arg('--backlog', 2000);
  const calls = arg('--calls', 5);
  const windowSeconds = arg('--window-seconds', 60);
  const sim = await startSimulator({ terminal: { rateLimitCalls: calls, rateLimitWindowMs: windowSeconds * 1000, maxConcurrent: 3 } });
  sim.server.maxCallLog = 100000;
  const dests = demoTerminals(sim, 50, true).map((t) => t.id);
  const records = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'iotgw-drain-bench-')), 'records.txt');
  const userDir = makeUserDir({ recordsFile: records });
  const red = await new ChildRed(userDir).start(60000);
  try {
    await red.deploy(flows(sim, calls, windowSeconds));
    await sleep(3000);
    sim.server.link.refuse();
    const downAt = Date.now();
    log(`link refused; feeding ${backlog} msgs (priority 4)`);
    await feed(red, Array.from({ length: backlog }, (_, i) => ({ id: `b${i}`, priority: 4, payload: { DestinationID: dests[i % dests.length], RawPayload: raw(i) } })));
    for (;;) {
      const st = readLines(records).filter((r) => r.t === 'status').pop();
      if (st && new RegExp(`${backlog.toLocaleString('en-US')} waiting`).test(st.text)) break;
      if (Date.now() - downAt > 300_000) throw new Error(`the backlog was not accepted: ${st && st.text}`);
      await sleep(500);
    }
    log(`${backlog} waiting (accepted in ${Date.now() - downAt} ms); outage of ${outageMin} min`);
    while (Date.now() - downAt < outageMin * 60_000) await sleep(5000);
    sim.server.clearCalls();
    const throttled0 = sim.terminal.counters.throttled;
    await sim.server.link.up();
    const upAt = Date.now();
    log('link up');
    const fresh = [];
    let lastFresh = 0;
    let lastLog = 0;
    for (;;) {
      const recs = readLines(records);
      const done = recs.filter((r) => r.t !== 'status' && r.id.startsWith('b')).length;
      const freshDone = recs.filter((r) => r.t !== 'status' && r.id.startsWith('n')).length;
      if (done >= backlog && freshDone >= fresh.length) break;
      // A new command (priority 0) every 10 s while the backlog drains.
      if (done < backlog && Date.now() - lastFresh >= 10_000) {
        lastFresh = Date.now();
        const id = `n${fresh.length}`;
        fresh.push(id);
        await feed(red, [{ id, priority: 0, payload: { DestinationID: dests[fresh.length % dests.length], RawPayload: raw(1e6 + fresh.length) } }]);
      }
      if (Date.now() - upAt > 3600_000) throw new Error('the drain did not end within an hour');
      if (Date.now() - lastLog >= 30_000) {
        lastLog = Date.now();
        log(`drained ${done}/${backlog}, new commands ${freshDone}/${fresh.length}`);
      }
      await sleep(1000);
    }
    const recs = readLines(records);
    const sends = sim.server.callsTo('terminal/messages').filter((c) => c.status === 200);
    const items = sends.map((c) => JSON.parse(c.body).length);
    const times = sends.map((c) => c.at);
    const first = times[0];
    const backlogRecs = recs.filter((r) => r.t !== 'status' && r.id.startsWith('b'));
    const lastBacklogAt = Math.max(...backlogRecs.map((r) => r.at));
    // Windows of the limit from the first send on: calls and entries in each. Every window but
    // the last (where the backlog ran out) full is 100% of the limit.
    const windows = [];
    sends.forEach((c, i) => {
      const w = Math.floor((c.at - first) / (windowSeconds * 1000));
      windows[w] ??= { calls: 0, entries: 0 };
      windows[w].calls++;
      windows[w].entries += items[i];
    });
    const limitPerMin = (calls * 100 * 60) / windowSeconds;
    const entriesSent = items.reduce((a, b) => a + b, 0);
    const before = windows.slice(0, -1).filter(Boolean);
    const pct = before.length ? Math.round((before.reduce((a, w) => a + w.entries, 0) / (before.length * calls * 100)) * 100) : NaN;
    const freshRecs = recs.filter((r) => r.t !== 'status' && r.id.startsWith('n'));
    const lat = freshRecs.map((r) => r.at - r.fedAt).sort((a, b) => a - b);
    const out = {
      command: `OUTAGE_MINUTES=${outageMin} node bench/outbox-drain.js --backlog ${backlog} --calls ${calls} --window-seconds ${windowSeconds}`,
      machine: `${os.cpus().length} cores (${os.cpus()[0].model}), load ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`, node: process.version,
      outageMinutes: outageMin, backlog,
      sendLimit: `${calls} calls / ${windowSeconds} s x 100 entries = ${limitPerMin} entries/min`,
      firstSendAfterLinkUpMs: first - upAt,
      calls: sends.map((c, i) => `+${c.at - first} ms: ${items[i]}${items[i] < 5 ? ` ${c.body.slice(0, 200)}` : ""}`).join(", "),
      sendCalls: sends.length, itemsPerCall: { min: Math.min(...items), max: Math.max(...items), total: entriesSent },
      mostCallsInAnyWindow: maxInWindow(times, windowSeconds * 1000),
      perWindow: windows.map((w) => w ?? { calls: 0, entries: 0 }),
      percentOfLimitInWindowsBeforeTheLast: pct,
      backlogDrainedMsAfterLinkUp: lastBacklogAt - upAt,
      throttled429: sim.terminal.counters.throttled - throttled0,
      outcomes: { ok: recs.filter((r) => r.t === 'ok').length, rejected: recs.filter((r) => r.t === 'rej').length, errors: recs.filter((r) => r.t === 'err').length },
      created: sim.terminal.creations.total, duplicates: sim.terminal.creations.duplicates().length,
      newCommands: { fed: fresh.length, ended: lat.length, latencyMs: { median: lat[lat.length >> 1], max: lat[lat.length - 1] } },
    };
    console.log(JSON.stringify(out, null, 2));
  } finally {
    await red.kill('SIGTERM').catch(() => {});
    await sim.close();
    fs.rmSync(userDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
