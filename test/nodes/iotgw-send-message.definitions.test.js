'use strict';
/** iotgw-send-message with definitions: {DestinationID, message, fields} sent as RawPayload; a bad field sends nothing. */
const assert = require('node:assert/strict');
const { simulatorPerTest, load, until, collect, sendMessageNode, nodeFlow } = require('../helpers/harness');
const { definitionsNode, fieldXml, messageFile } = require('../helpers/codec');

describe('iotgw-send-message with definitions', function () {
  let sim;
  simulatorPerTest({ terminal: { rateLimitCalls: 0, maxConcurrent: 0, sendingAfterMs: 100, receivedAfterMs: 300 } }, (s) => (sim = s));

  const flow = (props = {}, defs = {}) => nodeFlow(sim, sendMessageNode({ definitions: 'defs', ...props }), { outs: ['ok', 'bad'], extra: [definitionsNode(defs)] });

  it('the simulator receives the expected bytes', async function () {
    const n = await load(flow());
    const ok = collect(n.get('ok'));
    n.get('send').receive({
      payload: [
        // intervalMinutes 15: 00000000 00001111 | mode "fast" 10 | includeGnss (default true) 1 | note absent 0 -> FF 01 00 0F A0
        { DestinationID: '01000001SKYA001', message: 'SetReporting', fields: { intervalMinutes: 15, mode: 'fast' } },
        // 600 = 00000010 01011000 | "normal" 01 | false 0 | note absent 0 -> FF 01 02 58 40
        { DestinationID: '01000001SKYA001', message: 'SetReporting', fields: { intervalMinutes: 600, mode: 'normal', includeGnss: false }, MessageClass: 1 },
        { DestinationID: '01000001SKYA001', RawPayload: [255, 9] },
      ],
    });
    await until(() => ok.length === 1);
    assert.equal(ok[0].payload.length, 3);
    const got = sim.terminal.mobile.toMobile.map((t) => Buffer.from(t.item.RawPayload, 'base64').toString('hex'));
    assert.deepEqual(got, ['ff01000fa0', 'ff01025840', 'ff09']);
    assert.equal(sim.terminal.mobile.toMobile[1].item.MessageClass, 1);
  });

  it('a bad field is BAD_INPUT naming the item, the message and the field, and nothing is sent', async function () {
    const n = await load(flow());
    const caught = collect(n.get('caught'));
    const send = n.get('send');
    send.receive({ payload: [{ DestinationID: '01000001SKYA001', message: 'SetReporting', fields: { intervalMinutes: 1 } }, { DestinationID: '01000001SKYA001', message: 'SetReporting', fields: { intervalMinutes: 65536, mode: 'off' } }] });
    send.receive({ payload: { DestinationID: '01000001SKYA001', message: 'SetReporting', fields: { intervalMinutes: 1, mode: 'turbo' } } });
    send.receive({ payload: { DestinationID: '01000001SKYA001', message: 'Nope', fields: {} } });
    send.receive({ payload: { DestinationID: '01000001SKYA001', message: 'SetReporting', fields: { intervalMinutes: 1, mode: 'off', note: 'x'.repeat(33) } } });
    await until(() => caught.length === 4);
    assert.ok(caught.every((m) => m.error.code === 'BAD_INPUT'));
    assert.match(caught[0].error.message, /msg\.payload\[0\]: SetReporting\.mode: required, and missing/);
    assert.match(caught[0].error.message, /msg\.payload\[1\]: SetReporting\.intervalMinutes: 65536 does not fit in 16 bits/);
    assert.match(caught[1].error.message, /msg\.payload: SetReporting\.mode: "turbo" is not one of its items/);
    assert.match(caught[2].error.message, /msg\.payload\.message: no forward message is named "Nope"/);
    assert.match(caught[3].error.message, /SetReporting\.note: 33 bytes is longer than its Size of 32 bytes/);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(sim.server.callsTo('terminal/messages').length, 0, 'nothing sent');
  });

  it('an encoded message over Max raw bytes is refused like any RawPayload', async function () {
    const n = await load(flow({ maxRawBytes: 4 }));
    const caught = collect(n.get('caught'));
    n.get('send').receive({ payload: { DestinationID: '01000001SKYA001', message: 'SetReporting', fields: { intervalMinutes: 1, mode: 'off' } } });
    await until(() => caught.length === 1);
    assert.match(caught[0].error.message, /msg\.payload\.RawPayload: 5 bytes is too long; at most 4/);
    assert.equal(sim.server.callsTo('terminal/messages').length, 0);
  });

  it('fields that would encode into more than the largest to-mobile message are BAD_INPUT before the message is built; nothing is sent', async function () {
    // 10,000 bytes by default, whatever Max raw bytes says; a data array of Size 32,767 could hold 32 kB.
    const xml = messageFile(fieldXml('ArrayField', 'chunks', `<Size>4000</Size><Fields>${fieldXml('DataField', 'd', '<Size>8</Size><Fixed>true</Fixed>')}</Fields>`), { forward: true, name: 'Upload' });
    const n = await load(flow({ maxRawBytes: 1000000 }, { xml }));
    const caught = collect(n.get('caught'));
    const ok = collect(n.get('ok'));
    const chunks = (k) => Array.from({ length: k }, () => ({ d: Buffer.alloc(8, 1) }));
    n.get('send').receive({ payload: { DestinationID: '01000001SKYA001', message: 'Upload', fields: { chunks: chunks(1300) } } });
    n.get('send').receive({ payload: { DestinationID: '01000001SKYA001', message: 'Upload', fields: { chunks: chunks(10) } } });
    await until(() => caught.length === 1 && ok.length === 1);
    assert.equal(caught[0].error.code, 'BAD_INPUT');
    assert.match(caught[0].error.message, /msg\.payload: Upload: the encoded message would be more than 10000 bytes, the largest to-mobile message/);
    assert.equal(sim.terminal.mobile.toMobile.length, 1, 'only the message that fits was sent');
    assert.equal(Buffer.from(sim.terminal.mobile.toMobile[0].item.RawPayload, 'base64').length, 2 + 1 + 80);
  });
});
