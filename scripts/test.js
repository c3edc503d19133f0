#!/usr/bin/env node
'use strict';
/**
 * The test runner behind `npm test` and `npm run test:unit` (docs/testing.md).
 *
 *   node scripts/test.js            every test, in parallel workers
 *   node scripts/test.js --unit     the unit tier only (seconds: no Node-RED runtime started)
 *   node scripts/test.js --failover the Redis failover tests alone (npm run test:failover; npm test runs them too)
 *   node scripts/test.js --lint     also ESLint over the tree, beside the tests (npm test)
 *   node scripts/test.js --jobs 3   workers (default: IOTGW_TEST_JOBS, else 3 per core less the other
 *                                   work on the machine, at least 2: see jobsForLoad)
 *
 * Tiers, by file name (tests mirror src/; the slow kinds say so in their names):
 *  - unit: test/lib/**, test/package/{architecture,scorecard,types}: no runtime, no Redis.
 *  - all: every *.test.js in `mocha --parallel` workers, each file in a process of its own
 *    (its own Node-RED test runtime, free ports, its own temp directories and Redis
 *    servers). The slow kinds (*.browser, *.child, *.redis, *.flood) are handed out first,
 *    so that the short files fill the gaps while they run rather than after them. Nothing
 *    needs to run alone: no test depends on an idle machine (scripts/under-load.js checks
 *    that with a busy loop on every core).
 * At the end: the ten slowest files of the parallel tier, each file's wall time in its worker
 * (test/helpers/root-hooks.js), the long poles to cut next.
 */
const path = require('node:path');
const fs = require('node:fs');
const os = require('node:os');
const { spawn } = require('node:child_process');

const ROOT = path.resolve(__dirname, '..');
const MOCHA = require.resolve('mocha/bin/mocha.js', { paths: [ROOT] });

const args = process.argv.slice(2);
const unitOnly = args.includes('--unit');
const withLint = args.includes('--lint');
const jobsAt = args.indexOf('--jobs');
const cores = os.availableParallelism ? os.availableParallelism() : os.cpus().length;
const jobsAsked = jobsAt >= 0 ? Number(args[jobsAt + 1]) : Number(process.env.IOTGW_TEST_JOBS) || undefined;

/**
 * Workers that follow the machine: 3 per core on an idle machine (most tests wait on servers
 * and timers, not on a core), one fewer for each unit of other work already there (`load`:
 * see otherLoad), never fewer than 2. On 2 cores: 6 idle, 4 with both cores busy, 2 from a
 * load of 4 up.
 */
function jobsForLoad(cores, load) {
  const most = Math.max(2, cores * 3);
  return Math.min(most, Math.max(2, Math.round(most - load)));
}

/**
 * The other work on the machine as the run starts, in cores. On Linux: the threads ready to
 * run or running (the 4th field of /proc/loadavg, less this process), averaged over a second:
 * the work there is now, queued for a core included. The 1-minute load average would also count
 * `npm test`'s own build and lint, which have just ended. Elsewhere: the cores busy over a
 * second, plus the load average beyond the cores.
 */
async function otherLoad() {
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const runnable = () => {
    try {
      return Number(fs.readFileSync('/proc/loadavg', 'utf8').split(' ')[3].split('/')[0]) - 1;
    } catch {
      return NaN;
    }
  };
  if (Number.isFinite(runnable())) {
    let sum = 0;
    for (let i = 0; i < 20; i++) {
      sum += Math.max(0, runnable());
      await sleep(50);
    }
    return sum / 20;
  }
  const busy = () => os.cpus().reduce((a, c) => ({ idle: a.idle + c.times.idle, all: a.all + Object.values(c.times).reduce((x, y) => x + y, 0) }), { idle: 0, all: 0 });
  const a = busy();
  await sleep(1000);
  const b = busy();
  const all = b.all - a.all;
  const busyCores = all > 0 ? (1 - (b.idle - a.idle) / all) * cores : 0;
  return busyCores + Math.max(0, os.loadavg()[0] - cores);
}

function testFiles(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'helpers' || e.name === 'fixtures' || e.name === 'artifacts' ? [] : testFiles(p);
    return e.name.endsWith('.test.js') ? [path.relative(ROOT, p).split(path.sep).join('/')] : [];
  });
}

const rc = JSON.parse(fs.readFileSync(path.join(ROOT, '.mocharc.json'), 'utf8'));
const rcArgs = [`--timeout=${rc.timeout}`, `--reporter=${rc.reporter}`, ...(rc.exit ? ['--exit'] : [])];

const SLOW = /\.(browser|child|redis|flood)\.test\.js$/;
const UNIT = (f) => (f.startsWith('test/lib/') && !SLOW.test(f)) || /^test\/package\/(architecture|scorecard|types)\.test\.js$/.test(f);

// --failover runs only the *.failover.* files (a Redis master SIGKILLed under three runtimes);
// --exclude REGEX leaves out files (CI's Node-RED 5 line: see .ci/run).
const failover = args.includes('--failover');
const excludeAt = args.indexOf('--exclude');
const exclude = excludeAt >= 0 ? new RegExp(args[excludeAt + 1]) : undefined;
const all = testFiles(path.join(ROOT, 'test'))
  .filter((f) => !failover || /\.failover\./.test(f))
  .filter((f) => !exclude || !exclude.test(f))
  .sort();
const tiers = unitOnly
  ? [{ name: 'unit', files: all.filter(UNIT), parallel: false }]
  : [{ name: 'all', files: [...all.filter((f) => SLOW.test(f)), ...all.filter((f) => !SLOW.test(f))], parallel: true }];

// The root hooks of every worker (test/helpers/root-hooks.js): coverage taken after each file,
// stubs restored, each file's wall time for the slowest-files report.
const ROOT_HOOKS = path.join(ROOT, 'test', 'helpers', 'root-hooks.js');
const TIMINGS = path.join(os.tmpdir(), `iotgw-test-timings-${process.pid}.jsonl`);

/** The `n` slowest files of the run, as lines to print (none when no timing was written). */
function slowest(n) {
  let lines;
  try {
    lines = fs.readFileSync(TIMINGS, 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
  fs.rmSync(TIMINGS, { force: true });
  const all = lines.map((l) => JSON.parse(l)).sort((a, b) => b.ms - a.ms);
  const sum = all.reduce((a, r) => a + r.ms, 0);
  const rows = all.slice(0, n).map((r) => `  ${(r.ms / 1000).toFixed(1).padStart(6)} s  ${r.file}\n`);
  // The sum over all files against the workers' time shows whether the run waits on its long poles.
  return [...rows, `  ${(sum / 1000).toFixed(0).padStart(6)} s  in all, ${all.length} files (${jobs} workers)\n`];
}

/**
 * --lint: ESLint over the tree beside the tests (npm test): the tests leave about half of two
 * cores idle while they wait on servers and timers, so lint costs no wall time there. Its own
 * process is left out of coverage (NODE_V8_COVERAGE unset). Resolves to {code, output}.
 */
function lint() {
  return new Promise((resolve) => {
    const env = { ...process.env };
    delete env.NODE_V8_COVERAGE;
    // eslint's package exports leave out its bin: found beside its main module (lib/api.js).
    const bin = path.join(path.dirname(require.resolve('eslint', { paths: [ROOT] })), '..', 'bin', 'eslint.js');
    const child = spawn(process.execPath, [bin, '.'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('error', (err) => resolve({ code: 1, output: String(err) }));
    child.on('close', (code) => resolve({ code, output }));
  });
}

function run(tier) {
  return new Promise((resolve) => {
    // .mocharc.json's settings but its spec list (mocha would add that list to the files named here).
    const margs = [MOCHA, '--no-config', ...rcArgs, '--require', ROOT_HOOKS, ...(tier.parallel ? ['--parallel', '--jobs', String(jobs)] : []), ...tier.files];
    process.stdout.write(`\n=== ${tier.name}: ${tier.files.length} files${tier.parallel ? `, ${jobs} workers (${jobsWhy})` : ''}\n`);
    // Each file's own timing needs a worker per file (the serial tier's root suite holds them all).
    const env = tier.parallel ? { ...process.env, IOTGW_TEST_TIMINGS: TIMINGS } : { ...process.env };
    const child = spawn(process.execPath, margs, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] });
    // mocha's own counts, from its closing lines (failure details may follow them at length).
    const counts = { passing: 0, failing: 0, pending: 0 };
    let partial = '';
    child.stdout.on('data', (d) => {
      process.stdout.write(d);
      const lines = (partial + d).split('\n');
      partial = lines.pop();
      for (const line of lines) {
        const m = /^ +(\d+) (passing|failing|pending)\b/.exec(line.replace(/\x1b\[[0-9;]*m/g, '')); // eslint-disable-line no-control-regex
        if (m) counts[m[2]] = Number(m[1]);
      }
    });
    child.on('close', (code) => resolve({ code, ...counts }));
  });
}

let jobs;
let jobsWhy;

/**
 * The CPU time (user + system, in s) of this runner's ended children and everything they
 * waited for (mocha, its workers, the Node-RED, Redis and Chromium processes the tests ran):
 * /proc/self/stat's cutime and cstime. Undefined off Linux. Low against the wall time means
 * the run waits on timers and servers rather than on the cores.
 */
function childrenCpuSeconds() {
  try {
    const stat = fs.readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Math.round((Number(fields[13]) + Number(fields[14])) / 100);
  } catch {
    return undefined;
  }
}

module.exports = { jobsForLoad, otherLoad };
if (require.main === module) main();

async function main() {
  const started = Date.now();
  if (jobsAsked) {
    jobs = jobsAsked;
    jobsWhy = 'as asked';
  } else {
    const load = await otherLoad();
    jobs = jobsForLoad(cores, load);
    jobsWhy = `other work: ${load.toFixed(1)} threads ready to run on ${cores} cores, load average ${os.loadavg()[0].toFixed(1)}`;
  }
  let code = 0;
  const linted = withLint ? lint() : undefined;
  const sum = { passing: 0, failing: 0, pending: 0 };
  for (const tier of tiers) {
    if (!tier.files.length) continue;
    const r = await run(tier);
    for (const k of Object.keys(sum)) sum[k] += r[k];
    if (r.code !== 0) code = r.code || 1;
  }
  if (linted) {
    const l = await linted;
    process.stdout.write(`\n=== lint (eslint ., beside the tests): ${l.code === 0 ? 'clean' : 'FAILED'}\n${l.output}`);
    if (l.code !== 0) code = code || 1;
  }
  const slow = slowest(10);
  if (slow.length) process.stdout.write(`\n=== slowest files (wall time in their worker)\n${slow.join('')}`);
  const secs = Math.round((Date.now() - started) / 1000);
  const cpu = childrenCpuSeconds();
  const busy = cpu === undefined ? '' : `, ${cpu} s of CPU in the run's child processes: ${Math.round((100 * cpu) / (secs * cores))}% of ${cores} cores`;
  process.stdout.write(`\n=== all tiers (${secs} s${busy})\n`);
  process.stdout.write(`  ${sum.passing} passing (all tiers)\n`);
  if (sum.failing) process.stdout.write(`  ${sum.failing} failing (all tiers)\n`);
  if (sum.pending) process.stdout.write(`  ${sum.pending} pending (all tiers)\n`);
  process.exit(code);
}
