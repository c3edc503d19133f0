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

function copyMark(m: FeedMark): FeedMark {
  return { fromUtc: m.fromUtc, seen: [...m.seen], generation: m.generation };
}

function asMark(v: unknown): FeedMark | undefined {
  if (!v || typeof v !== 'object') return undefined;
  const o = v as Record<string, unknown>;
  if (typeof o.fromUtc !== 'string') return undefined;
  return {
    fromUtc: o.fromUtc,
    seen: Array.isArray(o.seen) ? o.seen.map(String) : [],
    generation: typeof o.generation === 'number' && Number.isInteger(o.generation) ? o.generation : 0,
  };
}

/** A file name for a feed: letters, digits, `-` and `_` kept, the rest percent-coded. */
export function feedFileName(feed: string): string {
  return `${feed.replace(/[^A-Za-z0-9_-]/g, (c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`)}.json`;
}

export class FileMarkStore implements MarkStore {
  private cache = new Map<string, FeedMark | undefined>();
  private dirReady: Promise<void> | undefined;

  constructor(readonly dir: string) {}

  file(feed: string): string {
    return path.join(this.dir, feedFileName(feed));
  }

  async load(feed: string): Promise<FeedMark | undefined> {
    if (this.cache.has(feed)) {
      const m = this.cache.get(feed);
      return m && copyMark(m);
    }
    let text: string;
    try {
      text = await fsp.readFile(this.file(feed), 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    let mark: FeedMark | undefined;
    try {
      mark = asMark(JSON.parse(text));
    } catch {
      mark = undefined; // a torn file cannot happen (rename), but never crash on one
    }
    this.cache.set(feed, mark);
    return mark && copyMark(mark);
  }

  async save(feed: string, mark: FeedMark): Promise<void> {
    this.dirReady ??= fsp.mkdir(this.dir, { recursive: true }).then(() => undefined);
    await this.dirReady;
    const target = this.file(feed);
    const tmp = `${target}.${process.pid}.tmp`;
    const fh = await fsp.open(tmp, 'w');
    try {
      await fh.writeFile(JSON.stringify({ fromUtc: mark.fromUtc, seen: mark.seen, generation: mark.generation }));
      await fh.sync();
    } finally {
      await fh.close();
    }
    await fsp.rename(tmp, target);
    // The rename itself reaches the disk with the folder's fsync.
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
    this.cache.set(feed, copyMark(mark));
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
  constructor(
    private readonly ctx: ContextLike,
    private readonly storeName?: string,
    private readonly key = 'feedMark',
    private readonly legacyKey?: string,
  ) {}

  private get(key: string): Promise<unknown> {
    return new Promise((resolve, reject) => this.ctx.get(key, this.storeName, (err, v) => (err ? reject(err) : resolve(v))));
  }

  async load(_feed: string): Promise<FeedMark | undefined> {
    const m = asMark(await this.get(this.key));
    if (m) return m;
    if (this.legacyKey) {
      const old = await this.get(this.legacyKey);
      if (typeof old === 'string' && old) return { fromUtc: old, seen: [], generation: 0 };
    }
    return undefined;
  }

  save(_feed: string, mark: FeedMark): Promise<void> {
    const value = { fromUtc: mark.fromUtc, seen: [...mark.seen], generation: mark.generation };
    return new Promise((resolve, reject) => this.ctx.set(this.key, value, this.storeName, (err) => (err ? reject(err) : resolve())));
  }
}

/** Loads from `primary`, else from `older` (a one-time migration); saves to `primary` only. */
export class FallbackMarkStore implements MarkStore {
  constructor(
    private readonly primary: MarkStore,
    private readonly older: MarkStore,
  ) {}

  async load(feed: string): Promise<FeedMark | undefined> {
    return (await this.primary.load(feed)) ?? (await this.older.load(feed).catch(() => undefined));
  }

  save(feed: string, mark: FeedMark, fence?: number): Promise<void> {
    return this.primary.save(feed, mark, fence);
  }
}
