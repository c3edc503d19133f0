'use strict';
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { simulatorPerTest, gatewayNode, load, until, collect, catchAll, useFileContext, stopRuntime } = require('../helpers/harness');

describe('iotgw-message-tracker: messages to their final state', function () {
  let sim;
  simulatorPerTest({ terminal: { rateLimitCalls: 0, maxConcurrent: 0, sendingAfterMs: 100, receivedAfterMs: 300, offlineTimeoutMs: 600 } }, (s) => (sim = s));

  const flow = ({ tracker = {}, poller = {}, cancelWire = false } = {}) => [
    gatewayNode(sim),
    { id: 'mode', type: 'iotgw-terminal-mode', gateway: 'gw', mode: 0, wakeupInterval: 0, family: 'any', lingerMs: 0, wires: [cancelWire ? ['track', 'cancel'] : ['track'], []] },
    { id: 'cancel', type: 'iotgw-cancel', gateway: 'gw', lingerMs: 0, wires: [[]] },
    { id: 'poller', type: 'iotgw-status-poller', gateway: 'gw', intervalSeconds: 1, startFrom: '', output: 'batch', autoStart: true, wires: [[]], ...poller },
    { id: 'track', type: 'iotgw-message-tracker', gateway: 'gw', timeoutDays: 14, maxWatched: 100, wires: [['delivered'], ['failed'], ['cancelled'], ['expired']], ...tracker },
    { id: 'delivered', type: 'helper' },
    { id: 'failed', type: 'helper' },
    { id: 'cancelled', type: 'helper' },
    { id: 'expired', type: 'helper' },
    ...catchAll(),
  ];
  const outs = (n) => Object.fromEntries(['delivered', 'failed', 'cancelled', 'expired'].map((k) => [k, collect(n.get(k))]));

  it('routes delivered, failed (gateway TIMED_OUT) and cancelled messages once each, keeping msg properties', async function () {
    const n = await load(flow());
    const o = outs(n);
    n.get('mode').receive({ payload: { DestinationID: '01000001SKYA001', Mode: 1, WakeupInterval: 2 }, job: 'online' });
    n.get('mode').receive({ payload: { DestinationID: '01000002SKYA002', Mode: 1, WakeupInterval: 2 }, job: 'offline' });
    await until(() => o.delivered.length === 1 && o.failed.length === 1, 8000, 'delivered and failed');
    assert.equal(o.delivered[0].job, 'online');
    assert.equal(o.delivered[0].payload.StateName, 'RECEIVED');
    assert.equal(o.delivered[0].payload.outcome, 'delivered');
    assert.ok(o.delivered[0].payload.elapsedSeconds >= 0);
    assert.equal(o.failed[0].job, 'offline');
    assert.equal(o.failed[0].payload.StateName, 'TIMED_OUT');
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(o.delivered.length + o.failed.length, 2, 'each message emitted once');
    assert.equal(sim.server.callsTo('terminal/status').length > 0, true);
  });

  it('reports a cancelled message on the cancelled output', async function () {
    sim.terminal.configure({ receivedAfterMs: 60000, sendingAfterMs: 60000 });
    const n = await load(flow({ cancelWire: true }));
    const o = outs(n);
    n.get('mode').receive({ payload: { DestinationID: '01000001SKYA001', Mode: 0 }, job: 'c' });
    await until(() => o.cancelled.length === 1, 8000);
    assert.equal(o.cancelled[0].payload.StateName, 'CANCELLED');
    assert.equal(o.cancelled[0].job, 'c');
  });

  it('reports a message that does not close within the limit as expired, distinct from TIMED_OUT', async function () {
    sim.terminal.configure({ receivedAfterMs: 600000, offlineTimeoutMs: 600000 });
    const n = await load(flow({ tracker: { timeoutDays: 1 / 86400 } }));
    const o = outs(n);
    n.get('mode').receive({ payload: { DestinationID: '01000001SKYA001', Mode: 0 } });
    await until(() => o.expired.length === 1, 5000);
    assert.equal(o.expired[0].payload.outcome, 'expired');
    assert.equal(o.expired[0].payload.StateName, 'NOT_CLOSED_IN_TIME');
    assert.equal(o.failed.length, 0);
  });

  it('keeps watching across a runtime restart with a file context store', async function () {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iotgw-track-'));
    useFileContext(dir);
    sim.terminal.configure({ receivedAfterMs: 2500 });
    let n = await load(flow({ tracker: { contextStore: 'file' }, poller: { contextStore: 'file' } }));
    let o = outs(n);
    n.get('mode').receive({ payload: { DestinationID: '01000001SKYA001', Mode: 0 }, job: 'survives' });
    await until(() => sim.terminal.counters.submitted === 1);
    await new Promise((r) => setTimeout(r, 200));
    await stopRuntime();
    assert.equal(o.delivered.length, 0, 'not delivered before the restart');
    n = await load(flow({ tracker: { contextStore: 'file' }, poller: { contextStore: 'file' } }));
    o = outs(n);
    await until(() => o.delivered.length === 1, 8000, 'delivery after the restart');
    assert.equal(o.delivered[0].job, 'survives');
    await stopRuntime();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('tracks IDs above 2^53 exactly', async function () {
    sim.terminal.setNextId('9007199254740993');
    const n = await load(flow());
    const o = outs(n);
    n.get('mode').receive({ payload: { DestinationID: '01000001SKYA001', Mode: 0 } });
    await until(() => o.delivered.length === 1, 8000);
    assert.equal(o.delivered[0].payload.ID, '9007199254740993');
    assert.equal(o.delivered[0].topic, '9007199254740993');
  });

  it('refuses a full watch list with a clear error, and input with no ID as BAD_INPUT', async function () {
    sim.terminal.configure({ receivedAfterMs: 600000, sendingAfterMs: 600000 });
    const n = await load(flow({ tracker: { maxWatched: 2 } }));
    const caught = collect(n.get('caught'));
    n.get('track').receive({ payload: [1, 2] });
    n.get('track').receive({ payload: 3 });
    n.get('track').receive({ payload: [{ DestinationID: 'x' }] });
    n.get('track').receive({ payload: [{ ErrorID: 101 }] });
    await until(() => caught.length === 3);
    assert.equal(caught[0].error.code, 'RATE_LIMITED');
    assert.match(caught[0].error.message, /watch list full: 2 messages watched, at most 2/);
    assert.equal(caught[1].error.code, 'BAD_INPUT');
    assert.match(caught[2].error.message, /no accepted message to track/);
  });
});
