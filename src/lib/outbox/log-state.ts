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
 * Memory: per live msg its place in the log (payloads stay on disk); per entry only when
 * it is no longer "waiting, never tried" (a mark).
 */
import type { EntryOutcome, EntryState, JsonObject, JsonValue, OpenedStore, OutboxEntry, OutboxKind, SendAttempt, StoredMsg } from './types';

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

interface Replayed {
  msg: StoredMsg;
  entries: OutboxEntry[];
}

export class LogState {
  readonly msgs = new Map<string, MsgLoc>();
  readonly marks = new Map<string, EntryMark>();
  liveBytes = 0;
  nextSeq = 0;
  /** Only while a log is read at open: the heads open() gives the engine. */
  private replay?: Map<string, Replayed>;

  startReplay(): void {
    this.replay = new Map();
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

  /** The state open() gives the engine (and the end of the replay). */
  finishReplay(lost: { torn: number; corrupt: number }): OpenedStore {
    const entries: OutboxEntry[] = [];
    const msgs: StoredMsg[] = [];
    for (const r of this.replay?.values() ?? []) {
      msgs.push(r.msg);
      for (const e of r.entries) {
        const m = this.marks.get(e.id);
        if (m) Object.assign(e, { attempts: m.attempts, state: m.state }, m.sentAt === undefined ? {} : { sentAt: m.sentAt });
        entries.push(e);
      }
    }
    this.replay = undefined;
    entries.sort((a, b) => a.seq - b.seq);
    return { entries, msgs, nextSeq: this.nextSeq, lost };
  }

  /** The marks of the live entries, for a compaction's `x` records. */
  liveMarks(): Array<[string, EntryMark]> {
    return [...this.marks];
  }

  private accepted(rec: Extract<LogRecord, { t: 'a' }>, off: number, size: number): void {
    if (this.msgs.has(rec.k)) this.forgotten(rec.k); // the same key twice: the later one counts
    this.msgs.set(rec.k, { off, size, n: rec.e.length });
    this.liveBytes += size;
    this.nextSeq = Math.max(this.nextSeq, rec.s + rec.e.length);
    if (!this.replay) return;
    const ids = rec.e.map((_, i) => entryId(rec.k, i));
    const entries: OutboxEntry[] = rec.e.map((e, i) => ({
      id: ids[i], msgKey: rec.k, kind: e.k, priority: e.p, seq: rec.s + i, acceptedAt: rec.at, expiresAt: e.x, attempts: 0, state: { phase: 'waiting' },
    }));
    this.replay.set(rec.k, { msg: { key: rec.k, msgId: rec.m, acceptedAt: rec.at, entryIds: ids, bytes: size }, entries });
  }

  private forgotten(key: string): void {
    const loc = this.msgs.get(key);
    if (!loc) return;
    this.msgs.delete(key);
    this.liveBytes -= loc.size;
    for (let i = 0; i < loc.n; i++) this.marks.delete(entryId(key, i));
    this.replay?.delete(key);
  }

  private mark(id: string, next: (m: EntryMark) => EntryMark): void {
    const loc = this.msgs.get(keyOf(id));
    if (!loc) return; // its msg was forgotten (or its accept record lost)
    const index = Number(id.slice(id.lastIndexOf('/') + 1));
    if (!Number.isInteger(index) || index < 0 || index >= loc.n) return;
    this.marks.set(id, next(this.marks.get(id) ?? { attempts: 0, state: { phase: 'waiting' } }));
  }
}

function sentAtOf(m: EntryMark, outcome: EntryOutcome): number | undefined {
  if (m.state.phase === 'sending' && (outcome.result === 'accepted' || outcome.result === 'rejected' || outcome.result === 'failed')) return m.state.attempt.startedAt;
  return m.sentAt;
}
