/**
 * Each message's layout compiled once, at load, into a chain of closures: one decoder and
 * one encoder per field, with its size, items, bounds and error texts fixed in advance.
 * A decode then only reads bits and builds its result (no per-decode parsing of the
 * definition, no allocation but the result). Work is linear in the payload: a length
 * that claims more than the bits left is refused before anything is read or allocated.
 *
 * Values (nodes.md, "Message definitions"): boolean -> true/false; integers -> a number,
 * a decimal string beyond 2^53; enum -> the item's text (an index with no item: the
 * number); string -> string; data -> Buffer; array -> an array of objects; bitmask list
 * -> an object with one entry per set bit, keyed by the item's text (bit 0, the least
 * significant, is the first item), each an object of the element's fields; dynamic -> the
 * value itself. An absent optional field is left out.
 */
import { badInput, type GatewayError } from '../common/errors';
import { describeType, showValue } from '../common/int64';
import type { CmfSpec, CmfSpecMap } from '../api/cmf';
import { BitWriter, readBytes, readUint, type BitReader } from './bits';
import { minBits } from './definitions';
import { UNSUPPORTED_KINDS, type FieldDef, type MessageDef } from './model';

export type Fields = Record<string, unknown>;
type Read = (r: BitReader) => unknown;
type Dec = (r: BitReader, out: Fields) => void;
type Put = (w: BitWriter, v: unknown) => void;
type Enc = (w: BitWriter, obj: Fields) => void;

export interface CompiledMessage {
  readonly def: MessageDef;
  /** The fields of `bytes` (a whole message: SIN and MIN first). Throws BAD_INPUT. */
  decode(bytes: Buffer): Fields;
  /** The whole message (SIN and MIN first). Throws BAD_INPUT naming the field. */
  encode(fields: Fields): Buffer;
  /** The CMF type of each field, for src/lib/cmf's encodeFields. */
  readonly cmfSpec: CmfSpecMap;
}

const EMPTY = Buffer.alloc(0);
/** One reader for every decode: decoding is synchronous, so it is never shared at once. */
const R: BitReader = { buf: EMPTY, pos: 0, end: 0 };
const has = Object.prototype.hasOwnProperty;

function ended(r: BitReader, n: number, at: string): GatewayError {
  return badInput(at, `the bytes end inside this field (at bit ${r.pos} it needs ${n} bits; ${r.end - r.pos} are left)`);
}

const isObject = (v: unknown): v is Fields => !!v && typeof v === 'object' && !Array.isArray(v) && !Buffer.isBuffer(v) && !(v instanceof Uint8Array);

// ---------------------------------------------------------------- decoding

function readLength(r: BitReader, at: string): number {
  if (r.pos + 8 > r.end) throw ended(r, 8, at);
  if (readUint(r, 1) === 0) return readUint(r, 7);
  if (r.pos + 15 > r.end) throw ended(r, 15, at);
  return readUint(r, 15);
}

/** `len` bytes after a length: refused at once when more than are left. */
function checkBytes(r: BitReader, len: number, at: string): void {
  if (r.pos + len * 8 > r.end) throw badInput(at, `its length claims ${len} bytes at bit ${r.pos}, but only ${(r.end - r.pos) >> 3} are left`);
}

function utf8(r: BitReader, len: number): string {
  if ((r.pos & 7) === 0) {
    const start = r.pos >>> 3;
    r.pos += len * 8;
    return r.buf.toString('utf8', start, start + len);
  }
  return readBytes(r, len).toString('utf8');
}

function intReader(n: number, signed: boolean, at: string): Read {
  if (n <= 53) {
    const half = 2 ** (n - 1);
    const full = 2 ** n;
    return signed
      ? (r) => {
          if (r.pos + n > r.end) throw ended(r, n, at);
          const v = readUint(r, n);
          return v >= half ? v - full : v;
        }
      : (r) => {
          if (r.pos + n > r.end) throw ended(r, n, at);
          return readUint(r, n);
        };
  }
  const fullBig = 1n << BigInt(n);
  const halfBig = 1n << BigInt(n - 1);
  return (r) => {
    if (r.pos + n > r.end) throw ended(r, n, at);
    const hi = readUint(r, n - 32);
    const lo = readUint(r, 32);
    if (!signed && hi < 2 ** 21) return hi * 2 ** 32 + lo;
    let v = (BigInt(hi) << 32n) | BigInt(lo);
    if (signed && v >= halfBig) v -= fullBig;
    return v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(v) : v.toString();
  };
}

const DYNAMIC_SIZES = [8, 16, 32];

function dynamicReader(at: string): Read {
  return (r) => {
    if (r.pos + 3 > r.end) throw ended(r, 3, at);
    const tag = readUint(r, 3);
    switch (tag) {
      case 0:
        if (r.pos + 8 > r.end) throw ended(r, 8, at);
        return readUint(r, 8);
      case 1:
        if (r.pos + 1 > r.end) throw ended(r, 1, at);
        return readUint(r, 1) === 1;
      case 2:
      case 3: {
        if (r.pos + 2 > r.end) throw ended(r, 2, at);
        const n = DYNAMIC_SIZES[readUint(r, 2)];
        if (n === undefined) throw badInput(at, `size code 3 of a dynamic integer is reserved (at bit ${r.pos - 2})`);
        if (r.pos + n > r.end) throw ended(r, n, at);
        const v = readUint(r, n);
        return tag === 3 && v >= 2 ** (n - 1) ? v - 2 ** n : v;
      }
      case 4:
      case 5: {
        const len = readLength(r, at);
        checkBytes(r, len, at);
        return tag === 4 ? utf8(r, len) : readBytes(r, len);
      }
      default:
        throw badInput(at, `dynamic type tag ${tag} is reserved (at bit ${r.pos - 3})`);
    }
  };
}

function decodeAll(decs: Dec[], r: BitReader, out: Fields): Fields {
  for (let i = 0; i < decs.length; i++) decs[i]!(r, out);
  return out;
}

function reader(f: FieldDef, at: string): Read {
  const n = f.size;
  switch (f.kind) {
    case 'BooleanField':
      return (r) => {
        if (r.pos >= r.end) throw ended(r, 1, at);
        return readUint(r, 1) === 1;
      };
    case 'EnumField': {
      const items = f.items;
      return (r) => {
        if (r.pos + n > r.end) throw ended(r, n, at);
        const i = readUint(r, n);
        return i < items.length ? items[i] : i;
      };
    }
    case 'UnsignedIntField':
    case 'SignedIntField':
      return intReader(n, f.kind === 'SignedIntField', at);
    case 'StringField':
    case 'DataField': {
      const text = f.kind === 'StringField';
      if (f.fixed) {
        return (r) => {
          if (r.pos + n * 8 > r.end) throw ended(r, n * 8, at);
          if (!text) return readBytes(r, n);
          const b = readBytes(r, n);
          const zero = b.indexOf(0);
          return b.toString('utf8', 0, zero < 0 ? n : zero);
        };
      }
      return (r) => {
        const len = readLength(r, at);
        if (len > n) throw badInput(at, `its length claims ${len} bytes, more than its Size ${n}`);
        checkBytes(r, len, at);
        return text ? utf8(r, len) : readBytes(r, len);
      };
    }
    case 'ArrayField': {
      const decs = f.fields.map((e) => decoder(e, `${at}[]`));
      const least = minBits(f.fields);
      const fixed = f.fixed;
      return (r) => {
        const count = fixed ? n : readLength(r, at);
        if (count > n) throw badInput(at, `its length claims ${count} elements, more than its Size ${n}`);
        // Each element takes at least `least` bits: a count the bits left cannot hold is refused now.
        if (count * least > r.end - r.pos) throw badInput(at, `${count} elements need at least ${count * least} bits at bit ${r.pos}; ${r.end - r.pos} are left`);
        const out: Fields[] = new Array(count);
        for (let i = 0; i < count; i++) out[i] = decodeAll(decs, r, {});
        return out;
      };
    }
    case 'BitmaskListField': {
      const decs = f.fields.map((e) => decoder(e, `${at}{}`));
      const items = f.items;
      return (r) => {
        if (r.pos + n > r.end) throw ended(r, n, at);
        const mask = readUint(r, n);
        const out: Fields = {};
        for (let i = 0; i < n; i++) {
          if (Math.floor(mask / 2 ** i) % 2 === 0) continue;
          if (i >= items.length) throw badInput(at, `bit ${i} of the mask is set, but the field has no item ${i}`);
          out[items[i]!] = decodeAll(decs, r, {});
        }
        return out;
      };
    }
    case 'DynamicField':
      return dynamicReader(at);
    default:
      return () => {
        throw unsupported(f, at);
      };
  }
}

function unsupported(f: FieldDef, at: string): GatewayError {
  return badInput(at, `a ${f.kind} is not supported (the public tools leave it unimplemented); this message cannot be decoded or encoded`);
}

function decoder(f: FieldDef, at: string): Dec {
  const read = reader(f, `${at}.${f.name}`);
  const name = f.name;
  if (!f.optional) return (r, out) => void (out[name] = read(r));
  return (r, out) => {
    if (r.pos >= r.end) throw ended(r, 1, `${at}.${name}`);
    if (readUint(r, 1) === 1) out[name] = read(r);
  };
}

// ---------------------------------------------------------------- encoding

const INT_RE = /^[+-]?\d+$/;

function toBig(v: unknown): bigint | undefined {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number') return Number.isSafeInteger(v) ? BigInt(v) : undefined;
  if (typeof v === 'string' && INT_RE.test(v.trim())) return BigInt(v.trim());
  return undefined;
}

function toBool(v: unknown): boolean | undefined {
  if (typeof v === 'boolean') return v;
  if (v === 1 || v === 0) return v === 1;
  if (typeof v === 'string') {
    const s = v.trim().toLowerCase();
    if (s === 'true' || s === 'false') return s === 'true';
  }
  return undefined;
}

function toBytes(v: unknown): Buffer | undefined {
  if (Buffer.isBuffer(v)) return v;
  if (v instanceof Uint8Array) return Buffer.from(v);
  if (isObject(v) && v.type === 'Buffer' && Array.isArray(v.data)) v = v.data;
  if (Array.isArray(v)) return v.every((x) => Number.isInteger(x) && x >= 0 && x <= 255) ? Buffer.from(v as number[]) : undefined;
  if (typeof v === 'string' && /^[A-Za-z0-9+/]*={0,2}$/.test(v) && v.length % 4 === 0) return Buffer.from(v, 'base64');
  return undefined;
}

function writeLength(w: BitWriter, len: number): void {
  if (len < 128) w.uint(len, 8);
  else w.uint(0x8000 + len, 16);
}

function intWriter(n: number, signed: boolean, at: string): Put {
  const lo = signed ? -(2 ** (n - 1)) : 0;
  const hi = signed ? 2 ** (n - 1) - 1 : 2 ** n - 1;
  const loBig = signed ? -(1n << BigInt(n - 1)) : 0n;
  const hiBig = signed ? (1n << BigInt(n - 1)) - 1n : (1n << BigInt(n)) - 1n;
  const range = signed ? `-2^${n - 1} to 2^${n - 1}-1` : `0 to 2^${n}-1`;
  return (w, v) => {
    if (n <= 53 && typeof v === 'number' && Number.isSafeInteger(v)) {
      if (v < lo || v > hi) throw badInput(at, `${v} does not fit in ${n} bits (${range})`);
      w.uint(v < 0 ? v + 2 ** n : v, n);
      return;
    }
    const b = toBig(v);
    if (b === undefined) throw badInput(at, `needs an integer (a number, a decimal string or a BigInt), not ${describeType(v)} ${showValue(v, 30)}`);
    if (b < loBig || b > hiBig) throw badInput(at, `${b} does not fit in ${n} bits (${range})`);
    w.big(b < 0n ? b + (1n << BigInt(n)) : b, n);
  };
}

function dynamicWriter(at: string): Put {
  const int = (w: BitWriter, b: bigint, signed: boolean, bits?: number) => {
    const code = bits === undefined ? DYNAMIC_SIZES.findIndex((s) => (signed ? b >= -(1n << BigInt(s - 1)) && b < 1n << BigInt(s - 1) : b < 1n << BigInt(s))) : DYNAMIC_SIZES.indexOf(bits);
    if (code < 0) throw badInput(at, bits === undefined ? `${b} does not fit in the 32 bits of a dynamic integer` : `bits must be 8, 16 or 32, not ${showValue(bits)}`);
    const s = DYNAMIC_SIZES[code]!;
    if (signed ? b < -(1n << BigInt(s - 1)) || b >= 1n << BigInt(s - 1) : b < 0n || b >= 1n << BigInt(s)) throw badInput(at, `${b} does not fit in ${s} bits`);
    w.uint(signed ? 3 : 2, 3);
    w.uint(code, 2);
    w.big(b < 0n ? b + (1n << BigInt(s)) : b, s);
  };
  const bytes = (w: BitWriter, tag: number, b: Buffer) => {
    if (b.length > 32767) throw badInput(at, `${b.length} bytes; a dynamic field holds at most 32,767`);
    w.uint(tag, 3);
    writeLength(w, b.length);
    w.bytes(b);
  };
  return (w, v) => {
    let type: unknown;
    let bits: unknown;
    if (isObject(v) && 'type' in v && 'value' in v) ({ type, value: v, bits } = v as { type: unknown; value: unknown; bits?: unknown });
    const bad = () => badInput(at, `a dynamic field takes a boolean, an integer, a string, bytes, or {type, value, bits?} (type enum, boolean, unsignedint, signedint, string or data), not ${showValue(v, 30)}`);
    if (type === undefined) {
      if (typeof v === 'boolean') type = 'boolean';
      else if (typeof v === 'string') type = 'string';
      else if (typeof v === 'number' || typeof v === 'bigint') type = v < 0 ? 'signedint' : 'unsignedint';
      else if (Buffer.isBuffer(v) || v instanceof Uint8Array || Array.isArray(v)) type = 'data';
      else throw bad();
    }
    const size = bits === undefined ? undefined : Number(bits);
    switch (type) {
      case 'enum': {
        const b = toBig(v);
        if (b === undefined || b < 0n || b > 255n) throw badInput(at, `a dynamic enum is 0 to 255, not ${showValue(v)}`);
        w.uint(0, 3);
        w.uint(Number(b), 8);
        return;
      }
      case 'boolean': {
        const b = toBool(v);
        if (b === undefined) throw bad();
        w.uint(1, 3);
        w.uint(b ? 1 : 0, 1);
        return;
      }
      case 'unsignedint':
      case 'signedint': {
        const b = toBig(v);
        if (b === undefined) throw bad();
        return int(w, b, type === 'signedint', size);
      }
      case 'string':
        if (typeof v !== 'string') throw bad();
        return bytes(w, 4, Buffer.from(v, 'utf8'));
      case 'data': {
        const b = toBytes(v);
        if (!b) throw bad();
        return bytes(w, 5, b);
      }
      default:
        throw bad();
    }
  };
}

function writer(f: FieldDef, at: string): Put {
  const n = f.size;
  switch (f.kind) {
    case 'BooleanField':
      return (w, v) => {
        const b = toBool(v);
        if (b === undefined) throw badInput(at, `needs true or false, not ${showValue(v, 30)}`);
        w.uint(b ? 1 : 0, 1);
      };
    case 'EnumField': {
      const items = f.items;
      return (w, v) => {
        let i = typeof v === 'string' ? items.indexOf(v) : -1;
        if (i < 0 && typeof v === 'number' && Number.isInteger(v) && v >= 0 && v < 2 ** n) i = v;
        if (i < 0) throw badInput(at, `${showValue(v, 30)} is not one of its items (${items.map((s) => JSON.stringify(s)).join(', ')})`);
        w.uint(i, n);
      };
    }
    case 'UnsignedIntField':
    case 'SignedIntField':
      return intWriter(n, f.kind === 'SignedIntField', at);
    case 'StringField':
    case 'DataField': {
      const text = f.kind === 'StringField';
      const fixed = f.fixed;
      return (w, v) => {
        const b = text ? (typeof v === 'string' ? Buffer.from(v, 'utf8') : undefined) : toBytes(v);
        if (!b) throw badInput(at, text ? `needs a string, not ${describeType(v)}` : `needs a Buffer, a byte array or base64 text, not ${showValue(v, 30)}`);
        if (b.length > n) throw badInput(at, `${b.length} bytes is longer than its Size of ${n} bytes`);
        if (fixed) {
          w.bytes(b);
          if (b.length < n) w.bytes(Buffer.alloc(n - b.length));
        } else {
          writeLength(w, b.length);
          w.bytes(b);
        }
      };
    }
    case 'ArrayField': {
      const el = objectEncoder(f.fields, `${at}[]`);
      const fixed = f.fixed;
      return (w, v) => {
        if (!Array.isArray(v)) throw badInput(at, `needs an array of objects, not ${describeType(v)}`);
        if (fixed ? v.length !== n : v.length > n) throw badInput(at, `${v.length} elements; ${fixed ? 'exactly' : 'at most'} ${n}`);
        if (!fixed) writeLength(w, v.length);
        for (let i = 0; i < v.length; i++) {
          const e: unknown = v[i];
          if (!isObject(e)) throw badInput(`${at}[${i}]`, `an element must be an object of fields, not ${describeType(e)}`);
          el(w, e);
        }
      };
    }
    case 'BitmaskListField': {
      const el = objectEncoder(f.fields, `${at}{}`);
      const items = f.items;
      return (w, v) => {
        if (!isObject(v)) throw badInput(at, `needs an object {item: {fields}} (items ${items.map((s) => JSON.stringify(s)).join(', ')}), not ${describeType(v)}`);
        let mask = 0;
        for (const k of Object.keys(v)) {
          const i = items.indexOf(k);
          if (i < 0) throw badInput(`${at}.${k}`, `not one of its items (${items.map((s) => JSON.stringify(s)).join(', ')})`);
          mask += 2 ** i;
        }
        w.uint(mask, n);
        for (let i = 0; i < items.length; i++) {
          if (!has.call(v, items[i]!)) continue;
          const e = v[items[i]!];
          if (!isObject(e)) throw badInput(`${at}.${items[i]}`, `must be an object of fields, not ${describeType(e)}`);
          el(w, e);
        }
      };
    }
    case 'DynamicField':
      return dynamicWriter(at);
    default:
      return () => {
        throw unsupported(f, at);
      };
  }
}

function encoder(f: FieldDef, at: string): Enc {
  const here = `${at}.${f.name}`;
  const put = writer(f, here);
  const name = f.name;
  const def = f.default;
  if (f.optional) {
    return (w, obj) => {
      const v = has.call(obj, name) ? obj[name] : undefined;
      if (v === undefined || v === null) return w.uint(0, 1);
      w.uint(1, 1);
      put(w, v);
    };
  }
  return (w, obj) => {
    const v = has.call(obj, name) ? obj[name] : undefined;
    if (v !== undefined && v !== null) put(w, v);
    else if (def !== undefined) put(w, def);
    else throw badInput(here, 'required, and missing (the field is not optional and has no Default)');
  };
}

/** Encodes an object of fields; a name the definition does not have is refused. */
function objectEncoder(fields: FieldDef[], at: string): Enc {
  const encs = fields.map((f) => encoder(f, at));
  const names = new Set(fields.map((f) => f.name));
  return (w, obj) => {
    for (const k in obj) {
      if (has.call(obj, k) && !names.has(k)) throw badInput(`${at}.${k}`, `unknown field; the fields are ${[...names].join(', ') || '(none)'}`);
    }
    for (let i = 0; i < encs.length; i++) encs[i]!(w, obj);
  };
}

// ---------------------------------------------------------------- CMF types

function cmfSpec(fields: FieldDef[]): CmfSpecMap {
  const out: CmfSpecMap = {};
  for (const f of fields) {
    const s = cmfType(f);
    if (s !== undefined) out[f.name] = s;
  }
  return out;
}

function cmfType(f: FieldDef): CmfSpec | undefined {
  switch (f.kind) {
    case 'BooleanField':
      return 'boolean';
    case 'EnumField':
      return 'enum';
    case 'UnsignedIntField':
      return 'unsignedint';
    case 'SignedIntField':
      return 'signedint';
    case 'StringField':
      return 'string';
    case 'DataField':
      return 'data';
    case 'ArrayField':
      return { Type: 'array', Fields: cmfSpec(f.fields) };
    case 'BitmaskListField': {
      // One nested message per set item, so cmf.decodeFields gives back {item: {fields}}.
      const el: CmfSpec = { Type: 'message', Fields: cmfSpec(f.fields) };
      return { Type: 'message', Fields: Object.fromEntries(f.items.map((i) => [i, el])) };
    }
    default:
      // DynamicField: the type follows the value (cmf infers it).
      return undefined;
  }
}

/** Compiles one message's decoder and encoder. */
export function compileMessage(def: MessageDef): CompiledMessage {
  const decs = def.fields.map((f) => decoder(f, def.name));
  const enc = objectEncoder(def.fields, def.name);
  const bad = def.fields.find((f) => UNSUPPORTED_KINDS.includes(f.kind));
  return {
    def,
    cmfSpec: cmfSpec(def.fields),
    decode(bytes: Buffer): Fields {
      R.buf = bytes;
      R.pos = 16;
      R.end = bytes.length * 8;
      try {
        return decodeAll(decs, R, {});
      } finally {
        R.buf = EMPTY;
      }
    },
    encode(fields: Fields): Buffer {
      if (bad) throw unsupported(bad, `${def.name}.${bad.name}`);
      const w = new BitWriter();
      w.uint(def.sin, 8);
      w.uint(def.min, 8);
      enc(w, fields);
      return w.result();
    },
  };
}
