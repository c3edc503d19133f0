'use strict';
const assert = require('node:assert/strict');
const { decodeFields, encodeFields, checkSpec, inferType } = require('../../../dist/lib/api/cmf');

describe('common message format (cmf units)', function () {
  const fields = [
    { Name: 'count', Type: 'unsignedint', Value: '42' },
    { Name: 'big', Type: 'unsignedint', Value: '18446744073709551615' },
    { Name: 'latitude', Type: 'signedint', Value: '-2718079' },
    { Name: 'fix', Type: 'enum', Value: 'Valid' },
    { Name: 'moving', Type: 'boolean', Value: 'True' },
    { Name: 'parked', Type: 'boolean', Value: 'false' },
    { Name: 'label', Type: 'string', Value: 'truck 7' },
    { Name: 'blob', Type: 'data', Value: Buffer.from([0, 1, 2, 255]).toString('base64') },
    {
      Name: 'readings',
      Type: 'array',
      Elements: [
        { Index: 1, Fields: [{ Name: 't', Type: 'signedint', Value: '-5' }] },
        { Index: 0, Fields: [{ Name: 't', Type: 'signedint', Value: '21' }] },
      ],
    },
    {
      Name: 'inner',
      Type: 'message',
      Message: { Name: 'sub', SIN: 128, MIN: 2, Fields: [{ Name: 'ok', Type: 'boolean', Value: 'true' }, { Name: 'n', Type: 'unsignedint', Value: '7' }] },
    },
    { Name: 'odd', Type: 'float', Value: '1.5' },
    { Name: 'untyped', Value: 'x' },
  ];

  it('decodes every Type into a plain object', function () {
    const o = decodeFields(fields);
    assert.equal(o.count, 42);
    assert.equal(o.big, '18446744073709551615', 'above 2^53: an exact decimal string');
    assert.equal(o.latitude, -2718079);
    assert.equal(o.fix, 'Valid');
    assert.equal(o.moving, true);
    assert.equal(o.parked, false);
    assert.equal(o.label, 'truck 7');
    assert.ok(Buffer.isBuffer(o.blob));
    assert.deepEqual([...o.blob], [0, 1, 2, 255]);
    assert.deepEqual(o.readings, [{ t: 21 }, { t: -5 }], 'elements in Index order');
    assert.deepEqual(o.inner, { ok: true, n: 7 });
    assert.equal(o.odd, '1.5', 'unknown type keeps its Value');
    assert.equal(o.untyped, 'x');
  });

  it('decodes missing or malformed Fields to an empty object, skips nameless fields', function () {
    assert.deepEqual(decodeFields(undefined), {});
    assert.deepEqual(decodeFields(null), {});
    assert.deepEqual(decodeFields({}), {});
    assert.deepEqual(decodeFields([null, { Type: 'string', Value: 'x' }, { Name: 'a', Type: 'unsignedint', Value: 'zz' }]), { a: 'zz' });
    assert.deepEqual(decodeFields([{ Name: 'e', Type: 'array' }]), { e: [] });
  });

  it('encodes a plain object by spec and by inference, and decodes back to it', function () {
    const problems = [];
    const obj = {
      count: 42,
      big: 18446744073709551615n,
      latitude: -2718079,
      fix: 'Valid',
      moving: true,
      label: 'truck 7',
      blob: Buffer.from([0, 1, 2, 255]),
      readings: [{ t: 21 }, { t: -5 }],
      inner: { ok: true, n: 7 },
    };
    const spec = checkSpec({ fix: 'enum', inner: { Type: 'message', Fields: { n: 'unsignedint' } } }, 'msg.fieldTypes', problems);
    const enc = encodeFields(obj, spec, 'msg.payload.Payload.Fields', problems);
    assert.deepEqual(problems, []);
    const byName = Object.fromEntries(enc.map((f) => [f.Name, f]));
    assert.deepEqual(byName.count, { Name: 'count', Type: 'unsignedint', Value: '42' });
    assert.deepEqual(byName.big, { Name: 'big', Type: 'unsignedint', Value: '18446744073709551615' });
    assert.deepEqual(byName.latitude, { Name: 'latitude', Type: 'signedint', Value: '-2718079' });
    assert.deepEqual(byName.fix, { Name: 'fix', Type: 'enum', Value: 'Valid' });
    assert.deepEqual(byName.moving, { Name: 'moving', Type: 'boolean', Value: 'True' });
    assert.deepEqual(byName.blob, { Name: 'blob', Type: 'data', Value: 'AAEC/w==' });
    assert.equal(byName.readings.Type, 'array');
    assert.equal(byName.inner.Type, 'message');
    const back = decodeFields(enc);
    assert.deepEqual({ ...back, blob: [...back.blob] }, { ...obj, big: '18446744073709551615', blob: [0, 1, 2, 255] });
  });

  it('refuses values that do not fit their type, naming the field', function () {
    const problems = [];
    encodeFields(
      { a: -1, b: 'x', c: 'maybe', d: 1.5, e: [1], f: 'not base64!', g: {} },
      { a: 'unsignedint', b: 'signedint', c: 'boolean', e: 'array', f: 'data' },
      'P',
      problems,
    );
    assert.equal(problems.length, 6, problems.join('\n'));
    for (const f of ['P.a', 'P.b', 'P.c', 'P.d', 'P.e[0]', 'P.f']) assert.ok(problems.some((p) => p.startsWith(f + ':')), f);
    const sp = [];
    assert.equal(checkSpec({ a: 'float' }, 'msg.fieldTypes', sp), undefined);
    assert.match(sp[0], /^msg\.fieldTypes\.a: must be one of/);
    assert.equal(inferType(null), undefined);
  });
});
