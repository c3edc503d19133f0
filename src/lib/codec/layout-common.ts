/**
 * What every part of the compiled layout (layout.ts) shares: the closure types, the
 * error texts of a field that ends early or is not supported, and the small value tests.
 */
import { badInput, type GatewayError } from '../common/errors';
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

export const isObject = (v: unknown): v is Fields => !!v && typeof v === 'object' && !Array.isArray(v) && !Buffer.isBuffer(v) && !(v instanceof Uint8Array);

/** Runs each field's decoder in turn into `out`. */
export function decodeAll(decs: Dec[], r: BitReader, out: Fields): Fields {
  for (let i = 0; i < decs.length; i++) decs[i]!(r, out);
  return out;
}
