/**
 * FromUTC paging as the real gateway does it (real-services.md, "The edges of area (a)"),
 * shared by every FromUTC feed of the simulator (status updates, from-mobile messages):
 *
 * - `FromUTC` is inclusive and has one-second resolution: a reply holds the records whose
 *   second is at or after it, oldest first, at most `maxPerReply`;
 * - `NextFromUTC` is the second of the last record in the reply, so polling again with it
 *   returns that second's records again;
 * - a second may hold more records than a reply (nothing spills into the next second);
 * - a record may become visible late, in a second an earlier poll already read (a feed
 *   inserts it in time order; see `FeedLog.add`);
 * - an empty reply carries a null `NextFromUTC` (option: empty string, or FromUTC echoed).
 *
 * `completedSecondsOnly` is the old kindness of this simulator (a second served only once
 * it is complete, so an exclusive client never missed a record): off by default, and no
 * poller test relies on it.
 */

export interface FeedPagingOptions {
  /** At most this many records per reply (the real gateway: 500). */
  maxPerReply: number;
  /** `NextFromUTC` of an empty reply: null (default), "" or the FromUTC asked for. */
  emptyNextFromUTC: 'null' | 'empty' | 'from';
  /** Kind, non-real: serve a second only once it is complete. Off by default. */
  completedSecondsOnly: boolean;
}

export const DEFAULT_FEED_PAGING: FeedPagingOptions = { maxPerReply: 500, emptyNextFromUTC: 'null', completedSecondsOnly: false };

export function formatUtc(sec: number): string {
  return new Date(sec * 1000).toISOString().slice(0, 19).replace('T', ' ');
}

/** Seconds since the epoch of a `yyyy-MM-dd HH:mm:ss` UTC time; undefined unless a real date. */
export function parseUtc(s: string): number | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$/.exec(s);
  if (!m) return undefined;
  const t = Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!);
  if (Number.isNaN(t)) return undefined;
  const sec = Math.floor(t / 1000);
  // Date.UTC rolls 2026-13-45 over into 2027: a real date formats back to itself.
  return formatUtc(sec) === s ? sec : undefined;
}

/** Records of one feed, kept in time order (`sec`); equal seconds keep insertion order. */
export class FeedLog<T extends { sec: number }> {
  readonly items: T[] = [];

  /** Inserts in time order: a record in a past second lands there (a late arrival). */
  add(item: T): void {
    const a = this.items;
    if (!a.length || a[a.length - 1]!.sec <= item.sec) {
      a.push(item);
      return;
    }
    a.splice(this.firstAt(item.sec + 1), 0, item);
  }

  /** Index of the first record whose second is at or after `sec`. */
  firstAt(sec: number): number {
    let lo = 0;
    let hi = this.items.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.items[mid]!.sec < sec) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Records at or after `sec`, in order. */
  *from(sec: number): Generator<T> {
    for (let i = this.firstAt(sec); i < this.items.length; i++) yield this.items[i]!;
  }

  get first(): T | undefined {
    return this.items[0];
  }
}

/**
 * One reply: from `candidates` (records in time order; those before `fromSec` are
 * skipped), the visible ones at or after `fromSec`, at most `maxPerReply`.
 */
export function pageFeed<T extends { sec: number }>(
  candidates: Iterable<T>,
  from: string,
  fromSec: number,
  nowSec: number,
  opts: FeedPagingOptions,
  visible: (item: T) => boolean = () => true,
): { items: T[]; NextFromUTC: string | null } {
  const items: T[] = [];
  const cap = Math.max(1, opts.maxPerReply);
  for (const e of candidates) {
    if (e.sec < fromSec) continue;
    if (opts.completedSecondsOnly && e.sec >= nowSec) break;
    if (!visible(e)) continue;
    items.push(e);
    if (items.length >= cap) break;
  }
  let next: string | null;
  if (items.length) next = formatUtc(items[items.length - 1]!.sec);
  else next = opts.emptyNextFromUTC === 'null' ? null : opts.emptyNextFromUTC === 'empty' ? '' : from;
  return { items, NextFromUTC: next };
}
