'use strict';
/**
 * The suite's own guarantees (issue 34), each on a real mocha --parallel run of small files
 * in test/fixtures/suite/ (named *.spec.js: never part of the suite itself):
 * - coverage counts every worker however it ends: a file's coverage is on disk even when a
 *   later file of the same worker kills that worker;
 * - a failing test never fails another: a test that failed with its flow loaded does not make
 *   the next file of its worker fail with "Attempted to wrap log which is already wrapped";
 * - the runner's workers follow the machine's load.
 */
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { jobsForLoad, otherLoad } = require('../../scripts/test');

const ROOT = path.resolve(__dirname, '../..');
const MOCHA = require.resolve('mocha/bin/mocha.js');
const FIX = 'test/fixtures/suite';
const ROOT_HOOKS = 'test/helpers/root-hooks.js';
let dir;

/**
 * Runs mocha --parallel on `files`, in this order, in one worker (a second worker holds
 * holder.spec.js until the last file writes the mark: mocha runs serially with --jobs 1),
 * with `env`; resolves {code, out}.
 */
function mocha(files, { hooks = true, env = {} } = {}) {
  const mark = path.join(dir, 'mark');
  const args = [MOCHA, '--no-config', '--timeout', '60000', '--reporter', 'spec', '--parallel', '--jobs', '2', ...(hooks ? ['--require', ROOT_HOOKS] : []), ...['holder.spec.js', ...files].map((f) => `${FIX}/${f}`)];
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, SUITE_FIXTURE_MARK: mark, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('close', (code) => resolve({ code, out }));
  });
}

/** Whether any V8 coverage file in `covDir` counts a call of the fixture's suiteFixtureCounted. */
function counted(covDir) {
  for (const f of fs.readdirSync(covDir)) {
    const report = JSON.parse(fs.readFileSync(path.join(covDir, f), 'utf8'));
    for (const script of report.result) {
      if (!script.url.endsWith('/fixtures/suite/counted.js')) continue;
      const fn = script.functions.find((x) => x.functionName === 'suiteFixtureCounted');
      if (fn && fn.ranges[0].count > 0) return true;
    }
  }
  return false;
}

describe('the suite itself', function () {
  this.timeout(120000);
  beforeEach(function () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iotgw-suite-'));
  });
  afterEach(function () {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it("keeps a file's coverage when a later file kills the worker", async function () {
    const cov = path.join(dir, 'coverage');
    const r = await mocha(['runs.spec.js', 'killed.spec.js'], { env: { NODE_V8_COVERAGE: cov } });
    assert.notEqual(r.code, 0, `the killed worker fails the run:\n${r.out}`);
    assert.match(r.out, /runs the counted module/, r.out);
    assert.ok(counted(cov), `the first file's coverage is on disk (${fs.readdirSync(cov).length} coverage files):\n${r.out}`);
  });

  for (const hooks of [true, false]) {
    it(`a test that failed with its flow loaded does not fail the next file of its worker (${hooks ? 'root hooks' : "the harness's load alone"})`, async function () {
      const r = await mocha(['stubbed.spec.js', 'after-stub.spec.js'], { hooks });
      assert.match(r.out, /2 passing/, r.out); // the holder and the file after the failure
      assert.match(r.out, /1 failing/, r.out);
      assert.match(r.out, /failed on purpose/, r.out);
      assert.doesNotMatch(r.out, /already wrapped/, r.out);
    });
  }

  it('runs 3 workers per core on an idle machine, fewer under load, never fewer than 2', function () {
    assert.equal(jobsForLoad(2, 0), 6);
    assert.equal(jobsForLoad(2, 2.2), 4);
    assert.equal(jobsForLoad(2, 4), 2);
    assert.equal(jobsForLoad(2, 20), 2);
    assert.equal(jobsForLoad(1, 0), 3);
    assert.equal(jobsForLoad(16, 1), 47);
  });

  it('takes the workers asked for (--jobs, IOTGW_TEST_JOBS) and says so; --lint runs ESLint beside the tests (npm test)', async function () {
    for (const [args, env] of [[['--jobs', '3'], {}], [[], { IOTGW_TEST_JOBS: '3' }], [['--jobs', '3', '--lint'], {}]]) {
      const r = await new Promise((resolve) => {
        const child = spawn(process.execPath, ['scripts/test.js', ...args, '--exclude', '^(?!test/lib/common/units\\.test\\.js$)'], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
        let out = '';
        child.stdout.on('data', (d) => (out += d));
        child.stderr.on('data', (d) => (out += d));
        child.on('close', (code) => resolve({ code, out }));
      });
      assert.equal(r.code, 0, r.out);
      assert.match(r.out, /=== all: 1 files, 3 workers \(as asked\)/, r.out);
      assert.match(r.out, /[1-9]\d* passing \(all tiers\)/, r.out);
      assert.doesNotMatch(r.out, /failing/, r.out);
      if (args.includes('--lint')) assert.match(r.out, /=== lint \(eslint \., beside the tests\): clean/, r.out);
      else assert.doesNotMatch(r.out, /=== lint/, r.out);
    }
  });

  it('measures the other work on the machine (threads ready to run, averaged over a second)', async function () {
    const load = await otherLoad();
    assert.ok(Number.isFinite(load) && load >= 0, String(load));
  });
});
