'use strict';
/**
 * How long a wait for a condition may last (issue 34: waits of 2 to 5 s failed on a loaded
 * machine). A wait ends as soon as its condition holds, so a long limit costs nothing when all
 * is well; it only decides how long a test takes to fail. waitLimit(ms) is the limit a test
 * asked for, raised to at least WAIT_FLOOR_MS but never past the running test's own mocha
 * timeout (less 2 s), so that a condition that never comes still fails with the wait's
 * message ("timed out after ... waiting for X") rather than mocha's. The running test is
 * recorded by the root hooks (test/helpers/root-hooks.js); without them the floor is not
 * applied beyond what was asked.
 */
const WAIT_FLOOR_MS = 30000;

let current; // {started, timeout} of the running test

function testStarted(test) {
  current = test ? { started: Date.now(), timeout: test.timeout() } : undefined;
}

function waitLimit(ms) {
  if (!current || !current.timeout) return ms;
  const left = current.timeout - (Date.now() - current.started) - 2000;
  return Math.max(ms, Math.min(WAIT_FLOOR_MS, left));
}

module.exports = { WAIT_FLOOR_MS, waitLimit, testStarted };
