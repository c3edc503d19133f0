/**
 * Dynamic fields of a compiled layout (layout.ts): a 3-bit type tag, then the value
 * (enum, boolean, 8/16/32-bit unsigned or signed integer, string or data). Decoded, the
 * value itself; to encode, a plain value (its type inferred) or {type, value, bits?}.
 */
import { badInput, type GatewayError } from '../common/errors';
import { showValue } from '../common/int64';
import { readBytes, readUint, type BitReader, type BitWriter } from './bits';
import { checkBytes, readLength, toBytes, utf8, writeLength } from './layout-bytes';
import { ended, isObject, type Put, type Read } from './layout-common';
import { toBig, toBool } from './layout-numbers';

const DYNAMIC_SIZES = [8, 16, 32];

/** Tags 2 and 3: a 2-bit size code, then an unsigned (2) or signed (3) integer. */
function readDynamicInt(r: BitReader, tag: number, at: string): number {
  if (r.pos + 2 > r.end) throw ended(r, 2, at);
  const n = DYNAMIC_SIZES[readUint(r, 2)];
  if (n === undefined) throw badInput(at, `size code 3 of a dynamic integer is reserved (at bit ${r.pos - 2})`);
  if (r.pos + n > r.end) throw ended(r, n, at);
  const v = readUint(r, n);
  return tag === 3 && v >= 2 ** (n - 1) ? v - 2 ** n : v;
}

export function dynamicReader(at: string): Read {
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
      case 3:
        return readDynamicInt(r, tag, at);
      case 4:
      case 5: {
        const len = readLength(r, at);
        checkBytes(r, len, at);
        return tag === 4 ? utf8(r, len, at) : readBytes(r, len);
      }
      default:
        throw badInput(at, `dynamic type tag ${tag} is reserved (at bit ${r.pos - 3})`);
    }
  };
}

function badDynamic(at: string, v: unknown): GatewayError {
  return badInput(at, `a dynamic field takes a boolean, an integer, a string, bytes, or {type, value, bits?} (type enum, boolean, unsignedint, signedint, string or data), not ${showValue(v, 30)}`);
}

/** Tags 2 and 3: the smallest size that holds `b`, or the `bits` asked for. */
function writeDynamicInt(w: BitWriter, at: string, b: bigint, signed: boolean, bits?: number): void {
  const code = bits === undefined ? DYNAMIC_SIZES.findIndex((s) => (signed ? b >= -(1n << BigInt(s - 1)) && b < 1n << BigInt(s - 1) : b < 1n << BigInt(s))) : DYNAMIC_SIZES.indexOf(bits);
  if (code < 0) throw badInput(at, bits === undefined ? `${b} does not fit in the 32 bits of a dynamic integer` : `bits must be 8, 16 or 32, not ${showValue(bits)}`);
  const s = DYNAMIC_SIZES[code]!;
  if (signed ? b < -(1n << BigInt(s - 1)) || b >= 1n << BigInt(s - 1) : b < 0n || b >= 1n << BigInt(s)) throw badInput(at, `${b} does not fit in ${s} bits`);
  w.uint(signed ? 3 : 2, 3);
  w.uint(code, 2);
  w.big(b < 0n ? b + (1n << BigInt(s)) : b, s);
}

/** Tags 4 and 5: a length, then the bytes. */
function writeDynamicBytes(w: BitWriter, at: string, tag: number, b: Buffer): void {
  if (b.length > 32767) throw badInput(at, `${b.length} bytes; a dynamic field holds at most 32,767`);
  w.uint(tag, 3);
  writeLength(w, b.length);
  w.bytes(b);
}

/** The type of a plain value (not {type, value}); undefined when it has none. */
function dynamicTypeOf(v: unknown): string | undefined {
  if (typeof v === 'boolean') return 'boolean';
  if (typeof v === 'string') return 'string';
  if (typeof v === 'number' || typeof v === 'bigint') return v < 0 ? 'signedint' : 'unsignedint';
  if (Buffer.isBuffer(v) || v instanceof Uint8Array || Array.isArray(v)) return 'data';
  return undefined;
}

/** Writes `v` as a dynamic value of `type`. */
function writeDynamic(w: BitWriter, at: string, type: unknown, v: unknown, size: number | undefined): void {
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
      if (b === undefined) throw badDynamic(at, v);
      w.uint(1, 3);
      w.uint(b ? 1 : 0, 1);
      return;
    }
    case 'unsignedint':
    case 'signedint': {
      const b = toBig(v);
      if (b === undefined) throw badDynamic(at, v);
      return writeDynamicInt(w, at, b, type === 'signedint', size);
    }
    case 'string':
      if (typeof v !== 'string') throw badDynamic(at, v);
      return writeDynamicBytes(w, at, 4, Buffer.from(v, 'utf8'));
    case 'data': {
      const b = toBytes(v);
      if (!b) throw badDynamic(at, v);
      return writeDynamicBytes(w, at, 5, b);
    }
    default:
      throw badDynamic(at, v);
  }
}

export function dynamicWriter(at: string): Put {
  return (w, v) => {
    let type: unknown;
    let bits: unknown;
    if (isObject(v) && 'type' in v && 'value' in v) ({ type, value: v, bits } = v as { type: unknown; value: unknown; bits?: unknown });
    if (type === undefined) {
      type = dynamicTypeOf(v);
      if (type === undefined) throw badDynamic(at, v);
    }
    writeDynamic(w, at, type, v, bits === undefined ? undefined : Number(bits));
  };
}
