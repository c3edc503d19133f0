'use strict';
/**
 * Figure 3: the status poller drains a backlog (limits off, 500 records a reply) from the
 * strict simulator (FromUTC inclusive, 100 records a second: each reply's last second
 * comes again, so a full reply brings 400 new records), the mark written to the poller's
 * own file with every reply (the default store).
 *
 * For each size (100,000 and 1,000,000 records): a fresh simulator in this process,
 * seeded with the backlog (generated lazily); a fresh child Node-RED; its idle RSS
 * (empty flows, after a full GC) is taken; then a flow is deployed: iotgw-status-poller
 * (output one msg per record, startFrom -1d, autoStart, interval 3600 s) -> function
 * that counts records (and again into bench/count-node, a node that only counts). RSS of the child is sampled every 50 ms from /proc until the
 * count reaches the size. Records/s run from deploy to the last record; CPU time is the
 * child's user+system time over the same span (process.cpuUsage, via IPC).
 */
const { ChildRed, makeUserDir, rssSampler, idleRss } = require('../lib/red');
const { sim, until, mb, r1, gatewayConfig, onTab } = require('../lib/util');

/**
 * `downstream`: 'function' (a core function node counting, as a user would wire it) or
 * 'count' (bench/count-node: a node that only counts, so that what piles up is the
 * poller's and Node-RED's, not the function node's vm context writes).
 */
async function drain(size, output, timeoutMs, nodeArgs = [], downstream = 'function') {
  const { startSimulator } = sim();
  const s = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 } });
  s.server.maxCallLog = 100;
  s.terminal.seedBacklog(size);
  const red = new ChildRed(makeUserDir('link', { count: downstream === 'count' }), { nodeArgs });
  try {
    await red.start();
    await red.deploy(onTab([]));
    const idle = await idleRss(red);
    const before = await red.reset();
    const sampler = rssSampler(red, 50);
    const t0 = process.hrtime.bigint();
    const count = output === 'batch' ? "global.get('bench').inc('records', msg.payload.length); return null;" : "global.get('bench').inc('records'); return null;";
    await red.deploy(
      onTab([
        gatewayConfig(s.url, { rateLimitCalls: 0, maxConcurrent: 3 }),
        { id: 'poller', type: 'iotgw-status-poller', gateway: 'gw', intervalSeconds: 3600, startFrom: '-1d', output, contextStore: '', autoStart: true, fullAt: 500, addNames: true, wires: [['count']] },
        downstream === 'count'
          ? { id: 'count', type: 'bench-count', counter: 'records', items: output === 'batch', wires: [] }
          : { id: 'count', type: 'function', func: count, outputs: 0, wires: [] },
        { id: 'catch', type: 'catch', scope: null, uncaught: false, wires: [['err']] },
        { id: 'err', type: 'function', func: "global.get('bench').inc('errors'); return null;", outputs: 0, wires: [] },
      ]),
    );
    // The count node counts msgs as `records` and a batch's items as `recordsItems`.
    const got = (st) => (downstream === 'count' && output === 'batch' ? st.counters.recordsItems : st.counters.records) || 0;
    let last;
    let peakHeap = 0;
    await until(async () => {
      last = await red.stats();
      peakHeap = Math.max(peakHeap, last.mem.heapUsed);
      return got(last) >= size || (last.counters.errors || 0) > 0;
    }, timeoutMs, `${size} records`, 100);
    const secs = Number(process.hrtime.bigint() - t0) / 1e9;
    const { peak } = sampler.stop();
    // What stays after the drain, once garbage is collected (a leak would show here).
    const after = await idleRss(red, 500);
    await red.deploy(onTab([]));
    const cpuMs = (last.cpu.user + last.cpu.system - before.cpu.user - before.cpu.system) / 1000;
    const records = got(last);
    return {
      size,
      downstream,
      records,
      errors: last.counters.errors || 0,
      seconds: r1(secs),
      recordsPerSecond: Math.round(records / secs),
      cpuUsPerRecord: r1((cpuMs * 1000) / records),
      idleRssMB: mb(idle.rss),
      peakRssMB: mb(peak),
      peakAboveIdleMB: mb(peak - idle.rss),
      peakHeapUsedMB: mb(peakHeap),
      idleHeapUsedMB: mb(idle.heapUsed),
      heapUsedAfterGcMB: mb(after.heapUsed),
      rssAfterGcMB: mb(after.rss),
      served: s.terminal.counters.statusRecordsServed,
    };
  } finally {
    await red.stop();
    await s.close();
  }
}

module.exports = async function poller(opts = {}) {
  const sizes = opts.quick ? [20_000, 100_000] : [100_000, 1_000_000];
  const runs = [];
  for (const size of sizes) runs.push(await drain(size, 'record', opts.quick ? 120_000 : 900_000));
  // The same two drains with V8's old generation capped at 80 MB: if the records were
  // retained, the big one would run out of memory; if peak RSS growth is only garbage
  // that V8 chose not to collect yet, both peaks come out the same.
  // The same two drains into bench/count-node (a node that only counts) instead of the
  // function node: the function node runs its code in a vm context per msg, and what that
  // writes lands in V8's old generation (sampled with the heap profiler: most of the old
  // generation's growth during a drain); these runs show the poller's own part.
  const countRuns = [];
  for (const size of sizes) countRuns.push({ ...(await drain(size, 'record', opts.quick ? 120_000 : 900_000, [], 'count')), nodeArgs: 'default; downstream: bench-count node' });
  const CAP = '--max-old-space-size=80';
  const capped = [];
  for (const size of sizes) capped.push({ ...(await drain(size, 'record', opts.quick ? 120_000 : 900_000, [CAP])), nodeArgs: CAP });
  const [small, big] = runs;
  const growth = r1(big.peakAboveIdleMB - small.peakAboveIdleMB);
  const cappedGrowth = r1(capped[1].peakAboveIdleMB - capped[0].peakAboveIdleMB);
  const retainedGrowth = r1(big.heapUsedAfterGcMB - small.heapUsedAfterGcMB);
  const countGrowth = r1(countRuns[1].peakAboveIdleMB - countRuns[0].peakAboveIdleMB);
  return {
    figure: 'poller',
    setup: { output: 'record (one msg per record)', replyCap: 500, limits: 'off', sizes },
    runs,
    capped,
    countRuns,
    growthMB: growth,
    countGrowthMB: countGrowth,
    cappedGrowthMB: cappedGrowth,
    retainedGrowthMB: retainedGrowth,
    metPeak: big.peakAboveIdleMB < 200 && big.records === big.size,
    // Flat: the peak above idle of the big drain within 10 MB (or 15%) of the small one's.
    metFlat: growth <= Math.max(10, 0.15 * small.peakAboveIdleMB),
    metFlatCapped: cappedGrowth <= Math.max(10, 0.15 * capped[0].peakAboveIdleMB),
    metFlatCount: countGrowth <= Math.max(10, 0.15 * countRuns[0].peakAboveIdleMB),
  };
};
// One drain alone (e.g. node -e "require('./bench/figures/poller.js').drain(1e6, 'record', 9e5, [], 'count').then(console.log)").
module.exports.drain = drain;
