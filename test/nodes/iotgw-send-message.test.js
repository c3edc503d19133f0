'use strict';
const assert = require('node:assert/strict');
const { simulatorPerTest, load, until, collect, sendMessageNode, nodeFlow } = require('../helpers/harness');

describe('iotgw-send-message: general to-mobile messages', function () {
  let sim;
  simulatorPerTest({ terminal: { rateLimitCalls: 0, maxConcurrent: 0, sendingAfterMs: 100, receivedAfterMs: 300 } }, (s) => (sim = s));

  const flow = (gw = {}, nodeProps = {}, extra = []) => nodeFlow(sim, sendMessageNode(nodeProps), { gw, outs: ['ok', 'bad'], extra });
  const bodies = () => sim.server.callsTo('terminal/messages').map((c) => JSON.parse(c.body));

  it('sends RawPayload from a Buffer, a byte array and base64, and a Payload from CMF Fields or a plain object', async function () {
    const n = await load(flow({}, { messageClass: 2, messageLifetime: 12 }));
    const ok = collect(n.get('ok'));
    n.get('send').receive({
      payload: [
        { DestinationID: '01000001SKYA001', RawPayload: Buffer.from([128, 5, 1]), UserMessageID: '9223372036854775807' },
        { DestinationID: '01000001SKYA001', RawPayload: [128, 5, 2] },
        { DestinationID: '01000001SKYA001', RawPayload: Buffer.from([128, 5, 3]).toString('base64'), MessageClass: 1 },
        { DestinationID: '01000003SKYB003', Payload: { SIN: 128, MIN: 6, Name: 'cfg', Fields: [{ Name: 'x', Type: 'unsignedint', Value: '1' }] } },
        { DestinationID: '01000003SKYB003', Payload: { SIN: 128, MIN: 7, Fields: { rate: 30, mode: 'eco', on: true, blob: Buffer.from([1]) } } },
      ],
      fieldTypes: { mode: 'enum' },
      transportType: 1,
      keep: 'me',
    });
    await until(() => ok.length === 1);
    assert.equal(ok[0].keep, 'me');
    assert.equal(ok[0].payload.length, 5);
    assert.equal(ok[0].payload[0].UserMessageID, '9223372036854775807', 'int64 exact, above 2^53 as a string');
    const [sent] = bodies();
    assert.equal(sent.length, 5);
    assert.deepEqual(sent.slice(0, 3).map((i) => i.RawPayload), ['gAUB', 'gAUC', 'gAUD']);
    assert.equal(sim.server.callsTo('terminal/messages')[0].body.includes('"UserMessageID":9223372036854775807'), true, 'sent as an exact JSON integer');
    assert.deepEqual(sent.map((i) => i.MessageClass), [2, 2, 1, 2, 2], "an item's own field wins over the setting");
    assert.deepEqual(sent.map((i) => i.MessageLifetime), [12, 12, 12, 12, 12]);
    assert.deepEqual(sent.map((i) => i.TransportType), [1, 1, 1, 1, 1], 'msg.transportType overrides the (empty) setting');
    assert.deepEqual(sent[3].Payload, { SIN: 128, MIN: 6, IsForward: true, Fields: [{ Name: 'x', Type: 'unsignedint', Value: '1' }], Name: 'cfg' });
    assert.deepEqual(sent[4].Payload.Fields, [
      { Name: 'rate', Type: 'unsignedint', Value: '30' },
      { Name: 'mode', Type: 'enum', Value: 'eco' },
      { Name: 'on', Type: 'boolean', Value: 'True' },
      { Name: 'blob', Type: 'data', Value: 'AQ==' },
    ]);
  });

  it('refuses bad input naming the field, and sends nothing', async function () {
    const n = await load(flow({}, { maxRawBytes: 10 }));
    const caught = collect(n.get('caught'));
    const cases = [
      [{ RawPayload: [1, 2] }, 'msg.payload.DestinationID'],
      [{ DestinationID: '01000001SKYA001', RawPayload: Buffer.alloc(11) }, 'msg.payload.RawPayload'],
      [{ DestinationID: '01000001SKYA001', Payload: { SIN: 256, MIN: 1, Fields: [] } }, 'msg.payload.Payload.SIN'],
      [{ DestinationID: '01000001SKYA001', Payload: { SIN: 1, MIN: -1, Fields: [] } }, 'msg.payload.Payload.MIN'],
      [{ DestinationID: '01000001SKYA001', RawPayload: [1, 2], Payload: { SIN: 1, MIN: 1 } }, 'msg.payload.RawPayload'],
      [{ DestinationID: '01000001SKYA001' }, 'msg.payload.RawPayload'],
      [{ DestinationID: '01000001SKYA001', RawPayload: 'not base64!' }, 'msg.payload.RawPayload'],
      [{ DestinationID: '01000001SKYA001', RawPayload: [1, 300] }, 'msg.payload.RawPayload'],
      [{ DestinationID: '01000001SKYA001', RawPayload: [1, 2], MessageClass: 4 }, 'msg.payload.MessageClass'],
      [{ DestinationID: '01000001SKYA001', Payload: { SIN: 1, MIN: 1, Fields: { x: 1.5 } } }, 'msg.payload.Payload.Fields.x'],
      ['01000001SKYA001', 'msg.payload'],
      [{ DestinationID: '01000001SKYA001', RawPayload: [1, 2] }, 'msg.messageClass', { messageClass: '2' }],
    ];
    for (const [payload, , extra] of cases) n.get('send').receive({ payload, ...extra });
    // One good message in an array with a bad one: nothing of the msg is sent.
    n.get('send').receive({ payload: [{ DestinationID: '01000001SKYA001', RawPayload: [1, 2] }, { DestinationID: '01000001SKYA001', RawPayload: [1] }] });
    await until(() => caught.length === cases.length + 1);
    caught.slice(0, cases.length).forEach((m, i) => {
      assert.equal(m.error.code, 'BAD_INPUT', `case ${i}`);
      assert.ok(m.error.message.includes(`${cases[i][1]}:`), `case ${i}: ${m.error.message}`);
    });
    assert.match(caught[cases.length].error.message, /msg\.payload\[1\]\.RawPayload: at least 2 bytes/);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(sim.server.callsTo('terminal/messages').length, 0, 'no request for bad input');
  });

  it('250 messages leave in at most 3 calls through the SEND budget shared with terminal mode; each gets its own result, tracked to delivery', async function () {
    // Each message's SUBMITTED and RECEIVED records are 1.2 s apart (SENDING skipped), so no
    // second holds more status records than one reply: the strict gateway would serve only
    // 500 of a crowded second, and the tracker could not see the rest.
    sim.terminal.configure({ acceptUnknownTerminals: true, sendingAfterMs: 5000, receivedAfterMs: 1200 });
    const n = await load(
      flow({ rateLimitCalls: 5, rateLimitWindowSeconds: 60 }, { wires: [['ok', 'track'], ['bad']] }, [
        { id: 'mode', type: 'iotgw-terminal-mode', gateway: 'gw', mode: 0, wakeupInterval: 0, family: 'any', wires: [[], []] },
        // Polled by hand below: the account's GET budget (5 a minute here) is not spent early.
        { id: 'poller', type: 'iotgw-status-poller', gateway: 'gw', intervalSeconds: 3600, startFrom: '-10s', output: 'batch', autoStart: false, wires: [[]] },
        { id: 'track', type: 'iotgw-message-tracker', gateway: 'gw', timeoutDays: 14, maxWatched: 1000, wires: [['delivered'], ['failed'], [], []] },
        { id: 'delivered', type: 'helper' },
        { id: 'failed', type: 'helper' },
      ]),
    );
    const ok = collect(n.get('ok'));
    const delivered = collect(n.get('delivered'));
    const dests = Array.from({ length: 250 }, (_, i) => `3${String(i).padStart(7, '0')}SKY${i.toString(16).toUpperCase().padStart(4, '0')}`);
    dests.forEach((d, i) => n.get('send').receive({ payload: { DestinationID: d, RawPayload: [128, 1, i & 0xff] }, n: i }));
    await until(() => ok.length === 250, 10000, '250 results');
    const calls = sim.server.callsTo('terminal/messages');
    assert.ok(calls.length <= 3, `${calls.length} calls`);
    assert.equal(calls.reduce((a, c) => a + JSON.parse(c.body).length, 0), 250);
    for (const m of ok) {
      assert.equal(m.payload.length, 1);
      assert.equal(m.payload[0].DestinationID, dests[m.n], `msg ${m.n} got the result of its own item`);
    }
    assert.equal(new Set(ok.map((m) => m.payload[0].ID)).size, 250);
    // The SEND window is the account's: terminal mode now has 5 - 3 = 2 calls left in it.
    n.get('mode').receive({ payload: '01000001SKYA001' });
    await until(() => sim.server.callsTo('terminal/mode').length === 1, 5000);
    n.get('mode').receive({ payload: '01000001SKYA001' });
    await until(() => sim.server.callsTo('terminal/mode').length === 2, 5000);
    let third = false;
    n.get('mode').receive({ payload: '01000001SKYA001' });
    setTimeout(() => (third = sim.server.callsTo('terminal/mode').length > 2), 500);
    // Every message is delivered 1.2 s after its submit on this simulator: then one poll drains the statuses.
    await new Promise((r) => setTimeout(r, 1800));
    n.get('poller').receive({ payload: 'poll' });
    await until(() => delivered.length === 250, 20000, '250 delivered');
    assert.equal(third, false, 'a sixth SEND call waits for the shared window');
    assert.equal(sim.server.callsTo('terminal/messages').filter((c) => c.status === 429).length, 0);
    assert.deepEqual(new Set(delivered.map((m) => m.n)).size, 250, 'each input tracked to delivery, with its own msg');
  });
});
