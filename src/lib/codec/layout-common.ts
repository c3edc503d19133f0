/**
 * What every part of the compiled layout (layout.ts) shares: the closure types, the
 * error texts of a field that ends early or is not supported, and the small value tests.
 */
import { badInput, type GatewayError } from '../common/errors';
import { describeType } from '../common/int64';
import type { BitReader, BitWriter } from './bits';
import type { FieldDef } from './model';

export type Fields = Record<string, unknown>;
/** Reads one field's value. */
export type Read = (r: BitReader) => unknown;
/** Reads one field (its presence bit too) into `out`. */
export type Dec = (r: BitReader, out: Fields) => void;
/** Writes one field's value. */
export type Put = (w: BitWriter, v: unknown) => void;
/** Writes one field (its presence bit too) from `obj`. */
export type Enc = (w: BitWriter, obj: Fields) => void;

export const has = Object.prototype.hasOwnProperty;

export function ended(r: BitReader, n: number, at: string): GatewayError {
  return badInput(at, `the bytes end inside this field (at bit ${r.pos} it needs ${n} bits; ${r.end - r.pos} are left)`);
}

export function unsupported(f: FieldDef, at: string): GatewayError {
  return badInput(at, `a ${f.kind} is not supported (the public tools leave it unimplemented); this message cannot be decoded or encoded`);
}

/** A plain object (of fields): not an array, a Buffer, a Date, a Map or any other class's instance. */
export function isObject(v: unknown): v is Fields {
  if (!v || typeof v !== 'object') return false;
  // Any realm's Object.prototype (a function node's objects come from its own vm context), or none.
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === null || Object.getPrototypeOf(proto) === null;
}

/** What a value is, for an error text: "a Date", "a Map", "an array", "a number", ... */
export function kindOf(v: unknown): string {
  if (v && typeof v === 'object' && !Array.isArray(v) && !isObject(v)) {
    const name = (v as { constructor?: { name?: unknown } }).constructor?.name;
    return typeof name === 'string' && /^\w{1,40}$/.test(name) ? `a ${name}` : 'an object of a class';
  }
  return describeType(v);
}

/** `obj[key] = value` as an own property, even for "__proto__" (an item's text, not a prototype). */
export function setOwn(obj: Fields, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else obj[key] = value;
}

/** Runs each field's decoder in turn into `out`. */
export function decodeAll(decs: Dec[], r: BitReader, out: Fields): Fields {
  for (let i = 0; i < decs.length; i++) decs[i]!(r, out);
  return out;
}
