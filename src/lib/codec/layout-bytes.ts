/**
 * Strings and data of a compiled layout (layout.ts), fixed or with a length before them,
 * and the length prefix itself (also used by arrays and dynamic fields). A length that
 * claims more bytes than are left is refused before anything is read.
 */
import { badInput } from '../common/errors';
import { isUtf8 } from 'node:buffer';
import { describeType, showValue } from '../common/int64';
import { readBytes, readUint, type BitReader, type BitWriter } from './bits';
import { ended, isObject, type Put, type Read } from './layout-common';

/** A length prefix: 0 and 7 bits, or 1 and 15 bits. */
export function readLength(r: BitReader, at: string): number {
  if (r.pos + 8 > r.end) throw ended(r, 8, at);
  if (readUint(r, 1) === 0) return readUint(r, 7);
  if (r.pos + 15 > r.end) throw ended(r, 15, at);
  return readUint(r, 15);
}

export function writeLength(w: BitWriter, len: number): void {
  if (len < 128) w.uint(len, 8);
  else w.uint(0x8000 + len, 16);
}

/** `len` bytes after a length: refused at once when more than are left. */
export function checkBytes(r: BitReader, len: number, at: string): void {
  if (r.pos + len * 8 > r.end) throw badInput(at, `its length claims ${len} bytes at bit ${r.pos}, but only ${(r.end - r.pos) >> 3} are left`);
}

/**
 * Bytes as UTF-8 text; bytes that are not UTF-8 are refused (BAD_INPUT naming the field and
 * the bit), never turned into U+FFFD: the public decoders refuse them too, and a text
 * changed silently would encode back to other bytes.
 */
export function text(b: Uint8Array, at: string, bit: number): string {
  if (!isUtf8(b)) throw badInput(at, `the ${b.length} bytes at bit ${bit} are not valid UTF-8 text`);
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8');
}

/** `len` bytes as UTF-8 text (straight from the buffer when on a byte boundary). */
export function utf8(r: BitReader, len: number, at: string): string {
  const bit = r.pos;
  if ((bit & 7) === 0) {
    const start = bit >>> 3;
    r.pos += len * 8;
    return text(r.buf.subarray(start, start + len), at, bit);
  }
  return text(readBytes(r, len), at, bit);
}

/** Bytes as a Buffer: a Buffer, Uint8Array, byte array, JSON'd Buffer or base64 text; else undefined. */
export function toBytes(v: unknown): Buffer | undefined {
  if (Buffer.isBuffer(v)) return v;
  if (v instanceof Uint8Array) return Buffer.from(v);
  if (isObject(v) && v.type === 'Buffer' && Array.isArray(v.data)) v = v.data;
  if (Array.isArray(v)) return v.every((x) => Number.isInteger(x) && x >= 0 && x <= 255) ? Buffer.from(v as number[]) : undefined;
  if (typeof v === 'string' && /^[A-Za-z0-9+/]*={0,2}$/.test(v) && v.length % 4 === 0) return Buffer.from(v, 'base64');
  return undefined;
}

/** A StringField (`text`) or DataField of at most `n` bytes (exactly `n` when `fixed`). */
export function bytesReader(n: number, isText: boolean, fixed: boolean, at: string): Read {
  if (fixed) {
    return (r) => {
      if (r.pos + n * 8 > r.end) throw ended(r, n * 8, at);
      if (!isText) return readBytes(r, n);
      const bit = r.pos;
      const b = readBytes(r, n);
      const zero = b.indexOf(0);
      return text(b.subarray(0, zero < 0 ? n : zero), at, bit);
    };
  }
  return (r) => {
    const len = readLength(r, at);
    if (len > n) throw badInput(at, `its length claims ${len} bytes, more than its Size ${n}`);
    checkBytes(r, len, at);
    return isText ? utf8(r, len, at) : readBytes(r, len);
  };
}

export function bytesWriter(n: number, text: boolean, fixed: boolean, at: string): Put {
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
