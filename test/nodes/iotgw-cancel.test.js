'use strict';
const assert = require('node:assert/strict');
const { simulatorPerTest, gatewayNode, load, until, collect, catchAll } = require('../helpers/harness');

describe('iotgw-cancel against the simulator', function () {
  let sim;
  simulatorPerTest({ terminal: { rateLimitCalls: 0, maxConcurrent: 0, sendingAfterMs: 60000, receivedAfterMs: 120000 } }, (s) => (sim = s));

  const flow = (gwProps = {}) => [
    gatewayNode(sim, gwProps),
    { id: 'mode', type: 'iotgw-terminal-mode', gateway: 'gw', mode: 0, wakeupInterval: 0, family: 'any', wires: [['cancel', 'ok'], []] },
    { id: 'ok', type: 'helper' },
    { id: 'cancel', type: 'iotgw-cancel', gateway: 'gw', wires: [['out']] },
    { id: 'out', type: 'helper' },
    ...catchAll(),
  ];

  it('cancels the accepted output of terminal mode wired straight in, keeping msg properties', async function () {
    const n = await load(flow());
    const out = collect(n.get('out'));
    n.get('mode').receive({ payload: [{ DestinationID: '01000001SKYA001', Mode: 1, WakeupInterval: 2 }, { DestinationID: '01000003SKYB003', Mode: 3, WakeupInterval: 12 }], job: 7 });
    await until(() => out.length === 1);
    assert.equal(out[0].job, 7);
    assert.equal(out[0].payload.length, 2);
    assert.deepEqual(out[0].payload.map((c) => c.CancellationStatus), [1, 1]);
    assert.deepEqual(out[0].payload.map((c) => c.CancellationStatusName), ['CANCELLED', 'CANCELLED']);
    assert.ok(out[0].payload.every((c) => c.CancelRequestID > 0));
    assert.equal(sim.terminal.counters.cancelled, 2);
  });

  it('accepts a number, a decimal string, a BigInt and arrays; refuses bad IDs naming them, sending nothing', async function () {
    const n = await load(flow());
    const out = collect(n.get('out'));
    const caught = collect(n.get('caught'));
    const cancel = n.get('cancel');
    cancel.receive({ payload: 5 });
    cancel.receive({ payload: '6' });
    cancel.receive({ payload: [7n, '8'] });
    await until(() => out.length === 3);
    assert.deepEqual(out.map((m) => m.payload.map((c) => c.ErrorName)).flat(), ['MESSAGE_NOT_FOUND', 'MESSAGE_NOT_FOUND', 'MESSAGE_NOT_FOUND', 'MESSAGE_NOT_FOUND']);
    sim.server.clearCalls();
    cancel.receive({ payload: [1, 'x1', -3, 1.5, { DestinationID: 'a' }, null] });
    cancel.receive({ payload: [] });
    cancel.receive({ payload: 2 ** 60 });
    await until(() => caught.length === 3);
    assert.ok(caught.every((c) => c.error.code === 'BAD_INPUT'));
    const m = caught[0].error.message;
    assert.match(m, /msg\.payload\[1\]: the message ID must be a decimal integer/);
    assert.match(m, /msg\.payload\[2\]: the message ID must be positive/);
    assert.match(m, /msg\.payload\[3\]: the message ID must be an integer/);
    assert.match(m, /msg\.payload\[4\]\.ID: missing/);
    assert.match(caught[1].error.message, /empty array/);
    assert.match(caught[2].error.message, /above 2\^53/);
    assert.equal(sim.server.callsTo('terminal/cancel').length, 0);
  });

  it('sends IDs above 2^53 as exact JSON integers and returns them exactly', async function () {
    sim.terminal.setNextId('9223372036854775000');
    const n = await load(flow());
    const out = collect(n.get('out'));
    n.get('mode').receive({ payload: { DestinationID: '01000001SKYA001', Mode: 0 } });
    await until(() => out.length === 1);
    assert.equal(out[0].payload[0].ID, '9223372036854775000');
    assert.equal(out[0].payload[0].CancellationStatus, 1);
    assert.equal(sim.server.callsTo('terminal/cancel')[0].body, '[9223372036854775000]');
  });

  it('splits 250 IDs into calls of the batch size and returns them in input order', async function () {
    const n = await load(flow({ maxBatchSize: 100 }));
    const out = collect(n.get('out'));
    const ids = Array.from({ length: 250 }, (_, i) => 1000 + i);
    n.get('cancel').receive({ payload: ids });
    await until(() => out.length === 1);
    // The three calls leave together (three slots free); the log is in order of completion.
    assert.deepEqual(sim.server.callsTo('terminal/cancel').map((c) => JSON.parse(c.body).length).sort((a, b) => b - a), [100, 100, 50]);
    assert.deepEqual(out[0].payload.map((c) => c.ID), ids);
  });

  it('a failure in one of several calls ends the msg with the error and the results that did arrive', async function () {
    const n = await load(flow({ maxBatchSize: 2, maxRetries: 0 }));
    const caught = collect(n.get('caught'));
    sim.inject({ route: 'terminal/cancel', status: 500, body: { Message: 'boom' }, times: 1 });
    // The first call fails; with maxConcurrent 3 the other calls are already in flight or follow.
    n.get('cancel').receive({ payload: [1, 2, 3, 4] });
    await until(() => caught.length === 1);
    assert.equal(caught[0].error.code, 'HTTP_ERROR');
    assert.ok(Array.isArray(caught[0].results), 'msg.results holds what arrived');
    assert.equal(caught[0].results.length, 4);
  });
});
