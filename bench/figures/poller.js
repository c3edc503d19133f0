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
 *
 * The baseline (issue 17: the strongest fair one): the same number of msgs of the same
 * shape into the same counting function node from bench/produce-node (a minimal node that
 * only sends them, in lots of 500 paced as the poller went; once more unpaced), in a child
 * Node-RED set up alike; its peak above idle is what Node-RED and the function node cost
 * without our poller. The goal (60 MB above idle at 1M) is judged absolutely and as ours
 * minus the paced baseline's median.
 */
const { ChildRed, makeUserDir } = require('../lib/red');
const { measurePeak } = require('../lib/peak');
const { sim, r1, median, gatewayConfig } = require('../lib/util');

const COUNT_FUNC = "global.get('bench').inc('records'); return null;";

/** A measurePeak result as this figure's run (records). */
async function measure(red, size, nodes, got, timeoutMs) {
  const m = await measurePeak(red, { size, nodes, got, timeoutMs, what: 'records' });
  return { size, records: m.count, errors: m.errors, seconds: m.seconds, recordsPerSecond: m.perSecond, cpuUsPerRecord: m.cpuUsPerItem, ...m.mem };
}

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
    const count = output === 'batch' ? "global.get('bench').inc('records', msg.payload.length); return null;" : COUNT_FUNC;
    // The count node counts msgs as `records` and a batch's items as `recordsItems`.
    const got = (st) => (downstream === 'count' && output === 'batch' ? st.counters.recordsItems : st.counters.records) || 0;
    const run = await measure(
      red,
      size,
      [
        gatewayConfig(s.url, { rateLimitCalls: 0, maxConcurrent: 3 }),
        { id: 'poller', type: 'iotgw-status-poller', gateway: 'gw', intervalSeconds: 3600, startFrom: '-1d', output, contextStore: '', autoStart: true, fullAt: 500, addNames: true, wires: [['count']] },
        downstream === 'count'
          ? { id: 'count', type: 'bench-count', counter: 'records', items: output === 'batch', wires: [] }
          : { id: 'count', type: 'function', func: count, outputs: 0, wires: [] },
      ],
      got,
      timeoutMs,
    );
    return { ...run, downstream, served: s.terminal.counters.statusRecordsServed };
  } finally {
    await red.stop();
    await s.close();
  }
}

/**
 * The baseline: the same number of msgs of the same shape into the same counting function
 * node, from bench/produce-node (lots of 500 per event-loop turn, no HTTP) instead of the
 * poller. The package is linked as in the drains (same idle), but no node of it is deployed.
 */
async function baseline(size, timeoutMs, nodeArgs = [], gapMs = 0) {
  const red = new ChildRed(makeUserDir('link', { produce: true }), { nodeArgs });
  try {
    await red.start();
    const run = await measure(
      red,
      size,
      [
        { id: 'produce', type: 'bench-produce', count: size, lot: 500, gapMs, wires: [['count']] },
        { id: 'count', type: 'function', func: COUNT_FUNC, outputs: 0, wires: [] },
      ],
      (st) => st.counters.records || 0,
      timeoutMs,
    );
    return { ...run, downstream: 'function', producer: 'bench-produce', nodeArgs: `default; baseline: minimal producer -> function node (lots of 500${gapMs ? `, one every ${gapMs} ms: paced as the poller` : ' per event-loop turn: unpaced'})` };
  } finally {
    await red.stop();
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
  // The baseline: the same msgs into the same function node from a minimal producer
  // (bench/produce-node), paced as the poller went (a lot of 500 every 500/(its records/s of
  // the same size) ms), at 100k once and BENCH_BASELINE_RUNS (default 3) times at 1M: what the
  // function node and Node-RED cost with no poller at all; its median is what ours is judged
  // by. Then once per size unpaced (a lot per event-loop turn, two to three times the
  // poller's pace; single runs on 2026-11-23 peaked at 34 to 95 MB above idle at 1M,
  // the paced ones at 21 to 27):
  // shown for reference, not judged by.
  const baselineRuns = [];
  const bigRuns = Math.max(1, Number(process.env.BENCH_BASELINE_RUNS) || 3);
  const timeout = opts.quick ? 120_000 : 900_000;
  for (const [i, size] of sizes.entries()) {
    const gapMs = Math.max(1, Math.round((500 * 1000) / runs[i].recordsPerSecond));
    for (let k = 0; k < (i === sizes.length - 1 ? bigRuns : 1); k++) baselineRuns.push({ ...(await baseline(size, timeout, [], gapMs)), paced: true });
  }
  for (const size of sizes) baselineRuns.push(await baseline(size, timeout));
  const CAP = '--max-old-space-size=80';
  const capped = [];
  for (const size of sizes) capped.push({ ...(await drain(size, 'record', opts.quick ? 120_000 : 900_000, [CAP])), nodeArgs: CAP });
  const [small, big] = runs;
  const growth = r1(big.peakAboveIdleMB - small.peakAboveIdleMB);
  const cappedGrowth = r1(capped[1].peakAboveIdleMB - capped[0].peakAboveIdleMB);
  const retainedGrowth = r1(big.heapUsedAfterGcMB - small.heapUsedAfterGcMB);
  const countGrowth = r1(countRuns[1].peakAboveIdleMB - countRuns[0].peakAboveIdleMB);
  const base = (size) => r1(median(baselineRuns.filter((r) => r.size === size && r.paced).map((r) => r.peakAboveIdleMB)));
  const baseSmall = base(small.size);
  const baseBig = base(big.size);
  return {
    figure: 'poller',
    setup: { output: 'record (one msg per record)', replyCap: 500, limits: 'off', sizes },
    runs,
    capped,
    countRuns,
    baselineRuns,
    // Medians of the paced baseline's peaks above idle, and ours (the function-node runs) minus them.
    baselinePeakMB: { small: baseSmall, big: baseBig },
    oursMinusBaselineMB: { small: r1(small.peakAboveIdleMB - baseSmall), big: r1(big.peakAboveIdleMB - baseBig) },
    growthMB: growth,
    baselineGrowthMB: r1(baseBig - baseSmall),
    countGrowthMB: countGrowth,
    cappedGrowthMB: cappedGrowth,
    retainedGrowthMB: retainedGrowth,
    metPeak: big.peakAboveIdleMB < 200 && big.records === big.size,
    // Issue 17's goal: at most 60 MB above idle at 1M, taken absolutely and as ours minus the baseline.
    metPeak60: big.peakAboveIdleMB <= 60 && big.records === big.size,
    metPeak60OverBaseline: big.peakAboveIdleMB - baseBig <= 60 && big.records === big.size,
    // Flat: the peak above idle of the big drain within 10 MB (or 15%) of the small one's.
    metFlat: growth <= Math.max(10, 0.15 * small.peakAboveIdleMB),
    metFlatCapped: cappedGrowth <= Math.max(10, 0.15 * capped[0].peakAboveIdleMB),
    // Flat once the baseline is taken off: ours minus the baseline grows by at most 10 MB (or 15%).
    metFlatOverBaseline: big.peakAboveIdleMB - baseBig - (small.peakAboveIdleMB - baseSmall) <= Math.max(10, 0.15 * (small.peakAboveIdleMB - baseSmall)),
    metFlatCount: countGrowth <= Math.max(10, 0.15 * countRuns[0].peakAboveIdleMB),
  };
};
// One drain alone (e.g. node -e "require('./bench/figures/poller.js').drain(1e6, 'record', 9e5, [], 'count').then(console.log)").
module.exports.drain = drain;
// The baseline alone (e.g. node -e "require('./bench/figures/poller.js').baseline(1e6, 9e5).then(console.log)").
module.exports.baseline = baseline;
