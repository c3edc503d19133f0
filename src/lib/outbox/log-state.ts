/**
 * What the outbox log's records mean, and the state they build: the same `apply` reads
 * a log at open and follows each record written afterwards, so what a restart finds is
 * what ran before it.
 *
 * Records (JSON bodies of log.ts frames), short keys because there are many:
 * - `a` accepted: one msg and all its entries in ONE record (a torn accept loses the whole
 *   msg, never a part of it; it was never acknowledged, its fsync had not returned);
 * - `s` sending (attempts + 1), `e` ended, `w` back to waiting, `f` forgotten (the msg's
 *   outcome was emitted), `x` the marks as a compaction writes them.
 * Memory (issue 45: 100,000 waiting within 30 MB): per live msg its key (bytes in a
 * KeyIndex, strings.ts) and its place in the log in typed-array columns; payloads stay
 * on disk. Per entry only when it is no longer "waiting, never tried" (a mark). While a log
 * is read at open, the heads (msgId, time, seq, per entry kind, priority, expiry) are kept
 * in columns too, and handed out one msg at a time (`finishEach`).
 */
import type { EntryOutcome, EntryState, JsonObject, JsonValue, OutboxEntry, OutboxKind, SendAttempt, StoredMsg } from './types';
import { OUTBOX_KINDS } from './types';
import { f64, u32, u8 } from './paged';
import { KeyIndex, StringColumn } from './strings';

export interface AcceptRecordEntry {
  k: OutboxKind;
  i: JsonValue;
  p: number;
  x: number;
}

export type LogRecord =
  | { t: 'a'; k: string; m: string; at: number; j: JsonObject; s: number; e: AcceptRecordEntry[] }
  | { t: 's'; ids: string[]; a: SendAttempt }
  | { t: 'e'; e: Array<[string, EntryOutcome]> }
  | { t: 'w'; ids: string[] }
  | { t: 'f'; k: string[] }
  | { t: 'x'; e: Array<[string, EntryMark]> };

/** Where a live msg's accept record is, and how many entries it has. */
export interface MsgLoc {
  off: number;
  size: number;
  n: number;
}

/** An entry's state once it is no longer "waiting, never tried". */
export interface EntryMark {
  attempts: number;
  state: EntryState;
  sentAt?: number;
}

/** The msg key of an entry id (`<key>/<index>`). */
export function keyOf(id: string): string {
  return id.slice(0, id.lastIndexOf('/'));
}

export function entryId(key: string, index: number): string {
  return `${key}/${index}`;
}

/** The heads of the msgs while a log is read (dropped once handed out). */
class Replay {
  msgIds = new StringColumn();
  at = f64();
  seq = f64();
  /** Where the msg's entries start in the entry columns. */
  first = f64();
  /** Per entry: kind index * 16 + priority, and expiry. */
  kindPrio = u8();
  expiry = f64();
  entries = 0;

  add(slot: number, rec: Extract<LogRecord, { t: 'a' }>): void {
    this.msgIds.set(slot, rec.m);
    this.at.set(slot, rec.at);
    this.seq.set(slot, rec.s);
    this.first.set(slot, this.entries);
    for (const e of rec.e) {
      this.kindPrio.set(this.entries, Math.max(0, OUTBOX_KINDS.indexOf(e.k)) * 16 + e.p);
      this.expiry.set(this.entries, e.x);
      this.entries++;
    }
  }
}

export class LogState {
  /** Live msgs: key -> slot of the columns below. */
  private readonly slots = new KeyIndex();
  private readonly free: number[] = [];
  private top = 0;
  private off = f64();
  private size = u32();
  private count = u32();
  readonly marks = new Map<string, EntryMark>();
  liveBytes = 0;
  /** Entries of the live msgs (ended ones included). */
  entries = 0;
  nextSeq = 0;
  /** Only while a log is read at open. */
  private replay?: Replay;

  get msgCount(): number {
    return this.slots.size;
  }

  loc(key: string): MsgLoc | undefined {
    const s = this.slots.get(key);
    return s === undefined ? undefined : { off: this.off.get(s), size: this.size.get(s), n: this.count.get(s) };
  }

  /** The live msgs' slots in the order of their records in the log. */
  slotsInLogOrder(): number[] {
    const off = this.off;
    return this.slots.slots().sort((a, b) => off.get(a) - off.get(b));
  }

  keyAt(slot: number): string {
    return this.slots.keys.get(slot) as string;
  }

  locAt(slot: number): MsgLoc {
    return { off: this.off.get(slot), size: this.size.get(slot), n: this.count.get(slot) };
  }

  setOffAt(slot: number, off: number): void {
    this.off.set(slot, off);
  }

  startReplay(): void {
    this.replay = new Replay();
  }

  apply(rec: LogRecord, off: number, size: number): void {
    switch (rec.t) {
      case 'a':
        return this.accepted(rec, off, size);
      case 's':
        for (const id of rec.ids) this.mark(id, (m) => ({ attempts: m.attempts + 1, state: { phase: 'sending', attempt: rec.a }, sentAt: m.sentAt }));
        return;
      case 'e':
        for (const [id, outcome] of rec.e) this.mark(id, (m) => ({ attempts: m.attempts, state: { phase: 'ended', outcome }, sentAt: sentAtOf(m, outcome) }));
        return;
      case 'w':
        for (const id of rec.ids) this.mark(id, (m) => ({ attempts: m.attempts, state: { phase: 'waiting' }, sentAt: m.sentAt }));
        return;
      case 'f':
        for (const key of rec.k) this.forgotten(key);
        return;
      case 'x':
        for (const [id, m] of rec.e) this.mark(id, () => m);
        return;
      default:
        // A record of a later version: skipped (never a reason to lose the others).
        return;
    }
  }

  /** Hands out the live msgs read at open, one at a time in log order (the end of the replay). */
  finishEach(onMsg: (msg: StoredMsg, entries: OutboxEntry[]) => void): void {
    const r = this.replay;
    this.replay = undefined;
    if (!r) return;
    for (const slot of this.slotsInLogOrder()) {
      const key = this.keyAt(slot);
      const n = this.count.get(slot);
      const at = r.at.get(slot);
      const first = r.first.get(slot);
      const seq = r.seq.get(slot);
      const ids: string[] = [];
      const entries: OutboxEntry[] = [];
      for (let i = 0; i < n; i++) {
        const id = entryId(key, i);
        const kp = r.kindPrio.get(first + i);
        const e: OutboxEntry = {
          id, msgKey: key, kind: OUTBOX_KINDS[kp >> 4], priority: kp & 15, seq: seq + i, acceptedAt: at, expiresAt: r.expiry.get(first + i), attempts: 0, state: { phase: 'waiting' },
        };
        const m = this.marks.get(id);
        if (m) Object.assign(e, { attempts: m.attempts, state: m.state }, m.sentAt === undefined ? {} : { sentAt: m.sentAt });
        ids.push(id);
        entries.push(e);
      }
      onMsg({ key, msgId: r.msgIds.get(slot) ?? '', acceptedAt: at, entryIds: ids, bytes: this.size.get(slot) }, entries);
    }
  }

  /** The marks of the live entries, for a compaction's `x` records. */
  liveMarks(): Array<[string, EntryMark]> {
    return [...this.marks];
  }

  private accepted(rec: Extract<LogRecord, { t: 'a' }>, off: number, size: number): void {
    if (this.slots.has(rec.k)) this.forgotten(rec.k); // the same key twice: the later one counts
    const slot = this.free.length ? (this.free.pop() as number) : this.top++;
    this.slots.set(rec.k, slot);
    this.off.set(slot, off);
    this.size.set(slot, size);
    this.count.set(slot, rec.e.length);
    this.liveBytes += size;
    this.entries += rec.e.length;
    this.nextSeq = Math.max(this.nextSeq, rec.s + rec.e.length);
    this.replay?.add(slot, rec);
  }

  private forgotten(key: string): void {
    const slot = this.slots.delete(key);
    if (slot === undefined) return;
    this.free.push(slot);
    const n = this.count.get(slot);
    this.liveBytes -= this.size.get(slot);
    this.entries -= n;
    if (this.marks.size) for (let i = 0; i < n; i++) this.marks.delete(entryId(key, i));
    this.replay?.msgIds.clear(slot);
  }

  private mark(id: string, next: (m: EntryMark) => EntryMark): void {
    const slot = this.slots.get(keyOf(id));
    if (slot === undefined) return; // its msg was forgotten (or its accept record lost)
    const index = Number(id.slice(id.lastIndexOf('/') + 1));
    if (!Number.isInteger(index) || index < 0 || index >= this.count.get(slot)) return;
    this.marks.set(id, next(this.marks.get(id) ?? { attempts: 0, state: { phase: 'waiting' } }));
  }
}

function sentAtOf(m: EntryMark, outcome: EntryOutcome): number | undefined {
  if (m.state.phase === 'sending' && (outcome.result === 'accepted' || outcome.result === 'rejected' || outcome.result === 'failed')) return m.state.attempt.startedAt;
  return m.sentAt;
}
