'use strict';
/** Shared by the typed clients' tests (plain Node.js, no Node-RED). */
const assert = require('node:assert/strict');
const { GatewayError } = require('../..');

/** Expects `promise` to reject with GatewayError `code`; returns the error. */
async function refused(promise, code) {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof GatewayError, `a GatewayError, not ${err}`);
    assert.equal(err.code, code, err.message);
    return err;
  }
  assert.fail(`expected ${code}`);
}

module.exports = { refused };
