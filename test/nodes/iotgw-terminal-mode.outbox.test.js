'use strict';
/**
 * The outbox on iotgw-terminal-mode and iotgw-cancel, and on a message to many (issue 45),
 * in a real Node-RED runtime against the simulator: mode messages and their cancellations
 * through outboxes (each created and cancelled once); a 503 keeps entries waiting and they
 * drain after it; a Destinations message is one entry with one result per destination; a
 * deleted node's entries are taken over by a new node with the same outboxName.
 */
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { outboxPerTest, helper, gatewayNode, load, until, collect, catchAll, recordWarnings } = require('../helpers/harness');

const A = '01000001SKYA001';
const B = '01000003SKYB003';

describe('iotgw-terminal-mode and iotgw-cancel: the outbox', function () {
  this.timeout(90000);
  let sim;
  let userDir;
  outboxPerTest({ sendingAfterMs: 60000, receivedAfterMs: 120000 }, 'iotgw-outbox-', (s, d) => ((sim = s), (userDir = d)));

  const on = { outbox: 'on' };
  // A throttle holds the account's SEND group for its window: a short one here.
  const flow = (modeProps = {}) => [
    gatewayNode(sim, { maxRetries: 0, rateLimitWindowSeconds: 2 }),
    { id: 'mode', type: 'iotgw-terminal-mode', gateway: 'gw', mode: 0, wakeupInterval: 0, family: 'any', ...on, ...modeProps, wires: [['cancel', 'ok'], ['bad']] },
    { id: 'ok', type: 'helper' },
    { id: 'bad', type: 'helper' },
    { id: 'cancel', type: 'iotgw-cancel', gateway: 'gw', ...on, wires: [['out']] },
    { id: 'out', type: 'helper' },
    ...catchAll(),
  ];

  it('mode messages, then their cancellations, each through its outbox: created once, cancelled once, properties kept', async function () {
    const n = await load(flow());
    const out = collect(n.get('out'));
    const ok = collect(n.get('ok'));
    n.get('mode').receive({ payload: [{ DestinationID: A, Mode: 1, WakeupInterval: 2 }, { DestinationID: B, Mode: 3, WakeupInterval: 12 }], job: 7 });
    await until(() => out.length === 1, 60000, 'the cancellations');
    assert.equal(ok[0].payload.length, 2);
    assert.ok(ok[0].payload.every((r) => r.ID > 0 && r.ErrorID === 0));
    assert.equal(out[0].job, 7);
    assert.equal(out[0].payload.length, 2);
    assert.ok(out[0].payload.every((c) => c.CancelRequestID > 0));
    assert.deepEqual(out[0].payload.map((c) => c.ID), ok[0].payload.map((r) => r.ID));
    assert.equal(sim.terminal.counters.cancelled, 2);
    assert.ok(out[0].outbox.acceptedAt);
  });

  it('a 503 keeps the entries waiting; they drain once it is over, one outcome per msg', async function () {
    const n = await load(flow());
    const ok = collect(n.get('ok'));
    const bad = collect(n.get('bad'));
    const caught = collect(n.get('caught'));
    sim.server.inject({ route: 'terminal/mode', status: 503, body: { Message: 'Service Unavailable' }, times: 2 });
    for (let i = 0; i < 3; i++) n.get('mode').receive({ payload: { DestinationID: A, Mode: 1, WakeupInterval: i }, i });
    await until(() => ok.length === 3, 60000, 'three outcomes', () => JSON.stringify({ bad: bad.map((m) => m.payload), caught: caught.map((m) => m.error) }));
    assert.deepEqual(ok.map((m) => m.i), [0, 1, 2]);
    assert.ok(sim.server.callsTo('terminal/mode').length >= 3);
  });

  it("a deleted node's entries wait (one warning naming the outbox); a new node with the same outboxName takes them over", async function () {
    let n = await load(flow({ outboxName: 'modes' }));
    sim.server.link.refuse();
    const warns = recordWarnings(n.get('mode'));
    n.get('mode').receive({ payload: { DestinationID: B, Mode: 2, WakeupInterval: 0 }, job: 'x' });
    await until(() => fs.existsSync(path.join(userDir, 'iotgw-outbox', 'modes')), 30000, 'the outbox folder');
    await new Promise((r) => setTimeout(r, 200));
    // The node deleted (a deploy without it): its close says removed.
    await new Promise((r) => n.get('mode').close(true).then(r));
    assert.match(warns.join('\n'), /outbox "modes" keeps 1 entries waiting until their TTL/);
    await helper.unload();
    await sim.server.link.up();
    const f = flow({ outboxName: 'modes' });
    f[1].id = 'mode2';
    n = await load(f);
    const ok = collect(n.get('ok'));
    await until(() => ok.length === 1, 60000, 'the outcome through the new node');
    assert.equal(ok[0].job, 'x');
  });
});

describe('iotgw-send-message: a Destinations message through the outbox', function () {
  this.timeout(90000);
  let sim;
  outboxPerTest({ sendingAfterMs: 100, receivedAfterMs: 300 }, 'iotgw-outbox-', (s) => (sim = s));

  it('one entry, one result per destination on output 1', async function () {
    const n = await load([
      gatewayNode(sim),
      { id: 'send', type: 'iotgw-send-message', gateway: 'gw', transportType: '', messageLifetime: '', messageClass: '', maxRawBytes: 1023, outbox: 'on', wires: [['ok'], ['bad']] },
      { id: 'ok', type: 'helper' },
      { id: 'bad', type: 'helper' },
      ...catchAll(),
    ]);
    const ok = collect(n.get('ok'));
    n.get('send').receive({ payload: { Destinations: [A, B], RawPayload: Buffer.from([128, 1, 9]).toString('base64') } });
    await until(() => ok.length === 1, 60000, 'the output');
    assert.deepEqual(ok[0].payload.map((r) => r.DestinationID), [A, B]);
    assert.ok(ok[0].payload.every((r) => r.ID > 0 && r.ErrorID === 0));
  });
});
