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
 * on disk. Per entry only when it is no longer "waiting, never tried" (a mark). A log is
 * read twice at open: once for this index (an accept record's head only, `headOf`), once
 * for the live msgs' records, each handed out (`headsOf`) as it is read.
 */
import type { AcceptedMsg, EntryOutcome, EntryState, JsonObject, JsonValue, OutboxEntry, OutboxKind, SendAttempt, StoredMsg } from './types';
import { f64, u32 } from './paged';
import { KeyIndex } from './strings';

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

  get msgCount(): number {
    return this.slots.size;
  }

  loc(key: string): MsgLoc | undefined {
    const s = this.slots.get(key);
    return s === undefined ? undefined : { off: this.off.get(s), size: this.size.get(s), n: this.count.get(s) };
  }

  /** The live msgs' slots in the order of their records in the log. */
  slotsInLogOrder(): Int32Array {
    const off = this.off;
    return this.slots.slots().sort((a, b) => off.get(a) - off.get(b));
  }

  keyAt(slot: number): string {
    return this.slots.keyAt(slot) as string;
  }

  locAt(slot: number): MsgLoc {
    return { off: this.off.get(slot), size: this.size.get(slot), n: this.count.get(slot) };
  }

  setOffAt(slot: number, off: number): void {
    this.off.set(slot, off);
  }

  apply(rec: LogRecord, off: number, size: number): void {
    switch (rec.t) {
      case 'a':
        return this.accepted(rec.k, rec.s, rec.e.length, off, size);
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

  /** True when this accept record (at off) is the live one of its msg. */
  isLive(key: string, off: number): boolean {
    const slot = this.slots.get(key);
    return slot !== undefined && this.off.get(slot) === off;
  }

  /** A live msg and its entries (their marks applied), from its accept record. */
  headsOf(rec: Extract<LogRecord, { t: 'a' }>): { msg: StoredMsg; entries: OutboxEntry[] } {
    const slot = this.slots.get(rec.k) as number;
    const ids: string[] = [];
    const entries: OutboxEntry[] = rec.e.map((x, i) => {
      const id = entryId(rec.k, i);
      ids.push(id);
      const e: OutboxEntry = {
        id, msgKey: rec.k, kind: x.k, priority: x.p, seq: rec.s + i, acceptedAt: rec.at, expiresAt: x.x, attempts: 0, state: { phase: 'waiting' },
      };
      const m = this.marks.get(id);
      if (m) Object.assign(e, { attempts: m.attempts, state: m.state }, m.sentAt === undefined ? {} : { sentAt: m.sentAt });
      return e;
    });
    return { msg: { key: rec.k, msgId: rec.m, acceptedAt: rec.at, entryIds: ids, bytes: this.size.get(slot) }, entries };
  }

  /** The marks of the live entries, for a compaction's `x` records. */
  liveMarks(): Array<[string, EntryMark]> {
    return [...this.marks];
  }

  /** An accept record: msg `key`, its n entries from seq `s` on. */
  accepted(key: string, s: number, n: number, off: number, size: number): void {
    if (this.slots.has(key)) this.forgotten(key); // the same key twice: the later one counts
    const slot = this.free.length ? (this.free.pop() as number) : this.top++;
    this.slots.set(key, slot);
    this.off.set(slot, off);
    this.size.set(slot, size);
    this.count.set(slot, n);
    this.liveBytes += size;
    this.entries += n;
    this.nextSeq = Math.max(this.nextSeq, s + n);
  }

  private forgotten(key: string): void {
    const slot = this.slots.delete(key);
    if (slot === undefined) return;
    this.free.push(slot);
    const n = this.count.get(slot);
    this.liveBytes -= this.size.get(slot);
    this.entries -= n;
    if (this.marks.size) for (let i = 0; i < n; i++) this.marks.delete(entryId(key, i));
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
  if (m.state.phase === 'sending' && (outcome.result === 'accepted' || outcome.result === 'rejected' || outcome.result === 'failed' || outcome.result === 'unknown')) return m.state.attempt.startedAt;
  return m.sentAt;
}

/** An accept record's body starts `{"t":"a","s":<seq>,"n":<entries>,"k":<key>,`: read without parsing the rest. */
const ACCEPT_HEAD = '{"t":"a","s":';

/** An accept record's fields after its head (`"k":` first), serialised once (sizeOf, then accept). */
export function acceptRest(msg: AcceptedMsg, entries: OutboxEntry[]): string {
  const rec = { k: msg.key, m: msg.msgId, at: msg.acceptedAt, j: msg.json, e: entries.map((e) => ({ k: e.kind, i: e.item ?? null, p: e.priority, x: e.expiresAt })) };
  return JSON.stringify(rec).slice(1);
}

/** An accept record's body: its head (seq, entry count) then `rest` (acceptRest). */
export function acceptBody(seq: number, n: number, rest: string): string {
  return `${ACCEPT_HEAD}${seq},"n":${n},${rest}`;
}

/** A record's body, or undefined (a checksum that matches garbage: as good as impossible, skipped). */
export function parse(body: Buffer): LogRecord | undefined {
  try {
    return JSON.parse(body.toString('utf8')) as LogRecord;
  } catch {
    return undefined;
  }
}
const HEAD = /^\{"t":"a","s":(\d{1,16}),"n":(\d{1,9}),"k":("(?:[^"\\]|\\.){0,400}")/;

/** The seq, entry count and key of an accept record's body (undefined: not one, or another form). */
export function headOf(body: Buffer): { s: number; n: number; k: string } | undefined {
  if (body.length < 16 || body[2] !== 0x74 || body[6] !== 0x61) return undefined; // {"t":"a"
  const m = HEAD.exec(body.toString('utf8', 0, Math.min(body.length, 512)));
  if (!m) return undefined;
  try {
    return { s: Number(m[1]), n: Number(m[2]), k: JSON.parse(m[3]) as string };
  } catch {
    return undefined;
  }
}
