/**
 * In-process MarkStores (the Redis one lives in ../account/redis):
 * - `FileMarkStore`: one small JSON file per feed in a folder (by default under Node-RED's
 *   user directory), written durably on every save: temporary file, fsync, rename, fsync of
 *   the folder. Survives a restart and a SIGKILL with Node-RED's default settings, whose
 *   default context store is memory.
 * - `ContextMarkStore`: a Node-RED context store the user picked; durable only as far as
 *   that store is (`localfilesystem` writes every `flushInterval`, 30 s by default).
 * - `FallbackMarkStore`: loads from a second store when the first has no mark (migration
 *   of marks that older versions kept in node context), always saves to the first.
 */
import { promises as fsp } from 'node:fs';
import * as path from 'node:path';
import type { FeedMark, MarkStore } from '../account/types';
import { GatewayError } from '../common/errors';
import { parseUtcSeconds } from './time';

function copyMark(m: FeedMark): FeedMark {
  return { fromUtc: m.fromUtc, seen: [...m.seen], generation: m.generation };
}

/** What a stored value is: a mark, nothing (undefined/null), or 'bad' (cannot be read as a mark). */
function asMark(v: unknown): FeedMark | undefined | 'bad' {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'object' || Array.isArray(v)) return 'bad';
  const o = v as Record<string, unknown>;
  if (parseUtcSeconds(o.fromUtc) === undefined) return 'bad';
  if (o.seen !== undefined && !(Array.isArray(o.seen) && o.seen.every((k) => typeof k === 'string' || typeof k === 'number'))) return 'bad';
  if (o.generation !== undefined && !(typeof o.generation === 'number' && Number.isInteger(o.generation) && o.generation >= 0)) return 'bad';
  return {
    fromUtc: o.fromUtc as string,
    seen: Array.isArray(o.seen) ? o.seen.map(String) : [],
    generation: typeof o.generation === 'number' ? o.generation : 0,
  };
}

/** How to go on after a mark that cannot be read. */
export const GO_ON = 'nothing is polled or overwritten until you send {fromUTC: "yyyy-MM-dd HH:mm:ss"} to the node (the time to go on from)';

/**
 * A STORAGE error for a stored mark that cannot be read: only a `{fromUTC}` reset ends it
 * (`resetNeeded`, not enumerable: the poller's status says so instead of "retrying").
 */
export function unreadableMark(message: string): GatewayError {
  const err = new GatewayError('STORAGE', message);
  Object.defineProperty(err, 'resetNeeded', { value: true, enumerable: false });
  return err;
}

/** True for an error that only a `{fromUTC}` reset ends. */
export function needsReset(err: unknown): boolean {
  return (err as { resetNeeded?: unknown } | null)?.resetNeeded === true;
}

/** A store failure as STORAGE (a GatewayError of the store, e.g. SHARED_STATE, passes as it is). */
export function storageError(err: unknown, what: string): GatewayError {
  if (err instanceof GatewayError) return err;
  const code = (err as NodeJS.ErrnoException)?.code;
  return new GatewayError('STORAGE', `the feed's mark could not be ${what}${code ? ` (${code})` : ''}; polling stops until it can`, { cause: err });
}

/** `2026-05-01T10-20-30Z`: a time stamp usable in a file name. */
function stamp(now = Date.now()): string {
  return new Date(now).toISOString().slice(0, 19).replace(/:/g, '-') + 'Z';
}

/** The error code of an fs failure (never its message: that holds the absolute path). */
function fsCode(err: unknown): string {
  const c = (err as NodeJS.ErrnoException)?.code;
  return typeof c === 'string' && /^E[A-Z]+$/.test(c) ? c : 'an I/O error';
}

const FS_HINTS: Record<string, string> = {
  ENOSPC: 'the disk is full',
  EDQUOT: 'the disk quota is used up',
  EROFS: 'the file system is read-only',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  ENOTDIR: 'a part of the path is a file, not a folder',
  EISDIR: 'the mark file is a folder',
  EIO: 'a disk I/O error',
};

/** A file name for a feed: letters, digits, `-` and `_` kept, the rest percent-coded. */
export function feedFileName(feed: string): string {
  return `${feed.replace(/[^A-Za-z0-9_-]/g, (c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`)}.json`;
}

export class FileMarkStore implements MarkStore {
  private cache = new Map<string, FeedMark | undefined>();
  private dirReady: Promise<void> | undefined;

  /**
   * `dir`: the folder; `label`: how errors name it (relative to the user directory, e.g.
   * `iotgw-feeds`; default its last part): an error never shows the absolute path.
   */
  constructor(
    readonly dir: string,
    readonly label: string = path.basename(dir),
  ) {}

  file(feed: string): string {
    return path.join(this.dir, feedFileName(feed));
  }

  /** The file as errors name it: `<label>/<file name>`. */
  shown(feed: string): string {
    return `${this.label}/${feedFileName(feed)}`;
  }

  private fail(feed: string, what: string, err: unknown): GatewayError {
    const code = fsCode(err);
    const hint = FS_HINTS[code];
    return new GatewayError('STORAGE', `the poller's mark could not be ${what} ${this.shown(feed)} (${code}${hint ? `: ${hint}` : ''}); polling stops until it can, and is retried at every interval`, { cause: err });
  }

  /**
   * The stored mark, or undefined when there is none. A file that cannot be read as a mark
   * (torn, garbage) is renamed `<file>.bad-<time>` (kept as evidence, never overwritten)
   * and this rejects with STORAGE; so does a missing file next to such a kept one, until
   * a mark is written again (the node's `{fromUTC}` input).
   */
  async load(feed: string): Promise<FeedMark | undefined> {
    if (this.cache.has(feed)) {
      const m = this.cache.get(feed);
      return m && copyMark(m);
    }
    const target = this.file(feed);
    let text: string;
    try {
      text = await fsp.readFile(target, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw this.fail(feed, 'read from', err);
      const kept = await this.keptAside(feed);
      if (kept) throw unreadableMark(`the poller's mark could not be read; it was kept aside as ${this.label}/${kept}: ${GO_ON}`);
      return undefined;
    }
    let mark: FeedMark | undefined | 'bad';
    try {
      mark = asMark(JSON.parse(text));
    } catch {
      mark = 'bad';
    }
    if (mark === undefined) mark = 'bad'; // a file holding `null`
    if (mark === 'bad') {
      const bad = `${feedFileName(feed)}.bad-${stamp()}`;
      let kept = `kept aside as ${this.label}/${bad}`;
      try {
        await fsp.rename(target, path.join(this.dir, bad));
      } catch (err) {
        kept = `left in place (it could not be renamed: ${fsCode(err)})`;
      }
      throw unreadableMark(`the poller's mark ${this.shown(feed)} cannot be read (${text.length} bytes, not a mark {fromUtc, seen, generation}); it was ${kept}: ${GO_ON}`);
    }
    this.cache.set(feed, mark);
    return copyMark(mark);
  }

  /** The newest `<file>.bad-<time>` of a feed, if any. */
  private async keptAside(feed: string): Promise<string | undefined> {
    const prefix = `${feedFileName(feed)}.bad-`;
    try {
      return (await fsp.readdir(this.dir)).filter((n) => n.startsWith(prefix)).sort().pop();
    } catch {
      return undefined;
    }
  }

  async save(feed: string, mark: FeedMark): Promise<void> {
    const target = this.file(feed);
    const tmp = `${target}.${process.pid}.tmp`;
    try {
      this.dirReady ??= fsp.mkdir(this.dir, { recursive: true }).then(() => undefined);
      await this.dirReady;
      const fh = await fsp.open(tmp, 'w');
      try {
        await fh.writeFile(JSON.stringify({ fromUtc: mark.fromUtc, seen: mark.seen, generation: mark.generation }));
        await fh.sync();
      } finally {
        await fh.close();
      }
      await fsp.rename(tmp, target);
    } catch (err) {
      // The folder may be gone or replaced by then: made again at the next try.
      this.dirReady = undefined;
      await fsp.rm(tmp, { force: true }).catch(() => {});
      throw this.fail(feed, 'written to', err);
    }
    const created = !this.cache.has(feed) || this.cache.get(feed) === undefined;
    this.cache.set(feed, copyMark(mark));
    // The file's content is on disk before the rename, so the file is never torn. The
    // folder is synced once, when the file is new: later, a power cut can at worst leave
    // the previous mark in place (records repeat, none is skipped); a SIGKILL leaves the
    // rename in the kernel's hands, which completes it.
    if (!created) return;
    try {
      const d = await fsp.open(this.dir, 'r');
      try {
        await d.sync();
      } finally {
        await d.close();
      }
    } catch {
      /* some file systems cannot fsync a folder: the rename is still atomic */
    }
  }

  /** Removes a feed's file (a deleted node). */
  async remove(feed: string): Promise<void> {
    this.cache.delete(feed);
    await fsp.rm(this.file(feed), { force: true });
  }
}

/** The part of a Node-RED context this store uses (node.context()). */
export interface ContextLike {
  get(key: string, store: string | undefined, cb: (err: Error | null, value: unknown) => void): void;
  set(key: string, value: unknown, store: string | undefined, cb: (err?: Error | null) => void): void;
}

/**
 * A mark in a Node-RED context (key `feedMark`, in `storeName` or the default store).
 * `legacyKey`: a plain `yyyy-MM-dd HH:mm:ss` string that older versions kept there (read
 * once, as a mark with no emitted keys).
 */
export class ContextMarkStore implements MarkStore {
  /** The key where an unreadable mark was copied (once per store). */
  private keptAs: string | undefined;

  constructor(
    private readonly ctx: ContextLike,
    private readonly storeName?: string,
    private readonly key = 'feedMark',
    private readonly legacyKey?: string,
  ) {}

  private get(key: string): Promise<unknown> {
    return new Promise((resolve, reject) => this.ctx.get(key, this.storeName, (err, v) => (err ? reject(err) : resolve(v))));
  }

  private where(key: string): string {
    return `context key "${key}" of ${this.storeName ? `context store "${this.storeName}"` : 'the default context store'}`;
  }

  private fail(what: string, key: string, err: unknown): GatewayError {
    const why = err instanceof Error ? err.name : typeof err;
    return new GatewayError('STORAGE', `the poller's mark could not be ${what} ${this.where(key)} (${why}); polling stops until it can, and is retried at every interval`, { cause: err });
  }

  /**
   * A value that is not a mark (garbage) is never read as "no mark": it is copied to
   * `<key>-bad-<time>` (once; the value itself stays until a reset replaces it) and this
   * rejects with STORAGE.
   */
  async load(_feed: string): Promise<FeedMark | undefined> {
    let v: unknown;
    try {
      v = await this.get(this.key);
    } catch (err) {
      throw this.fail('read from', this.key, err);
    }
    const m = asMark(v);
    if (m === 'bad') throw await this.bad(this.key, v);
    if (m) return m;
    if (this.legacyKey) {
      let old: unknown;
      try {
        old = await this.get(this.legacyKey);
      } catch (err) {
        throw this.fail('read from', this.legacyKey, err);
      }
      if (old === undefined || old === null || old === '') return undefined;
      if (parseUtcSeconds(old) === undefined) throw await this.bad(this.legacyKey, old);
      return { fromUtc: old as string, seen: [], generation: 0 };
    }
    return undefined;
  }

  private async bad(key: string, value: unknown): Promise<GatewayError> {
    if (!this.keptAs) {
      const aside = `${key}-bad-${stamp()}`; // no dot: Node-RED reads a dot as a property path
      const ok = await new Promise<boolean>((resolve) => this.ctx.set(aside, value, this.storeName, (err) => resolve(!err)));
      if (ok) this.keptAs = aside;
    }
    const kept = this.keptAs ? `; a copy is kept as context key "${this.keptAs}"` : '';
    return unreadableMark(`the poller's mark in ${this.where(key)} cannot be read (not a mark {fromUtc, seen, generation})${kept}: ${GO_ON}`);
  }

  async save(_feed: string, mark: FeedMark): Promise<void> {
    const value = { fromUtc: mark.fromUtc, seen: [...mark.seen], generation: mark.generation };
    try {
      await new Promise<void>((resolve, reject) => this.ctx.set(this.key, value, this.storeName, (err) => (err ? reject(err) : resolve())));
    } catch (err) {
      throw this.fail('written to', this.key, err);
    }
  }
}

/** Loads from `primary`, else from `older` (a one-time migration); saves to `primary` only. */
export class FallbackMarkStore implements MarkStore {
  constructor(
    private readonly primary: MarkStore,
    private readonly older: MarkStore,
  ) {}

  async load(feed: string): Promise<FeedMark | undefined> {
    // An older mark that cannot be read is a STORAGE error too (never read as "none").
    return (await this.primary.load(feed)) ?? (await this.older.load(feed).catch((err: unknown) => {
      if (err instanceof GatewayError && err.code === 'STORAGE') throw err;
      return undefined;
    }));
  }

  save(feed: string, mark: FeedMark, fence?: number): Promise<void> {
    return this.primary.save(feed, mark, fence);
  }
}
