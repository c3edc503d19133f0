'use strict';
/**
 * From-mobile messages drained per minute by iotgw-message-poller, against the gateway's
 * limit (5 GET calls per sliding 60 s x 500 messages a reply = 2,500 a minute).
 *
 *   npm run build && node bench/from-mobile-drain.js [--seconds 125] [--backlog 10000]
 *
 * A simulator in this process with the real limits (5 calls per 60 s per throttle group,
 * 3 concurrent) holds a backlog of from-mobile messages (10 a second, so no crowded
 * second); a child Node-RED runs the poller (gateway config with the same limits, output
 * one msg per message, counted by a function node writing to a file). Prints the count
 * every 10 s and the messages drained per minute; checks that the gateway threw no 429.
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { startSimulator } = require('../dist/simulator');
const { ChildRed, makeUserDir, childGateway } = require('../test/helpers/child-red');

const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
};

async function main() {
  const seconds = arg('--seconds', 125);
  const backlog = arg('--backlog', 10000);
  const sim = await startSimulator({ terminal: { rateLimitCalls: 5, rateLimitWindowMs: 60_000, maxConcurrent: 3 } });
  sim.server.maxCallLog = 1000;
  const base = Math.floor(Date.now() / 1000) - Math.ceil(backlog / 10) - 10;
  sim.terminal.mobile.seed({ count: backlog, perSecond: 10, startSec: base });
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'iotgw-fm-bench-')), 'ids.txt');
  const userDir = makeUserDir({ recordsFile: file });
  const red = await new ChildRed(userDir).start();
  const count = () => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).length : 0);
  try {
    await red.deploy([
      { id: 'tab', type: 'tab', label: 'bench' },
      // The default limits (5 calls a minute), as a user leaves them.
      childGateway(sim, { id: 'gw', rateLimitCalls: 5, timeoutSeconds: 65 }),
      { id: 'mp', z: 'tab', type: 'iotgw-message-poller', gateway: 'gw', intervalSeconds: 60, startFrom: new Date(base * 1000).toISOString().slice(0, 19).replace('T', ' '), output: 'record', contextStore: '', autoStart: true, wires: [['c']] },
      { id: 'c', z: 'tab', type: 'function', func: "global.get('append')(String(msg.payload.ID) + '\\n'); return null;", outputs: 0, wires: [] },
    ]);
    const t0 = Date.now();
    const marks = [];
    while (Date.now() - t0 < seconds * 1000) {
      await new Promise((r) => setTimeout(r, 10_000));
      const n = count();
      marks.push({ s: Math.round((Date.now() - t0) / 1000), drained: n });
      process.stdout.write(`  t=${marks[marks.length - 1].s}s drained=${n}\n`);
      if (n >= backlog) break;
    }
    const calls = sim.server.callsTo('terminal/re_messages');
    const throttled = calls.filter((c) => c.status === 429).length;
    const at = (s) => marks.filter((m) => m.s <= s).pop()?.drained ?? 0;
    const perMinute = marks.length && marks[marks.length - 1].s >= 120 ? (at(120) - at(60)) : at(60);
    const out = {
      backlog,
      seconds: marks[marks.length - 1]?.s,
      drained: count(),
      firstMinute: at(60),
      secondMinute: at(120) - at(60),
      perMinute,
      limitPerMinute: 2500,
      ofLimit: Math.round((perMinute / 2500) * 100) / 100,
      calls: calls.length,
      throttled429: throttled,
    };
    process.stdout.write(`${JSON.stringify(out)}\n`);
  } finally {
    await red.kill('SIGINT');
    await sim.close();
    fs.rmSync(userDir, { recursive: true, force: true });
    fs.rmSync(path.dirname(file), { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`${err.stack || err}\n`);
  process.exit(1);
});
