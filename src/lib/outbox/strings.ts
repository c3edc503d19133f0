/**
 * Strings kept out of the JS heap (issue 45: 100,000 waiting within 30 MB): a JS string is
 * some 40 bytes and a Map entry as many again, and 100,000 of them surviving a start grow
 * V8's young generation to its largest. Here a string is its UTF-8 bytes in one arena
 * (a Buffer), found by its slot; a KeyIndex is a hash map from such strings to slots.
 */

import { u32 } from './paged';

/** Arena chunks: a string never crosses one (a longer string gets a chunk of its own). */
const CHUNK = 64 * 1024;

/** Strings by slot, as UTF-8 bytes in arena chunks (rewritten when mostly dead). */
export class StringColumn {
  private chunks: Buffer[] = [];
  private pos = CHUNK;
  private live = 0;
  private dead = 0;
  /** Per slot: chunk * 65536 + offset in it, and the byte length + 1 (0: none). 4 GB of strings at most. */
  private off = u32();
  private len = u32();
  private top = 0;

  set(slot: number, s: string): void {
    this.clear(slot);
    const n = Buffer.byteLength(s, 'utf8');
    if (this.dead > 1024 * 1024 && this.dead > this.live) this.rewrite();
    const [chunk, at] = this.place(slot, n);
    chunk.write(s, at, 'utf8');
  }

  get(slot: number): string | undefined {
    const n = this.len.get(slot) - 1;
    if (n < 0) return undefined;
    const o = this.off.get(slot);
    const at = o & 0xffff;
    return this.chunks[o >>> 16].toString('utf8', at, at + n);
  }

  /** True when slot holds exactly these bytes. */
  equals(slot: number, bytes: Buffer): boolean {
    if (this.len.get(slot) !== bytes.length + 1) return false;
    const o = this.off.get(slot);
    const at = o & 0xffff;
    return this.chunks[o >>> 16].compare(bytes, 0, bytes.length, at, at + bytes.length) === 0;
  }

  clear(slot: number): void {
    const n = this.len.get(slot) - 1;
    if (n < 0) return;
    this.dead += n;
    this.live -= n;
    this.len.set(slot, 0);
  }

  move(from: number, to: number): void {
    this.clear(to);
    this.off.set(to, this.off.get(from));
    this.len.set(to, this.len.get(from));
    this.len.set(from, 0);
    if (to >= this.top) this.top = to + 1;
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
    this.len.set(slot, n + 1);
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
      const n = this.len.get(s) - 1;
      if (n < 0) continue;
      const o = this.off.get(s);
      const at = o & 0xffff;
      const [to, toAt] = this.place(s, n);
      old[o >>> 16].copy(to, toAt, at, at + n);
    }
  }
}

function hashOf(b: Buffer): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < b.length; i++) h = Math.imul(h ^ b[i], 0x01000193);
  return h >>> 0;
}

const EMPTY = -1;
const GONE = -2;

/**
 * A map from strings to slots (non-negative integers below 2^31), each slot holding one
 * key: open addressing over an Int32Array of slots, the keys in a StringColumn by slot.
 */
export class KeyIndex {
  readonly keys = new StringColumn();
  private table = new Int32Array(1024).fill(EMPTY);
  private used = 0;
  private gone = 0;
  size = 0;

  get(key: string): number | undefined {
    const at = this.find(Buffer.from(key, 'utf8'));
    return at < 0 ? undefined : this.table[at];
  }

  has(key: string): boolean {
    return this.get(key) !== undefined;
  }

  /** Puts key -> slot (the key must not be in the index). */
  set(key: string, slot: number): void {
    if ((this.used + this.gone + 1) * 2 > this.table.length) this.rehash(this.size + 1);
    const bytes = Buffer.from(key, 'utf8');
    this.keys.set(slot, key);
    const mask = this.table.length - 1;
    for (let i = hashOf(bytes) & mask; ; i = (i + 1) & mask) {
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
    const at = this.find(Buffer.from(key, 'utf8'));
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

  private find(bytes: Buffer): number {
    const mask = this.table.length - 1;
    for (let i = hashOf(bytes) & mask; ; i = (i + 1) & mask) {
      const v = this.table[i];
      if (v === EMPTY) return -1;
      if (v >= 0 && this.keys.equals(v, bytes)) return i;
    }
  }

  private rehash(need: number): void {
    let cap = 1024;
    while (cap < need * 3) cap *= 2;
    const old = this.table;
    this.table = new Int32Array(cap).fill(EMPTY);
    this.used = 0;
    this.gone = 0;
    this.size = 0;
    const mask = cap - 1;
    for (const v of old) {
      if (v < 0) continue;
      const key = this.keys.get(v) as string;
      for (let i = hashOf(Buffer.from(key, 'utf8')) & mask; ; i = (i + 1) & mask) {
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
