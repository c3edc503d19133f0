'use strict';
/**
 * The measured part of the memory figures (poller, inventory): in a started child Node-RED,
 * its idle RSS with empty flows (after a full GC), then `nodes` deployed on one tab (with a
 * catch node counting `errors`) and the child's RSS read from /proc every 50 ms until
 * `got(stats)` reaches `size` (or an error is caught); then what stays after a full GC.
 * Time and CPU (user + system of the child) run from the deploy to the last item.
 */
const { rssSampler, idleRss } = require('./red');
const { until, mb, r1, onTab } = require('./util');

async function measurePeak(red, { size, nodes, got, timeoutMs, what = 'items' }) {
  await red.deploy(onTab([]));
  const idle = await idleRss(red);
  const before = await red.reset();
  const sampler = rssSampler(red, 50);
  const t0 = process.hrtime.bigint();
  await red.deploy(
    onTab([
      ...nodes,
      { id: 'catch', type: 'catch', scope: null, uncaught: false, wires: [['err']] },
      { id: 'err', type: 'function', func: "global.get('bench').inc('errors'); return null;", outputs: 0, wires: [] },
    ]),
  );
  let last;
  let peakHeap = 0;
  await until(async () => {
    last = await red.stats();
    peakHeap = Math.max(peakHeap, last.mem.heapUsed);
    return got(last) >= size || (last.counters.errors || 0) > 0;
  }, timeoutMs, `${size} ${what}`, 100);
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  const { peak } = sampler.stop();
  // What stays after the run, once garbage is collected (a leak would show here).
  const after = await idleRss(red, 500);
  await red.deploy(onTab([]));
  const cpuMs = (last.cpu.user + last.cpu.system - before.cpu.user - before.cpu.system) / 1000;
  const count = got(last);
  return {
    stats: last,
    count,
    errors: last.counters.errors || 0,
    seconds: r1(secs),
    perSecond: Math.round(count / secs),
    cpuUsPerItem: r1((cpuMs * 1000) / Math.max(1, count)),
    mem: {
      idleRssMB: mb(idle.rss),
      peakRssMB: mb(peak),
      peakAboveIdleMB: mb(peak - idle.rss),
      peakHeapUsedMB: mb(peakHeap),
      idleHeapUsedMB: mb(idle.heapUsed),
      heapUsedAfterGcMB: mb(after.heapUsed),
      rssAfterGcMB: mb(after.rss),
    },
  };
}

module.exports = { measurePeak };
