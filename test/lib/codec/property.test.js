'use strict';
/**
 * Property-based (fast-check): random definitions of every supported kind with random
 * values encode and decode back to the same values; random bytes never crash or hang the
 * decoder: each ends in fields or in BAD_INPUT.
 */
const assert = require('node:assert/strict');
const fc = require('fast-check');
const { GatewayError } = require('../../../dist/lib/common/errors');
const { MAX_VALUES } = require('../../../dist/lib/codec');
const { fixtureText, load, countValues } = require('../../helpers/codec');

const ITEMS = ['alpha', 'beta', 'gamma', 'delta', 'eps'];

/** A random field spec: {kind, size, fixed, optional, items, fields}. */
const fieldSpec = fc.letrec((tie) => ({
  leaf: fc.oneof(
    fc.record({ kind: fc.constant('BooleanField') }),
    fc.record({ kind: fc.constant('EnumField'), size: fc.integer({ min: 1, max: 8 }), n: fc.integer({ min: 1, max: 5 }) }),
    fc.record({ kind: fc.constantFrom('UnsignedIntField', 'SignedIntField'), size: fc.integer({ min: 1, max: 64 }) }),
    fc.record({ kind: fc.constantFrom('StringField', 'DataField'), size: fc.integer({ min: 1, max: 200 }), fixed: fc.boolean() }),
    fc.record({ kind: fc.constant('DynamicField') }),
  ),
  field: fc.oneof({ depthSize: 'small', withCrossShrink: true }, tie('leaf'), tie('leaf'), tie('array'), tie('bitmask')),
  array: fc.record({ kind: fc.constant('ArrayField'), size: fc.integer({ min: 1, max: 4 }), fixed: fc.boolean(), fields: fc.array(tie('field'), { minLength: 1, maxLength: 3 }) }),
  bitmask: fc.record({ kind: fc.constant('BitmaskListField'), size: fc.integer({ min: 5, max: 12 }), fields: fc.array(tie('field'), { maxLength: 2 }) }),
})).field;

const withOptional = fieldSpec.chain((f) => fc.boolean().map((optional) => ({ ...f, optional })));
const messageSpec = fc.array(withOptional, { minLength: 0, maxLength: 6 });

/** A field spec -> its <Field> XML (names f0, f1, ... by position). */
function fieldXml(f, i) {
  const parts = [`<Name>f${i}</Name>`];
  if (f.optional) parts.push('<Optional>true</Optional>');
  if (f.size) parts.push(`<Size>${f.size}</Size>`);
  if (f.fixed) parts.push('<Fixed>true</Fixed>');
  if (f.kind === 'EnumField') parts.push(`<Items>${ITEMS.slice(0, Math.min(f.n, 2 ** f.size)).map((s) => `<string>${s}</string>`).join('')}</Items>`);
  if (f.kind === 'BitmaskListField') parts.push(`<Items>${ITEMS.map((s) => `<string>${s}</string>`).join('')}</Items>`);
  if (f.fields) parts.push(`<Fields>${f.fields.map(fieldXml).join('')}</Fields>`);
  return `<Field xsi:type="${f.kind}">${parts.join('')}</Field>`;
}
const fileXml = (fields) =>
  `<MessageDefinition xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><Services><Service><Name>p</Name><SIN>200</SIN><ReturnMessages><Message><Name>M</Name><MIN>7</MIN><Fields>${fields.map(fieldXml).join('')}</Fields></Message></ReturnMessages></Service></Services></MessageDefinition>`;

const SAFE = BigInt(Number.MAX_SAFE_INTEGER);
/** An integer as the decoder gives it: a number, or a decimal string beyond 2^53. */
const intOut = (b) => (b <= SAFE && b >= -SAFE ? Number(b) : b.toString());

/** [input, expected decoded value] for one field spec. */
function valueOf(f) {
  switch (f.kind) {
    case 'BooleanField':
      return fc.boolean().map((b) => [b, b]);
    case 'EnumField':
      return fc.integer({ min: 0, max: 2 ** f.size - 1 }).map((i) => {
        const items = ITEMS.slice(0, Math.min(f.n, 2 ** f.size));
        return i < items.length ? [items[i], items[i]] : [i, i];
      });
    case 'UnsignedIntField':
    case 'SignedIntField': {
      const n = BigInt(f.size);
      const [min, max] = f.kind === 'UnsignedIntField' ? [0n, (1n << n) - 1n] : [-(1n << (n - 1n)), (1n << (n - 1n)) - 1n];
      // Inputs in every accepted form: BigInt, decimal string, or a number when exact.
      return fc.tuple(fc.bigInt({ min, max }), fc.constantFrom('big', 'string', 'number')).map(([b, form]) => [form === 'big' ? b : form === 'string' || intOut(b) !== Number(b) ? b.toString() : Number(b), intOut(b)]);
    }
    case 'StringField':
      return fc
        .string({ unit: fc.constantFrom('grapheme', 'grapheme-ascii').chain((unit) => fc.string({ unit, maxLength: 1 })), maxLength: f.size })
        .filter((s) => Buffer.byteLength(s) <= f.size && (!f.fixed || !s.includes('\u0000')))
        .map((s) => [s, s]);
    case 'DataField':
      return fc.uint8Array({ minLength: f.fixed ? f.size : 0, maxLength: f.size }).map((a) => [Buffer.from(a), Buffer.from(a)]);
    case 'DynamicField':
      return fc.oneof(
        fc.boolean().map((b) => [b, b]),
        fc.integer({ min: 0, max: 2 ** 32 - 1 }).map((n) => [n, n]),
        fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }).map((n) => [{ type: 'signedint', value: n }, n]),
        fc.integer({ min: 0, max: 255 }).map((n) => [{ type: 'enum', value: n }, n]),
        fc.string({ maxLength: 140 }).map((s) => [s, s]),
        fc.uint8Array({ maxLength: 20 }).map((a) => [Buffer.from(a), Buffer.from(a)]),
      );
    case 'ArrayField':
      return fc.array(objectOf(f.fields), { minLength: f.fixed ? f.size : 0, maxLength: f.size }).map((els) => [els.map((e) => e[0]), els.map((e) => e[1])]);
    case 'BitmaskListField':
      return fc.subarray(ITEMS).chain((keys) =>
        fc.tuple(...keys.map(() => objectOf(f.fields))).map((els) => [Object.fromEntries(keys.map((k, i) => [k, els[i][0]])), Object.fromEntries(keys.map((k, i) => [k, els[i][1]]))]),
      );
  }
  throw new Error(f.kind);
}

/** [input fields, expected fields] of a list of field specs; an optional field may be absent. */
function objectOf(fields) {
  return fc.tuple(...fields.map((f) => (f.optional ? fc.option(valueOf(f), { nil: undefined }) : valueOf(f)))).map((vals) => {
    const input = {};
    const expected = {};
    vals.forEach((v, i) => {
      if (v === undefined) return;
      input[`f${i}`] = v[0];
      expected[`f${i}`] = v[1];
    });
    return [input, expected];
  });
}

/**
 * Loads a random definition; one the loader refuses for its size (nested fixed arrays over
 * 10,000 bytes, a message larger than the largest, a worst case of too many values) is skipped.
 */
function loadSpec(spec) {
  try {
    return load(fileXml(spec));
  } catch (e) {
    if (e.code === 'BAD_INPUT' && /a fixed array of more than 10,000 bytes|takes at least \d+ bytes, more than the largest|could decode into [\d,]+ values/.test(e.message)) fc.pre(false);
    throw e;
  }
}

/** Encodes `input`; values whose message would be larger than the largest (refused by design) are skipped. */
function encodeOrSkip(m, input) {
  try {
    return m.encode(input);
  } catch (e) {
    if (e.code === 'BAD_INPUT' && /the encoded message would be more than \d+ bytes/.test(e.message)) fc.pre(false);
    throw e;
  }
}

describe('codec: properties', function () {
  it('random definitions and values: encode then decode gives the same values', function () {
    fc.assert(
      fc.property(
        messageSpec.chain((spec) => objectOf(spec).map((v) => [spec, v])),
        ([spec, [input, expected]]) => {
          const defs = loadSpec(spec);
          const m = defs.find(200, 7, 'return');
          const bytes = encodeOrSkip(m, input);
          assert.equal(bytes[0], 200);
          assert.equal(bytes[1], 7);
          const back = defs.decode(bytes, 'return');
          assert.deepEqual(back.fields, expected);
          // And the decoded fields encode to the very same bytes.
          assert.ok(m.encode(back.fields).equals(bytes) || JSON.stringify(spec).includes('DynamicField'));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('random bytes after a held SIN/MIN never crash: fields or BAD_INPUT, in time linear in their length', function () {
    const fixture = load(fixtureText('all-kinds.idpmsg'));
    const check = (defs, bytes) => {
      try {
        const d = defs.decode(bytes, 'return');
        assert.equal(typeof d.fields, 'object');
      } catch (e) {
        if (!(e instanceof GatewayError) || e.code !== 'BAD_INPUT') throw e;
      }
    };
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 5 }), fc.uint8Array({ maxLength: 400 }), (min, body) => check(fixture, Buffer.concat([Buffer.from([10, min]), body]))),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(messageSpec, fc.uint8Array({ maxLength: 300 }), (spec, body) => check(loadSpec(spec), Buffer.concat([Buffer.from([200, 7]), body]))),
      { numRuns: 300 },
    );
  });

  it('hostile lengths do not balloon: 64 kB is refused unread; 6,400 bytes of 0xFF decode or fail within the values bound', function () {
    const defs = load(fixtureText('all-kinds.idpmsg'));
    for (let min = 1; min <= 5; min++) {
      const big = Buffer.concat([Buffer.from([10, min]), Buffer.alloc(65536, 0xff)]);
      assert.throws(() => defs.decode(big, 'return'), (e) => e.code === 'BAD_INPUT' && /65538 bytes, more than the largest from-mobile message \(6400 bytes/.test(e.message));
      const bytes = Buffer.concat([Buffer.from([10, min]), Buffer.alloc(6398, 0xff)]);
      const before = process.memoryUsage().heapUsed;
      try {
        assert.ok(countValues(defs.decode(bytes, 'return').fields) <= MAX_VALUES);
      } catch (e) {
        assert.equal(e.code, 'BAD_INPUT');
      }
      assert.ok(process.memoryUsage().heapUsed - before < 4 * 1024 * 1024);
    }
  });
});
