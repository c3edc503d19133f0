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
 *
 * This file is the compiler: each field's closures come from the file of its kind
 * (layout-numbers: booleans, enums, integers; layout-bytes: strings, data; layout-groups:
 * arrays, bitmask lists; layout-dynamic), what they share from layout-common.
 */
import { badInput } from '../common/errors';
import type { CmfSpec, CmfSpecMap } from '../api/cmf';
import { toFields, type ToFields } from './layout-cmf';
import { BitWriter, readUint, type BitReader } from './bits';
import { minBits } from './definitions';
import { bytesReader, bytesWriter } from './layout-bytes';
import { decodeAll, ended, has, unsupported, type Dec, type Enc, type Fields, type Put, type Read } from './layout-common';
import { dynamicReader, dynamicWriter } from './layout-dynamic';
import { arrayReader, arrayWriter, bitmaskReader, bitmaskWriter } from './layout-groups';
import { booleanReader, booleanWriter, enumReader, enumWriter, intReader, intWriter } from './layout-numbers';
import { UNSUPPORTED_KINDS, type FieldDef, type MessageDef } from './model';

export type { Fields } from './layout-common';

export interface CompiledMessage {
  readonly def: MessageDef;
  /** The fields of `bytes` (a whole message: SIN and MIN first). Throws BAD_INPUT. */
  decode(bytes: Buffer): Fields;
  /** The whole message (SIN and MIN first). Throws BAD_INPUT naming the field. */
  encode(fields: Fields): Buffer;
  /** The CMF type of each field, for src/lib/cmf's encodeFields. */
  readonly cmfSpec: CmfSpecMap;
  /** Decoded fields -> CMF `Fields` (what encodeFields gives with cmfSpec, compiled). */
  readonly cmfFields: ToFields;
}

const EMPTY = Buffer.alloc(0);
/** One reader for every decode: decoding is synchronous, so it is never shared at once. */
const R: BitReader = { buf: EMPTY, pos: 0, end: 0 };

// ---------------------------------------------------------------- decoding

function reader(f: FieldDef, at: string): Read {
  const n = f.size;
  switch (f.kind) {
    case 'BooleanField':
      return booleanReader(at);
    case 'EnumField':
      return enumReader(n, f.items, at);
    case 'UnsignedIntField':
    case 'SignedIntField':
      return intReader(n, f.kind === 'SignedIntField', at);
    case 'StringField':
    case 'DataField':
      return bytesReader(n, f.kind === 'StringField', f.fixed, at);
    case 'ArrayField':
      return arrayReader(n, f.fixed, f.fields.map((e) => decoder(e, `${at}[]`)), minBits(f.fields), at);
    case 'BitmaskListField':
      return bitmaskReader(n, f.items, f.fields.map((e) => decoder(e, `${at}{}`)), at);
    case 'DynamicField':
      return dynamicReader(at);
    default:
      return () => {
        throw unsupported(f, at);
      };
  }
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

function writer(f: FieldDef, at: string): Put {
  const n = f.size;
  switch (f.kind) {
    case 'BooleanField':
      return booleanWriter(at);
    case 'EnumField':
      return enumWriter(n, f.items, at);
    case 'UnsignedIntField':
    case 'SignedIntField':
      return intWriter(n, f.kind === 'SignedIntField', at);
    case 'StringField':
    case 'DataField':
      return bytesWriter(n, f.kind === 'StringField', f.fixed, at);
    case 'ArrayField':
      return arrayWriter(n, f.fixed, objectEncoder(f.fields, `${at}[]`), at);
    case 'BitmaskListField':
      return bitmaskWriter(n, f.items, objectEncoder(f.fields, `${at}{}`), at);
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

/** Compiles one message's decoder and encoder; an encoding longer than `maxBytes` is refused. */
export function compileMessage(def: MessageDef, maxBytes = Infinity): CompiledMessage {
  const which = def.direction === 'forward' ? 'to-mobile' : 'from-mobile';
  const tooLong = (n: number) => badInput(def.name, `the encoded message would be more than ${n} bytes, the largest ${which} message (the definitions' setting)`);
  const decs = def.fields.map((f) => decoder(f, def.name));
  const enc = objectEncoder(def.fields, def.name);
  const bad = def.fields.find((f) => UNSUPPORTED_KINDS.includes(f.kind));
  return {
    def,
    cmfSpec: cmfSpec(def.fields),
    cmfFields: toFields(def.fields),
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
      const w = new BitWriter(64, maxBytes, tooLong);
      w.uint(def.sin, 8);
      w.uint(def.min, 8);
      enc(w, fields);
      return w.result();
    },
  };
}
