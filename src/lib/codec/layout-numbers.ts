/**
 * Booleans, enums and integers of a compiled layout (layout.ts): each field's reader and
 * writer closure, with its size, items, bounds and error texts fixed at compile time.
 */
import { badInput } from '../common/errors';
import { describeType, showValue } from '../common/int64';
import { readUint } from './bits';
import { ended, type Put, type Read } from './layout-common';

const INT_RE = /^[+-]?\d+$/;

/** An integer as a BigInt (a safe number, a decimal string or a BigInt); else undefined. */
export function toBig(v: unknown): bigint | undefined {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number') return Number.isSafeInteger(v) ? BigInt(v) : undefined;
  if (typeof v === 'string' && INT_RE.test(v.trim())) return BigInt(v.trim());
  return undefined;
}

/** true/false, 1/0 or "true"/"false"; else undefined. */
export function toBool(v: unknown): boolean | undefined {
  if (typeof v === 'boolean') return v;
  if (v === 1 || v === 0) return v === 1;
  if (typeof v === 'string') {
    const s = v.trim().toLowerCase();
    if (s === 'true' || s === 'false') return s === 'true';
  }
  return undefined;
}

// ---------------------------------------------------------------- decoding

export function booleanReader(at: string): Read {
  return (r) => {
    if (r.pos >= r.end) throw ended(r, 1, at);
    return readUint(r, 1) === 1;
  };
}

export function enumReader(n: number, items: string[], at: string): Read {
  return (r) => {
    if (r.pos + n > r.end) throw ended(r, n, at);
    const i = readUint(r, n);
    return i < items.length ? items[i] : i;
  };
}

export function intReader(n: number, signed: boolean, at: string): Read {
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

// ---------------------------------------------------------------- encoding

export function booleanWriter(at: string): Put {
  return (w, v) => {
    const b = toBool(v);
    if (b === undefined) throw badInput(at, `needs true or false, not ${showValue(v, 30)}`);
    w.uint(b ? 1 : 0, 1);
  };
}

export function enumWriter(n: number, items: string[], at: string): Put {
  return (w, v) => {
    let i = typeof v === 'string' ? items.indexOf(v) : -1;
    // An index as a number, or as its decimal text (how the common message format carries an index with no item).
    const index = typeof v === 'string' && /^\d{1,10}$/.test(v) ? Number(v) : v;
    if (i < 0 && typeof index === 'number' && Number.isInteger(index) && index >= 0 && index < 2 ** n) i = index;
    if (i < 0) throw badInput(at, `${showValue(v, 30)} is not one of its items (${items.map((s) => JSON.stringify(s)).join(', ')})`);
    w.uint(i, n);
  };
}

export function intWriter(n: number, signed: boolean, at: string): Put {
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
