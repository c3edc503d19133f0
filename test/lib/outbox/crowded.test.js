'use strict';
/**
 * A lost send whose records the gateway's status feed cannot give (issue 45, real-services.md:
 * "many records can share one second, more than a reply holds"): through the Outbox engine
 * with the gateway's sender and reconciler, against the simulator over loopback, its status
 * feed crowded (`crowdStatusRecords`: each second a message's state is recorded in first holds
 * 600 other records, so a reply of 500 never reaches them). The entry's outcome is `unknown`
 * (never sent again: created once), its msg ends once with an error whose code is the
 * attempt's own failure (NETWORK for a reset, TIMEOUT for a timeout), `err.outcome` 'unknown',
 * its message naming the crowded second.
 */
const assert = require('node:assert/strict');
const { startSimulator, formatUtc } = require('../../../dist/simulator');
const { TerminalClient } = require('../../../dist/lib/api/clients');
const { GatewaySender, toJsonItem } = require('../../../dist/lib/outbox/gateway-sender');
const { GatewayReconciler } = require('../../../dist/lib/outbox/gateway-adapter');
const { outcomeError, entryResults } = require('../../../dist/lib/outbox/results');
const { tmpDir, openOutbox } = require('./fake-gateway');
const { waitUntil } = require('../../helpers/wait');

const DEST = '01000001SKYA001';
const raw = (i) => Buffer.from([128, 7, i]).toString('base64');

describe('outbox: a lost send in a crowded second of the status feed (issue 45)', function () {
  this.timeout(90000);
  let sim;
  let client;
  let ob;

  beforeEach(async () => {
    sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0, crowdStatusRecords: 600 } });
  });
  afterEach(async () => {
    await ob?.close();
    await client?.close();
    await sim.close();
  });

  /** An outbox on the client (settle time 3 s: what the test waits for, not what it is about). */
  async function outbox(clientOptions = {}) {
    client = new TerminalClient({ baseUrl: sim.url, token: 'demo-token', rateLimitCalls: 0, maxRetries: 0, ...clientOptions });
    const context = () => client;
    ob = await openOutbox(tmpDir(), null, {
      sender: new GatewaySender({ context }),
      reconciler: new GatewayReconciler({ context, reconcile: { settleSeconds: 3, skewSeconds: 1 } }),
      reconcileEveryMs: 300,
    });
    return ob;
  }

  const item = (i) => ({ kind: 'message', item: toJsonItem({ DestinationID: DEST, RawPayload: raw(i) }) });

  async function endsUnknown(code) {
    await waitUntil(() => ob.outcomes.length === 1, 60000, "the msg's outcome");
    const [o] = ob.outcomes;
    const created = sim.terminal.creations.list();
    assert.equal(created.length, 2, 'both entries created by the one lost call');
    for (const c of created) assert.equal(c.count, 1, `created once, never sent again: ${JSON.stringify(created)}`);
    const second = formatUtc(sim.terminal.messages.get(String(created[0].ids[0])).createSec);
    assert.deepEqual(o.entries.map((e) => [e.outcome.result, e.outcome.code, e.attempts]), [['unknown', code, 1], ['unknown', code, 1]]);
    const err = outcomeError(o);
    assert.equal(err.code, code, 'the attempt\'s own failure, as without the outbox');
    assert.equal(err.outcome, 'unknown');
    assert.match(err.message, /^2 of 2 entries of the outbox "test": the outcome is UNKNOWN: /);
    assert.match(err.message, new RegExp(`more than 500 records in ${second}\\b.*whether it was created cannot be told; it was NOT sent again`));
    assert.match(err.message, /iotgw-message-lookup/);
    assert.deepEqual(entryResults(o.entries[0]).map((r) => [r.DestinationID, r.Outbox, r.code]), [[DEST, 'unknown', code]]);
    // Nothing more comes: one outcome, nothing sent after it.
    const calls = sim.server.callsTo('terminal/messages').length;
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(ob.outcomes.length, 1);
    assert.equal(sim.server.callsTo('terminal/messages').length, calls);
  }

  it('a reply lost after the gateway created the messages (a reset): both entries end unknown, NETWORK, created once', async function () {
    await outbox();
    sim.inject({ route: 'terminal/messages', kind: 'lost-reply', times: 1 });
    await ob.accept('m1', { job: 1 }, [item(1), item(2)]);
    await endsUnknown('NETWORK');
  });

  it('a reply held past the client\'s timeout: both entries end unknown, TIMEOUT, created once', async function () {
    await outbox({ timeoutMs: 1500 });
    sim.inject({ route: 'terminal/messages', kind: 'hold', times: 1 });
    await ob.accept('m1', { job: 1 }, [item(3), item(4)]);
    await waitUntil(() => sim.server.injected.hold === 1, 30000, 'the held reply');
    await endsUnknown('TIMEOUT');
    sim.server.releaseHeld();
  });
});
