/**
 * The engine's entries, compact (issue 45: 100,000 waiting within 30 MB): columns of typed
 * arrays indexed by slot instead of an object per entry. A msg's entries take consecutive
 * slots; the msg's own columns are kept at its first slot. Per msg the heap holds its key
 * (shared with the store's index), its `_msgid` and one Map entry; per entry some 40 bytes
 * of columns. Only an entry that is no longer "waiting, never tried" has an object (`extra`,
 * by id: its state and sentAt).
 *
 * Slots are taken at the top and freed when a msg is forgotten; when more are free than
 * used, `compact` moves the live ones down (in order) and says how slots moved, so nothing
 * may hold a slot across an await: the drain holds entry objects (by id) instead.
 */
import type { EntryState, OutboxEntry, OutboxKind } from './types';
import { OUTBOX_KINDS } from './types';

/** Where an entry is, in the engine: free slot, in the queue, taken out (sending, being dropped), ended. */
export const FREE = 0;
export const WAITING = 1;
export const OUT = 2;
export const ENDED = 3;

const WAITING_STATE: EntryState = Object.freeze({ phase: 'waiting' }) as EntryState;

export interface EntryExtra {
  state: EntryState;
  sentAt?: number;
}

/** A msg's entries, as the engine puts them in the table. */
export interface NewMsg {
  key: string;
  msgId: string;
  acceptedAt: number;
  bytes: number;
  entries: Array<{ kind: OutboxKind; priority: number; seq: number; expiresAt: number; attempts: number }>;
}

function grown<T extends Float64Array | Uint32Array | Uint16Array | Uint8Array>(a: T, cap: number): T {
  const b = new (a.constructor as new (n: number) => T)(cap);
  b.set(a.subarray(0, Math.min(a.length, cap)) as unknown as ArrayLike<number> & T);
  return b;
}

export class EntryTable {
  /** Msg key -> its first slot. */
  readonly byKey = new Map<string, number>();
  /** Non-waiting states, by entry id. */
  readonly extra = new Map<string, EntryExtra>();
  top = 0;
  used = 0;
  cap = 0;
  seq = new Float64Array(0);
  expiresAt = new Float64Array(0);
  /** The entry's index in its msg (first slot = slot - index). */
  index = new Uint32Array(0);
  priority = new Uint8Array(0);
  kind = new Uint8Array(0);
  phase = new Uint8Array(0);
  attempts = new Uint16Array(0);
  // Msg columns (at the msg's first slot):
  acceptedAt = new Float64Array(0);
  bytes = new Float64Array(0);
  count = new Uint32Array(0);
  open = new Uint32Array(0);
  emitted = new Uint8Array(0);
  keys: Array<string | undefined> = [];
  msgIds: Array<string | undefined> = [];

  get msgs(): number {
    return this.byKey.size;
  }

  /** Puts a msg in (its entries waiting unless `extra` says otherwise); returns its first slot. */
  add(m: NewMsg): number {
    const n = m.entries.length;
    if (this.top + n > this.cap) this.grow(n);
    const first = this.top;
    this.top += n;
    this.used += n;
    m.entries.forEach((e, i) => {
      const s = first + i;
      this.seq[s] = e.seq;
      this.expiresAt[s] = e.expiresAt;
      this.index[s] = i;
      this.priority[s] = e.priority;
      this.kind[s] = OUTBOX_KINDS.indexOf(e.kind);
      this.phase[s] = WAITING;
      this.attempts[s] = Math.min(e.attempts, 0xffff);
      this.keys[s] = undefined; // packed arrays: no holes
      this.msgIds[s] = undefined;
    });
    this.acceptedAt[first] = m.acceptedAt;
    this.bytes[first] = m.bytes;
    this.count[first] = n;
    this.open[first] = n;
    this.emitted[first] = 0;
    this.keys[first] = m.key;
    this.msgIds[first] = m.msgId;
    this.byKey.set(m.key, first);
    return first;
  }

  /** The slot of an entry id (`<key>/<index>`), or -1. */
  slotOf(id: string): number {
    const cut = id.lastIndexOf('/');
    const first = this.byKey.get(id.slice(0, cut));
    if (first === undefined) return -1;
    const i = Number(id.slice(cut + 1));
    return Number.isInteger(i) && i >= 0 && i < this.count[first] ? first + i : -1;
  }

  firstOf(slot: number): number {
    return slot - this.index[slot];
  }

  idOf(slot: number): string {
    return `${this.keys[this.firstOf(slot)]}/${this.index[slot]}`;
  }

  kindOf(slot: number): OutboxKind {
    return OUTBOX_KINDS[this.kind[slot]];
  }

  /** An entry as an object (for a batch, an outcome, a victim). */
  entry(slot: number): OutboxEntry {
    const first = this.firstOf(slot);
    const id = `${this.keys[first]}/${this.index[slot]}`;
    const x = this.phase[slot] === WAITING ? undefined : this.extra.get(id);
    const e: OutboxEntry = {
      id, msgKey: this.keys[first] as string, kind: this.kindOf(slot), priority: this.priority[slot], seq: this.seq[slot],
      acceptedAt: this.acceptedAt[first], expiresAt: this.expiresAt[slot], attempts: this.attempts[slot], state: x?.state ?? { phase: 'waiting' },
    };
    if (x?.sentAt !== undefined) e.sentAt = x.sentAt;
    return e;
  }

  /** Keeps what an entry object says of its state (attempts, state, sentAt) in the table. */
  record(slot: number, e: OutboxEntry, phase: number): void {
    this.phase[slot] = phase;
    this.attempts[slot] = Math.min(e.attempts, 0xffff);
    if (e.state.phase === 'waiting' && e.sentAt === undefined && e.attempts === 0) this.extra.delete(e.id);
    else this.extra.set(e.id, { state: e.state.phase === 'waiting' ? WAITING_STATE : e.state, ...(e.sentAt === undefined ? {} : { sentAt: e.sentAt }) });
  }

  /** Frees a msg's slots (it was forgotten). */
  remove(key: string): void {
    const first = this.byKey.get(key);
    if (first === undefined) return;
    this.byKey.delete(key);
    const n = this.count[first];
    for (let i = 0; i < n; i++) {
      this.phase[first + i] = FREE;
      this.extra.delete(`${key}/${i}`);
    }
    this.keys[first] = undefined;
    this.msgIds[first] = undefined;
    this.used -= n;
    if (this.used === 0) this.top = 0;
  }

  /** Worth compacting: more slots free below the top than used (and many). */
  sparse(): boolean {
    const free = this.top - this.used;
    return free > 4096 && free > this.used;
  }

  /** Moves the live slots down, in order; returns old slot -> new slot (-1: freed). */
  compact(): Int32Array {
    const map = new Int32Array(this.top).fill(-1);
    let to = 0;
    for (let s = 0; s < this.top; s++) {
      if (this.phase[s] === FREE) continue;
      map[s] = to;
      if (to !== s) this.move(s, to);
      to++;
    }
    for (const [key, first] of this.byKey) this.byKey.set(key, map[first]);
    for (let s = to; s < this.top; s++) {
      this.phase[s] = FREE;
      this.keys[s] = undefined;
      this.msgIds[s] = undefined;
    }
    this.top = to;
    this.keys.length = Math.min(this.keys.length, to);
    this.msgIds.length = Math.min(this.msgIds.length, to);
    return map;
  }

  private move(from: number, to: number): void {
    for (const col of [this.seq, this.expiresAt, this.index, this.priority, this.kind, this.phase, this.attempts, this.acceptedAt, this.bytes, this.count, this.open, this.emitted]) col[to] = col[from];
    this.keys[to] = this.keys[from];
    this.msgIds[to] = this.msgIds[from];
  }

  private grow(n: number): void {
    const cap = Math.max(1024, Math.ceil((this.top + n) * 1.5));
    this.seq = grown(this.seq, cap);
    this.expiresAt = grown(this.expiresAt, cap);
    this.index = grown(this.index, cap);
    this.priority = grown(this.priority, cap);
    this.kind = grown(this.kind, cap);
    this.phase = grown(this.phase, cap);
    this.attempts = grown(this.attempts, cap);
    this.acceptedAt = grown(this.acceptedAt, cap);
    this.bytes = grown(this.bytes, cap);
    this.count = grown(this.count, cap);
    this.open = grown(this.open, cap);
    this.emitted = grown(this.emitted, cap);
    this.cap = cap;
  }
}
