'use strict';
/**
 * Figure 6: the message-definitions codec (src/lib/codec).
 *
 * - micro (a child node with --expose-gc, one core): decodes and encodes per second of the
 *   19-byte SatelliteTelemetry of examples/definitions/demo.idpmsg and of a 30-field message
 *   (ints of 1..64 bits, booleans, enums, strings, data, an array, an optional field), for
 *   ~1 s each after a warm-up; decode + common message format (what the poller does); heap
 *   bytes per decoded message (100,000 results kept, full GCs around).
 * - worst (bench/lib/codec-worst.js): layouts right at the load-time bound of values, decoded
 *   and turned into the common message format many times: median and slowest, wall and CPU;
 *   a 2 MB message refused; a definitions file at the 4 MB cap loaded.
 * - drain: a child Node-RED, the simulator with its limits off holding a backlog of
 *   RawPayload-only SatelliteTelemetry; iotgw-message-poller drains it into a counting function
 *   node, without and with definitions (alternating rounds, median): the time decoding adds.
 *
 *   npm run bench -- codec        (or: node bench/figures/codec.js [--quick])
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const ROOT = path.join(__dirname, '..', '..');

function fields30() {
  const f = (type, name, extra = '') => `<Field xsi:type="${type}"><Name>${name}</Name>${extra}</Field>`;
  const list = [];
  const sizes = [3, 7, 8, 12, 16, 20, 31, 32, 48, 64];
  sizes.forEach((s, i) => list.push(f('UnsignedIntField', `u${i}`, `<Size>${s}</Size>`)));
  [5, 13, 24, 32, 64].forEach((s, i) => list.push(f('SignedIntField', `s${i}`, `<Size>${s}</Size>`)));
  for (let i = 0; i < 5; i++) list.push(f('BooleanField', `b${i}`));
  for (let i = 0; i < 3; i++) list.push(f('EnumField', `e${i}`, '<Size>3</Size><Items><string>a</string><string>b</string><string>c</string><string>d</string></Items>'));
  for (let i = 0; i < 3; i++) list.push(f('StringField', `t${i}`, '<Size>20</Size>'));
  for (let i = 0; i < 2; i++) list.push(f('DataField', `d${i}`, '<Size>8</Size>'));
  list.push(f('ArrayField', 'arr', `<Size>4</Size><Fields>${f('UnsignedIntField', 'v', '<Size>10</Size>')}${f('BooleanField', 'ok')}</Fields>`));
  list.push(f('UnsignedIntField', 'opt', '<Optional>true</Optional><Size>8</Size>'));
  return `<MessageDefinition xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><Services><Service><Name>b</Name><SIN>100</SIN><ReturnMessages><Message><Name>Thirty</Name><MIN>1</MIN><Fields>${list.join('')}</Fields></Message></ReturnMessages></Service></Services></MessageDefinition>`;
}

/** A definitions file of 10,000 return messages. */
function tenThousand() {
  const f = (type, name, extra) => `<Field xsi:type="${type}"><Name>${name}</Name>${extra}</Field>`;
  const services = [];
  for (let sin = 0; sin < 40; sin++) {
    const msgs = [];
    for (let min = 0; min < 250; min++) {
      msgs.push(`<Message><Name>m${min}</Name><MIN>${min}</MIN><Fields>${f('UnsignedIntField', 'a', '<Size>12</Size>')}${f('SignedIntField', 'b', '<Size>20</Size>')}${f('StringField', 'c', '<Size>20</Size>')}${f('EnumField', 'd', '<Size>2</Size><Items><string>x</string><string>y</string></Items>')}</Fields></Message>`);
    }
    services.push(`<Service><Name>s${sin}</Name><SIN>${sin}</SIN><ReturnMessages>${msgs.join('')}</ReturnMessages></Service>`);
  }
  return `<?xml version="1.0" encoding="utf-8"?><MessageDefinition xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><Services>${services.join('\n')}</Services></MessageDefinition>`;
}

/** Runs in the child: prints the micro figures as JSON. */
function micro(quick) {
  const { loadDefinitions, toCmf } = require(path.join(ROOT, 'dist/lib/codec'));
  const demo = loadDefinitions([{ text: fs.readFileSync(path.join(ROOT, 'examples/definitions/demo.idpmsg'), 'utf8'), source: 'demo' }]);
  const thirty = loadDefinitions([{ text: fields30(), source: 'thirty' }]);
  const tele = Buffer.from('FF01CE79A54853187DBAAB0C029803AE03263E', 'hex');
  const values = { u0: 5, u1: 100, u2: 200, u3: 4000, u4: 65000, u5: 1000000, u6: 2000000000, u7: 4000000000, u8: 2 ** 47, u9: '18446744073709551615', s0: -5, s1: -4000, s2: 8000000, s3: -2000000000, s4: '-9223372036854775807', b0: true, b1: false, b2: true, b3: false, b4: true, e0: 'a', e1: 'c', e2: 'd', t0: 'hello', t1: 'terminal 42', t2: '', d0: Buffer.from([1, 2, 3, 4]), d1: Buffer.alloc(8, 7), arr: [{ v: 1, ok: true }, { v: 1023, ok: false }], opt: 9 };
  const m30 = thirty.find(100, 1, 'return');
  const bytes30 = m30.encode(values);
  const msTarget = quick ? 200 : 1000;
  const rate = (fn) => {
    for (let i = 0; i < 100_000; i++) fn();
    let n = 0;
    const t0 = process.hrtime.bigint();
    let el = 0;
    while (el < msTarget) {
      for (let i = 0; i < 10_000; i++) fn();
      n += 10_000;
      el = Number(process.hrtime.bigint() - t0) / 1e6;
    }
    return Math.round(n / (el / 1000));
  };
  const heapPer = (fn) => {
    const N = 100_000;
    const keep = [];
    for (let k = 0; k < 3; k++) global.gc();
    const h0 = process.memoryUsage().heapUsed;
    for (let i = 0; i < N; i++) keep.push(fn());
    for (let k = 0; k < 3; k++) global.gc();
    const h1 = process.memoryUsage().heapUsed;
    if (keep.length !== N) throw new Error('kept');
    return Math.round((h1 - h0) / N - 8); // less the array's own slot
  };
  // Loading a file of 10,000 messages (40 services of 250, four fields each): median of 5.
  const bigFile = tenThousand();
  const loads = [];
  for (let i = 0; i < 5; i++) {
    const t = process.hrtime.bigint();
    const d = loadDefinitions([{ text: bigFile, source: 'ten-thousand' }]);
    loads.push(Number(process.hrtime.bigint() - t) / 1e6);
    if (d.summary().return !== 10000) throw new Error('the 10,000-message file did not load whole');
  }
  loads.sort((a, b) => a - b);
  const mTele = demo.find(255, 1, 'return');
  // Heap first, on a quiet heap (before the throughput loops leave garbage behind).
  const heapTele = heapPer(() => mTele.decode(tele));
  const heap30 = heapPer(() => m30.decode(bytes30));
  const out = {
    load10k: { messages: 10000, bytes: bigFile.length, medianMs: Math.round(loads[2]) },
    telemetry: {
      bytes: tele.length,
      decodesPerSecond: rate(() => mTele.decode(tele)),
      decodesWithLookupPerSecond: rate(() => demo.decode(tele, 'return')),
      decodesWithCmfPerSecond: rate(() => {
        const d = demo.decode(tele, 'return');
        return toCmf(d.message, d.fields);
      }),
      encodesPerSecond: rate(() => mTele.encode({ timestamp: 1732039332, latitude: 2722878, longitude: -4543732, altitude: 83, speed: 0, heading: 235, satellites: 8, pdop: 1, snr: 294, temperature: 31 })),
      heapBytesPerDecoded: heapTele,
    },
    thirty: {
      fields: 30,
      bytes: bytes30.length,
      decodesPerSecond: rate(() => m30.decode(bytes30)),
      encodesPerSecond: rate(() => m30.encode(values)),
      heapBytesPerDecoded: heap30,
    },
  };
  // The worst cases at the load-time bound (issue 34): how long one message holds the event loop.
  out.worst = require(path.join(ROOT, 'bench/lib/codec-worst.js')).measure(quick ? 50 : 300);
  process.stdout.write(JSON.stringify(out));
}

async function drainRuns(quick) {
  const { startSimulator } = require(path.join(ROOT, 'dist/simulator'));
  const { ChildRed, makeUserDir, childGateway } = require(path.join(ROOT, 'test/helpers/child-red'));
  // One poll reads at most 50 replies of 500 (FEED_BOUNDS.maxPagesPerPoll) and the next comes an
  // interval later: a backlog of 20,000 drains within one poll, so the figure is the drain alone.
  const backlog = quick ? 5_000 : 20_000;
  const rounds = quick ? 1 : 3;
  const sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 } });
  sim.server.maxCallLog = 100;
  const base = Math.floor(Date.now() / 1000) - Math.ceil(backlog / 100) - 10;
  sim.terminal.mobile.seed({ count: backlog, perSecond: 100, startSec: base, kind: 'telemetry' });
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'iotgw-codec-bench-')), 'done.txt');
  const userDir = makeUserDir({ recordsFile: file });
  const red = await new ChildRed(userDir).start();
  const lines = () => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean) : []);
  const runs = [];
  try {
    for (let i = 0; i < rounds * 2; i++) {
      const decode = i % 2 === 1;
      const before = lines().length;
      const t0 = Date.now();
      await red.deploy([
        { id: 'tab1', type: 'tab', label: 'bench' },
        childGateway(sim, { rateLimitCalls: 0, maxConcurrent: 3 }),
        { id: 'defs', type: 'iotgw-definitions', name: '', xml: fs.readFileSync(path.join(ROOT, 'examples/definitions/demo.idpmsg'), 'utf8'), file: '' },
        { id: `mp${i}`, z: 'tab1', type: 'iotgw-message-poller', gateway: 'gw1', definitions: decode ? 'defs' : '', intervalSeconds: 3600, startFrom: new Date(base * 1000).toISOString().slice(0, 19).replace('T', ' '), output: 'record', contextStore: '', autoStart: true, fullAt: 500, includeRaw: true, wires: [[`c${i}`]] },
        { id: `c${i}`, z: 'tab1', type: 'function', func: `const n = (context.get('n') || 0) + 1; context.set('n', n); if (n === ${backlog}) global.get('append')(Date.now() + ' ' + (msg.fields ? 'decoded' : 'raw') + '\\n'); return null;`, outputs: 0, wires: [] },
      ]);
      const deadline = Date.now() + 300_000;
      while (lines().length === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      const [end, kind] = lines()[before].split(' ');
      runs.push({ decode, kind, seconds: (Number(end) - t0) / 1000 });
      process.stdout.write(`  drain ${decode ? 'with' : 'without'} definitions: ${(Number(end) - t0) / 1000} s\n`);
    }
  } finally {
    await red.kill('SIGINT');
    await sim.close();
    fs.rmSync(userDir, { recursive: true, force: true });
    fs.rmSync(path.dirname(file), { recursive: true, force: true });
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const without = median(runs.filter((r) => !r.decode).map((r) => r.seconds));
  const withDefs = median(runs.filter((r) => r.decode).map((r) => r.seconds));
  return { backlog, rounds, runs, withoutSeconds: without, withSeconds: withDefs, addedPct: Math.round(((withDefs - without) / without) * 1000) / 10 };
}

async function codec(opts = {}) {
  const quick = !!opts.quick;
  const microOut = JSON.parse(execFileSync(process.execPath, ['--expose-gc', __filename, '--micro', ...(quick ? ['--quick'] : [])], { encoding: 'utf8' }));
  const drain = await drainRuns(quick);
  return {
    figure: 'codec',
    micro: microOut,
    drain,
    met: {
      telemetry600k: microOut.telemetry.decodesPerSecond >= 600_000,
      drain20pct: drain.addedPct <= 20,
      load10kUnder1s: microOut.load10k.medianMs < 1000,
      worstCpuUnder50ms: microOut.worst.layouts.every((l) => l.cpuMaxMs < 50),
    },
  };
}

module.exports = codec;

if (require.main === module) {
  if (process.argv.includes('--micro')) micro(process.argv.includes('--quick'));
  else codec({ quick: process.argv.includes('--quick') }).then((r) => process.stdout.write(`${JSON.stringify(r, null, 1)}\n`));
}
