/**
 * Bit-level reading and writing, most significant bit first (message-definitions.md,
 * "The bytes"). Positions count bits from the start of the message (SIN and MIN
 * included). Callers check bounds before reading (`left`): nothing here allocates from a
 * length it has not checked.
 */

export interface BitReader {
  buf: Buffer;
  /** The next bit to read. */
  pos: number;
  /** The number of bits in `buf`. */
  end: number;
}

/** Reads `n` bits (0..53) as an unsigned number; the caller has checked that they are there. */
export function readUint(r: BitReader, n: number): number {
  const buf = r.buf;
  let pos = r.pos;
  let v = 0;
  while (n > 0) {
    const off = pos & 7;
    const avail = 8 - off;
    const take = avail < n ? avail : n;
    // take <= 8: the shifts stay in 32-bit range; v * 2^take stays exact up to 2^53.
    v = v * (1 << take) + ((buf[pos >>> 3]! >>> (avail - take)) & ((1 << take) - 1));
    pos += take;
    n -= take;
  }
  r.pos = pos;
  return v;
}

/** Reads `len` whole bytes from any bit position into a new Buffer. */
export function readBytes(r: BitReader, len: number): Buffer {
  const pos = r.pos;
  const start = pos >>> 3;
  const shift = pos & 7;
  let out: Buffer;
  if (shift === 0) out = Buffer.from(r.buf.subarray(start, start + len));
  else {
    out = Buffer.allocUnsafe(len);
    const buf = r.buf;
    for (let i = 0; i < len; i++) out[i] = ((buf[start + i]! << shift) | (buf[start + i + 1]! >>> (8 - shift))) & 0xff;
  }
  r.pos = pos + len * 8;
  return out;
}

export class BitWriter {
  buf: Buffer;
  pos = 0;

  /** `limit`: the most bytes to write; `tooLong` makes the error thrown past it. */
  constructor(
    bytes = 64,
    private readonly limit = Infinity,
    private readonly tooLong: (limit: number) => Error = (n) => new RangeError(`more than ${n} bytes`),
  ) {
    this.buf = Buffer.alloc(Math.min(bytes, limit));
  }

  private room(bits: number): void {
    const need = (this.pos + bits + 7) >>> 3;
    if (need <= this.buf.length) return;
    if (need > this.limit) throw this.tooLong(this.limit);
    const next = Buffer.alloc(Math.min(Math.max(need, this.buf.length * 2), this.limit));
    this.buf.copy(next);
    this.buf = next;
  }

  /** Writes the `n` low bits (0..53) of the unsigned integer `v` (0 <= v < 2^n). */
  uint(v: number, n: number): void {
    this.room(n);
    const buf = this.buf;
    let pos = this.pos;
    while (n > 0) {
      const off = pos & 7;
      const avail = 8 - off;
      const take = avail < n ? avail : n;
      // Dividing by a power of two is exact: the chunk is the next `take` bits of v.
      const chunk = Math.floor(v / 2 ** (n - take)) % (1 << take);
      buf[pos >>> 3] = buf[pos >>> 3]! | (chunk << (avail - take));
      pos += take;
      n -= take;
    }
    this.pos = pos;
  }

  /** Writes the unsigned BigInt `v` (0 <= v < 2^n) in `n` bits (up to 64). */
  big(v: bigint, n: number): void {
    if (n <= 32) return this.uint(Number(v), n);
    this.uint(Number(v >> 32n), n - 32);
    this.uint(Number(v & 0xffffffffn), 32);
  }

  bytes(b: Uint8Array): void {
    this.room(b.length * 8);
    if ((this.pos & 7) === 0) {
      this.buf.set(b, this.pos >>> 3);
      this.pos += b.length * 8;
    } else for (let i = 0; i < b.length; i++) this.uint(b[i]!, 8);
  }

  /** The bytes written, the last one filled with 0 bits. */
  result(): Buffer {
    return Buffer.from(this.buf.subarray(0, (this.pos + 7) >>> 3));
  }
}
