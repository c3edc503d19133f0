'use strict';
/**
 * The silent wrong decodes of issue 34: each is now refused (at load, or as BAD_INPUT naming
 * the field) or round-trips, where before it lost or changed data without a word.
 */
const assert = require('node:assert/strict');
const { toCmf } = require('../../../dist/lib/codec');
const { decodeFields } = require('../../../dist/lib/api/cmf');
const { load, thrown, fieldXml, messageFile } = require('../../helpers/codec');

const items = (...xs) => `<Items>${xs.map((x) => `<string>${x}</string>`).join('')}</Items>`;
const refused = (xml, pattern) => {
  const e = thrown(() => load(xml, 'my.idpmsg'));
  assert.equal(e.code, 'BAD_INPUT');
  assert.match(e.message, pattern);
};

describe('codec: no silent wrong decodes', function () {
  it('duplicate bitmask items (one element would be dropped) are refused at load, naming the element', function () {
    refused(messageFile(fieldXml('BitmaskListField', 'mask', `<Size>4</Size>${items('a', 'b', 'a')}<Fields>${fieldXml('BooleanField', 'v')}</Fields>`)), /Message "M" \(MIN 1\) > Field "mask": items 0 and 2 are both "a"; each item must be named once/);
  });

  it('duplicate enum items (they would encode back to the first) are refused at load, naming the element', function () {
    refused(messageFile(fieldXml('EnumField', 'mode', `<Size>2</Size>${items('on', 'off', 'on')}`)), /Field "mode": items 0 and 2 are both "on"/);
    // An item text that reads as an index with no item: the common message format could not tell them apart.
    refused(messageFile(fieldXml('EnumField', 'mode', `<Size>3</Size>${items('5', 'x')}`)), /Field "mode": item 0 is "5", which also reads as index 5/);
  });

  it('a bitmask item named "__proto__" is an own field of the decoded object, not its prototype; it encodes back', function () {
    const d = load(messageFile(fieldXml('BitmaskListField', 'mask', `<Size>2</Size>${items('__proto__', 'b')}<Fields>${fieldXml('UnsignedIntField', 'v', '<Size>8</Size>')}</Fields>`)));
    const m = d.find(200, 1, 'return');
    const bytes = Buffer.from([200, 1, 0b11000000 | (7 >> 2), ((7 & 3) << 6) | (9 >> 2), (9 & 3) << 6]);
    const { fields } = d.decode(bytes, 'return');
    assert.equal(Object.getPrototypeOf(fields.mask), Object.prototype, 'the prototype is untouched');
    assert.deepEqual(Object.keys(fields.mask), ['__proto__', 'b']);
    assert.deepEqual(Object.getOwnPropertyDescriptor(fields.mask, '__proto__').value, { v: 7 });
    assert.deepEqual(fields.mask.b, { v: 9 });
    assert.ok(m.encode(fields).equals(bytes), 'encodes back to the same bytes');
    // Through the common message format and back (the CMF reader keeps "__proto__" as a field too).
    const cmf = toCmf(m, fields);
    assert.deepEqual(cmf.Fields[0].Message.Fields.map((f) => f.Name), ['__proto__', 'b']);
    assert.ok(d.encodeInput({ SIN: 200, MIN: 1, Fields: cmf.Fields }, 'return').equals(bytes));
    const plain = decodeFields([{ Name: '__proto__', Type: 'unsignedint', Value: '1' }]);
    assert.equal(Object.getPrototypeOf(plain), Object.prototype);
    assert.equal(Object.getOwnPropertyDescriptor(plain, '__proto__').value, 1);
  });

  it('invalid UTF-8 in a string field is refused (BAD_INPUT naming the field and the bit), never turned into U+FFFD', function () {
    const d = load(messageFile(fieldXml('BooleanField', 'flag') + fieldXml('StringField', 'text', '<Size>10</Size>') + fieldXml('StringField', 'fixed', '<Size>2</Size><Fixed>true</Fixed>')));
    // flag 0, length 2, bytes C3 28 (a broken two-byte sequence), then the fixed "ok".
    const bad = d.find(200, 1, 'return');
    const bytes = (a, b, f1, f2) => {
      const bits = `0${(2).toString(2).padStart(8, '0')}${[a, b, f1, f2].map((x) => x.toString(2).padStart(8, '0')).join('')}`.padEnd(48, '0');
      return Buffer.concat([Buffer.from([200, 1]), Buffer.from(bits.match(/.{8}/g).map((x) => parseInt(x, 2)))]);
    };
    assert.throws(() => d.decode(bytes(0xc3, 0x28, 0x6f, 0x6b), 'return'), /^BAD_INPUT: M\.text: the 2 bytes at bit 25 are not valid UTF-8 text$/);
    assert.throws(() => d.decode(bytes(0x68, 0x69, 0xff, 0x00), 'return'), /^BAD_INPUT: M\.fixed: the 1 bytes at bit 41 are not valid UTF-8 text$/);
    assert.deepEqual(d.decode(bytes(0xc3, 0xa9, 0x6f, 0x6b), 'return').fields, { flag: false, text: 'é', fixed: 'ok' });
    assert.ok(bad.encode({ flag: false, text: 'é', fixed: 'ok' }).equals(bytes(0xc3, 0xa9, 0x6f, 0x6b)));
  });

  it('an enum index without an item decodes to its number and encodes back, also from the common message format', function () {
    const d = load(messageFile(fieldXml('EnumField', 'mode', `<Size>3</Size>${items('off', 'on')}`), { forward: true }));
    const m = d.find(200, 1, 'forward');
    const bytes = Buffer.from([200, 1, 5 << 5]);
    const { fields } = d.decode(bytes, 'forward');
    assert.deepEqual(fields, { mode: 5 });
    const cmf = toCmf(m, fields);
    assert.deepEqual(cmf.Fields, [{ Name: 'mode', Type: 'enum', Value: '5' }]);
    assert.ok(d.encodeInput({ Name: 'M', Fields: cmf.Fields }, 'forward').equals(bytes));
    assert.ok(d.encodeInput({ message: 'M', fields: { mode: '1' } }, 'forward').equals(Buffer.from([200, 1, 1 << 5])), 'an index as text');
    assert.throws(() => d.encodeInput({ message: 'M', fields: { mode: '8' } }, 'forward'), /M\.mode: "8" is not one of its items/);
  });

  it('a Date (or a Map) as a bitmask value is BAD_INPUT naming the field, not an empty mask', function () {
    const d = load(messageFile(fieldXml('BitmaskListField', 'mask', `<Size>2</Size>${items('a', 'b')}<Fields></Fields>`)));
    const m = d.find(200, 1, 'return');
    assert.throws(() => m.encode({ mask: new Date(0) }), /^BAD_INPUT: M\.mask: needs an object \{item: \{fields\}\} \(items "a", "b"\), not a Date$/);
    assert.throws(() => m.encode({ mask: new Map([['a', {}]]) }), /M\.mask: .*not a Map$/);
    assert.throws(() => m.encode({ mask: { a: new Date(0) } }), /M\.mask\.a: must be an object of fields, not a Date/);
    assert.ok(m.encode({ mask: { b: {} } }).equals(Buffer.from([200, 1, 0b10000000])));
    // An object made in another realm (a function node's vm context) is a plain object still.
    const other = require('node:vm').runInNewContext('({ a: {} })');
    assert.ok(m.encode({ mask: other }).equals(Buffer.from([200, 1, 0b01000000])));
  });

  it('a data value of "%%%" in the common message format is BAD_INPUT naming the field, not an empty Buffer', function () {
    const d = load(messageFile(fieldXml('DataField', 'blob', '<Size>8</Size>'), { forward: true }));
    assert.deepEqual(decodeFields([{ Name: 'blob', Type: 'data', Value: '%%%' }]), { blob: '%%%' }, 'kept as it came');
    assert.throws(() => d.encodeInput({ Name: 'M', Fields: [{ Name: 'blob', Type: 'data', Value: '%%%' }] }, 'forward'), /^BAD_INPUT: M\.blob: needs a Buffer, a byte array or base64 text, not "%%%"$/);
    assert.ok(d.encodeInput({ Name: 'M', Fields: [{ Name: 'blob', Type: 'data', Value: 'AQI=' }] }, 'forward').equals(Buffer.from([200, 1, 2, 1, 2])));
  });
});
