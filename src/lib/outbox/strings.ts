/**
 * Strings kept out of the JS heap (issue 45: 100,000 waiting within 30 MB): a JS string is
 * some 40 bytes and a Map entry as many again, and 100,000 of them surviving a start grow
 * V8's young generation to its largest. Here a string is its UTF-8 bytes in one arena
 * (a Buffer), found by its slot; a KeyIndex is a hash map from such strings to slots.
 */

import { u32, u8 } from './paged';

/** Arena chunks: a string never crosses one (a longer string gets a chunk of its own). */
const CHUNK = 64 * 1024;

/** A length at or above this is kept in a Map (the column holds LONG): keys and msg ids are far shorter. */
const LONG = 255;

/** Strings by slot, as UTF-8 bytes in arena chunks (rewritten when mostly dead). */
export class StringColumn {
  private chunks: Buffer[] = [];
  private pos = CHUNK;
  private live = 0;
  private dead = 0;
  /** Per slot: chunk * 65536 + offset in it. 4 GB of strings at most. */
  private off = u32();
  /** Per slot: the byte length + 1 (0: none; LONG: in `long`). One byte a slot. */
  private len = u8();
  private readonly long = new Map<number, number>();
  private top = 0;

  set(slot: number, s: string): void {
    this.clear(slot);
    const n = Buffer.byteLength(s, 'utf8');
    if (this.dead > 1024 * 1024 && this.dead > this.live) this.rewrite();
    const [chunk, at] = this.place(slot, n);
    chunk.write(s, at, 'utf8');
  }

  /** Keeps the first n bytes of `bytes` for slot (as they are: get() reads them as UTF-8). */
  setBytes(slot: number, bytes: Buffer, n: number): void {
    this.clear(slot);
    if (this.dead > 1024 * 1024 && this.dead > this.live) this.rewrite();
    const [chunk, at] = this.place(slot, n);
    bytes.copy(chunk, at, 0, n);
  }

  get(slot: number): string | undefined {
    const n = this.lengthOf(slot);
    if (n < 0) return undefined;
    const o = this.off.get(slot);
    const at = o & 0xffff;
    return this.chunks[o >>> 16].toString('utf8', at, at + n);
  }

  /** The slot's bytes (a view into the arena: read it at once), or undefined. */
  bytesOf(slot: number): Buffer | undefined {
    const n = this.lengthOf(slot);
    if (n < 0) return undefined;
    const o = this.off.get(slot);
    const at = o & 0xffff;
    return this.chunks[o >>> 16].subarray(at, at + n);
  }

  /** True when slot holds exactly the first n bytes of `bytes`. */
  equals(slot: number, bytes: Buffer, n = bytes.length): boolean {
    if (this.lengthOf(slot) !== n) return false;
    const o = this.off.get(slot);
    const at = o & 0xffff;
    return this.chunks[o >>> 16].compare(bytes, 0, n, at, at + n) === 0;
  }

  /** The hash of the slot's bytes (as hashOf), read in place. */
  hashAt(slot: number): number {
    const o = this.off.get(slot);
    const at = o & 0xffff;
    return hashOf(this.chunks[o >>> 16], at, at + this.lengthOf(slot));
  }

  clear(slot: number): void {
    const n = this.lengthOf(slot);
    if (n < 0) return;
    this.dead += n;
    this.live -= n;
    this.setLength(slot, -1);
  }

  move(from: number, to: number): void {
    this.clear(to);
    this.off.set(to, this.off.get(from));
    this.setLength(to, this.lengthOf(from));
    this.setLength(from, -1);
    if (to >= this.top) this.top = to + 1;
  }

  /** The slot's byte length, -1 when it holds none. */
  private lengthOf(slot: number): number {
    const v = this.len.get(slot);
    return v === LONG ? (this.long.get(slot) as number) : v - 1;
  }

  private setLength(slot: number, n: number): void {
    if (this.len.get(slot) === LONG) this.long.delete(slot);
    if (n + 1 >= LONG) this.long.set(slot, n);
    this.len.set(slot, n + 1 >= LONG ? LONG : n + 1);
  }

  /** n bytes for slot at the end of the last chunk (a new one if need be): that chunk and where. */
  private place(slot: number, n: number): [Buffer, number] {
    if (this.pos + n > CHUNK || this.pos >= CHUNK || !this.chunks.length) {
      this.chunks.push(Buffer.allocUnsafe(Math.max(CHUNK, n)));
      this.pos = 0;
    }
    const c = this.chunks.length - 1;
    if (c > 0xffff) throw new RangeError('the outbox index holds 4 GB of strings at most');
    const at = this.pos;
    this.off.set(slot, c * 65536 + at);
    this.setLength(slot, n);
    this.pos += n;
    this.live += n;
    if (slot >= this.top) this.top = slot + 1;
    if (n > CHUNK) this.pos = CHUNK; // a chunk of its own: full
    return [this.chunks[c], at];
  }

  /** The live strings copied into fresh chunks (the old ones freed). */
  private rewrite(): void {
    const old = this.chunks;
    this.chunks = [];
    this.pos = CHUNK;
    this.live = 0;
    this.dead = 0;
    for (let s = 0; s < this.top; s++) {
      const n = this.lengthOf(s);
      if (n < 0) continue;
      const o = this.off.get(s);
      const at = o & 0xffff;
      const [to, toAt] = this.place(s, n);
      old[o >>> 16].copy(to, toAt, at, at + n);
    }
  }
}

function hashOf(b: Buffer, from: number, to: number): number {
  let h = 0x811c9dc5;
  for (let i = from; i < to; i++) h = Math.imul(h ^ b[i], 0x01000193);
  return h >>> 0;
}

const EMPTY = -1;
const GONE = -2;

/** The outbox's msg keys (keys.ts: time, process tag, counter in base 36): packed into 16 bytes instead of 24. */
const PACKABLE = /^([0-9a-z]{9})-([0-9a-z]{7})-([0-9a-z]{6})$/;
const PACKED = 1;
const RAW = 2;

/**
 * A map from strings to slots (non-negative integers below 2^31), each slot holding one
 * key: open addressing over an Int32Array of slots (at most half full, at least a quarter
 * after growing), the keys in a StringColumn by slot. A key of the outbox's own form is
 * kept packed (a byte 1, then its three base-36 numbers in 6, 5 and 4 bytes); any other as
 * its UTF-8 bytes (after a byte 2 when it starts with a byte 1 or 2). A key looked up is
 * encoded into one scratch buffer, so a look-up allocates nothing.
 */
export class KeyIndex {
  readonly keys = new StringColumn();
  private table = new Int32Array(1024).fill(EMPTY);
  private used = 0;
  private gone = 0;
  private scratch = Buffer.allocUnsafeSlow(256);
  size = 0;

  get(key: string): number | undefined {
    const at = this.find(this.encode(key));
    return at < 0 ? undefined : this.table[at];
  }

  has(key: string): boolean {
    return this.get(key) !== undefined;
  }

  /** Puts key -> slot (the key must not be in the index). */
  set(key: string, slot: number): void {
    if ((this.used + this.gone + 1) * 2 > this.table.length) this.rehash(this.size + 1);
    const n = this.encode(key);
    this.keys.setBytes(slot, this.scratch, n);
    const mask = this.table.length - 1;
    for (let i = hashOf(this.scratch, 0, n) & mask; ; i = (i + 1) & mask) {
      const v = this.table[i];
      if (v === EMPTY || v === GONE) {
        if (v === GONE) this.gone--;
        else this.used++;
        this.table[i] = slot;
        this.size++;
        return;
      }
    }
  }

  delete(key: string): number | undefined {
    const at = this.find(this.encode(key));
    if (at < 0) return undefined;
    const slot = this.table[at];
    this.table[at] = GONE;
    this.used--;
    this.gone++;
    this.size--;
    this.keys.clear(slot);
    return slot;
  }

  /** The slots moved (old -> new, -1: none). */
  remap(map: Int32Array): void {
    // Lowest first: a slot moves down into one whose key has already moved on.
    for (const v of this.slots()) if (map[v] !== v) this.keys.move(v, map[v]);
    for (let i = 0; i < this.table.length; i++) if (this.table[i] >= 0) this.table[i] = map[this.table[i]];
  }

  /** Every slot in the index, ascending (a typed array: 100,000 of them add nothing to the JS heap). */
  slots(): Int32Array {
    const out = new Int32Array(this.size);
    let n = 0;
    for (let i = 0; i < this.table.length; i++) if (this.table[i] >= 0) out[n++] = this.table[i];
    return out.sort();
  }

  /** The key of a slot (undefined: none). */
  keyAt(slot: number): string | undefined {
    const b = this.keys.bytesOf(slot);
    if (!b) return undefined;
    if (b[0] === PACKED && b.length === 16) {
      const part = (at: number, n: number, chars: number) => b.readUIntBE(at, n).toString(36).padStart(chars, '0');
      return `${part(1, 6, 9)}-${part(7, 5, 7)}-${part(12, 4, 6)}`;
    }
    return b.toString('utf8', b[0] === RAW ? 1 : 0);
  }

  /** The key's bytes as kept (see the class) in the scratch buffer; their count. */
  private encode(key: string): number {
    if (key.length * 3 + 1 > this.scratch.length) this.scratch = Buffer.allocUnsafeSlow(key.length * 3 + 1);
    const b = this.scratch;
    const m = key.length === 24 ? PACKABLE.exec(key) : null;
    if (m) {
      b[0] = PACKED;
      b.writeUIntBE(parseInt(m[1]!, 36), 1, 6);
      b.writeUIntBE(parseInt(m[2]!, 36), 7, 5);
      b.writeUIntBE(parseInt(m[3]!, 36), 12, 4);
      return 16;
    }
    const c = key.charCodeAt(0);
    if (c !== PACKED && c !== RAW) return b.write(key, 0, 'utf8');
    b[0] = RAW;
    return 1 + b.write(key, 1, 'utf8');
  }

  /** The table index of the key whose n bytes are in the scratch buffer, or -1. */
  private find(n: number): number {
    const mask = this.table.length - 1;
    const bytes = this.scratch;
    for (let i = hashOf(bytes, 0, n) & mask; ; i = (i + 1) & mask) {
      const v = this.table[i];
      if (v === EMPTY) return -1;
      if (v >= 0 && this.keys.equals(v, bytes, n)) return i;
    }
  }

  private rehash(need: number): void {
    let cap = 1024;
    while (cap < need * 2) cap *= 2;
    const old = this.table;
    this.table = new Int32Array(cap).fill(EMPTY);
    this.used = 0;
    this.gone = 0;
    this.size = 0;
    const mask = cap - 1;
    for (const v of old) {
      if (v < 0) continue;
      for (let i = this.keys.hashAt(v) & mask; ; i = (i + 1) & mask) {
        if (this.table[i] === EMPTY) {
          this.table[i] = v;
          this.used++;
          this.size++;
          break;
        }
      }
    }
  }
}
