'use strict';
/** Shared by the typed clients' tests (plain Node.js, no Node-RED). */
const assert = require('node:assert/strict');
const { GatewayError } = require('../..');

/** Expects `promise` to reject with GatewayError `code` (its message matching `re`, if given); returns the error. */
async function refused(promise, code, re) {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof GatewayError, `a GatewayError, not ${err}`);
    assert.equal(err.code, code, err.message);
    if (re) assert.match(err.message, re);
    return err;
  }
  assert.fail(`expected ${code}`);
}

/**
 * A simulator (limits off, a fleet of `fleetSize` terminals) and a TerminalClient of its demo
 * account (with `timeoutMs`, if given) for each test of the suite; `use({sim, client})` gets
 * them before each test.
 */
function terminalClientPerTest(use, { fleetSize = 2500, timeoutMs } = {}) {
  const { startSimulator, TerminalClient } = require('../..');
  let sim;
  let client;
  beforeEach(async () => {
    sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 }, fleet: { size: fleetSize } });
    client = new TerminalClient({ baseUrl: sim.url, clientId: 'demo', clientSecret: 'demo-secret', rateLimitCalls: 0, ...(timeoutMs ? { timeoutMs } : {}) });
    use({ sim, client });
  });
  afterEach(async () => {
    await client.close();
    await sim.close();
  });
}

/** The gateway's form of a UTC time (yyyy-MM-dd HH:mm:ss) of `sec`; the seconds now; an hour ago in that form. */
const utc = (sec) => new Date(sec * 1000).toISOString().slice(0, 19).replace('T', ' ');
const nowSec = () => Math.floor(Date.now() / 1000);
const hourAgo = () => utc(nowSec() - 3600);

/** The simulator's next reply on `route` is `body` (HTTP 200), once. */
const serveOnce = (sim, route, body) => sim.server.inject({ route, status: 200, body, times: 1 });

/** The client outbox tests' destination, and the base64 of a payload of bytes 128, 9, then `bytes`. */
const OUTBOX_DEST = '01000001SKYA001';
const outboxRaw = (...bytes) => Buffer.from([128, 9, ...bytes]).toString('base64');

/**
 * The client outbox tests' set-up: a simulator (limits off) for each test, `use(sim)` gets it;
 * returns `newClient()`, a TerminalClient of its demo account closed after the test (maxRetries
 * 0: a refused connection fails at once, the client's own retries of reads would take half a
 * minute to give up, so the outbox's back-off is what waits); `open(opts)`, an outbox of a new
 * client on the store `store()` names ({file} or {redis}), its outcomes collected from the
 * start: {ob, seen}; `created(...bytes)`, how many times the gateway created outboxRaw(...bytes)
 * at OUTBOX_DEST.
 */
function clientOutboxPerTest(store, use) {
  const { startSimulator, TerminalClient } = require('../..');
  let sim;
  const clients = [];
  const newClient = () => {
    const c = new TerminalClient({ baseUrl: sim.url, clientId: 'demo', clientSecret: 'demo-secret', rateLimitCalls: 0, maxRetries: 0 });
    clients.push(c);
    return c;
  };
  const open = async (opts = {}) => {
    const ob = await newClient().outbox({ ...store(), ...opts });
    const seen = [];
    ob.on('outcome', (o) => seen.push(o));
    return { ob, seen };
  };
  const created = (...bytes) => sim.terminal.creations.count(OUTBOX_DEST, { RawPayload: outboxRaw(...bytes) });
  beforeEach(async () => {
    sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 } });
    use(sim);
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) await c.close();
    await sim.close();
  });
  return { newClient, open, created };
}

module.exports = { refused, terminalClientPerTest, utc, nowSec, hourAgo, serveOnce, OUTBOX_DEST, outboxRaw, clientOutboxPerTest };
