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

/**
 * The one wait of the suite: until `pred()` (awaited) holds, looked at every `every` ms, within
 * waitLimit(ms). On a timeout it throws "timed out after N ms waiting for `what`", followed by
 * what `detail()` says when given (what the test saw). `throwsMeanNotYet`: a throw of `pred` counts
 * as "not yet" (a server that is restarting) instead of ending the wait. The harness's `until`,
 * the child runtime's `waitFor` and the Redis helpers' `until` are this with their own defaults.
 */
async function waitUntil(pred, ms, what, { detail, every = 25, throwsMeanNotYet = false } = {}) {
  ms = waitLimit(ms);
  const start = Date.now();
  for (;;) {
    let ok;
    try {
      ok = await pred();
    } catch (err) {
      if (!throwsMeanNotYet) throw err;
      ok = false;
    }
    if (ok) return;
    if (Date.now() - start > ms) throw new Error(`timed out after ${ms} ms waiting for ${what}${detail ? `: ${detail()}` : ''}`);
    await new Promise((r) => setTimeout(r, every));
  }
}

module.exports = { WAIT_FLOOR_MS, waitLimit, testStarted, waitUntil };
