#!/usr/bin/env node
'use strict';
/**
 * npm run bench [-- figure ...] [-- --quick]
 *
 * Runs the benchmark figures (throughput, overhead, poller, inventory, footprint; all
 * by default) against the simulator on 127.0.0.1, stores each figure's result with the
 * machine and the load average before and after it in bench/results.json, and writes
 * BENCHMARKS.md from every stored figure. Benchmarks are not tests: they report and
 * exit 0 whatever they measure (non-zero only when a figure could not run at all).
 * --quick: short runs and small sizes, for debugging the suite (not for the figures).
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { ROOT } = require('./lib/red');
const { loadavg } = require('./lib/util');
const { render } = require('./report');

const FIGURES = ['throughput', 'overhead', 'burst', 'poller', 'inventory', 'footprint', 'codec'];
const RESULTS = path.join(__dirname, 'results.json');

function machine() {
  const cpu = (/^model name\s*:\s*(.*)$/m.exec(fs.readFileSync('/proc/cpuinfo', 'utf8')) || [])[1] || os.cpus()[0]?.model;
  let nproc = os.availableParallelism ? os.availableParallelism() : os.cpus().length;
  try {
    nproc = Number(require('node:child_process').execFileSync('nproc', { encoding: 'utf8' }).trim());
  } catch {
    /* keep os value */
  }
  return {
    nproc,
    memoryGiB: Math.round((os.totalmem() / 1024 ** 3) * 10) / 10,
    cpu,
    node: process.version,
    nodeRed: require(require.resolve('node-red/package.json', { paths: [ROOT] })).version,
    os: `${os.type()} ${os.release()}`,
  };
}

/** Share of all CPUs busy over `ms`, from /proc/stat (taken while the suite itself is idle). */
async function cpuBusy(ms = 2000) {
  const read = () => {
    const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    const idle = f[3] + (f[4] || 0);
    return { idle, total: f.reduce((a, b) => a + b, 0) };
  };
  const a = read();
  await new Promise((r) => setTimeout(r, ms));
  const b = read();
  return Math.round((100 * (1 - (b.idle - a.idle) / Math.max(1, b.total - a.total))));
}

async function main() {
  const args = process.argv.slice(2);
  const quick = args.includes('--quick');
  const asked = args.filter((a) => !a.startsWith('--'));
  for (const a of asked) if (!FIGURES.includes(a)) throw new Error(`unknown figure "${a}"; one of: ${FIGURES.join(', ')}`);
  if (!fs.existsSync(path.join(ROOT, 'dist/simulator/index.js'))) throw new Error('dist/ is missing: run npm run build first');
  const list = asked.length ? asked : FIGURES;
  const stored = fs.existsSync(RESULTS) ? JSON.parse(fs.readFileSync(RESULTS, 'utf8')) : { figures: {} };
  const command = `npm run bench${asked.length || quick ? ` -- ${args.join(' ')}` : ''}`;
  const m = machine();
  const t0 = Date.now();
  let failed = 0;
  for (const name of list) {
    const othersBusyPct = await cpuBusy();
    const before = loadavg();
    const started = new Date().toISOString();
    process.stdout.write(`[bench] ${name}: running (load average ${before}; CPU busy before start ${othersBusyPct}%)\n`);
    const f0 = Date.now();
    try {
      const result = await require(`./figures/${name}`)({ quick });
      const after = loadavg();
      stored.figures[name] = { ...result, run: { command, started, seconds: Math.round((Date.now() - f0) / 1000), loadBefore: before, loadAfter: after, othersBusyPct, quick, machine: m } };
      process.stdout.write(`[bench] ${name}: done in ${Math.round((Date.now() - f0) / 1000)} s (load average ${after})\n`);
    } catch (err) {
      failed++;
      process.stdout.write(`[bench] ${name}: FAILED to run: ${err && err.stack}\n`);
    }
    fs.writeFileSync(RESULTS, `${JSON.stringify(stored, null, 1)}\n`);
  }
  stored.last = { command, machine: m, finished: new Date().toISOString(), seconds: Math.round((Date.now() - t0) / 1000) };
  fs.writeFileSync(RESULTS, `${JSON.stringify(stored, null, 1)}\n`);
  fs.writeFileSync(path.join(ROOT, 'BENCHMARKS.md'), render(stored));
  process.stdout.write(`[bench] wrote BENCHMARKS.md and bench/results.json in ${Math.round((Date.now() - t0) / 1000)} s\n`);
  process.exitCode = failed ? 1 : 0;
}

main().catch((err) => {
  process.stderr.write(`bench: ${err && err.message}\n`);
  process.exit(1);
});
