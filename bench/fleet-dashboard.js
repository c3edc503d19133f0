#!/usr/bin/env node
'use strict';
/**
 * The demo's cost with the fleet dashboard (issue 36), in `npm start`'s own set-up
 * (scripts/start.js's startDev in a child process: the simulator with its living fleet and
 * Node-RED in one process, as `npm start` runs them):
 *
 * 1. start: fork to "flows started", `--rounds` times each (alternating) with no example and
 *    with examples/fleet-dashboard.json only; the medians and their difference, and the RSS
 *    of each just after its start;
 * 2. memory: the dashboard flow for `--minutes` minutes with the fleet reporting and, unless
 *    `--no-browser`, Chromium showing /dashboard (a client the dashboard pushes to); the
 *    process's RSS every 10 s (from /proc), printed at each minute, and its peak.
 *
 *   npm run build && node bench/fleet-dashboard.js [--minutes 10] [--rounds 3] [--no-browser]
 *
 * Prints a line per sample and one JSON line of the figures at the end.
 */
const fs = require('node:fs');
const { forkDemo } = require('../test/helpers/demo');
const { chromiumPath, launchBrowser } = require('../test/helpers/browser');
const { median, sleep, r1, loadavg } = require('./lib/util');

const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
};

/** RSS of process `pid` in MB (VmRSS of /proc/<pid>/status). */
function rssMb(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? r1(Number(m[1]) / 1024) : NaN;
}

/** One start of the demo with `only` deployed: {ms, rssMb} once its flows have started. */
async function oneStart(only) {
  const t0 = process.hrtime.bigint();
  const demo = await forkDemo({ only });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  await sleep(1000);
  const rss = rssMb(demo.pid);
  await demo.stop();
  return { ms: r1(ms), rssMb: rss };
}

async function starts(rounds) {
  const without = [];
  const withDash = [];
  for (let i = 0; i < rounds; i++) {
    // Alternate the order, so a machine growing busier does not favour one side.
    if (i % 2) withDash.push(await oneStart(['fleet-dashboard']));
    without.push(await oneStart([]));
    if (!(i % 2)) withDash.push(await oneStart(['fleet-dashboard']));
  }
  const med = (xs, k) => median(xs.map((x) => x[k]));
  return {
    withoutMs: med(without, 'ms'),
    withMs: med(withDash, 'ms'),
    addedMs: r1(med(withDash, 'ms') - med(without, 'ms')),
    withoutRssMb: med(without, 'rssMb'),
    withRssMb: med(withDash, 'rssMb'),
    runs: { without, with: withDash },
  };
}

async function memory(minutes, browserOn) {
  const demo = await forkDemo({ only: ['fleet-dashboard'] });
  let browser;
  try {
    if (browserOn) {
      browser = await launchBrowser();
      const page = await (await browser.newContext({ viewport: { width: 1400, height: 1100 } })).newPage();
      await page.goto(demo.info.dashboardUrl, { waitUntil: 'load' });
    }
    const samples = [];
    const t0 = Date.now();
    while (Date.now() - t0 < minutes * 60000) {
      await sleep(10000);
      const s = { min: r1((Date.now() - t0) / 60000), rssMb: rssMb(demo.pid) };
      samples.push(s);
      if (Math.round(s.min * 6) % 6 === 0) process.stdout.write(`${s.min} min: RSS ${s.rssMb} MB\n`);
    }
    const calls = (await demo.ask('calls', 'calls')).calls;
    const { reporters } = await demo.ask('reporters', 'reporters');
    const at = (m) => samples.find((s) => s.min >= m)?.rssMb ?? null;
    return {
      minutes,
      browser: Boolean(browser),
      firstRssMb: samples[0]?.rssMb,
      rssAt: { 1: at(1), 2: at(2), 5: at(5), [minutes]: samples[samples.length - 1]?.rssMb },
      peakRssMb: Math.max(...samples.map((s) => s.rssMb)),
      simulatorCalls: calls,
      reportingTerminals: reporters.length,
      reds: demo.reds,
    };
  } finally {
    if (browser) await browser.close();
    await demo.stop();
  }
}

async function main() {
  const minutes = arg('--minutes', 10);
  const rounds = arg('--rounds', 3);
  const browserOn = !process.argv.includes('--no-browser') && Boolean(chromiumPath());
  const started = new Date().toISOString();
  const load = loadavg();
  const start = await starts(rounds);
  process.stdout.write(`start: ${start.withoutMs} ms with no example, ${start.withMs} ms with the dashboard (+${start.addedMs} ms); RSS ${start.withoutRssMb} / ${start.withRssMb} MB\n`);
  const mem = await memory(minutes, browserOn);
  process.stdout.write(`${JSON.stringify({ started, loadBefore: load, loadAfter: loadavg(), start, memory: mem })}\n`);
}

main().catch((err) => {
  process.stderr.write(`${err && err.stack}\n`);
  process.exit(1);
});
