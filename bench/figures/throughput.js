'use strict';
/**
 * Figure 1: useful throughput under the gateway's limit.
 *
 * Two simulators on 127.0.0.1 with the limit on (CALLS per WINDOW_S, 3 concurrent).
 * One child Node-RED runs two branches side by side, fed by the same generator
 * (OFFERED mode messages a second, one terminal each, terminals cycling over TERMINALS
 * IDs), for warm-up + MEASURE_S seconds:
 *  - ours: generator -> iotgw-terminal-mode (lingerMs 50, default) with a gateway config
 *    set to the same limit (rateLimitCalls CALLS, rateLimitWindowSeconds WINDOW_S,
 *    maxBatchSize 100) -> simulator A
 *  - core, batching as a core user would: generator -> join (array of msg.payload,
 *    100 msgs or 1 s) -> delay (rate limit: CALLS msgs per WINDOW_S s, queue all)
 *    -> function (one POST terminal/mode with the joined items) -> http request
 *    (keep-alive) -> simulator B
 * Measured from each simulator's call log: messages accepted in calls that started
 * within MEASURE_S seconds after the warm-up, divided by the number of windows, and
 * every 429/503 the simulators answered during the whole run.
 */
const { ChildRed, makeUserDir } = require('../lib/red');
const { sim, sleep, r1, r2, gatewayConfig, onTab } = require('../lib/util');

module.exports = async function throughput(opts = {}) {
  const CALLS = 5;
  const WINDOW_S = 2;
  const MEASURE_S = opts.quick ? 4 : 30;
  const WARMUP_S = 4;
  const OFFERED = 300; // msgs per second: above the limit (250/s), so the queue never runs dry
  const TERMINALS = 5000;
  const { startSimulator } = sim();
  const simOpts = { terminal: { rateLimitCalls: CALLS, rateLimitWindowMs: WINDOW_S * 1000, maxConcurrent: 3, acceptUnknownTerminals: true } };
  const simA = await startSimulator(simOpts);
  const simB = await startSimulator(simOpts);
  const red = new ChildRed(makeUserDir('link'));
  try {
    await red.start();
    const runS = WARMUP_S + MEASURE_S + 2;
    const gen = `
const t0 = context.get('t0') || Date.now(); context.set('t0', t0);
if (Date.now() - t0 > ${runS * 1000}) return null;
let i = context.get('i') || 0;
const per = ${OFFERED / 10};
const out = [];
for (let k = 0; k < per; k++, i++) {
  const n = i % ${TERMINALS};
  const id = String(10000000 + n).padStart(8, '0') + 'SKY' + n.toString(16).toUpperCase().padStart(4, '0');
  out.push({ payload: { DestinationID: id, Mode: 0, WakeupInterval: 0 } });
}
context.set('i', i);
global.get('bench').inc('offered', per);
return [out, out.map((m) => ({ payload: m.payload }))];`;
    const prep = `
msg.url = ${JSON.stringify(`${simB.url}/api/v1.0/terminal/mode`)};
msg.method = 'POST';
msg.headers = { authorization: 'Bearer demo-token', 'content-type': 'application/json', accept: 'application/json' };
msg.payload = JSON.stringify(msg.payload);
return msg;`;
    const flows = onTab([
      gatewayConfig(simA.url, { rateLimitCalls: CALLS, rateLimitWindowSeconds: WINDOW_S, maxConcurrent: 3, maxBatchSize: 100, maxQueue: 100000 }),
      { id: 'tick', type: 'inject', repeat: '0.1', once: true, onceDelay: '0.1', topic: '', payload: '', payloadType: 'date', props: [{ p: 'payload' }], wires: [['gen']] },
      { id: 'gen', type: 'function', func: gen, outputs: 2, wires: [['mode'], ['join']] },
      { id: 'join', type: 'join', mode: 'custom', build: 'array', property: 'payload', propertyType: 'msg', key: 'topic', joiner: '\\n', joinerType: 'str', accumulate: false, timeout: '1', count: '100', reduceRight: false, reduceExp: '', reduceInit: '', reduceInitType: '', reduceFixup: '', wires: [['delay']] },
      { id: 'mode', type: 'iotgw-terminal-mode', gateway: 'gw', mode: 0, wakeupInterval: 0, family: 'any', wires: [['okA'], ['okA']] },
      { id: 'okA', type: 'function', func: "global.get('bench').inc('oursDone'); return null;", outputs: 0, wires: [] },
      { id: 'delay', type: 'delay', pauseType: 'rate', timeout: '5', timeoutUnits: 'seconds', rate: String(CALLS), nbRateUnits: String(WINDOW_S), rateUnits: 'second', randomFirst: '1', randomLast: '5', randomUnits: 'seconds', drop: false, allowrate: false, outputs: 1, wires: [['prep']] },
      { id: 'prep', type: 'function', func: prep, outputs: 1, wires: [['http']] },
      { id: 'http', type: 'http request', method: 'use', ret: 'obj', paytoqs: 'ignore', url: '', tls: '', persist: true, proxy: '', insecureHTTPParser: false, authType: '', senderr: false, headers: [], wires: [['okB']] },
      { id: 'okB', type: 'function', func: "global.get('bench').inc('core_' + msg.statusCode); return null;", outputs: 0, wires: [] },
      { id: 'catch', type: 'catch', scope: null, uncaught: false, wires: [['err']] },
      { id: 'err', type: 'function', func: "const b = global.get('bench'); b.inc('err_' + (msg.error && msg.error.source ? msg.error.source.id : '?') + '_' + ((msg.error && msg.error.code) || 'x')); if (!context.get('seen')) { context.set('seen', 1); b.inc('firstError: ' + String(msg.error && msg.error.message).slice(0, 200)); } return null;", outputs: 0, wires: [] },
    ]);
    const tDeploy = Date.now();
    await red.deploy(flows);
    await sleep(runS * 1000 + 1500);
    const stats = await red.stats();
    await red.deploy(onTab([]));

    const measure = (s, items) => {
      const calls = s.server.callsTo('terminal/mode').filter((c) => c.at >= tDeploy);
      const ok = calls.filter((c) => c.status === 200);
      const throttled = calls.filter((c) => c.status === 429 || c.status === 503).length;
      const first = ok.length ? ok[0].at : tDeploy;
      // The measured span starts at the first accepted call after the warm-up.
      const startAt = (ok.find((c) => c.at >= first + WARMUP_S * 1000) || { at: first + WARMUP_S * 1000 }).at;
      const inSpan = ok.filter((c) => c.at >= startAt && c.at < startAt + MEASURE_S * 1000);
      const msgs = inSpan.reduce((n, c) => n + items(c), 0);
      const windows = MEASURE_S / WINDOW_S;
      return {
        callsInSpan: inSpan.length,
        msgsInSpan: msgs,
        perWindow: r1(msgs / windows),
        perMinute: Math.round((msgs / MEASURE_S) * 60),
        callsTotal: calls.length,
        throttled,
        accepted: s.terminal.counters.submitted,
      };
    };
    const countItems = (c) => {
      try {
        return JSON.parse(c.body).length;
      } catch {
        return 0;
      }
    };
    const ours = measure(simA, countItems);
    const core = measure(simB, countItems);
    const limitPerWindow = CALLS * 100;
    return {
      figure: 'throughput',
      setup: { calls: CALLS, windowS: WINDOW_S, measureS: MEASURE_S, warmupS: WARMUP_S, offeredPerS: OFFERED, terminals: TERMINALS, limitPerWindow },
      ours: { ...ours, ofLimit: r2(ours.perWindow / limitPerWindow) },
      core: { ...core, ofLimit: r2(core.perWindow / limitPerWindow) },
      ratio: core.perWindow > 0 ? r1(ours.perWindow / core.perWindow) : null,
      red: stats.counters,
      met: ours.perWindow >= 0.98 * limitPerWindow && ours.throttled === 0,
    };
  } finally {
    await red.stop();
    await simA.close();
    await simB.close();
  }
};
