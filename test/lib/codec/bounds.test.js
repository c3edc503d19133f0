'use strict';
/**
 * The codec's bounds (issue 34): a message larger than the service's largest is refused
 * before decoding; a layout whose worst case passes MAX_VALUES, or that no message of the
 * largest size can hold, is refused at load naming the element; whatever the layout and
 * the bytes, a decode gives at most its worst case of values (asserted on values, not time).
 */
const assert = require('node:assert/strict');
const fc = require('fast-check');
const { loadDefinitions, worstCase, MAX_VALUES, DEFAULT_MAX_BYTES } = require('../../../dist/lib/codec');
const { load, thrown, countValues, fieldXml, messageFile, nestedBooleans } = require('../../helpers/codec');

const refusedAtLoad = (text, pattern, options) => {
  const e = thrown(() => loadDefinitions([{ text, source: 'my.idpmsg' }], options));
  assert.equal(e.code, 'BAD_INPUT', e.stack);
  assert.match(e.message, pattern);
};

/** The bytes of the issue's message: SIN 200 MIN 1, then every bit set (each count 32,767). */
const allOnes = (n) => Buffer.concat([Buffer.from([200, 1]), Buffer.alloc(n - 2, 0xff)]);

describe('codec: bounds', function () {
  it("the issue's layout (two nested arrays of booleans, Size 32,767) is refused at load, naming the inner array", function () {
    refusedAtLoad(
      messageFile(nestedBooleans()),
      /^my\.idpmsg, line 1: Service "s" \(SIN 200\) > ReturnMessages > Message "M" \(MIN 1\) > Field "outer" > Field "inner": a 6400-byte message could decode into 115,166 values, more than the 20,000 one message may hold; give this array or list a smaller Size$/,
    );
    // Forward messages are bounded by the to-mobile size; arrays of fixed 1-element arrays nest the same way.
    const deep = (n) => (n === 0 ? fieldXml('BooleanField', 'b') : fieldXml('ArrayField', `a${n}`, `<Size>1</Size><Fixed>true</Fixed><Fields>${deep(n - 1)}</Fields>`));
    refusedAtLoad(messageFile(fieldXml('ArrayField', 'top', `<Size>30000</Size><Fields>${deep(12)}</Fields>`), { forward: true }), /ForwardMessages > Message "M" \(MIN 1\) > Field "top" > Field "a12" > .* > Field "a1": a 10000-byte message could decode into/);
  });

  it('the same layout with smaller Sizes loads; the largest message of each direction is a setting', function () {
    const d = load(messageFile(nestedBooleans(90)));
    assert.deepEqual(d.maxBytes, DEFAULT_MAX_BYTES);
    assert.deepEqual(DEFAULT_MAX_BYTES, { return: 6400, forward: 10000 });
    assert.ok(worstCase(d.find(200, 1, 'return').def, 6400).values <= MAX_VALUES);
    // A message that cannot fit the largest is refused at load, naming it.
    refusedAtLoad(messageFile(fieldXml('StringField', 'big', '<Size>200</Size><Fixed>true</Fixed>')), /Message "M" \(MIN 1\): takes at least 202 bytes, more than the largest from-mobile message \(100 bytes, the definitions' setting\)/, { maxBytes: { return: 100 } });
    const small = loadDefinitions([{ text: messageFile(fieldXml('DataField', 'd', '<Size>300</Size>')), source: 's' }], { maxBytes: { return: 100 } });
    assert.deepEqual(small.maxBytes, { return: 100, forward: 10000 });
    assert.equal(small.decode(Buffer.concat([Buffer.from([200, 1, 3]), Buffer.alloc(3, 7)]), 'return').fields.d.length, 3);
    assert.throws(() => small.decode(Buffer.concat([Buffer.from([200, 1, 0x80, 98]), Buffer.alloc(97)]), 'return'), /^BAD_INPUT: payload: 101 bytes, more than the largest from-mobile message \(100 bytes, the definitions' setting\); not decoded$/);
  });

  it('a 2 MB message is refused before decoding: BAD_INPUT, nothing decoded', function () {
    const d = load(messageFile(nestedBooleans(90)));
    const before = process.memoryUsage().heapUsed;
    const e = thrown(() => d.decode(allOnes(2 * 1024 * 1024), 'return'));
    assert.equal(e.code, 'BAD_INPUT');
    assert.match(e.message, /payload: 2097152 bytes, more than the largest from-mobile message \(6400 bytes/);
    assert.ok(process.memoryUsage().heapUsed - before < 16 * 1024 * 1024);
    // The most this layout holds decodes, within the bound: 90 x 90 booleans and their objects.
    const full = d.find(200, 1, 'return').encode({ outer: Array.from({ length: 90 }, () => ({ inner: Array.from({ length: 90 }, () => ({ b: true })) })) });
    assert.equal(countValues(d.decode(full, 'return').fields), 1 + 90 * 2 + 90 * 90 * 2);
    assert.ok(1 + 90 * 2 + 90 * 90 * 2 <= MAX_VALUES);
  });

  it('encoding: a message that would be larger than the largest to-mobile message is refused (BAD_INPUT), not built', function () {
    const d = load(messageFile(fieldXml('ArrayField', 'a', `<Size>20000</Size><Fields>${fieldXml('UnsignedIntField', 'v', '<Size>8</Size>')}</Fields>`), { forward: true }));
    const m = d.find(200, 1, 'forward');
    assert.equal(m.encode({ a: Array.from({ length: 9990 }, () => ({ v: 1 })) }).length, 9994);
    assert.throws(() => m.encode({ a: Array.from({ length: 10000 }, () => ({ v: 1 })) }), /^BAD_INPUT: M: the encoded message would be more than 10000 bytes, the largest to-mobile message/);
    assert.throws(() => d.encodeInput({ message: 'M', fields: { a: Array.from({ length: 20000 }, () => ({ v: 1 })) } }, 'forward'), (e) => e.code === 'BAD_INPUT');
  });

  it('property: whatever the layout and the bytes (up to the largest message), a decode gives at most its worst case of values', function () {
    const leaf = fc.oneof(
      fc.constant(fieldXml('BooleanField', 'x')),
      fc.integer({ min: 1, max: 16 }).map((n) => fieldXml('UnsignedIntField', 'x', `<Size>${n}</Size>`)),
      fc.constant(fieldXml('StringField', 'x', '<Size>3</Size>')),
      fc.constant(fieldXml('DynamicField', 'x')),
    );
    const field = fc.letrec((tie) => ({
      f: fc.oneof({ depthSize: 'small' }, leaf, leaf, tie('array'), tie('mask')),
      array: fc.tuple(fc.integer({ min: 1, max: 400 }), fc.boolean(), fc.array(tie('f'), { minLength: 1, maxLength: 3 })).map(([n, fixed, fs]) => fieldXml('ArrayField', 'x', `<Size>${fixed ? Math.min(n, 8) : n}</Size>${fixed ? '<Fixed>true</Fixed>' : ''}<Fields>${fs.map((f, i) => f.replace('<Name>x</Name>', `<Name>e${i}</Name>`)).join('')}</Fields>`)),
      mask: fc.array(tie('f'), { maxLength: 2 }).map((fs) => fieldXml('BitmaskListField', 'x', `<Size>8</Size><Items>${'abcdefgh'.split('').map((c) => `<string>${c}</string>`).join('')}</Items><Fields>${fs.map((f, i) => f.replace('<Name>x</Name>', `<Name>e${i}</Name>`)).join('')}</Fields>`)),
    })).f;
    const fields = fc.array(fc.tuple(field, fc.boolean()), { minLength: 1, maxLength: 4 }).map((fs) => fs.map(([f, opt], i) => f.replace('<Name>x</Name>', `<Name>f${i}</Name>${opt ? '<Optional>true</Optional>' : ''}`)).join(''));
    let decoded = 0;
    fc.assert(
      fc.property(fields, fc.integer({ min: 0, max: 255 }), fc.integer({ min: 2, max: 6400 }), fc.integer(), (xml, fill, size, seed) => {
        let d;
        try {
          d = load(messageFile(xml));
        } catch (e) {
          if (/could decode into|takes at least|fixed array of more than/.test(e.message)) return;
          throw e;
        }
        const bytes = Buffer.alloc(size, fill);
        for (let i = 2, x = seed; i < size; i += 7) bytes[i] = x = (x * 1103515245 + 12345) & 0xff;
        bytes[0] = 200;
        bytes[1] = 1;
        const worst = worstCase(d.find(200, 1, 'return').def, 6400).values;
        assert.ok(worst <= MAX_VALUES);
        try {
          const n = countValues(d.decode(bytes, 'return').fields);
          assert.ok(n <= worst, `${n} values decoded, more than the worst case ${worst}`);
          decoded++;
        } catch (e) {
          if (e.code !== 'BAD_INPUT') throw e;
        }
      }),
      { numRuns: 400 },
    );
    assert.ok(decoded > 20, `only ${decoded} inputs decoded: the property checked too little`);
  });
});
