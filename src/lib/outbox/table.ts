/**
 * The engine's entries, compact (issue 45: 100,000 waiting within 30 MB): columns of typed
 * arrays indexed by slot instead of an object per entry. A msg's entries take consecutive
 * slots; the msg's own columns are kept at its first slot. Per msg its key and `_msgid` are
 * bytes in arenas (strings.ts), found through a KeyIndex; per entry some 40 bytes of
 * columns. Only an entry that is no longer "waiting, never tried" has an object (`extra`,
 * by id: its state and sentAt).
 *
 * Slots are taken at the top and freed when a msg is forgotten; when more are free than
 * used, `compact` moves the live ones down (in order) and says how slots moved, so nothing
 * may hold a slot across an await: the drain holds entry objects (by id) instead.
 */
import { f64, type Paged, u16, u32, u8 } from './paged';
import { KeyIndex, StringColumn } from './strings';
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

export class EntryTable {
  /** Msg key -> its first slot (the key of a first slot: `byKey.keyAt`). */
  readonly byKey = new KeyIndex();
  readonly msgIds = new StringColumn();
  /** Non-waiting states, by entry id. */
  readonly extra = new Map<string, EntryExtra>();
  top = 0;
  used = 0;
  readonly seq = f64();
  readonly expiresAt = f64();
  /** The entry's index in its msg (first slot = slot - index). */
  readonly index = u32();
  readonly priority = u8();
  readonly kind = u8();
  readonly phase = u8();
  readonly attempts = u16();
  // Msg columns (at the msg's first slot):
  readonly acceptedAt = f64();
  readonly bytes = u32();
  readonly count = u32();
  readonly open = u32();
  readonly emitted = u8();

  get msgs(): number {
    return this.byKey.size;
  }

  /** Puts a msg in (its entries waiting unless `extra` says otherwise); returns its first slot. */
  add(m: NewMsg): number {
    const n = m.entries.length;
    const first = this.top;
    this.top += n;
    this.used += n;
    m.entries.forEach((e, i) => {
      const s = first + i;
      this.seq.set(s, e.seq);
      this.expiresAt.set(s, e.expiresAt);
      this.index.set(s, i);
      this.priority.set(s, e.priority);
      this.kind.set(s, OUTBOX_KINDS.indexOf(e.kind));
      this.phase.set(s, WAITING);
      this.attempts.set(s, Math.min(e.attempts, 0xffff));
    });
    this.acceptedAt.set(first, m.acceptedAt);
    this.bytes.set(first, m.bytes);
    this.count.set(first, n);
    this.open.set(first, n);
    this.emitted.set(first, 0);
    this.msgIds.set(first, m.msgId);
    this.byKey.set(m.key, first);
    return first;
  }

  /** The slot of an entry id (`<key>/<index>`), or -1. */
  slotOf(id: string): number {
    const cut = id.lastIndexOf('/');
    const first = this.byKey.get(id.slice(0, cut));
    if (first === undefined) return -1;
    const i = Number(id.slice(cut + 1));
    return Number.isInteger(i) && i >= 0 && i < this.count.get(first) ? first + i : -1;
  }

  firstOf(slot: number): number {
    return slot - this.index.get(slot);
  }

  keyOf(first: number): string {
    return this.byKey.keyAt(first) as string;
  }

  kindOf(slot: number): OutboxKind {
    return OUTBOX_KINDS[this.kind.get(slot)];
  }

  /** An entry as an object (for a batch, an outcome, a victim). */
  entry(slot: number): OutboxEntry {
    const first = this.firstOf(slot);
    const key = this.keyOf(first);
    const id = `${key}/${this.index.get(slot)}`;
    const x = this.phase.get(slot) === WAITING ? undefined : this.extra.get(id);
    const e: OutboxEntry = {
      id, msgKey: key, kind: this.kindOf(slot), priority: this.priority.get(slot), seq: this.seq.get(slot),
      acceptedAt: this.acceptedAt.get(first), expiresAt: this.expiresAt.get(slot), attempts: this.attempts.get(slot), state: x?.state ?? { phase: 'waiting' },
    };
    if (x?.sentAt !== undefined) e.sentAt = x.sentAt;
    return e;
  }

  /** Keeps what an entry object says of its state (attempts, state, sentAt) in the table. */
  record(slot: number, e: OutboxEntry, phase: number): void {
    this.phase.set(slot, phase);
    this.attempts.set(slot, Math.min(e.attempts, 0xffff));
    if (e.state.phase === 'waiting' && e.sentAt === undefined && e.attempts === 0) this.extra.delete(e.id);
    else this.extra.set(e.id, { state: e.state.phase === 'waiting' ? WAITING_STATE : e.state, ...(e.sentAt === undefined ? {} : { sentAt: e.sentAt }) });
  }

  /** Frees a msg's slots (it was forgotten). */
  remove(key: string): void {
    const first = this.byKey.delete(key);
    if (first === undefined) return;
    const n = this.count.get(first);
    for (let i = 0; i < n; i++) {
      this.phase.set(first + i, FREE);
      this.extra.delete(`${key}/${i}`);
    }
    this.msgIds.clear(first);
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
      if (this.phase.get(s) === FREE) continue;
      map[s] = to;
      if (to !== s) this.move(s, to);
      to++;
    }
    this.byKey.remap(map);
    for (let s = to; s < this.top; s++) this.phase.set(s, FREE);
    this.top = to;
    for (const col of this.columns()) col.truncate(to);
    return map;
  }

  private columns(): Paged[] {
    return [this.seq, this.expiresAt, this.index, this.priority, this.kind, this.phase, this.attempts, this.acceptedAt, this.bytes, this.count, this.open, this.emitted];
  }

  private move(from: number, to: number): void {
    for (const col of this.columns()) col.set(to, col.get(from));
    if (this.index.get(to) === 0) this.msgIds.move(from, to);
  }

}
