'use strict';
/**
 * A mocha root-hook plugin for scripts/test.js (`--require`): in each file's worker, the wall
 * time from the file's first hook to its last, appended as one JSON line {file, ms} to the
 * file IOTGW_TEST_TIMINGS names (the runner prints the slowest files from it). A report,
 * never a check: no test depends on it.
 */
const fs = require('node:fs');
const path = require('node:path');

let started = 0;

exports.mochaHooks = {
  beforeAll() {
    started = Date.now();
  },
  afterAll() {
    const out = process.env.IOTGW_TEST_TIMINGS;
    // The root suite of a worker holds the suites of its one file (mocha --parallel).
    const file = this.test && this.test.parent && this.test.parent.suites.map((s) => s.file).find(Boolean);
    if (!out || !file) return;
    fs.appendFileSync(out, `${JSON.stringify({ file: path.relative(process.cwd(), file), ms: Date.now() - started })}\n`);
  },
};
