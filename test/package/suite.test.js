'use strict';
/**
 * The suite's own guarantees (issue 34), each on a real mocha --parallel run of small files
 * in test/fixtures/suite/ (named *.spec.js: never part of the suite itself):
 * - coverage counts every worker however it ends: a file's coverage is on disk even when a
 *   later file of the same worker kills that worker;
 * - a failing test never fails another: a test that failed with its flow loaded does not make
 *   the next file of its worker fail with "Attempted to wrap log which is already wrapped";
 * - a wait that times out says what it waited for and, when asked, what the test saw;
 * - the runner's workers follow the machine's load, and its plan hands out the longest files
 *   first with no more than half the workers (two at least, three at most) on browser files.
 */
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { jobsForLoad, otherLoad, schedule, coreSpeed, referenceMs } = require('../../scripts/test');

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

  it("a wait that times out names what it waited for and what the test saw (the harness's, the child Node-RED's and the Redis helpers' waits, one wait underneath: an async condition is awaited, a throw ends it but for the Redis helpers')", async function () {
    require('../helpers/wait').testStarted(undefined); // the limit asked for, not the floor of a loaded machine
    const waits = { harness: require('../helpers/harness').until, childRed: require('../helpers/child-red').waitFor, redis: require('../helpers/redis').until };
    for (const [name, wait] of Object.entries(waits)) {
      await assert.rejects(wait(() => false, 50, 'a thing', () => 'saw 3'), /^Error: timed out after 50 ms waiting for a thing: saw 3$/, name);
      await assert.rejects(wait(() => false, 50, 'a thing'), /^Error: timed out after 50 ms waiting for a thing$/, name);
      // One wait underneath (test/helpers/wait.js): a condition met later, an async one.
      let n = 0;
      await wait(() => ++n >= 3, 5000, 'the third look');
      await wait(async () => true, 50, 'a promise of true');
      await assert.rejects(wait(async () => false, 50, 'a promise of false'), /waiting for a promise of false$/, name);
      // A throw ends the wait, but for the Redis helpers' (a server that is restarting).
      let tries = 0;
      const throwsTwice = () => {
        if (++tries <= 2) throw new Error('ECONNREFUSED');
        return true;
      };
      if (name === 'redis') await wait(throwsTwice, 5000, 'a server');
      else await assert.rejects(wait(throwsTwice, 5000, 'a server'), /^Error: ECONNREFUSED$/, name);
    }
  });

  it('runs 4 workers per core on an idle machine (5 per core of the reference speed, at most 4), two fewer per unit of other work, never fewer than 2', function () {
    assert.equal(jobsForLoad(2, 0), 8);
    assert.equal(jobsForLoad(2, 1), 6);
    assert.equal(jobsForLoad(2, 2.2), 4);
    assert.equal(jobsForLoad(2, 3), 2);
    assert.equal(jobsForLoad(2, 20), 2);
    assert.equal(jobsForLoad(1, 0), 4);
    assert.equal(jobsForLoad(16, 1), 62);
    // Slower cores, fewer workers: 1.6 times slower than the reference (issue 44's machine) 6 on
    // 2 idle cores, 3 on one, 4 with one core busy; never more than 4 per core on faster ones,
    // never fewer than 2.
    assert.equal(jobsForLoad(2, 0, 1 / 1.6), 6);
    assert.equal(jobsForLoad(1, 0, 1 / 1.6), 3);
    assert.equal(jobsForLoad(2, 1, 1 / 1.6), 4);
    assert.equal(jobsForLoad(2, 0, 3), 8);
    assert.equal(jobsForLoad(2, 1, 0.5), 3);
    assert.equal(jobsForLoad(2, 4, 0.5), 2);
    assert.equal(jobsForLoad(2, 0, 0.01), 3);
  });

  it("measures one core's speed against the reference", function () {
    const { ms, speed } = coreSpeed(2);
    assert.ok(ms > 0 && Number.isFinite(ms), String(ms));
    assert.ok(speed > 0 && Number.isFinite(speed), String(speed));
  });

  it("takes the reference of the Node.js that runs the calibration: Node 22's V8 runs it faster on the same cores", function () {
    assert.equal(referenceMs(20), 24);
    assert.ok(Math.abs(referenceMs(22) - 19.44) < 0.01, String(referenceMs(22)));
    assert.equal(referenceMs(24), referenceMs(22), 'a later major: the latest listed');
    assert.equal(referenceMs(18), 24, 'an earlier one: Node 20');
    // The same cores (calibrated at 37 ms on Node 20, 30 ms on Node 22) get the same workers on both.
    assert.equal(jobsForLoad(2, 0, referenceMs(20) / 37), jobsForLoad(2, 0, referenceMs(22) / 30));
  });

  it('hands out the longest files first, with no more than half the workers (two at least, three at most) on browser files', function () {
    const b = (n) => `test/editor/b${n}.browser.test.js`;
    const p = (n) => `test/nodes/p${n}.test.js`;
    const times = { [b(1)]: 60, [b(2)]: 60, [b(3)]: 60, [b(4)]: 60, [p(1)]: 30, [p(2)]: 30, [p(3)]: 30, [p(4)]: 30 };
    // 4 workers: two browser files at a time; the short files take the other two workers, and
    // each browser file waits for one of the first two to end.
    assert.deepEqual(schedule(Object.keys(times).reverse(), 4, times), [b(1), b(2), p(1), p(2), p(3), p(4), b(3), b(4)]);
    // 8 workers: three browser files at most, whatever the workers.
    assert.deepEqual(schedule(Object.keys(times), 8, times).slice(0, 7), [b(1), b(2), b(3), p(1), p(2), p(3), p(4)]);
    // 2 workers (a busy machine): two browser files at a time, else they would run one after another.
    assert.deepEqual(schedule(Object.keys(times), 2, times), [b(1), b(2), b(3), b(4), p(1), p(2), p(3), p(4)]);
    // A file the table does not know counts 5 s: after a 10 s one, before a 3 s one.
    assert.deepEqual(schedule(['test/c.test.js', 'test/new.test.js', 'test/a.test.js'], 2, { 'test/a.test.js': 10, 'test/c.test.js': 3 }), [
      'test/a.test.js',
      'test/new.test.js',
      'test/c.test.js',
    ]);
  });

  it('takes the workers asked for (--jobs, IOTGW_TEST_JOBS) and says so; --lint runs ESLint beside the tests (npm test)', async function () {
    for (const [args, env] of [[['--jobs', '3'], {}], [[], { IOTGW_TEST_JOBS: '3' }], [['--jobs', '3', '--lint=scripts/test.js'], {}]]) {
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
      if (args.some((a) => a.startsWith('--lint'))) assert.match(r.out, /=== lint \(eslint scripts\/test\.js, beside the tests\): clean/, r.out);
      else assert.doesNotMatch(r.out, /=== lint/, r.out);
    }
  });

  it('measures the other work on the machine (threads ready to run, averaged over a second)', async function () {
    const load = await otherLoad();
    assert.ok(Number.isFinite(load) && load >= 0, String(load));
  });
});
