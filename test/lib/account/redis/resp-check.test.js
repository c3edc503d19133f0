'use strict';
/**
 * Issue 43: the strict RESP check the reply guard puts in front of ioredis's decoder
 * (src/lib/account/redis/resp-check.ts), with ioredis 6's real decoder behind it.
 *
 * - Known bad frames are refused, for their form or their size, before the decoder sees them.
 * - fast-check: generated valid RESP2/RESP3 streams, cut anywhere, pass unchanged and decode to
 *   what the whole stream decodes to; random bytes and mutated valid streams never hold the
 *   decoder (each feed runs under a 1 s vm timeout), never make it throw, and the reply being
 *   received never exceeds the bound.
 */
const assert = require('node:assert/strict');
const vm = require('node:vm');
const fc = require('fast-check');
const { Decoder, RESP_TYPES: T } = require('ioredis/built/resp/decoder');
const { RespCheck } = require('../../../../dist/lib/account/redis/resp-check');

const MIB8 = 8 * 1024 * 1024;
/** ioredis's mapping for us (DataHandler's legacy mapping), and the decoder's own defaults. */
const LEGACY = { [T.SIMPLE_STRING]: Buffer, [T.BLOB_STRING]: Buffer, [T.VERBATIM_STRING]: Buffer, [T.BIG_NUMBER]: String, [T.DOUBLE]: Buffer, [T.BOOLEAN]: Number, [T.MAP]: Array, [T.SET]: Array };
const MAPPINGS = [LEGACY, {}];

/** A decoder collecting what it decodes. */
function decoder(mapping = LEGACY) {
  const out = [];
  const d = new Decoder({
    getTypeMapping: () => mapping,
    onReply: (v) => out.push(['reply', v]),
    onErrorReply: (e) => out.push(['error', e.message]),
    onPush: (v) => out.push(['push', v]),
  });
  return { out, write: (b) => d.write(b) };
}

const context = vm.createContext({ fn: undefined });
const call = new vm.Script('fn()');
/** Runs `fn` and fails if it runs over 1 s (a synchronous loop is cut by vm's timeout). */
function within1s(fn) {
  context.fn = fn;
  call.runInContext(context, { timeout: 1000 });
}

/** Feeds `chunks` through a check into a decoder, as the guard does; what passed, the fault, the decoded values. */
function throughGuard(chunks, { maxBytes = MIB8, mapping } = {}) {
  const check = new RespCheck(maxBytes);
  const dec = decoder(mapping);
  const passed = [];
  let fault;
  for (const c of chunks) {
    fault = check.push(c);
    if (fault) break;
    assert.ok(check.bytes <= maxBytes, `the reply being received is within the bound: ${check.bytes}`);
    passed.push(c);
    within1s(() => dec.write(c));
  }
  return { fault, passed: Buffer.concat(passed), out: dec.out };
}

/** `buf` cut at `cuts` (offsets, any order). */
function split(buf, cuts) {
  const at = [...new Set(cuts.map((c) => c % (buf.length + 1)))].sort((a, b) => a - b);
  const parts = [];
  let from = 0;
  for (const c of [...at, buf.length]) {
    if (c > from) parts.push(buf.subarray(from, c));
    from = Math.max(from, c);
  }
  return parts;
}

// ---- Generated RESP: values and their bytes ----
const line = fc.string({ maxLength: 20 }).map((s) => s.replace(/[\r\n]/g, ' '));
const bytes = fc.uint8Array({ maxLength: 40 }).map((a) => Buffer.from(a));
const leaf = fc.oneof(
  line.map((s) => `+${s}\r\n`),
  line.map((s) => `-ERR ${s}\r\n`),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map((n) => `:${n}\r\n`),
  fc.bigInt({ min: -(10n ** 40n), max: 10n ** 40n }).map((n) => `(${n}\r\n`),
  bytes.map((b) => Buffer.concat([Buffer.from(`$${b.length}\r\n`), b, Buffer.from('\r\n')])),
  bytes.map((b) => Buffer.concat([Buffer.from(`!${b.length}\r\n`), b, Buffer.from('\r\n')])),
  bytes.map((b) => Buffer.concat([Buffer.from(`=${b.length + 4}\r\ntxt:`), b, Buffer.from('\r\n')])),
  fc.constantFrom('$-1\r\n', '*-1\r\n', '_\r\n', '#t\r\n', '#f\r\n', ',nan\r\n', ',inf\r\n', ',-inf\r\n'),
  fc.oneof(fc.integer({ min: -1e9, max: 1e9 }), fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e300, max: 1e300 })).map((d) => `,${Object.is(d, -0) ? 0 : d}\r\n`),
);
const value = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, leaf, leaf, tie('agg')),
  agg: fc.tuple(fc.constantFrom('*', '~', '%'), fc.array(tie('value'), { maxLength: 4 })).map(([t, items]) => {
    const list = t === '%' ? items.concat(items.length % 2 ? [items[0]] : []) : items;
    return Buffer.concat([Buffer.from(`${t}${t === '%' ? list.length / 2 : list.length}\r\n`), ...list.map((v) => Buffer.from(v))]);
  }),
})).value;
const reply = fc.oneof(
  { weight: 4, arbitrary: value },
  { weight: 1, arbitrary: fc.array(value, { maxLength: 3 }).map((items) => Buffer.concat([Buffer.from(`>${items.length}\r\n`), ...items.map((v) => Buffer.from(v))])) },
);
const stream = fc.array(reply, { minLength: 1, maxLength: 5 }).map((rs) => Buffer.concat(rs.map((r) => Buffer.from(r))));
const cuts = fc.array(fc.nat(), { maxLength: 8 });

/** A valid stream with a few of its bytes changed, inserted or dropped. */
const mutated = fc
  .tuple(stream, fc.array(fc.tuple(fc.constantFrom('set', 'insert', 'drop'), fc.nat(), fc.constantFrom(0x2a, 0x2d, 0x0d, 0x0a, 0x78, 0x30, 0x39, 0x7c, 0x3e, 0x24, 0x00, 0xff)), { minLength: 1, maxLength: 4 }))
  .map(([buf, edits]) => {
    let b = Buffer.from(buf);
    for (const [op, at, byte] of edits) {
      const i = at % (b.length + 1);
      if (op === 'set' && i < b.length) b[i] = byte;
      else if (op === 'insert') b = Buffer.concat([b.subarray(0, i), Buffer.from([byte]), b.subarray(i)]);
      else if (op === 'drop') b = Buffer.concat([b.subarray(0, i), b.subarray(i + 1)]);
    }
    return b;
  });

describe('RespCheck: the strict RESP framing in front of ioredis 6\'s decoder (issue 43)', function () {
  this.timeout(120000);

  it('(the harness) ioredis 6\'s decoder fed $*\\r\\nX straight loops until the 1 s timeout cuts it', function () {
    const dec = decoder();
    assert.throws(() => within1s(() => dec.write(Buffer.from('$*\r\nX'))), /timed out/);
  });

  const REFUSED = [
    ['$*\r\nX', 'form', /length or count that is not decimal digits/],
    ['$0x999999999\r\n', 'form', /length or count that is not decimal digits/],
    ['$-2\r\n', 'form', /length or count/],
    ['$05\r\nhello\r\n', 'form', /length or count/],
    ['$ 5\r\nhello\r\n', 'form', /length or count/],
    ['$5\rXhello\r\n', 'form', /not ended by CRLF/],
    ['$5\r\nhelloXY', 'form', /bulk string not followed by CRLF/],
    ['~-1\r\n', 'form', /length or count/],
    ['%-1\r\n', 'form', /length or count/],
    ['*1\r\n>1\r\n:1\r\n', 'form', /push inside another reply/],
    ['|1\r\n+a\r\n+b\r\n+c\r\n', 'form', /attribute/],
    ['=3\r\nabc\r\n', 'form', /verbatim/],
    ['=6\r\ntxtxab\r\n', 'form', /verbatim/],
    ['#x\r\n', 'form', /boolean/],
    ['_x\r\n', 'form', /null/],
    [':1.5\r\n', 'form', /integer/],
    [':+5\r\n', 'form', /integer/],
    [':12345678901234567890\r\n', 'form', /integer/],
    [',1e\r\n', 'form', /double/],
    ['+a\nb\r\n', 'form', /line feed/],
    ['X\r\n', 'form', /unknown type byte 0x58/],
    [`$${'9'.repeat(200)}\r\n`, 'form', /length or count|longer than/],
    [`$${MIB8}\r\n`, 'size', /larger than 8388608 bytes/],
    ['$99999999999\r\n', 'form', /length or count/],
    [`*${Math.ceil(MIB8 / 3) + 1}\r\n`, 'size', /larger than 8388608 bytes/],
    [`%${Math.ceil(MIB8 / 6) + 1}\r\n`, 'size', /larger than 8388608 bytes/],
    [`${'*1\r\n'.repeat(33)}:1\r\n`, 'size', /nested deeper than 32 levels/],
  ];
  for (const [frame, kind, why] of REFUSED) {
    it(`refuses ${JSON.stringify(frame.slice(0, 40))} (${kind}), whole and byte by byte, before the decoder reads a bad byte`, function () {
      for (const chunks of [[Buffer.from(frame, 'latin1')], [...Buffer.from(frame, 'latin1')].map((b) => Buffer.from([b]))]) {
        const { fault, passed } = throughGuard(chunks);
        assert.ok(fault, 'refused');
        assert.equal(fault.kind, kind, fault.why);
        assert.match(fault.why, why);
        assert.ok(passed.length < frame.length, 'not all of it reached the decoder');
      }
    });
  }

  it('passes replies ioredis meets (RESP2 and RESP3: HELLO\'s map, nulls, a 1 MiB bulk string, a push), cut anywhere, as they are', function () {
    const hello = '%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$5\r\n7.2.4\r\n$5\r\nproto\r\n:3\r\n$2\r\nid\r\n:5\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n';
    const big = Buffer.concat([Buffer.from(`$${1024 * 1024}\r\n`), Buffer.alloc(1024 * 1024, 0x61), Buffer.from('\r\n')]);
    const all = Buffer.concat([Buffer.from(hello + '+OK\r\n$-1\r\n*-1\r\n_\r\n*2\r\n:1\r\n*1\r\n$1\r\nx\r\n>3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\nm\r\n'), big, Buffer.from('-ERR no\r\n,3.14\r\n#t\r\n(123\r\n~1\r\n+a\r\n=8\r\ntxt:abcd\r\n!3\r\nbad\r\n')]);
    const { fault, passed, out } = throughGuard(split(all, [1, 7, 100, 300, 1000, 5000, 600000]));
    assert.equal(fault, undefined);
    assert.ok(passed.equals(all));
    assert.equal(out.length, 15);
    assert.deepEqual(out[7], ['reply', Buffer.alloc(1024 * 1024, 0x61)]);
    assert.deepEqual(out[6], ['push', [Buffer.from('message'), Buffer.from('c'), Buffer.from('m')]]);
  });

  it('fast-check: valid RESP2/RESP3 streams, cut anywhere, pass unchanged and decode to what the whole stream decodes to', function () {
    fc.assert(
      fc.property(stream, cuts, fc.constantFrom(...MAPPINGS), (buf, at, mapping) => {
        const whole = decoder(mapping);
        within1s(() => whole.write(buf));
        const { fault, passed, out } = throughGuard(split(buf, at), { mapping });
        assert.equal(fault, undefined, fault && fault.why);
        assert.ok(passed.equals(buf), 'passed unchanged');
        assert.deepStrictEqual(out, whole.out);
      }),
      { numRuns: 1500 },
    );
  });

  it('fast-check: random bytes and mutated valid streams never hold nor break the decoder behind the check, nor exceed the bound', function () {
    const input = fc.oneof(mutated, mutated, fc.uint8Array({ maxLength: 200 }).map((a) => Buffer.from(a)));
    let refused = 0;
    fc.assert(
      fc.property(input, cuts, fc.constantFrom(64, 1024, MIB8), fc.constantFrom(...MAPPINGS), (buf, at, maxBytes, mapping) => {
        const { fault } = throughGuard(split(buf, at), { maxBytes, mapping });
        if (fault) refused++;
      }),
      { numRuns: 3000 },
    );
    assert.ok(refused > 1000, `most hostile inputs refused: ${refused} of 3000`);
  });
});
