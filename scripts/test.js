#!/usr/bin/env node
'use strict';
/**
 * The test runner behind `npm test` and `npm run test:unit` (docs/testing.md).
 *
 *   node scripts/test.js            every test, in parallel workers
 *   node scripts/test.js --unit     the unit tier only (seconds: no Node-RED runtime started)
 *   node scripts/test.js --failover the Redis failover tests alone (npm run test:failover; npm test runs them too)
 *   node scripts/test.js --lint     also ESLint over the tree, beside the tests (npm test);
 *                                   --lint=a,b over those paths only
 *   node scripts/test.js --durations  also writes each file's time of this run to test/durations.json
 *                                   (the plan of the next runs: see schedule)
 *   node scripts/test.js --jobs 3   workers (default: IOTGW_TEST_JOBS, else 4 per core on a core as fast
 *                                   as the reference, fewer on a slower one, less two for each unit of
 *                                   other work on the machine, at least 2: see jobsForLoad, coreSpeed)
 *
 * Tiers, by file name (tests mirror src/; the slow kinds say so in their names):
 *  - unit: test/lib/**, test/package/{architecture,scorecard,types}: no runtime, no Redis.
 *  - all: every *.test.js in `mocha --parallel` workers, each file in a process of its own
 *    (its own Node-RED test runtime, free ports, its own temp directories and Redis
 *    servers), handed out in the order of a plan (schedule): the longest files first, so that
 *    the short ones fill the gaps rather than a long one ending the run alone, and no more than
 *    three browser files at a time. The plan reads each file's time of a quiet run from
 *    test/durations.json (--durations writes it); a file it does not know counts 5 s. Nothing
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
// --lint: ESLint over the tree beside the tests; --lint=a,b over those paths only (the runner's own test).
const lintArg = args.find((a) => a === '--lint' || a.startsWith('--lint='));
const withLint = lintArg !== undefined;
const lintPaths = lintArg && lintArg.includes('=') ? lintArg.slice('--lint='.length).split(',').filter(Boolean) : ['.'];
const writeTable = args.includes('--durations');
const jobsAt = args.indexOf('--jobs');
const cores = os.availableParallelism ? os.availableParallelism() : os.cpus().length;
const jobsAsked = jobsAt >= 0 ? Number(args[jobsAt + 1]) : Number(process.env.IOTGW_TEST_JOBS) || undefined;

/**
 * Workers that follow the machine: 5 per core on an idle machine whose cores are as fast as the
 * reference, at most 4 per core (most tests wait on servers and timers, not on a core; the plan
 * keeps the browser files, which do not, to three at a time), in proportion fewer on slower cores
 * (`speed`, 1 at the reference: see coreSpeed), two fewer for each unit of other work already
 * there (`load`: see otherLoad), never fewer than 2. On 2 cores of the reference's speed: 8 idle,
 * 4 with both cores busy, 2 from a load of 3 up; on 2 cores 1.6 times slower: 6 (issue 44: 8
 * there failed the failover and the map's tests, which waited on work the cores had no time
 * for; 4 left 45% of the cores idle, the suite's time bound by its files' waits: 5 and 6 passed
 * there once the long files were cut, 6 the faster).
 */
function jobsForLoad(cores, load, speed = 1) {
  const most = Math.max(2, Math.min(cores * 4, Math.round(cores * 5 * Math.min(1, Math.max(0.25, speed)))));
  return Math.min(most, Math.max(2, Math.round(most - 2 * load)));
}

/**
 * The calibration's time on the reference machine, in ms, by the major of Node.js that runs it:
 * the 2-core machines on which the suite's figures of 2026-11-25/26 were taken (docs/testing.md)
 * and 4 workers per core passed. Derived, as those machines are gone: the machines of
 * 2026-11-27 run the suite 1.6 times slower (tiers 314 s against 187 s, issue 44) and take 37 to
 * 39 ms here on Node 20 nearly idle (more under load: 50 to 75 ms beside other agents' builds);
 * 38 / 1.6 = 24. Node 22's V8 runs the same work faster on the same cores (best of 20 runs, the
 * machine of 2026-11-27 at a load of 5: 29.9 ms against Node 20's 37.0, 0.81 of it), which says
 * nothing of the cores: without a reference of its own, CI's line 2 (Node 22) took these cores
 * for 1.25 times faster and ran 6 workers on two idle ones where line 1 runs 5. A later major
 * takes the reference of the latest one listed, an earlier one Node 20's.
 */
const REFERENCE_MS_BY_NODE = { 20: 24, 22: 24 * 0.81 };

/** REFERENCE_MS_BY_NODE for Node.js major `major` (this process's by default). */
function referenceMs(major = Number(process.versions.node.split('.')[0])) {
  const known = Object.keys(REFERENCE_MS_BY_NODE).map(Number).sort((a, b) => a - b);
  const at = known.filter((m) => m <= major).pop() ?? known[0];
  return REFERENCE_MS_BY_NODE[at];
}
const REFERENCE_MS = referenceMs();

/** A fixed piece of the work the tests do most (JSON in and out, maps of keyed records). */
function calibrationWork() {
  const record = { id: '01000005SKYCD96', at: '2026-11-27 14:00:00', fields: [1, 2, 3, 4.5, 'six'], nested: { a: true, b: null } };
  const seen = new Map();
  let n = 0;
  for (let i = 0; i < 20000; i++) {
    const copy = JSON.parse(JSON.stringify(record));
    copy.fields.push(i);
    seen.set(`${copy.id}:${i % 500}`, copy);
    n += copy.fields.length + seen.size;
  }
  return n;
}

/**
 * How fast one core of this machine is against the reference: {ms, speed}, `ms` the best of five
 * runs of calibrationWork (about half a second in all), `speed` REFERENCE_MS / ms (above 1 on a
 * faster core). The best run, so that other work on the machine, which otherLoad counts, is not
 * counted twice as far as one core can tell.
 */
function coreSpeed(rounds = 5) {
  let ms = Infinity;
  for (let r = 0; r < rounds; r++) {
    const t = process.hrtime.bigint();
    calibrationWork();
    ms = Math.min(ms, Number(process.hrtime.bigint() - t) / 1e6);
  }
  return { ms, speed: REFERENCE_MS / ms };
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
const tiers = unitOnly ? [{ name: 'unit', files: all.filter(UNIT), parallel: false }] : [{ name: 'all', files: all, parallel: true }];

// The root hooks of every worker (test/helpers/root-hooks.js): coverage taken after each file,
// stubs restored, each file's wall time for the slowest-files report.
const ROOT_HOOKS = path.join(ROOT, 'test', 'helpers', 'root-hooks.js');
const TIMINGS = path.join(os.tmpdir(), `iotgw-test-timings-${process.pid}.jsonl`);

/** Each file's wall time of the run, [{file, ms}] (none when no timing was written); the record is removed. */
function timings() {
  let lines;
  try {
    lines = fs.readFileSync(TIMINGS, 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
  fs.rmSync(TIMINGS, { force: true });
  return lines.map((l) => JSON.parse(l));
}

/** The `n` slowest of `times` (timings()), as lines to print. */
function slowest(times, n) {
  const all = [...times].sort((a, b) => b.ms - a.ms);
  const sum = all.reduce((a, r) => a + r.ms, 0);
  const rows = all.slice(0, n).map((r) => `  ${(r.ms / 1000).toFixed(1).padStart(6)} s  ${r.file}\n`);
  // The sum over all files against the workers' time shows whether the run waits on its long poles.
  return [...rows, `  ${(sum / 1000).toFixed(0).padStart(6)} s  in all, ${all.length} files (${jobs} workers)\n`];
}

/**
 * --durations: test/durations.json from this run's times, in whole seconds (at least 1), by file.
 * Only after a run of every file that passed (a file left out or failed would lose its entry or
 * record a short time); run it on a quiet machine, now and then, and commit the table.
 */
function writeDurations(times) {
  const table = Object.fromEntries(
    [...times].sort((a, b) => a.file.localeCompare(b.file)).map((r) => [r.file, Math.max(1, Math.round(r.ms / 1000))]),
  );
  fs.writeFileSync(DURATIONS, `${JSON.stringify(table, null, 2)}\n`);
  return Object.keys(table).length;
}

/**
 * --lint: ESLint over the tree beside the tests (npm test): the tests leave part of two cores
 * idle while they wait on servers and timers, so lint costs little wall time there. Its own
 * process is left out of coverage (NODE_V8_COVERAGE unset). Resolves to {code, output}.
 */
function lint() {
  return new Promise((resolve) => {
    const env = { ...process.env };
    delete env.NODE_V8_COVERAGE;
    // eslint's package exports leave out its bin: found beside its main module (lib/api.js).
    const bin = path.join(path.dirname(require.resolve('eslint', { paths: [ROOT] })), '..', 'bin', 'eslint.js');
    const child = spawn(process.execPath, [bin, ...lintPaths], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('error', (err) => resolve({ code: 1, output: String(err) }));
    child.on('close', (code) => resolve({ code, output }));
  });
}

/**
 * Each test file's wall time in s in a quiet run (test/durations.json, written by
 * `node scripts/test.js --durations` after a run of every file: a record, never a check).
 */
const DURATIONS = path.join(ROOT, 'test', 'durations.json');
const DEFAULT_DURATION = 5; // s: a file the table does not know yet (the table's median is about 3)
const HEAVY = /\.browser\.test\.js$/; // Chromium and the editor: a core's worth of work while they run

/**
 * The order in which the parallel tier's files are handed to `jobs` workers (mocha takes them
 * first come, first served). A plan of the run from the files' expected times: whenever a worker
 * is free it takes the longest file left, but not a browser file while half the workers (two at
 * least, three at most) already run one. So the long files start first (none is left to run
 * alone at the end), and the browser files, which keep a core busy, run beside the files that
 * mostly wait on servers and timers instead of all at once at the start (five at once kept both
 * cores at 100% for two minutes and left them idle for a third of the rest: the tests took 241 to
 * 263 s in 6 workers in that order, 228 and 224 s in this plan).
 */
function schedule(files, jobs, durations) {
  const est = (f) => durations[f] ?? DEFAULT_DURATION;
  const left = [...files].sort((a, b) => est(b) - est(a) || a.localeCompare(b));
  // Two at least: with 2 to 4 workers (a busy machine) one browser file at a time would chain them
  // into the run's long pole.
  const most = Math.min(3, Math.max(2, Math.floor(jobs / 2)));
  const running = []; // {end, heavy}
  const order = [];
  let now = 0;
  while (left.length) {
    while (running.length < jobs) {
      const heavyNow = running.filter((r) => r.heavy).length;
      const i = left.findIndex((f) => !HEAVY.test(f) || heavyNow < most);
      if (i < 0) break;
      const [f] = left.splice(i, 1);
      order.push(f);
      running.push({ end: now + est(f), heavy: HEAVY.test(f) });
    }
    running.sort((a, b) => a.end - b.end);
    now = running.shift().end;
  }
  return order;
}

function readDurations() {
  try {
    return JSON.parse(fs.readFileSync(DURATIONS, 'utf8'));
  } catch {
    return {};
  }
}

function run(tier) {
  return new Promise((resolve) => {
    // .mocharc.json's settings but its spec list (mocha would add that list to the files named here).
    const files = tier.parallel ? schedule(tier.files, jobs, readDurations()) : tier.files;
    const margs = [MOCHA, '--no-config', ...rcArgs, '--require', ROOT_HOOKS, ...(tier.parallel ? ['--parallel', '--jobs', String(jobs)] : []), ...files];
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

module.exports = { jobsForLoad, otherLoad, schedule, coreSpeed, referenceMs };
if (require.main === module) main();

async function main() {
  const started = Date.now();
  if (jobsAsked) {
    jobs = jobsAsked;
    jobsWhy = 'as asked';
  } else {
    const load = await otherLoad();
    const core = coreSpeed();
    jobs = jobsForLoad(cores, load, core.speed);
    jobsWhy = `other work: ${load.toFixed(1)} threads ready to run on ${cores} cores, load average ${os.loadavg()[0].toFixed(1)}; core speed ${core.speed.toFixed(2)} of the reference (calibration ${core.ms.toFixed(0)} ms, reference ${REFERENCE_MS.toFixed(1)} ms on Node ${process.versions.node.split('.')[0]})`;
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
    process.stdout.write(`\n=== lint (eslint ${lintPaths.join(' ')}, beside the tests): ${l.code === 0 ? 'clean' : 'FAILED'}\n${l.output}`);
    if (l.code !== 0) code = code || 1;
  }
  const times = timings();
  if (times.length) process.stdout.write(`\n=== slowest files (wall time in their worker)\n${slowest(times, 10).join('')}`);
  if (writeTable) {
    const full = !unitOnly && !failover && !exclude && code === 0 && times.length === all.length;
    process.stdout.write(full ? `\n=== test/durations.json: ${writeDurations(times)} files\n` : '\n=== test/durations.json left as it was: --durations needs a run of every file that passes\n');
  }
  const secs = Math.round((Date.now() - started) / 1000);
  const cpu = childrenCpuSeconds();
  const busy = cpu === undefined ? '' : `, ${cpu} s of CPU in the run's child processes: ${Math.round((100 * cpu) / (secs * cores))}% of ${cores} cores`;
  process.stdout.write(`\n=== all tiers (${secs} s${busy})\n`);
  process.stdout.write(`  ${sum.passing} passing (all tiers)\n`);
  if (sum.failing) process.stdout.write(`  ${sum.failing} failing (all tiers)\n`);
  if (sum.pending) process.stdout.write(`  ${sum.pending} pending (all tiers)\n`);
  process.exit(code);
}
