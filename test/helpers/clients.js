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

/**
 * A simulator (limits off, a fleet of 2,500 terminals) and a TerminalClient of its demo account for
 * each test of the suite; `use({sim, client})` gets them before each test.
 */
function terminalClientPerTest(use) {
  const { startSimulator, TerminalClient } = require('../..');
  let sim;
  let client;
  beforeEach(async () => {
    sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 }, fleet: { size: 2500 } });
    client = new TerminalClient({ baseUrl: sim.url, clientId: 'demo', clientSecret: 'demo-secret', rateLimitCalls: 0 });
    use({ sim, client });
  });
  afterEach(async () => {
    await client.close();
    await sim.close();
  });
}

module.exports = { refused, terminalClientPerTest };
