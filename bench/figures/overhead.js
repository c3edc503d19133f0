'use strict';
/**
 * Figure 2: overhead with the limits off, one call per msg, at 3 and at 16 msgs in flight.
 *
 * One "call" is the same request for every client: POST /api/v1.0/terminal/mode with a JSON
 * body of one ModeMessage and a bearer token, the JSON reply read whole and parsed. CONC
 * msgs are kept in flight (closed loop: a msg ends, the next starts) for DURATION s; the
 * first WARMUP s are not counted. Before any variant is measured, each runs once for
 * WARM_ALL s unmeasured, so that none is measured in a colder runtime than another.
 *  - ours: a function node sends msgs to iotgw-terminal-mode, gateway maxBatchSize 1 (one
 *    call per msg, the target), maxConcurrent CONC, rateLimitCalls 0; and again as a user
 *    leaves it (maxBatchSize 100, lingerMs 50): the msgs that come back together are sent
 *    again together, so it makes fewer calls (msgs per call counted at the simulator).
 *  - floor: the same loop into bench/floor-node, a minimal Node-RED node doing one undici
 *    request per msg and nothing else (a Pool of CONC connections). It is the baseline:
 *    the least any node can cost per call in this runtime.
 *  - core: function (url, method, headers, JSON payload) -> http request (keep-alive on,
 *    parsed JSON) -> function; for reference.
 *  - undici: bench/undici-client.js, a bare Pool of CONC connections outside Node-RED, for reference.
 * The simulator (limits off) runs in the benchmark's own process; ours, floor and core run
 * one after the other in one child Node-RED.
 */
const path = require('node:path');
const { execFile } = require('node:child_process');
const { ChildRed, makeUserDir, openSidebarTab } = require('../lib/red');
const { sim, sleep, percentile, r2, gatewayConfig, onTab } = require('../lib/util');

function summarise(ends, lat, fromMs, toMs) {
  const xs = [];
  for (let i = 0; i < ends.length; i++) if (ends[i] >= fromMs && ends[i] < toMs) xs.push(lat[i]);
  xs.sort((a, b) => a - b);
  const secs = (toMs - fromMs) / 1000;
  return { calls: xs.length, perSecond: Math.round(xs.length / secs), medianMs: r2(percentile(xs, 50)), p99Ms: r2(percentile(xs, 99)) };
}

module.exports = async function overhead(opts = {}) {
  const levels = [];
  for (const CONC of [3, 16]) levels.push(await level(CONC, opts));
  const met = levels.every((l) => l.oursOfFloor !== null && l.oursOfFloor >= 0.9);
  return { figure: 'overhead', levels, met };
};

async function level(CONC, opts) {
  const DURATION_S = opts.quick ? 4 : 10;
  const WARMUP_S = opts.quick ? 1 : 2;
  const WARM_ALL_S = opts.quick ? 1 : 6;
  const { startSimulator } = sim();
  const s = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0, acceptUnknownTerminals: true } });
  // Every call is logged, so that the calls per msg of each client can be counted.
  s.server.maxCallLog = 1_000_000;
  const red = new ChildRed(makeUserDir('link', { floor: true }));
  const results = {};
  let tab;
  try {
    await red.start();
    // opts.tabOpen: the editor's iot gateway sidebar tab open on this runtime all along (issue 27).
    tab = opts.tabOpen ? openSidebarTab(red) : undefined;
    const idExpr = "String(10000000 + (n % 5000)).padStart(8, '0') + 'SKY' + (n % 5000).toString(16).toUpperCase().padStart(4, '0')";
    // start: CONC msgs; loop: records the latency of the msg that ended, sends the next one.
    const startFn = (make) => `
const b = global.get('bench');
const stopAt = Date.now() + ${DURATION_S * 1000};
flow.set('stopAt', stopAt); flow.set('n', 0);
const out = [];
for (let k = 0; k < ${CONC}; k++) { const n = k; const m = ${make}; m._t0 = b.now(); out.push(m); }
flow.set('n', ${CONC});
return [out];`;
    const loopFn = (make) => `
const b = global.get('bench');
if (msg._t0 !== undefined) b.lat(b.now() - msg._t0);
if (msg.error || (msg.statusCode && msg.statusCode !== 200)) b.inc('errors');
if (Date.now() >= flow.get('stopAt')) return null;
const n = flow.get('n'); flow.set('n', n + 1);
const m = ${make}; m._t0 = b.now();
return m;`;
    const oursMake = `{ payload: { DestinationID: ${idExpr}, Mode: 0, WakeupInterval: 0 } }`;
    const coreMake = `{ url: ${JSON.stringify(`${s.url}/api/v1.0/terminal/mode`)}, method: 'POST', headers: { authorization: 'Bearer demo-token', 'content-type': 'application/json', accept: 'application/json' }, payload: JSON.stringify([{ DestinationID: ${idExpr}, Mode: 0, WakeupInterval: 0 }]) }`;

    const runRed = async (name, flows) => {
      await red.reset();
      s.server.clearCalls();
      const cpu0 = (await red.stats()).cpu;
      const t0 = Date.now();
      await red.deploy(flows);
      await sleep(DURATION_S * 1000 + 1500);
      const st = await red.latencies();
      await red.deploy(onTab([]));
      const cpu = (st.cpu.user + st.cpu.system - cpu0.user - cpu0.system) / 1000;
      const first = st.latEnd.length ? st.latEnd[0] : t0;
      const sum = summarise(st.latEnd, st.latMs, first + WARMUP_S * 1000, first + DURATION_S * 1000 - 200);
      // Calls the simulator saw against the msgs that ended (1: one call per msg).
      const calls = s.server.callsTo('terminal/mode');
      const items = calls.reduce((a, c) => a + (c.body.match(/DestinationID/g) || []).length, 0);
      s.server.clearCalls();
      results[name] = { ...sum, errors: st.counters.errors || 0, cpuMsPerCall: st.latEnd.length ? r2(cpu / st.latEnd.length) : null, itemsPerCall: calls.length ? r2(items / calls.length) : null };
    };

    // BENCH_OVERHEAD_ONLY=ours|core|undici runs one variant (for profiling).
    const only = process.env.BENCH_OVERHEAD_ONLY;
    const variants = [];
    if (!only || only === 'ours') variants.push([
      'ours',
      onTab([
        gatewayConfig(s.url, { rateLimitCalls: 0, maxConcurrent: CONC, maxBatchSize: 1 }),
        { id: 'go', type: 'inject', once: true, onceDelay: '0.5', props: [{ p: 'payload' }], payload: '', payloadType: 'date', wires: [['start']] },
        { id: 'start', type: 'function', func: startFn(oursMake), outputs: 1, wires: [['mode']] },
        { id: 'mode', type: 'iotgw-terminal-mode', gateway: 'gw', mode: 0, wakeupInterval: 0, family: 'any', wires: [['loop'], ['loop']] },
        { id: 'loop', type: 'function', func: loopFn(oursMake), outputs: 1, wires: [['mode']] },
        { id: 'catch', type: 'catch', scope: ['mode'], uncaught: false, wires: [['loop']] },
      ]),
    ]);
    if (!only || only === 'ours') variants.push([
      'oursBatching',
      onTab([
        gatewayConfig(s.url, { rateLimitCalls: 0, maxConcurrent: CONC, maxBatchSize: 100 }),
        { id: 'go', type: 'inject', once: true, onceDelay: '0.5', props: [{ p: 'payload' }], payload: '', payloadType: 'date', wires: [['start']] },
        { id: 'start', type: 'function', func: startFn(oursMake), outputs: 1, wires: [['mode']] },
        { id: 'mode', type: 'iotgw-terminal-mode', gateway: 'gw', mode: 0, wakeupInterval: 0, family: 'any', wires: [['loop'], ['loop']] },
        { id: 'loop', type: 'function', func: loopFn(oursMake), outputs: 1, wires: [['mode']] },
        { id: 'catch', type: 'catch', scope: ['mode'], uncaught: false, wires: [['loop']] },
      ]),
    ]);
    const floorMake = `{ payload: [{ DestinationID: ${idExpr}, Mode: 0, WakeupInterval: 0 }] }`;
    if (!only || only === 'floor') variants.push([
      'floor',
      onTab([
        { id: 'go', type: 'inject', once: true, onceDelay: '0.5', props: [{ p: 'payload' }], payload: '', payloadType: 'date', wires: [['start']] },
        { id: 'start', type: 'function', func: startFn(floorMake), outputs: 1, wires: [['floor']] },
        { id: 'floor', type: 'bench-floor', url: `${s.url}/api/v1.0/terminal/mode`, token: 'demo-token', connections: CONC, wires: [['loop']] },
        { id: 'loop', type: 'function', func: loopFn(floorMake), outputs: 1, wires: [['floor']] },
        { id: 'catch', type: 'catch', scope: ['floor'], uncaught: false, wires: [['loop']] },
      ]),
    ]);
    if (!only || only === 'core') variants.push([
      'core',
      onTab([
        { id: 'go', type: 'inject', once: true, onceDelay: '0.5', props: [{ p: 'payload' }], payload: '', payloadType: 'date', wires: [['start']] },
        { id: 'start', type: 'function', func: startFn(coreMake), outputs: 1, wires: [['http']] },
        { id: 'http', type: 'http request', method: 'use', ret: 'obj', paytoqs: 'ignore', url: '', tls: '', persist: true, proxy: '', insecureHTTPParser: false, authType: '', senderr: false, headers: [], wires: [['loop']] },
        { id: 'loop', type: 'function', func: loopFn(coreMake), outputs: 1, wires: [['http']] },
        { id: 'catch', type: 'catch', scope: ['http'], uncaught: false, wires: [['loop']] },
      ]),
    ]);
    // Warm-up: every variant runs once, unmeasured, before any is measured. The first flow in a
    // fresh runtime (and the first calls to the simulator, in this process) pays one-off costs
    // (lazy compiling, the JIT's tiers: seconds on a busy machine) that the variants after it
    // would not; each one's own warm-up window alone left the first variant measured colder.
    // 6 s: in an interleaved A/B (ours, floor, ours, ...) both were still getting faster after 3 s.
    for (const [, flows] of variants) {
      await red.deploy(flows);
      await sleep(WARM_ALL_S * 1000);
      await red.deploy(onTab([]));
    }
    for (const [name, flows] of variants) await runRed(name, flows);
    // Bare undici in its own process.
    const out = only && only !== 'undici' ? { ends: [], lat: [], errors: 0 } : await new Promise((resolve, reject) => {
      execFile(process.execPath, [path.join(__dirname, '../undici-client.js'), s.url, String(CONC), String(DURATION_S * 1000)], { maxBuffer: 256 * 1024 * 1024 }, (err, stdout, stderr) =>
        err ? reject(new Error(`undici client: ${err.message} ${stderr}`)) : resolve(JSON.parse(stdout)),
      );
    });
    const first = out.ends.length ? out.ends[0] : Date.now();
    results.undici = { ...summarise(out.ends, out.lat, first + WARMUP_S * 1000, first + DURATION_S * 1000 - 200), errors: out.errors };
    for (const k of ['ours', 'oursBatching', 'floor', 'core']) results[k] ??= { calls: 0, perSecond: 0 };
    const of = (a, b) => (b.perSecond ? r2(a.perSecond / b.perSecond) : null);
    return {
      setup: { concurrency: CONC, durationS: DURATION_S, warmupS: WARMUP_S, warmAllS: WARM_ALL_S, oneCall: 'POST terminal/mode, one ModeMessage, bearer token, JSON reply parsed', ours: `gateway maxBatchSize 1, maxConcurrent ${CONC}, rateLimitCalls 0`, oursBatching: `gateway maxBatchSize 100, lingerMs 50, maxConcurrent ${CONC}, rateLimitCalls 0`, floor: `bench/floor-node, undici Pool of ${CONC}`, core: 'http request node, keep-alive (persist) on, return parsed JSON' },
      ...results,
      oursOfFloor: of(results.ours, results.floor),
      floorOfUndici: of(results.floor, results.undici),
      coreOfFloor: of(results.core, results.floor),
      ...(tab ? { sidebarUpdates: tab.received } : {}),
    };
  } finally {
    tab?.close();
    await red.stop();
    await s.close();
  }
}
