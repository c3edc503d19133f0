'use strict';
/**
 * Figure 2b: a burst with the limits off. N msgs (one mode message each) leave one function
 * node at once (one input, N node.send calls) in a child Node-RED; the simulator's limits are
 * off. Measured: items per call (from the simulator's call log) and msgs/s from the burst's
 * start to the last result.
 *  - ours: -> iotgw-terminal-mode, gateway maxBatchSize 100, maxConcurrent 3, rateLimitCalls 0,
 *    with lingerMs 0 and with the default 50.
 *  - core: -> join (array of msg.payload, 100 msgs or 0.05 s) -> function (one POST
 *    terminal/mode of the joined items) -> http request (keep-alive) -> function counting the
 *    items of each reply: the batching a core user would wire.
 */
const { ChildRed, makeUserDir } = require('../lib/red');
const { sim, sleep, until, r1, gatewayConfig, onTab } = require('../lib/util');

module.exports = async function burst(opts = {}) {
  const N = opts.quick ? 2000 : 8000;
  const { startSimulator } = sim();
  const red = new ChildRed(makeUserDir('link'));
  const runs = [];
  const idExpr = "String(10000000 + (i % 5000)).padStart(8, '0') + 'SKY' + (i % 5000).toString(16).toUpperCase().padStart(4, '0')";
  const start = `const b = global.get('bench'); b.inc('t_start', Date.now());
for (let i = 0; i < ${N}; i++) node.send({ payload: { DestinationID: ${idExpr}, Mode: 0, WakeupInterval: 0 } });
return null;`;
  const count = (items) => `const b = global.get('bench'); const k = ${items}; b.inc('done', k);
if (msg.statusCode !== undefined && msg.statusCode !== 200) b.inc('errors', k);
if (!context.get('d')) context.set('d', 0); context.set('d', context.get('d') + k);
if (context.get('d') >= ${N}) b.inc('t_end', Date.now());
return null;`;
  try {
    await red.start();
    const variants = [
      { name: 'ours, lingerMs 0', lingerMs: 0 },
      { name: 'ours, lingerMs 50 (default)', lingerMs: 50 },
      { name: 'core: join + http request', core: true },
    ];
    for (const v of variants) {
      const s = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: v.core ? 0 : 3, acceptUnknownTerminals: true } });
      try {
        await red.reset();
        const tail = v.core
          ? [
              { id: 'join', type: 'join', mode: 'custom', build: 'array', property: 'payload', propertyType: 'msg', key: 'topic', joiner: '\\n', joinerType: 'str', accumulate: false, timeout: '0.05', count: '100', reduceRight: false, reduceExp: '', reduceInit: '', reduceInitType: '', reduceFixup: '', wires: [['prep']] },
              { id: 'prep', type: 'function', func: `msg.url = ${JSON.stringify(`${s.url}/api/v1.0/terminal/mode`)}; msg.method = 'POST'; msg.headers = { authorization: 'Bearer demo-token', 'content-type': 'application/json', accept: 'application/json' }; msg.payload = JSON.stringify(msg.payload); return msg;`, outputs: 1, wires: [['http']] },
              { id: 'http', type: 'http request', method: 'use', ret: 'obj', paytoqs: 'ignore', url: '', tls: '', persist: true, proxy: '', insecureHTTPParser: false, authType: '', senderr: false, headers: [], wires: [['count']] },
              { id: 'count', type: 'function', func: count('(msg.payload && msg.payload.Submissions) ? msg.payload.Submissions.length : 1'), outputs: 0, wires: [] },
            ]
          : [
              gatewayConfig(s.url, { rateLimitCalls: 0, maxConcurrent: 3, maxBatchSize: 100, maxQueue: 100000 }),
              { id: 'mode', type: 'iotgw-terminal-mode', gateway: 'gw', mode: 0, wakeupInterval: 0, family: 'any', lingerMs: v.lingerMs, wires: [['count'], ['count']] },
              { id: 'count', type: 'function', func: count('Array.isArray(msg.payload) ? msg.payload.length : 1'), outputs: 0, wires: [] },
            ];
        await red.deploy(
          onTab([
            { id: 'go', type: 'inject', once: true, onceDelay: '0.5', props: [{ p: 'payload' }], payload: '', payloadType: 'date', wires: [['start']] },
            { id: 'start', type: 'function', func: start, outputs: 1, wires: [[v.core ? 'join' : 'mode']] },
            ...tail,
            { id: 'catch', type: 'catch', scope: null, uncaught: false, wires: [['err']] },
            { id: 'err', type: 'function', func: "global.get('bench').inc('caught'); return null;", outputs: 0, wires: [] },
          ]),
        );
        await until(async () => {
          const c = (await red.stats()).counters;
          return (c.done || 0) >= N || (c.caught || 0) > 0;
        }, 120000, `${N} results (${v.name})`, 100);
        const c = (await red.stats()).counters;
        await red.deploy(onTab([]));
        const calls = s.server.callsTo('terminal/mode');
        const items = calls.reduce((a, x) => a + JSON.parse(x.body).length, 0);
        const ms = (c.t_end || 0) - (c.t_start || 0);
        runs.push({ name: v.name, msgs: N, done: c.done || 0, caught: c.caught || 0, errors: c.errors || 0, calls: calls.length, items, itemsPerCall: calls.length ? r1(items / calls.length) : null, ms, msgsPerSecond: ms > 0 ? Math.round((N / ms) * 1000) : null, rejected: calls.filter((x) => x.status !== 200).length });
      } finally {
        await s.close();
        await sleep(200);
      }
    }
  } finally {
    await red.stop();
  }
  const ours0 = runs.find((r) => r.name.startsWith('ours, lingerMs 0'));
  return { figure: 'burst', setup: { msgs: N, maxBatchSize: 100, maxConcurrent: 3 }, runs, met: runs.filter((r) => r.name.startsWith('ours')).every((r) => r.itemsPerCall >= 90 && r.caught === 0), ours0 };
};
