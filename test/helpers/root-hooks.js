'use strict';
/**
 * The mocha root-hook plugin of scripts/test.js (`--require`), in every worker; after each
 * test file (the root suite of a worker holds the suites of its one file under --parallel):
 *
 * - Coverage: `v8.takeCoverage()` writes what the worker ran so far to NODE_V8_COVERAGE (set
 *   by c8) and starts counting afresh. Without it a worker writes its coverage only when it
 *   exits on its own; one that is killed (workerpool kills a worker that does not exit
 *   within a second of being told to, a crash, a signal) loses the coverage of every file it
 *   ran, and c8 once reported 81% where the suite covers 96% (issue 34). c8 merges the files.
 * - A safety net for stubs: a flow a failed test left loaded in the test helper is unloaded
 *   (its spies on Node-RED's `log` and the Node prototype restored) and sinon's default
 *   sandbox is restored, so a file whose test failed before its own clean-up cannot make a
 *   later file of the same worker fail with "Attempted to wrap log which is already wrapped".
 *   (Each file still restores its own stubs in afterEach; test/helpers/harness.js's
 *   helper.load() also mends a load left in place, for the tests of the same file.)
 * - Waits: the running test's start and timeout, for the wait limits of test/helpers/wait.js.
 * - Timing: the file's wall time, appended as one JSON line {file, ms} to the file
 *   IOTGW_TEST_TIMINGS names (the runner prints the slowest files). A report, never a check.
 */
const fs = require('node:fs');
const path = require('node:path');
const v8 = require('node:v8');
const { testStarted } = require('./wait');

let started = 0;

/** A module's exports if this worker has loaded it already (never loads it: no cost to files that do not use it). */
function loaded(id) {
  let file;
  try {
    file = require.resolve(id);
  } catch {
    return undefined;
  }
  return require.cache[file] ? require.cache[file].exports : undefined;
}

/**
 * Undoes what a failed test may have left (see above): a flow still loaded in the test
 * helper (its flows stopped and its spies restored, as helper.unload() does), and any fake of
 * sinon's default sandbox.
 */
async function restoreStubs() {
  const helper = loaded('node-red-node-test-helper');
  if (helper && helper._log && typeof helper._log.log.restore === 'function') await helper.unload();
  const sinon = loaded('sinon');
  if (sinon && typeof sinon.restore === 'function') sinon.restore();
}

exports.mochaHooks = {
  beforeAll() {
    started = Date.now();
  },
  beforeEach() {
    testStarted(this.currentTest);
  },
  afterEach() {
    testStarted(undefined);
  },
  async afterAll() {
    await restoreStubs();
    if (process.env.NODE_V8_COVERAGE) v8.takeCoverage();
    const out = process.env.IOTGW_TEST_TIMINGS;
    const file = this.test && this.test.parent && this.test.parent.suites.map((s) => s.file).find(Boolean);
    if (!out || !file) return;
    fs.appendFileSync(out, `${JSON.stringify({ file: path.relative(process.cwd(), file), ms: Date.now() - started })}\n`);
  },
};

exports.restoreStubs = restoreStubs;
