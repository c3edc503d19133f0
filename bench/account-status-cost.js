#!/usr/bin/env node
'use strict';
/**
 * What seeing the account costs (issue 27): figure 2's one-call-per-msg run (bench/figures/
 * overhead.js: ours against the floor node, 3 and 16 msgs in flight) twice, without and with
 * the editor's "iot gateway" sidebar tab open on the runtime (a comms websocket saying
 * iotgw/watch every 5 s, as the visible tab does: the runtime then reads the figures and
 * publishes them at most once a second). The account keeps its figures in both runs.
 *
 *   npm run build && node bench/account-status-cost.js [--quick]
 *
 * Prints one JSON line per run and a summary: msgs/s of ours and of the floor, ours/floor,
 * client CPU per msg, and how many figure updates the open tab received.
 */
const overhead = require('./figures/overhead');

async function main() {
  const quick = process.argv.includes('--quick');
  const runs = [];
  for (const tabOpen of [false, true]) {
    const r = await overhead({ quick, tabOpen });
    const levels = r.levels.map((l) => ({
      concurrency: l.setup.concurrency,
      ours: l.ours.perSecond,
      floor: l.floor.perSecond,
      oursOfFloor: l.oursOfFloor,
      oursCpuMsPerMsg: l.ours.cpuMsPerCall ?? null,
      sidebarUpdates: l.sidebarUpdates ?? 0,
    }));
    runs.push({ tabOpen, levels });
    process.stdout.write(`${JSON.stringify({ tabOpen, levels })}\n`);
  }
  for (const run of runs) {
    for (const l of run.levels) {
      process.stdout.write(`tab ${run.tabOpen ? 'open  ' : 'closed'} ${String(l.concurrency).padStart(2)} in flight: ours ${l.ours}/s, floor ${l.floor}/s, ours/floor ${l.oursOfFloor}${l.oursCpuMsPerMsg === null ? '' : `, ${l.oursCpuMsPerMsg} ms CPU/msg`}, ${l.sidebarUpdates} sidebar updates\n`);
    }
  }
}

main().catch((err) => {
  process.stderr.write(`${err && err.stack}\n`);
  process.exit(1);
});
