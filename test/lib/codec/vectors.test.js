'use strict';
/**
 * Hand-worked vectors: every expected byte below is worked out from the bit layout of
 * message-definitions.md (the bits are written out in the comments, most significant
 * first, fields separated by spaces), never produced by the codec. Each vector decodes to
 * its fields and its fields encode back to the same bytes.
 */
const assert = require('node:assert/strict');
const { toCmf } = require('../../../dist/lib/codec');
const { decodeFields } = require('../../../dist/lib/api/cmf');
const { fixtureText, demoText, load, hex, thrown } = require('../../helpers/codec');

describe('codec: hand-worked vectors', function () {
  const defs = load(fixtureText('all-kinds.idpmsg'), 'all-kinds.idpmsg');

  /** Decodes `bytes` (return) to `fields`, and encodes `input` (default: the fields) back to `bytes`. */
  function roundTrip(bytes, fields, direction = 'return', input = fields) {
    const d = defs.decode(bytes, direction);
    assert.deepEqual(d.fields, fields);
    assert.deepEqual(d.message.encode(input).toString('hex'), bytes.toString('hex'));
    return d;
  }

  it('SatelliteTelemetry of message-definitions.md (SIN 255 MIN 1, 19 bytes)', function () {
    const demo = load(demoText(), 'demo.idpmsg');
    // FF 01 | CE 79 A5 48 = 1100 1110 0111 1001 1010 0101 0100 1000: timestamp = first 31 bits
    //   0x CE79A548 >> 1 = 3464078664 / 2 = 1732039332; the 32nd bit (0) starts latitude.
    // latitude (24 bits) = 0 + 53 18 7D >> 1 ... = 0x298C3E = 2722878 (sign bit 0).
    // temperature, the last 7 bits: 3E = 0011 1110 -> bits 6..0 of the 135th..: 0011111 = 31, then one pad bit 0.
    const bytes = hex('FF 01 CE 79 A5 48 53 18 7D BA AB 0C 02 98 03 AE 03 26 3E');
    const d = demo.decode(bytes, 'return');
    assert.equal(d.message.def.name, 'SatelliteTelemetry');
    assert.deepEqual(d.fields, { timestamp: 1732039332, latitude: 2722878, longitude: -4543732, altitude: 83, speed: 0, heading: 235, satellites: 8, pdop: 1, snr: 294, temperature: 31 });
    assert.ok(d.message.encode(d.fields).equals(bytes));
  });

  it('boolean, enum, unsigned, signed, variable and fixed strings and data', function () {
    // flag 1 | level "high" = 2 -> 10 | u3 5 -> 101 | s5 -3 -> 32-3 = 29 -> 11101
    // name "Hi": prefix 0+0000010, 'H' 0x48 01001000, 'i' 0x69 01101001
    // blob [AB]: prefix 00000001, 10101011 | code "OK" fixed 3: 4F 4B 00 | tag fixed 2: 01 02
    // 91 bits: 11010111 10100000 01001000 01101001 00000001 10101011 01001111 01001011 00000000 00000001 00000010 00000(pad)
    //        = D7 A0 49 0D 20 35 69 E9 60 00 20 40 (after SIN 0A, MIN 01; shifted by the 11 bits before "name")
    const bytes = hex('0A 01 D7 A0 49 0D 20 35 69 E9 60 00 20 40');
    roundTrip(bytes, { flag: true, level: 'high', u3: 5, s5: -3, name: 'Hi', blob: Buffer.from([0xab]), code: 'OK', tag: Buffer.from([1, 2]) });
  });

  it('an enum index with no item decodes to the number, and encodes back from it', function () {
    // As above with level bits 11 = 3 (only 3 items): first byte 1 11 101 11 = F7.
    const bytes = hex('0A 01 F7 A0 49 0D 20 35 69 E9 60 00 20 40');
    roundTrip(bytes, { flag: true, level: 3, u3: 5, s5: -3, name: 'Hi', blob: Buffer.from([0xab]), code: 'OK', tag: Buffer.from([1, 2]) });
  });

  it('64-bit integers stay exact: above 2^53 a decimal string, at most 2^53-1 a number', function () {
    // u64 2^64-1: 64 ones | s64 -(2^63-1): 2^64-(2^63-1) = 2^63+1 -> 1, 62 zeros, 1
    // u53 2^53-1: 53 ones | u54 2^53+1: 1, 52 zeros, 1 | 235 bits + 5 pad
    const bytes = hex('0A 02 FF FF FF FF FF FF FF FF 80 00 00 00 00 00 00 01 FF FF FF FF FF FF FC 00 00 00 00 00 00 20');
    roundTrip(bytes, { u64: '18446744073709551615', s64: '-9223372036854775807', u53: 9007199254740991, u54: '9007199254740993' });
    // BigInt and decimal strings are accepted on encode as well.
    const m = defs.find(10, 2, 'return');
    assert.ok(m.encode({ u64: 18446744073709551615n, s64: -9223372036854775807n, u53: '9007199254740991', u54: 9007199254740993n }).equals(bytes));
  });

  it('arrays with nested optional fields, a bitmask list, a fixed array', function () {
    // readings: prefix 00000010 (2 elements) | 200 = 11001000, ok present 1, true 1 | 1 = 00000001, ok absent 0
    // sensors: items a=bit0, c=bit2 -> mask 0101 | a.x 3 = 0011 | c.x 15 = 1111
    // pair (fixed 2, no prefix): -1 -> 1111 | 7 -> 0111 | 47 bits + 1 pad
    // 00000010 11001000 11000000 01001010 01111111 1110111(0) = 02 C8 C0 4A 7F EE
    const bytes = hex('0A 03 02 C8 C0 4A 7F EE');
    roundTrip(bytes, { readings: [{ v: 200, ok: true }, { v: 1 }], sensors: { a: { x: 3 }, c: { x: 15 } }, pair: [{ d: -1 }, { d: 7 }] });
  });

  it('optional fields (presence bit) and dynamic fields of every tag', function () {
    // o1 present 1, 255 = 11111111 | o2 absent 0
    // dyn1 boolean: tag 001, 1 | dyn2 signed 16 bits: tag 011, size code 01, -2 -> 1111111111111110
    // dyn3 string "A": tag 100, prefix 00000001, 01000001 | 54 bits + 2 pad = FF 8D BF FF D0 05 04
    roundTrip(hex('0A 04 FF 8D BF FF D0 05 04'), { o1: 255, dyn1: true, dyn2: -2, dyn3: 'A' }, 'return', {
      o1: 255,
      dyn1: true,
      dyn2: { type: 'signedint', value: -2, bits: 16 },
      dyn3: 'A',
    });
    // o1 absent 0 | o2 present 1, prefix 00000010, 'a' 01100001, 'b' 01100010
    // dyn1 enum: tag 000, 7 = 00000111 | dyn2 data [FF]: tag 101, prefix 00000001, 11111111
    // dyn3 unsigned 32 bits: tag 010, size code 10, 32 ones | 93 bits + 3 pad = 40 98 58 80 3D 01 FF 57 FF FF FF F8
    roundTrip(hex('0A 04 40 98 58 80 3D 01 FF 57 FF FF FF F8'), { o2: 'ab', dyn1: 7, dyn2: Buffer.from([0xff]), dyn3: 4294967295 }, 'return', {
      o2: 'ab',
      dyn1: { type: 'enum', value: 7 },
      dyn2: Buffer.from([0xff]),
      dyn3: 4294967295,
    });
  });

  it('defaults fill required fields left out; an absent optional field stays absent (forward MIN 1 is not return MIN 1)', function () {
    // a default 7 = 00000111 | s default "hi": prefix 00000010, 'h' 01101000, 'i' 01101001
    // e default "y" = index 1 -> 01 | opt absent 0 (its Default is not used) | 35 bits + 5 pad
    const bytes = hex('0A 01 07 02 68 69 40');
    const m = defs.find(10, 1, 'forward');
    assert.equal(m.def.name, 'Defaults');
    assert.ok(m.encode({}).equals(bytes));
    assert.deepEqual(defs.decode(bytes, 'forward').fields, { a: 7, s: 'hi', e: 'y' });
    assert.equal(defs.find(10, 1, 'return').def.name, 'Kinds');
  });

  it('the long length prefix (flag 1 and 15 bits) from 128 bytes on', function () {
    // 200 bytes: 1 + 200 in 15 bits = 1000 0000 1100 1000 = 80 C8, then the bytes (aligned)
    const blob = Buffer.alloc(200, 0x5a);
    const bytes = Buffer.concat([hex('0A 02 80 C8'), blob]);
    roundTrip(bytes, { blob }, 'forward');
  });

  it('decoded fields in the common message format read back with src/lib/cmf to the same fields', function () {
    const d = defs.decode(hex('0A 03 02 C8 C0 4A 7F EE'), 'return');
    const cmf = toCmf(d.message, d.fields);
    assert.deepEqual(
      { Name: cmf.Name, SIN: cmf.SIN, MIN: cmf.MIN, IsForward: cmf.IsForward },
      { Name: 'Lists', SIN: 10, MIN: 3, IsForward: false },
    );
    assert.deepEqual(cmf.Fields[0], { Name: 'readings', Type: 'array', Elements: [{ Index: 0, Fields: [{ Name: 'v', Type: 'unsignedint', Value: '200' }, { Name: 'ok', Type: 'boolean', Value: 'True' }] }, { Index: 1, Fields: [{ Name: 'v', Type: 'unsignedint', Value: '1' }] }] });
    assert.deepEqual(decodeFields(cmf.Fields), d.fields);
    const big = defs.decode(hex('0A 02 FF FF FF FF FF FF FF FF 80 00 00 00 00 00 00 01 FF FF FF FF FF FF FC 00 00 00 00 00 00 20'), 'return');
    assert.deepEqual(toCmf(big.message, big.fields).Fields[0], { Name: 'u64', Type: 'unsignedint', Value: '18446744073709551615' });
    // A CMF object with Fields encodes as well.
    assert.ok(defs.encodeInput({ SIN: 10, MIN: 3, Fields: cmf.Fields }, 'return').equals(hex('0A 03 02 C8 C0 4A 7F EE')));
  });
});

describe('codec: bad bytes and bad values are BAD_INPUT naming message and field', function () {
  const defs = load(fixtureText('all-kinds.idpmsg'), 'all-kinds.idpmsg');
  const bad = (fn, field, text) => {
    const e = thrown(fn);
    assert.equal(e.code, 'BAD_INPUT', e.stack);
    assert.equal(e.field, field);
    if (text) assert.match(e.message, text);
  };

  it('bytes that end inside a field, with the bit offset', function () {
    // D7 = 1 10 101 11: s5 starts at bit 16+6 = 22 and needs 5 bits; 2 are left.
    bad(() => defs.decode(hex('0A 01 D7'), 'return'), 'Kinds.s5', /at bit 22 it needs 5 bits; 2 are left/);
  });

  it('a length that claims more than the bytes left is refused at once', function () {
    // o1 0, o2 0, dyn1 tag 100 (string), prefix 1 + 15 ones = 32,767 bytes; 3 bits are left.
    bad(() => defs.decode(hex('0A 04 27 FF F8'), 'return'), 'Options.dyn1', /claims 32767 bytes/);
    // readings prefix 0x05: 5 elements of at least 8 (v) + 1 (presence of ok) bits = 45, with 8 bits left.
    bad(() => defs.decode(hex('0A 03 05 00'), 'return'), 'Lists.readings', /5 elements need at least 45 bits at bit 24; 8 are left/);
    // D7 A1 60 = 1 10 101 11|101 0 0001|011 00000: s5 11101, then the name's prefix 0 0001011 = 11 bytes > Size 10
    bad(() => defs.decode(hex('0A 01 D7 A1 60 00 00'), 'return'), 'Kinds.name', /more than its Size 10/);
  });

  it('a SIN/MIN not held, too few bytes, reserved dynamic tags, a mask bit with no item', function () {
    bad(() => defs.decode(hex('0B 01 00'), 'return'), 'payload', /SIN 11 MIN 1/);
    bad(() => defs.decode(hex('0A'), 'return'), 'payload', /at least 2/);
    // o1 0, o2 0, dyn1 tag 110 -> 0011 0000 = 30
    bad(() => defs.decode(hex('0A 04 30'), 'return'), 'Options.dyn1', /tag 6 is reserved/);
    // readings prefix 0, sensors mask 1000 (bit 3, no item "3")
    bad(() => defs.decode(hex('0A 03 00 80 00'), 'return'), 'Lists.sensors', /bit 3 of the mask is set/);
  });

  it('PropertyField and MessageField: refused on use, naming the unsupported kind', function () {
    bad(() => defs.decode(hex('0A 05 01 00'), 'return'), 'Unsupported.p', /PropertyField is not supported/);
    bad(() => defs.find(10, 5, 'return').encode({ n: 1 }), 'Unsupported.p', /PropertyField/);
  });

  it('encoding refuses values that do not fit, unknown items and names, too long, missing', function () {
    const kinds = defs.find(10, 1, 'return');
    const ok = { flag: true, level: 'low', u3: 1, s5: 1, name: '', blob: [], code: '', tag: [0, 0] };
    bad(() => kinds.encode({ ...ok, u3: 8 }), 'Kinds.u3', /8 does not fit in 3 bits/);
    bad(() => kinds.encode({ ...ok, s5: -17 }), 'Kinds.s5', /-17 does not fit in 5 bits/);
    bad(() => kinds.encode({ ...ok, u3: 1.5 }), 'Kinds.u3', /needs an integer/);
    bad(() => kinds.encode({ ...ok, level: 'max' }), 'Kinds.level', /not one of its items/);
    bad(() => kinds.encode({ ...ok, name: 'x'.repeat(11) }), 'Kinds.name', /11 bytes is longer than its Size of 10/);
    bad(() => kinds.encode({ ...ok, flag: 'yes' }), 'Kinds.flag', /true or false/);
    bad(() => kinds.encode({ ...ok, blob: 'not base64!' }), 'Kinds.blob', /Buffer/);
    bad(() => kinds.encode({ ...ok, colour: 1 }), 'Kinds.colour', /unknown field/);
    const { u3, ...missing } = ok;
    assert.equal(u3, 1);
    bad(() => kinds.encode(missing), 'Kinds.u3', /required/);
    const lists = defs.find(10, 3, 'return');
    bad(() => lists.encode({ readings: new Array(6).fill({ v: 1 }), sensors: {}, pair: [{ d: 1 }, { d: 1 }] }), 'Lists.readings', /6 elements; at most 5/);
    bad(() => lists.encode({ readings: [], sensors: {}, pair: [{ d: 1 }] }), 'Lists.pair', /exactly 2/);
    bad(() => lists.encode({ readings: [], sensors: { d: { x: 1 } }, pair: [{ d: 1 }, { d: 1 }] }), 'Lists.sensors.d', /not one of its items/);
    bad(() => defs.encodeInput({ message: 'Nope', fields: {} }, 'forward'), 'msg.payload.message', /no forward message is named "Nope"/);
  });
});
