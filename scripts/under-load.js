#!/usr/bin/env node
'use strict';
/**
 * The suite under load (issue 29): runs the tests twice in a row with a CPU hog on every
 * core beside them (busy loops at normal priority), and says whether both runs passed.
 * A test that fails here waits on the machine's speed instead of a condition.
 *
 *   npm run build && node scripts/under-load.js            both tiers, twice
 *   node scripts/under-load.js --runs 1 -- --unit          the runner's own flags after --
 *
 * The hogs stop when the runs end (and with this process).
 */
const os = require('node:os');
const path = require('node:path');
const { spawn, fork } = require('node:child_process');

const args = process.argv.slice(2);
const dash = args.indexOf('--');
const runnerArgs = dash >= 0 ? args.slice(dash + 1) : [];
const own = dash >= 0 ? args.slice(0, dash) : args;
const runs = own.includes('--runs') ? Number(own[own.indexOf('--runs') + 1]) : 2;
const cores = os.availableParallelism ? os.availableParallelism() : os.cpus().length;

const hogs = [];
for (let i = 0; i < cores; i++) hogs.push(spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
const stopHogs = () => hogs.forEach((h) => h.kill('SIGKILL'));
process.on('exit', stopHogs);
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130));

(async () => {
  const results = [];
  for (let i = 1; i <= runs; i++) {
    const started = Date.now();
    process.stdout.write(`\n##### under load (${cores} busy loops): run ${i} of ${runs}\n`);
    const code = await new Promise((resolve) => fork(path.join(__dirname, 'test.js'), runnerArgs, { stdio: 'inherit' }).on('exit', (c) => resolve(c ?? 1)));
    results.push({ run: i, code, seconds: Math.round((Date.now() - started) / 1000) });
  }
  stopHogs();
  for (const r of results) process.stdout.write(`under load, run ${r.run}: ${r.code === 0 ? 'passed' : `FAILED (exit ${r.code})`} in ${r.seconds} s\n`);
  process.exit(results.every((r) => r.code === 0) ? 0 : 1);
})();
