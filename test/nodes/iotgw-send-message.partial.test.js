'use strict';
/**
 * Issue 43, finding 4: a msg of iotgw-send-message whose work takes several calls (messages to
 * one terminal batched into submit/messages, each message to many its own submit/to_multiple)
 * ends with every result the gateway gave, even when another call of the same msg failed: the
 * error carries them (msg.results, null where unknown) and the messages without a result
 * (msg.failed), so a Catch flow that sends msg.failed again creates nothing twice.
 */
const assert = require('node:assert/strict');
const { simulatorPerTest, gatewayNode, sendMessageNode, load, until, collect, catchAll } = require('../helpers/harness');

const RAW = [128, 5, 1, 2, 3];

describe('iotgw-send-message: a msg of several calls, one of them failing', function () {
  this.timeout(60000);
  let sim;
  simulatorPerTest({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 }, fleet: { size: 20 } }, (s) => (sim = s));

  const flow = () => [gatewayNode(sim, { maxRetries: 3 }), sendMessageNode({ lingerMs: 0, wires: [['ok'], ['rejected']] }), { id: 'ok', type: 'helper' }, { id: 'rejected', type: 'helper' }, ...catchAll()];

  async function fleet(n) {
    const r = await fetch(`${sim.url}/api/v1.0/info/terminals?PageSize=${n}`, { headers: { authorization: 'Bearer demo-token' } });
    const ids = (await r.json()).Terminals.map((t) => t.PrimeID);
    sim.server.clearCalls();
    return ids;
  }

  /** Messages the simulator created, per destination. */
  function created() {
    const out = {};
    for (const m of sim.terminal.messages.values()) out[m.terminal] = (out[m.terminal] ?? 0) + 1;
    return out;
  }

  /**
   * Sends `payload`, waits for its Catch, then does what a Catch flow does with what the error
   * carries: sends msg.failed again (the whole msg.payload when the error carries nothing).
   */
  async function failThenRetry(n, payload) {
    const ok = collect(n.get('ok'));
    const caught = collect(n.get('caught'));
    n.get('send').receive({ payload, keep: 'k' });
    await until(() => caught.length === 1, 30000, 'the msg to fail');
    const c = caught[0];
    n.get('send').receive({ payload: c.failed ?? c.payload });
    await until(() => ok.length === 1 || caught.length === 2, 30000, 'the retry to end');
    assert.equal(caught.length, 1, `the retry went through: ${caught[1]?.error?.message}`);
    return { c, retried: ok[0] };
  }

  it('the to_multiple call fails (HTTP 500): the accepted single is in msg.results, msg.failed is the to-many message; its retry creates nothing twice', async function () {
    const [d0, d1, d2] = await fleet(3);
    const n = await load(flow());
    sim.server.inject({ route: 'terminal/to_multiple', kind: 'server-error', times: 1 });
    const payload = [{ DestinationID: d0, RawPayload: RAW }, { Destinations: [d1, d2], RawPayload: RAW }];
    const { c, retried } = await failThenRetry(n, payload);
    assert.deepEqual(created(), { [d0]: 1, [d1]: 1, [d2]: 1 }, 'each destination got its message once');
    assert.equal(c.error.code, 'HTTP_ERROR');
    assert.equal(c.keep, 'k');
    assert.equal(c.results.length, 3, 'one entry per destination, in input order');
    assert.equal(c.results[0].DestinationID, d0);
    assert.ok(c.results[0].ID > 0 && c.results[0].ErrorID === 0, 'the single the gateway accepted');
    assert.deepEqual(c.results.slice(1), [null, null], 'nothing known of the to-many message');
    assert.deepEqual(c.failed, [payload[1]], 'the message to send again, as given');
    assert.deepEqual(retried.payload.map((r) => r.DestinationID), [d1, d2]);
    assert.equal(sim.server.callsTo('terminal/messages').length, 1, 'the single was sent once');
    assert.equal(sim.server.callsTo('terminal/to_multiple').length, 2, 'the to-many message: the failed call and its retry');
  });

  it('the submit/messages call fails: the accepted to-many entries are in msg.results, msg.failed holds the singles; the retry creates nothing twice', async function () {
    const [d0, d1, d2, d3] = await fleet(4);
    const n = await load(flow());
    sim.server.inject({ route: 'terminal/messages', kind: 'server-error', times: 1 });
    const payload = [{ DestinationID: d0, RawPayload: RAW }, { Destinations: [d1, d2], RawPayload: RAW }, { DestinationID: d3, RawPayload: RAW }];
    const { c, retried } = await failThenRetry(n, payload);
    assert.deepEqual(created(), { [d0]: 1, [d1]: 1, [d2]: 1, [d3]: 1 }, 'each destination got its message once');
    assert.equal(c.error.code, 'HTTP_ERROR');
    assert.deepEqual(c.results.map((r) => r && r.DestinationID), [null, d1, d2, null]);
    assert.deepEqual(c.failed, [payload[0], payload[2]]);
    assert.deepEqual(retried.payload.map((r) => r.DestinationID), [d0, d3]);
    assert.equal(sim.server.callsTo('terminal/to_multiple').length, 1, 'the to-many message was sent once');
  });

  it('150 messages to one terminal each, the second of the two submit calls failing: the other call\'s results in msg.results, the failed call\'s items in msg.failed; the retry creates nothing twice', async function () {
    const dests = await fleet(20);
    const n = await load(flow());
    sim.server.inject({ route: 'terminal/messages', kind: 'server-error', skip: 1, times: 1 });
    const payload = Array.from({ length: 150 }, (_, i) => ({ DestinationID: dests[i % 20], RawPayload: [128, 5, i % 256], UserMessageID: i + 1 }));
    const { c, retried } = await failThenRetry(n, payload);
    const calls = sim.server.callsTo('terminal/messages');
    const ids = (x) => JSON.parse(x.body).map((m) => m.UserMessageID);
    assert.equal(calls.length, 3, 'two calls, then the retry');
    assert.deepEqual([ids(calls[0]).length, ids(calls[1]).length].sort((a, b) => a - b), [50, 100], 'batches of 100 and 50');
    assert.deepEqual(c.failed.map((m) => m.UserMessageID), ids(calls[1]), 'msg.failed: the items of the failed call, as given');
    assert.deepEqual(ids(calls[2]), ids(calls[1]), 'the retry sent only those');
    assert.equal(sim.terminal.messages.size, 150, 'each message created once');
    assert.deepEqual(c.results.map((r, i) => (r ? i + 1 : null)).filter(Boolean), ids(calls[0]), 'msg.results: the answered call\'s entries in their input positions');
    assert.equal(retried.payload.length, ids(calls[1]).length);
  });
});
