/**
 * FileOutboxStore: an outbox kept in one folder (the node layer passes
 * `<userDir>/iotgw-outbox/<name>/`) as an append-only log, `log.<generation>`, of framed,
 * checksummed records (log.ts) whose meaning log-state.ts gives.
 *
 * - Durable: every call's record is written and fdatasync'ed before the call resolves.
 *   Calls that come while a sync runs wait for the next one together (group commit: one
 *   sync for many accepts).
 * - Whole: a torn last record or a corrupt one in the middle costs that record alone; the
 *   count is given by open() once, and the log is rewritten clean at once, so the same
 *   damage is never counted again.
 * - Bounded: when the dead part of the log (records of forgotten msgs, old marks) passes
 *   the live part (and 1 MiB), or the file would pass `limitBytes`, the live records are
 *   copied to `log.<generation + 1>` (synced, renamed, the folder synced), and the old
 *   log removed. A crash in between leaves the newest complete log, which open() takes.
 * - One process: open() takes the folder's lock (folder-lock.ts) or fails STORAGE naming the
 *   process that holds it; close() gives it up. Two processes never drain one folder: one
 *   that lost the folder (its lock file gone or another's) writes and sends nothing more.
 * Payloads stay on disk: memory holds each live msg's place in the log, and a mark per
 * entry that is no longer "waiting, never tried".
 */
import * as fsp from 'node:fs/promises';
import * as path from 'node:path';
import { GatewayError } from '../common/errors';
import { FolderLock } from './folder-lock';
import { outboxStorageError, syncDir, type StoreFs } from './store-fs';
import { frame, frameBody, HEADER, LogScanner } from './log';
import { acceptBody, acceptRest, entryId, headOf, keyOf, LogState, parse, type LogRecord } from './log-state';
import type { AcceptedMsg, EntryOutcome, JsonObject, JsonValue, OpenedStore, OutboxEntry, OutboxStore, SendAttempt, StoredMsg, StoreFigures } from './types';

export interface FileStoreOptions {
  /** Compact before the log file would pass this size (the outbox's maxBytes). */
  limitBytes?: number;
  /** Dead bytes below this never start a compaction. Default 1 MiB. */
  compactMinBytes?: number;
  fs?: StoreFs;
  /** How long a lock held from another host or container is watched for a refresh (folder-lock.ts; 30 s). */
  lockWatchMs?: number;
  /** How often this process refreshes its lock and checks that it still holds it (folder-lock.ts; 5 s). */
  lockRefreshMs?: number;
}

const LOG = /^log\.(\d{1,15})$/;
const READ_CHUNK = 64 * 1024;

interface Pending {
  buf: Buffer;
  rec: LogRecord;
  resolve: () => void;
  reject: (err: unknown) => void;
}

export class FileOutboxStore implements OutboxStore {
  readonly groupsAccepts = true;
  syncs = 0; // fdatasyncs of the log so far (one per group of writes)
  private readonly fs: StoreFs;
  private state = new LogState();
  private fh?: fsp.FileHandle;
  private generation = 0;
  private size = 0;
  private queue: Pending[] = [];
  private flushing?: Promise<void>;
  private sized?: { msg: AcceptedMsg; entries: OutboxEntry[]; rest: string };
  private closed = false;
  private compacting?: Promise<void>;
  private reading = 0;
  private flushRunning = false;
  private lock?: FolderLock;

  constructor(readonly dir: string, private readonly options: FileStoreOptions = {}) {
    this.fs = options.fs ?? (fsp as unknown as StoreFs);
  }

  async open(): Promise<OpenedStore> {
    const entries: OutboxEntry[] = [];
    const msgs: StoredMsg[] = [];
    const found = await this.openEach((m, es) => {
      msgs.push(m);
      for (const e of es) entries.push(e);
    });
    entries.sort((a, b) => a.seq - b.seq);
    return { entries, msgs, ...found };
  }

  async openEach(onMsg: (msg: StoredMsg, entries: OutboxEntry[]) => void): Promise<Pick<OpenedStore, 'nextSeq' | 'lost'>> {
    try {
      await this.fs.mkdir(this.dir, { recursive: true });
      this.lock = await FolderLock.acquire(this.dir, { watchMs: this.options.lockWatchMs, refreshMs: this.options.lockRefreshMs }); // one process at a time (folder-lock.ts)
      const names = await this.fs.readdir(this.dir);
      const gens = names.map((n) => LOG.exec(n)).filter((m): m is RegExpExecArray => !!m).map((m) => Number(m[1])).sort((a, b) => b - a);
      this.generation = gens[0] ?? 0;
      this.fh = await this.fs.open(this.logPath(this.generation), 'a+');
      await this.fh.close();
      this.fh = await this.fs.open(this.logPath(this.generation), 'r+');
      const lost = await this.read();
      for (const n of names) if (n.endsWith('.tmp') || (LOG.test(n) && n !== `log.${this.generation}`)) await this.fs.unlink(path.join(this.dir, n)).catch(() => undefined);
      if (lost.torn || lost.corrupt) await this.compact();
      await this.heads(onMsg);
      return { nextSeq: this.state.nextSeq, lost };
    } catch (err) {
      await this.fh?.close().catch(() => undefined);
      this.fh = undefined;
      await this.lock?.release();
      this.lock = undefined;
      throw outboxStorageError(err, 'open its folder');
    }
  }

  /** The accept record's size with the next seq (a seq with more digits, taken meanwhile, adds a byte). */
  sizeOf(msg: AcceptedMsg, entries: OutboxEntry[]): number {
    const rest = acceptRest(msg, entries);
    this.sized = { msg, entries, rest };
    return HEADER + Buffer.byteLength(rest) + acceptBody(this.state.nextSeq, entries.length, '').length;
  }

  async accept(msg: AcceptedMsg, entries: OutboxEntry[]): Promise<number> {
    const seq = this.state.nextSeq;
    // Serialised once: sizeOf's text, the seq put in front of it now.
    const rest = this.sized && this.sized.msg === msg && this.sized.entries === entries ? this.sized.rest : acceptRest(msg, entries);
    this.sized = undefined;
    const buf = frameBody(Buffer.from(acceptBody(seq, entries.length, rest), 'utf8'));
    const rec: LogRecord = { t: 'a', k: msg.key, m: msg.msgId, at: msg.acceptedAt, j: {}, s: seq, e: entries.map(() => NO_ENTRY) };
    // Seqs are taken now (calls are applied in call order), so overlapping accepts differ.
    this.state.nextSeq = seq + entries.length;
    await this.write(rec, buf);
    return seq;
  }

  async load(ids: string[]): Promise<Map<string, JsonValue>> {
    const out = new Map<string, JsonValue>();
    const keys = [...new Set(ids.map(keyOf))];
    const recs = await this.readAccepts(keys);
    for (const id of ids) {
      const rec = recs.get(keyOf(id));
      const e = rec?.e[Number(id.slice(id.lastIndexOf('/') + 1))];
      if (e) out.set(id, e.i);
    }
    return out;
  }

  async msgJson(key: string): Promise<JsonObject | undefined> {
    return (await this.readAccepts([key])).get(key)?.j;
  }

  markSending(ids: string[], attempt: SendAttempt): Promise<void> {
    return this.write({ t: 's', ids, a: attempt });
  }

  end(ends: Array<{ id: string; outcome: EntryOutcome }>): Promise<void> {
    return this.write({ t: 'e', e: ends.map((x) => [x.id, x.outcome]) });
  }

  backToWaiting(ids: string[]): Promise<void> {
    return this.write({ t: 'w', ids });
  }

  forget(msgKeys: string[]): Promise<void> {
    return this.write({ t: 'f', k: msgKeys });
  }

  figures(): StoreFigures {
    let ended = 0;
    for (const m of this.state.marks.values()) if (m.state.phase === 'ended') ended++;
    return { entries: this.state.entries - ended, bytes: this.state.liveBytes, storedBytes: this.size };
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.flushing;
    await this.fh?.close().catch(() => undefined);
    this.fh = undefined;
    await this.lock?.release();
    this.lock = undefined;
  }

  /** @internal Tests: this "process" dies here; its folder's lock is left as a kill leaves it (stale). */
  abandonLock(): void {
    this.lock?.abandon();
  }

  private logPath(gen: number): string {
    return path.join(this.dir, `log.${gen}`);
  }

  /** Reads the log from the start, chunk by chunk, into a fresh state. */
  private async read(): Promise<OpenedStore['lost']> {
    this.state = new LogState();
    const scanner = await this.scan((off, size, body) => {
      const head = headOf(body);
      if (head) return this.state.accepted(head.k, head.s, head.n, off, size);
      const rec = parse(body);
      if (rec) this.state.apply(rec, off, size);
    });
    return { torn: scanner.torn, corrupt: scanner.corrupt };
  }

  /** The second read at open: each live msg's accept record, handed out as it is read. */
  private async heads(onMsg: (msg: StoredMsg, entries: OutboxEntry[]) => void): Promise<void> {
    await this.scan((off, size, body) => {
      const head = headOf(body);
      if (head ? !this.state.isLive(head.k, off) : body[2] !== 0x74 || body[6] !== 0x61) return; // {"t":"a"
      const rec = parse(body);
      if (rec?.t !== 'a' || !this.state.isLive(rec.k, off)) return;
      const { msg, entries } = this.state.headsOf(rec);
      onMsg(msg, entries);
    });
  }

  /** Reads the log from the start, chunk by chunk (one buffer: the scanner copies what it keeps). */
  private async scan(onRecord: (off: number, size: number, body: Buffer) => void): Promise<LogScanner> {
    const fh = this.fh as fsp.FileHandle;
    const scanner = new LogScanner(onRecord);
    let pos = 0;
    const chunk = Buffer.allocUnsafe(READ_CHUNK);
    for (;;) {
      const { bytesRead } = await fh.read(chunk, 0, READ_CHUNK, pos);
      if (bytesRead === 0) break;
      scanner.push(chunk.subarray(0, bytesRead));
      pos += bytesRead;
    }
    scanner.end();
    this.size = pos;
    return scanner;
  }

  /** The accept records of these msgs (those still live), read from the log. */
  private async readAccepts(keys: string[]): Promise<Map<string, Extract<LogRecord, { t: 'a' }>>> {
    const out = new Map<string, Extract<LogRecord, { t: 'a' }>>();
    await this.compacting; // it may be moving them
    const fh = this.fh;
    if (!fh) throw new GatewayError('STORAGE', 'the outbox store is closed');
    this.reading++;
    try {
      await this.readEach(fh, keys, out);
    } finally {
      this.reading--;
    }
    return out;
  }

  private async readEach(fh: fsp.FileHandle, keys: string[], out: Map<string, Extract<LogRecord, { t: 'a' }>>): Promise<void> {
    for (const key of keys) {
      const loc = this.state.loc(key);
      if (!loc) continue;
      const buf = Buffer.allocUnsafe(loc.size);
      await fh.read(buf, 0, loc.size, loc.off).catch((err: unknown) => {
        throw outboxStorageError(err, 'read an entry');
      });
      out.set(key, JSON.parse(buf.subarray(HEADER).toString('utf8')) as Extract<LogRecord, { t: 'a' }>);
    }
  }

  /** Whether this process still holds the folder (the drain sends nothing once it lost it). */
  holds(): boolean {
    return !this.lock?.lost;
  }

  private write(rec: LogRecord, buf?: Buffer): Promise<void> {
    if (this.closed || !this.fh) return Promise.reject(new GatewayError('STORAGE', 'the outbox store is closed'));
    if (this.lock?.lost) return Promise.reject(new GatewayError('STORAGE', 'the outbox\'s folder was taken over by another process (its lock file no longer names this one): this process writes and sends nothing more; close and open it again'));
    const framed = buf ?? frame(rec);
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ buf: framed, rec, resolve, reject });
      // A flag the loop clears itself in the same turn it sees the queue empty: a call that
      // comes after that starts a new loop (a promise's finally would come a turn late).
      if (!this.flushRunning) {
        this.flushRunning = true;
        this.flushing = this.flush();
      }
    });
  }

  /** Writes what waits, one sync for all of it, until nothing waits (then maybe compacts). */
  private async flush(): Promise<void> {
    for (;;) {
      if (this.queue.length === 0) {
        this.flushRunning = false;
        return;
      }
      const group = this.queue.splice(0);
      await this.flushGroup(group).catch((err: unknown) => {
        for (const p of group) p.reject(outboxStorageError(err, 'write to its log'));
      });
    }
  }

  /** Writes one group with one sync, then applies it (or rejects it all, the log cut back). */
  private async flushGroup(group: Pending[]): Promise<void> {
    const start = this.size;
    try {
      await this.append(group.map((p) => p.buf));
    } catch (err) {
      await this.fh?.truncate(start).catch(() => undefined);
      throw err;
    }
    let off = start;
    for (const p of group) {
      this.state.apply(p.rec, off, p.buf.length);
      off += p.buf.length;
    }
    this.size = off;
    for (const p of group) p.resolve();
    if (this.queue.length === 0 && this.wantsCompaction()) {
      this.compacting = this.compact().catch(() => undefined);
      await this.compacting;
      this.compacting = undefined;
    }
  }

  private async append(bufs: Buffer[]): Promise<void> {
    const fh = this.fh as fsp.FileHandle;
    let pos = this.size;
    let at = 0;
    const all = bufs.length === 1 ? bufs[0] : Buffer.concat(bufs);
    while (at < all.length) {
      const { bytesWritten } = await fh.write(all, at, all.length - at, pos);
      at += bytesWritten;
      pos += bytesWritten;
    }
    this.syncs++;
    await fh.datasync();
  }

  private wantsCompaction(): boolean {
    const live = this.state.liveBytes + this.state.marks.size * 96;
    const dead = this.size - live;
    const min = this.options.compactMinBytes ?? 1024 * 1024;
    if (dead > Math.max(min, live)) return true;
    const limit = this.options.limitBytes;
    return limit !== undefined && this.size > limit * 0.9 && dead > Math.min(min, limit / 8);
  }

  /** Copies the live records to the next generation (synced, renamed, folder synced). */
  private async compact(): Promise<void> {
    const next = this.generation + 1;
    const tmp = `${this.logPath(next)}.tmp`;
    const out = await this.fs.open(tmp, 'w');
    let size: number;
    const moved = new Map<number, number>();
    try {
      size = await this.copyLive(out, moved);
      await out.datasync();
    } finally {
      await out.close();
    }
    await this.fs.rename(tmp, this.logPath(next));
    await syncDir(this.fs, this.dir);
    const old = this.fh as fsp.FileHandle;
    this.fh = await this.fs.open(this.logPath(next), 'r+');
    while (this.reading > 0) await new Promise((r) => setImmediate(r)); // reads of the old log finish first
    await old.close().catch(() => undefined);
    await this.fs.unlink(this.logPath(this.generation)).catch(() => undefined);
    this.generation = next;
    this.size = size;
    for (const [slot, off] of moved) this.state.setOffAt(slot, off);
  }

  /** Writes the live accept records (in log order) and the marks; returns the size written. */
  private async copyLive(out: fsp.FileHandle, moved: Map<number, number>): Promise<number> {
    const fh = this.fh as fsp.FileHandle;
    const live = this.state.slotsInLogOrder();
    let pos = 0;
    const flush = async (parts: Buffer[]): Promise<void> => {
      const all = Buffer.concat(parts);
      await out.write(all, 0, all.length, pos);
      pos += all.length;
    };
    let parts: Buffer[] = [];
    let partBytes = 0;
    for (const slot of live) {
      const loc = this.state.locAt(slot);
      const buf = Buffer.allocUnsafe(loc.size);
      await fh.read(buf, 0, loc.size, loc.off);
      moved.set(slot, pos + partBytes);
      parts.push(buf);
      partBytes += buf.length;
      if (partBytes >= READ_CHUNK) {
        await flush(parts);
        parts = [];
        partBytes = 0;
      }
    }
    const marks = this.state.liveMarks();
    for (let i = 0; i < marks.length; i += 2000) {
      const b = frame({ t: 'x', e: marks.slice(i, i + 2000) });
      parts.push(b);
      partBytes += b.length;
    }
    if (parts.length) await flush(parts);
    return pos;
  }
}

const NO_ENTRY = { k: 'message', i: null, p: 0, x: 0 } as const;

export { entryId, outboxStorageError, type StoreFs };
