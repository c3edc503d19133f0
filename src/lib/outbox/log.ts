/**
 * The outbox log's framing: each record is
 *   MAGIC (4 bytes) | body length (u32 LE) | crc32 of the body (u32 LE) | body (UTF-8 JSON)
 * MAGIC holds 0xFF and 0xFE, bytes that UTF-8 never uses, so no body can contain it: a
 * reader that meets a torn or corrupt record looks for the next MAGIC and goes on from
 * there, so a damaged record costs that record alone. A bad stretch followed by a good
 * record is one corrupt record; a bad stretch that runs to the end is a torn last record.
 */
import * as zlib from 'node:zlib';

export const MAGIC = Buffer.from([0xff, 0xfe, 0x4f, 0x58]);
export const HEADER = 12;
/** The largest body a record may have (a larger length field is damage). */
export const MAX_BODY = 16 * 1024 * 1024;

let table: Uint32Array | undefined;
function crcTable(): Uint32Array {
  if (table) return table;
  table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
}

/** The table-driven CRC-32 (IEEE), for Node versions without zlib.crc32 (before 20.15). */
export function crc32Table(buf: Uint8Array): number {
  const t = crcTable();
  let c = 0xffffffff;
  for (let i = 0; i < buf.length; i++) c = t[(c ^ buf[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

const native = (zlib as unknown as { crc32?: (b: Uint8Array) => number }).crc32;
export const crc32: (buf: Uint8Array) => number = typeof native === 'function' ? (b) => native(b) >>> 0 : crc32Table;

/** One framed record of a JSON value. */
export function frame(value: unknown): Buffer {
  return frameBody(Buffer.from(JSON.stringify(value), 'utf8'));
}

/** One framed record of a body (UTF-8 JSON). */
export function frameBody(body: Buffer): Buffer {
  if (body.length > MAX_BODY) throw new RangeError(`a record of ${body.length} bytes is over the ${MAX_BODY} a record may have`);
  const head = Buffer.allocUnsafe(HEADER);
  MAGIC.copy(head, 0);
  head.writeUInt32LE(body.length, 4);
  head.writeUInt32LE(crc32(body), 8);
  return Buffer.concat([head, body]);
}

/** A record as read: its place in the file and its body (a view: copy what is kept). */
export type OnRecord = (offset: number, size: number, body: Buffer) => void;

/**
 * Reads a log chunk by chunk (push, then end), calling `onRecord` for each good record and
 * counting the damage: `corrupt` bad stretches followed by a good record, `torn` one at the end.
 */
export class LogScanner {
  corrupt = 0;
  torn = 0;
  /** The offset just after the last good record. */
  goodEnd = 0;
  private buf: Buffer = Buffer.alloc(0);
  private base = 0;
  private inBad = false;

  constructor(private readonly onRecord: OnRecord) {}

  push(chunk: Buffer): void {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    this.drain(false);
  }

  end(): void {
    this.drain(true);
    if (this.inBad) this.torn++;
    this.inBad = false;
    this.buf = Buffer.alloc(0);
  }

  private drain(eof: boolean): void {
    let p = 0;
    for (;;) {
      const next = this.step(p, eof);
      if (next === undefined) break;
      p = next;
    }
    // Keep only the unread tail (a copy: the chunk it came from can be freed).
    this.buf = p >= this.buf.length ? Buffer.alloc(0) : Buffer.from(this.buf.subarray(p));
    this.base += p;
  }

  /** The position after the record (or bad stretch) at p; undefined: more bytes are needed. */
  private step(p: number, eof: boolean): number | undefined {
    const b = this.buf;
    const left = b.length - p;
    if (left === 0) return undefined;
    if (left < MAGIC.length || (left < HEADER && b.compare(MAGIC, 0, MAGIC.length, p, p + MAGIC.length) === 0)) {
      return eof ? this.badToEnd() : undefined;
    }
    if (b.compare(MAGIC, 0, MAGIC.length, p, p + MAGIC.length) !== 0) return this.skip(p, eof);
    const len = b.readUInt32LE(p + 4);
    if (len > MAX_BODY) return this.skip(p, eof);
    if (left < HEADER + len) return eof ? this.skip(p, eof) : undefined;
    const body = b.subarray(p + HEADER, p + HEADER + len);
    if (crc32(body) !== b.readUInt32LE(p + 8)) return this.skip(p, eof);
    if (this.inBad) this.corrupt++;
    this.inBad = false;
    this.goodEnd = this.base + p + HEADER + len;
    this.onRecord(this.base + p, HEADER + len, body);
    return p + HEADER + len;
  }

  /** A bad stretch from p: on to the next MAGIC (or keep the last bytes, which may start one). */
  private skip(p: number, eof: boolean): number | undefined {
    this.inBad = true;
    const next = this.buf.indexOf(MAGIC, p + 1);
    if (next >= 0) return next;
    if (eof) return this.badToEnd();
    const keep = Math.max(p + 1, this.buf.length - (MAGIC.length - 1));
    return keep >= this.buf.length ? undefined : keep;
  }

  private badToEnd(): number {
    this.inBad = true;
    return this.buf.length;
  }
}
