'use strict';
/** iotgw-codec in a real Node-RED runtime: decode and encode, every input form, BAD_INPUT to Catch. */
const assert = require('node:assert/strict');
const { helper, load, until, collect, catchAll } = require('../helpers/harness');
const { definitionsNode, fixtureText, hex, fieldXml, messageFile, nestedBooleans } = require('../helpers/codec');

// The SatelliteTelemetry vector of message-definitions.md.
const TELEMETRY = hex('FF 01 CE 79 A5 48 53 18 7D BA AB 0C 02 98 03 AE 03 26 3E');
const TELEMETRY_FIELDS = { timestamp: 1732039332, latitude: 2722878, longitude: -4543732, altitude: 83, speed: 0, heading: 235, satellites: 8, pdop: 1, snr: 294, temperature: 31 };

describe('iotgw-codec', function () {
  beforeEach(async () => new Promise((r) => helper.startServer(r)));
  afterEach(async function () {
    await helper.unload();
    await new Promise((r) => helper.stopServer(r));
  });

  const flow = (props = {}, defs = {}) => [definitionsNode(defs), { id: 'codec', type: 'iotgw-codec', definitions: 'defs', action: 'auto', messages: 'return', wires: [['out']], ...props }, { id: 'out', type: 'helper' }, ...catchAll()];

  it('decodes a Buffer, a byte array, base64 and a poller message object: msg.fields typed, msg.payload in the common message format', async function () {
    const n = await load(flow());
    const out = collect(n.get('out'));
    const codec = n.get('codec');
    codec.receive({ payload: TELEMETRY, keep: 1 });
    codec.receive({ payload: [...TELEMETRY] });
    codec.receive({ payload: TELEMETRY.toString('base64') });
    codec.receive({ payload: { ID: '9223372036854775800', MobileID: '01000001SKYA001', SIN: 255, RawPayload: TELEMETRY.toString('base64') } });
    await until(() => out.length === 4);
    for (const m of out) {
      assert.deepEqual(m.fields, TELEMETRY_FIELDS);
      assert.equal(m.topic, 'SatelliteTelemetry');
    }
    assert.equal(out[0].keep, 1, 'the incoming msg is reused');
    assert.deepEqual({ ...out[0].payload, Fields: out[0].payload.Fields.slice(0, 2) }, {
      Name: 'SatelliteTelemetry',
      SIN: 255,
      MIN: 1,
      IsForward: false,
      Fields: [
        { Name: 'timestamp', Type: 'unsignedint', Value: '1732039332' },
        { Name: 'latitude', Type: 'signedint', Value: '2722878' },
      ],
    });
    assert.equal(out[3].payload.ID, '9223372036854775800', 'the message object is kept');
    assert.equal(out[3].payload.Payload.Name, 'SatelliteTelemetry');
    assert.equal(out[3].payload.Payload.Fields.length, 10);
  });

  it('encodes {message, fields}, {SIN, MIN, fields} and CMF Fields into the bytes (forward messages)', async function () {
    const n = await load(flow({ messages: 'forward' }));
    const out = collect(n.get('out'));
    const codec = n.get('codec');
    // SetReporting: intervalMinutes 15 (16 bits) 00000000 00001111 | mode "fast" = 2 -> 10 | includeGnss default true -> 1 | note absent -> 0
    //   = FF 01 00 0F | 1010 0000 = A0
    codec.receive({ payload: { message: 'SetReporting', fields: { intervalMinutes: 15, mode: 'fast' } } });
    // note "ok": present 1, prefix 00000010, 'o' 01101111, 'k' 01101011; mode "off" 00, includeGnss false 0
    //   00000000 00000001 | 00 0 1 0000 | 0010 0110 | 1111 0110 | 1011 (0000) = 00 01 10 26 F6 B0
    codec.receive({ payload: { SIN: 255, MIN: 1, fields: { intervalMinutes: 1, mode: 'off', includeGnss: false, note: 'ok' } } });
    codec.receive({ payload: { Name: 'SetReporting', SIN: 255, MIN: 1, Fields: [{ Name: 'intervalMinutes', Type: 'unsignedint', Value: '15' }, { Name: 'mode', Type: 'enum', Value: 'fast' }] } });
    await until(() => out.length === 3);
    assert.deepEqual(out.map((m) => m.payload.toString('hex')), ['ff01000fa0', 'ff0100011026f6b0', 'ff01000fa0']);
    assert.ok(Buffer.isBuffer(out[0].payload));
  });

  it('refuses bad input with BAD_INPUT naming message and field: nothing is sent, status red then cleared', async function () {
    const n = await load(flow({}, { xml: fixtureText('all-kinds.idpmsg') }));
    const out = collect(n.get('out'));
    const caught = collect(n.get('caught'));
    const codec = n.get('codec');
    const statuses = [];
    const orig = codec.status.bind(codec);
    codec.status = (s) => (statuses.push(s), orig(s));
    codec.receive({ payload: hex('0A 01 D7') });
    codec.receive({ payload: hex('0B 01') });
    codec.receive({ payload: { message: 'Kinds', fields: { flag: true, level: 'max' } } });
    codec.receive({ payload: 42 });
    await until(() => caught.length === 4);
    assert.equal(out.length, 0);
    assert.deepEqual(caught.map((m) => m.error.code), ['BAD_INPUT', 'BAD_INPUT', 'BAD_INPUT', 'BAD_INPUT']);
    assert.match(caught[0].error.message, /Kinds\.s5: the bytes end inside this field \(at bit 22/);
    assert.match(caught[1].error.message, /msg\.payload: SIN 11 MIN 1: no return message/);
    assert.match(caught[2].error.message, /Kinds\.level: "max" is not one of its items/);
    assert.match(caught[3].error.message, /msg\.payload: needs the message's bytes/);
    assert.equal(statuses.at(-1).fill, 'red');
    codec.receive({ payload: hex('0A 03 02 C8 C0 4A 7F EE') });
    await until(() => out.length === 1);
    assert.deepEqual(statuses.at(-1), {}, 'cleared by the next success');
  });

  it('a 2 MB payload is refused before decoding (BAD_INPUT naming the field); Node-RED stays up, RSS bounded, the next msg decoded', async function () {
    const n = await load(flow({}, { xml: messageFile(nestedBooleans(90)) }));
    const out = collect(n.get('out'));
    const caught = collect(n.get('caught'));
    const codec = n.get('codec');
    const big = Buffer.concat([Buffer.from([200, 1]), Buffer.alloc(2 * 1024 * 1024 - 2, 0xff)]);
    const rss = process.memoryUsage().rss;
    codec.receive({ payload: big });
    codec.receive({ payload: big.toString('base64') });
    codec.receive({ payload: { ID: '1', RawPayload: big.toString('base64') } });
    codec.receive({ payload: Buffer.from([200, 1, 1, 1, 0x80]) });
    await until(() => caught.length === 3 && out.length === 1);
    assert.deepEqual(caught.map((m) => m.error.code), ['BAD_INPUT', 'BAD_INPUT', 'BAD_INPUT']);
    assert.match(caught[0].error.message, /^BAD_INPUT: msg\.payload: 2097152 bytes, more than the largest from-mobile message \(6400 bytes, the definitions' setting\); not decoded$/);
    assert.match(caught[1].error.message, /^BAD_INPUT: msg\.payload: 2097152 bytes, more than the largest/);
    assert.match(caught[2].error.message, /^BAD_INPUT: msg\.payload\.RawPayload: 2097152 bytes, more than the largest/);
    assert.deepEqual(out[0].fields, { outer: [{ inner: [{ b: true }] }] });
    assert.ok(process.memoryUsage().rss - rss < 150 * 1024 * 1024, `RSS grew ${Math.round((process.memoryUsage().rss - rss) / 1048576)} MB`);
  });

  it("the issue's layout (nested arrays of 32,767 booleans) is refused at deploy: a 2 MB payload is refused with that error", async function () {
    const n = await load(flow({}, { xml: messageFile(nestedBooleans()) }));
    const caught = collect(n.get('caught'));
    n.get('codec').receive({ payload: Buffer.concat([Buffer.from([200, 1]), Buffer.alloc(2 * 1024 * 1024 - 2, 0xff)]) });
    await until(() => caught.length === 1);
    assert.match(caught[0].error.message, /Field "outer" > Field "inner": a 6400-byte message could decode into 115,166 values/);
  });

  it('encoding into more than the largest to-mobile message (a setting) is BAD_INPUT, nothing sent', async function () {
    const xml = messageFile(fieldXml('DataField', 'blob', '<Size>2000</Size>'), { forward: true });
    const n = await load(flow({ messages: 'forward' }, { xml, maxToMobileBytes: 1023 }));
    const out = collect(n.get('out'));
    const caught = collect(n.get('caught'));
    n.get('codec').receive({ payload: { message: 'M', fields: { blob: Buffer.alloc(1500) } } });
    n.get('codec').receive({ payload: { message: 'M', fields: { blob: Buffer.alloc(1000) } } });
    await until(() => caught.length === 1 && out.length === 1);
    assert.equal(caught[0].error.code, 'BAD_INPUT');
    assert.match(caught[0].error.message, /^BAD_INPUT: M: the encoded message would be more than 1023 bytes, the largest to-mobile message/);
    assert.equal(out[0].payload.length, 1004);
  });

  it('a refused definitions file: each msg is refused with its error; no definitions node: BAD_INPUT', async function () {
    const n = await load(flow({}, { xml: '<MessageDefinition><Services><Service><Name>x</Name></Service></Services></MessageDefinition>' }));
    const caught = collect(n.get('caught'));
    n.get('codec').receive({ payload: TELEMETRY });
    await until(() => caught.length === 1);
    assert.match(caught[0].error.message, /pasted XML, line 1: Service "x": <SIN> is missing/);
    await helper.unload();
    const m = await load(flow({ definitions: '' }));
    const caught2 = collect(m.get('caught'));
    m.get('codec').receive({ payload: TELEMETRY });
    await until(() => caught2.length === 1);
    assert.match(caught2[0].error.message, /definitions: no iotgw-definitions config node is selected/);
  });
});
