/**
 * The feed-reading core for the gateway's `FromUTC` / `NextFromUTC` feeds (status updates,
 * from-mobile messages). The real service (real-services.md, "The edges of area (a)"):
 * `FromUTC` is inclusive at one-second resolution; a reply holds at most `pageSize`
 * records, oldest first; `NextFromUTC` is the second of its last record; a second may hold
 * more records than a reply; a record may become visible late in a second already read;
 * an empty reply may carry a null or empty `NextFromUTC`.
 *
 * What the reader guarantees:
 * - a record (by `key`) is emitted once: the keys emitted at or after the mark's second are
 *   kept with the mark and written with it, in ONE `MarkStore.save`, after every reply that
 *   changed them and before the next request; so a restart neither repeats nor skips, and
 *   a hard kill (between emit and write) repeats at most the one reply in flight;
 * - it asks again from the mark inclusively, so late records of the mark's second come out;
 * - a full reply that does not move the mark forward (all in one second, or `NextFromUTC`
 *   null, empty or not later than `FromUTC`) never loops: what is new is emitted, the mark
 *   steps one second past, and `onCrowded` is told once (the second, how many fetched);
 *   the poll goes on at once only if that reply brought a new record, else at the next poll;
 * - records older than `FromUTC` (the service should send none) are never emitted;
 * - an empty reply keeps the mark; a malformed `NextFromUTC` rejects with BAD_RESPONSE,
 *   emits nothing and keeps the mark;
 * - `reset(fromUtc)` wins over a poll in flight: it bumps the generation, and a reply to a
 *   request begun under an older generation is neither emitted nor written.
 *
 * Faults (issue 25):
 * - a mark that cannot be written: the write follows the emit (so a SIGKILL between them
 *   repeats the reply in flight rather than skip it); when it fails, the poll rejects with
 *   STORAGE, the new mark is kept in memory as "pending", and every later poll first
 *   retries that write and fetches nothing until it succeeds: nothing more is emitted that
 *   cannot be recorded, and nothing emitted comes again in this process (a restart while
 *   the fault lasts repeats that one reply, from the last mark that was written);
 * - a stored mark that cannot be read (the store throws, or holds no real `fromUtc`): the
 *   poll rejects with STORAGE and nothing is fetched or written until `reset(fromUtc)`;
 * - a reply that breaks the API's rules is BAD_RESPONSE, nothing emitted, the mark kept:
 *   more records than `pageSize`, a `NextFromUTC` (or, without one, a record's second)
 *   more than `maxAheadMs` ahead of the clock;
 * - one poll reads at most `maxPagesPerPoll` replies; the rest comes at the next poll;
 * - a mark keeps at most `maxSeen` keys (each at most MAX_KEY_CHARS): a second whose new
 *   records outgrow that (a `NextFromUTC` that stays on one second) is stepped past, with
 *   `onOverfull` told once, as a crowded one is; a stored mark whose keys cannot be kept
 *   (too many, or too large for the store to read) goes on from its second without them
 *   (`onKeysDropped`): nothing lost, at most one reply of that second again;
 * - the keys of the last `recentKeys` emitted records are remembered in memory (not
 *   persisted): a record that comes again at a later second is not emitted again.
 *
 * The reader knows nothing of Node-RED or HTTP: the caller gives the page fetcher, the
 * record key and time functions, the store and the emit callback.
 */
import type { FeedMark, MarkStore } from '../account/types';
import { GatewayError, badInput } from '../common/errors';
import { parseUtcSeconds } from './time';
import { GO_ON, storageError, unreadableMark } from './stores';
import { RecentKeys } from './recent-keys';
import { checkReply, freshRecords, markKey, nextMark, type CrowdedSecond, type OverfullSecond } from './reply';

export { RecentKeys } from './recent-keys';
export { API_MAX_PER_REPLY, MAX_KEY_CHARS, type CrowdedSecond, type OverfullSecond } from './reply';

/** A stored mark whose keys could not be kept: the reader goes on from its second without them. */
export interface KeysDropped {
  /** The mark's second, where the feed goes on. */
  second: string;
  /** Why: too many keys, or too large to read. */
  why: string;
}

/** One reply of the feed, as the caller's fetcher returns it. */
export interface FeedPage<R> {
  records: R[];
  /** The reply's `NextFromUTC` unchanged (null, "" or undefined when it had none). */
  nextFromUtc: unknown;
}

/** What `emit` is told besides the records. */
export interface FeedEmitInfo {
  /** The `FromUTC` the reply answered. */
  fromUtc: string;
  /** The mark after this reply (the next `FromUTC`). */
  nextFromUtc: string;
  /** Records in the reply (new and already emitted). */
  fetched: number;
}

export interface FeedReaderOptions<R> {
  /** The store key of this feed (for example `status:<node id>`). */
  feed: string;
  store: MarkStore;
  /** Fetches one reply for `fromUtc`; rejects on failure (the mark is kept). */
  fetchPage: (fromUtc: string, signal: AbortSignal) => Promise<FeedPage<R>>;
  /** Identity of a record (status: `ID|State|StatusUTC`; from-mobile message: `ID`). */
  key: (record: R) => string;
  /** The record's second, `yyyy-MM-dd HH:mm:ss` (status: StatusUTC; message: MessageUTC). */
  time: (record: R) => unknown;
  /** The service's cap on records per reply (500 on the real gateway). */
  pageSize: number;
  /** The first mark when the store has none (fixed by the caller when it starts). */
  startFrom: string;
  /**
   * Called with the new records of one reply; the mark is written after it returns (or
   * after its promise resolves: a caller can let what it sent be delivered first).
   */
  emit: (records: R[], info: FeedEmitInfo) => void | Promise<void>;
  /** A full reply did not move the mark: the reader stepped past `second`. */
  onCrowded?: (info: CrowdedSecond) => void;
  /** The mark's second outgrew `maxSeen` keys: the reader stepped past it. */
  onOverfull?: (info: OverfullSecond) => void;
  /** A stored mark's keys could not be kept (over `maxSeen`, or too large to read): told once per mark. */
  onKeysDropped?: (info: KeysDropped) => void;
  /** Fencing token passed to `store.save` (from a FeedLease), when there is one. */
  fence?: () => number | undefined;
  /** Replies one poll reads at most (default 50); the rest comes at the next poll. */
  maxPagesPerPoll?: number;
  /** Keys of recently emitted records remembered in memory (default 50,000; 0: none). */
  recentKeys?: number;
  /** How far ahead of the clock a reply's `NextFromUTC` may be (default 1 day). */
  maxAheadMs?: number;
  /** The most keys a mark keeps for its second (default 10,000; never fewer than `pageSize`). */
  maxSeen?: number;
  /** The clock (tests). */
  now?: () => number;
}

/** Defaults of the bounds above. */
export const FEED_BOUNDS = { maxPagesPerPoll: 50, recentKeys: 50_000, maxAheadMs: 86_400_000, maxSeen: 10_000 };

export interface PollResult {
  /** Records emitted by this poll (all replies). */
  emitted: number;
  /** Replies fetched. */
  pages: number;
  /** The mark after the poll. */
  mark: string;
  /** The poll stopped after `maxPagesPerPoll` full replies: the rest comes at the next poll. */
  capped?: boolean;
}

/**
 * A shared feed whose lease this instance no longer holds (its renewal failed or came too
 * late): the reply is not emitted, the mark not moved; another instance may poll now.
 * SHARED_STATE with reason 'fenced', as the store's refusal of a write by a former holder.
 */
function lostLease(feed: string, from: string): GatewayError {
  const err = new GatewayError('SHARED_STATE', `feed ${feed}: this instance no longer holds the feed's lease; the reply from ${from} was not emitted (another instance may poll now)`);
  return Object.assign(err, { reason: 'fenced' });
}

/** A poll in progress was overtaken by `reset()`: its reply is dropped. */
class Superseded extends Error {}

export class FeedReader<R> {
  private readonly o: FeedReaderOptions<R>;
  private generation = 0;
  private state: FeedMark | undefined;
  private writes: Promise<unknown> = Promise.resolve();
  private running: Promise<PollResult> | undefined;
  /** True while the mark is the start mark, not yet written (the first reply writes it). */
  private unsaved = false;
  /** A mark emitted past but not yet written (its write failed): written before any fetch. */
  private pending: FeedMark | undefined;
  /** The fencing token the pending mark was emitted under (none for a reset's mark). */
  private pendingFence: number | undefined;
  private readonly recent: RecentKeys;
  private readonly now: () => number;
  /** A record's key as the mark keeps it (at most MAX_KEY_CHARS). */
  private readonly key: (record: R) => string;
  /** The most keys the mark keeps. */
  private readonly maxSeen: number;
  /** The stored mark whose dropped keys were told of (once per mark). */
  private droppedTold: string | undefined;

  constructor(options: FeedReaderOptions<R>) {
    if (parseUtcSeconds(options.startFrom) === undefined) throw badInput('startFrom', `"${String(options.startFrom).slice(0, 30)}" is not a real UTC time as yyyy-MM-dd HH:mm:ss`);
    if (!Number.isInteger(options.pageSize) || options.pageSize < 1) throw badInput('pageSize', 'must be a whole number from 1');
    this.o = options;
    this.recent = new RecentKeys(options.recentKeys ?? FEED_BOUNDS.recentKeys);
    this.now = options.now ?? Date.now;
    this.key = (r) => markKey(options.key(r));
    this.maxSeen = Math.max(options.maxSeen ?? FEED_BOUNDS.maxSeen, options.pageSize);
  }

  /** True while a mark that was emitted past could not be written yet. */
  get unwritten(): boolean {
    return this.pending !== undefined;
  }

  /** How many keys of recently emitted records are remembered. */
  get recentCount(): number {
    return this.recent.count;
  }

  /** The mark last loaded or written (undefined before the first load). */
  get mark(): FeedMark | undefined {
    return this.state ? { ...this.state, seen: [...this.state.seen] } : undefined;
  }

  /** Loads the stored mark (or the start mark); a newer generation in the store wins. */
  async load(): Promise<FeedMark> {
    // A mark not yet written is ahead of the store: the store's older one must not win.
    if (this.pending && this.state) return this.state;
    let stored: FeedMark | undefined;
    try {
      stored = await this.o.store.load(this.o.feed);
    } catch (err) {
      throw storageError(err, 'read');
    }
    if (stored !== undefined && stored !== null && (typeof stored !== 'object' || parseUtcSeconds(stored.fromUtc) === undefined || (stored.seen !== undefined && !Array.isArray(stored.seen)))) {
      // Never read as "no mark": that would restart from startFrom and overwrite it.
      const from = typeof stored === 'object' ? String((stored as { fromUtc?: unknown }).fromUtc).slice(0, 30) : typeof stored;
      throw unreadableMark(`the stored mark cannot be read (fromUtc "${from}" is not a UTC time): ${GO_ON}`);
    }
    if (stored) {
      const gen = Number.isInteger(stored.generation) ? stored.generation : 0;
      if (!this.state || gen >= this.generation) {
        this.generation = Math.max(this.generation, gen);
        this.state = { fromUtc: stored.fromUtc, seen: this.keptKeys(stored), generation: this.generation };
      }
    } else if (!this.state) {
      this.state = { fromUtc: this.o.startFrom, seen: [], generation: this.generation };
      this.unsaved = true;
    }
    return this.state!;
  }

  /**
   * The keys of a stored mark, or none when they cannot be kept (too many, or too large for
   * the store to read): the feed then goes on from the mark's own second, so nothing is lost
   * and at most the records of one reply of that second come again (as after a hard kill).
   * The mark without them is written with the next reply; told once.
   */
  private keptKeys(stored: FeedMark): string[] {
    const seen = Array.isArray(stored.seen) ? stored.seen : [];
    const why = stored.keysUnread ?? (seen.length > this.maxSeen ? `${seen.length} keys, more than the ${this.maxSeen} a mark keeps` : undefined);
    if (why === undefined) return seen.map(String);
    this.unsaved = true;
    const which = `${stored.fromUtc}|${stored.generation}`;
    if (this.droppedTold !== which) this.o.onKeysDropped?.({ second: stored.fromUtc, why });
    this.droppedTold = which;
    return [];
  }

  /**
   * Reads replies until one is not full. Concurrent calls share the poll in progress.
   * Rejects with the fetcher's error (or BAD_RESPONSE); the mark then stays where the last
   * good reply left it.
   */
  poll(signal: AbortSignal = new AbortController().signal): Promise<PollResult> {
    if (!this.running) {
      this.running = this.drain(signal).finally(() => {
        this.running = undefined;
      });
    }
    return this.running;
  }

  /**
   * Moves the mark to `fromUtc` (a real `yyyy-MM-dd HH:mm:ss`), forgetting the emitted keys.
   * Resolves once written; a poll in flight can neither emit its reply nor write after it.
   */
  async reset(fromUtc: string): Promise<FeedMark> {
    if (parseUtcSeconds(fromUtc) === undefined) throw badInput('fromUTC', 'must be a real UTC time as yyyy-MM-dd HH:mm:ss');
    // Bumped at once, so a reply arriving from now on is dropped; then above any
    // generation the store holds (another instance's reset, with a shared store).
    // The new mark is in place at once too: a poll that goes on asks from it.
    // The new mark is pending from now on: a poll meanwhile asks from it, and writes it
    // before its first request, instead of reading the store's older (or unreadable) one.
    this.generation++;
    this.unsaved = false;
    this.recent.clear();
    this.state = this.pending = { fromUtc, seen: [], generation: this.generation };
    this.pendingFence = undefined;
    const mine = this.generation;
    // A stored mark that cannot be read is what a reset is for: it is replaced.
    const stored = await this.o.store.load(this.o.feed).catch(() => undefined);
    if (this.generation === mine && stored && Number.isInteger(stored.generation) && stored.generation >= this.generation) {
      this.generation = stored.generation + 1;
      this.state = this.pending = { fromUtc, seen: [], generation: this.generation };
    }
    const mark = this.state;
    await this.commit(mark);
    return { ...mark, seen: [...mark.seen] };
  }

  private async drain(signal: AbortSignal): Promise<PollResult> {
    let emitted = 0;
    let pages = 0;
    const maxPages = this.o.maxPagesPerPoll ?? FEED_BOUNDS.maxPagesPerPoll;
    let superseded = 0;
    for (;;) {
      if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new GatewayError('NETWORK', 'the poll was aborted');
      // Nothing is fetched while the last mark emitted past is not written.
      if (this.pending) await this.commit(this.pending);
      // A poll always ends: at most maxPages replies (and as many resets overtaking it).
      if (pages >= maxPages || superseded > maxPages) return { emitted, pages, mark: this.state!.fromUtc, capped: true };
      try {
        const r = await this.page(signal);
        pages++;
        emitted += r.emitted;
        if (!r.more) return { emitted, pages, mark: this.state!.fromUtc };
      } catch (err) {
        // A reset overtook this reply: ask again from the new mark.
        if (err instanceof Superseded) {
          superseded++;
          continue;
        }
        throw err;
      }
    }
  }

  /** One request and its reply: emit what is new, write the mark. `more`: the reply was full. */
  private async page(signal: AbortSignal): Promise<{ emitted: number; more: boolean }> {
    const { o } = this;
    const state = await this.load();
    const gen = this.generation;
    const from = state.fromUtc;
    const reply = await o.fetchPage(from, signal);
    if (gen !== this.generation) throw new Superseded();
    const rules = { pageSize: o.pageSize, time: o.time, maxAheadMs: o.maxAheadMs ?? FEED_BOUNDS.maxAheadMs, now: this.now };
    const checked = checkReply(reply.records, reply.nextFromUtc, from, rules);
    const fresh = freshRecords(checked, state, this.key, this.recent);
    const full = checked.records.length >= o.pageSize;
    const { next, crowded, overfull } = nextMark(checked, state, gen, full, this.key, this.maxSeen);

    const fence = this.emitFence(from);
    for (const r of fresh) this.recent.add(this.key(r));
    if (fresh.length) await o.emit(fresh, { fromUtc: from, nextFromUtc: next.fromUtc, fetched: checked.records.length });
    if (crowded) o.onCrowded?.(crowded);
    if (overfull) o.onOverfull?.(overfull);
    await this.advance(state, next, fence);
    // After stepping past a second, go on at once only if the reply brought something new;
    // otherwise the next poll goes on (never a run of requests that bring nothing).
    if (crowded) return { emitted: fresh.length, more: fresh.length > 0 };
    return { emitted: fresh.length, more: full };
  }

  /**
   * Moves the mark from `state` to `next` when it changed. The start mark is written with the
   * first reply, so that "now" stays the node's first start even if nothing comes before a restart.
   */
  private async advance(state: FeedMark, next: FeedMark, fence: number | undefined): Promise<void> {
    const changed = this.unsaved || next.fromUtc !== state.fromUtc || next.seen.length !== state.seen.length || next.seen.some((k, i) => k !== state.seen[i]);
    if (!changed) return;
    this.state = next;
    this.unsaved = false;
    // Written after the emit: a kill in between repeats this reply, never skips it.
    await this.commit(next, fence);
  }

  /**
   * A shared feed (a lease gives the fence): a reply is emitted only while this instance
   * holds the lease, and its mark is written with the fencing token of that emit, never
   * of a later lease. Undefined when the feed is not shared.
   */
  private emitFence(from: string): number | undefined {
    if (!this.o.fence) return undefined;
    const fence = this.o.fence();
    if (fence === undefined) throw lostLease(this.o.feed, from);
    return fence;
  }

  /**
   * Writes `mark`; if that fails, keeps it as the pending mark (retried before any fetch)
   * and rejects with STORAGE. A store that says another instance owns the feed (fenced,
   * newer generation) drops it instead: the store's mark is the truth then.
   */
  private async commit(mark: FeedMark, fence?: number): Promise<void> {
    // The pending mark keeps the fence of its emit: retried later under a newer lease
    // (another holder polled meanwhile), it is refused rather than written over that
    // holder's newer mark.
    if (this.pending !== mark) this.pendingFence = fence;
    this.pending = mark;
    try {
      await this.write(mark, this.pendingFence);
    } catch (err) {
      const reason = (err as { reason?: unknown }).reason;
      if (err instanceof GatewayError && err.code === 'SHARED_STATE' && (reason === 'fenced' || reason === 'generation')) {
        if (this.pending === mark) this.pending = undefined;
        throw err;
      }
      throw storageError(err, 'written');
    }
    if (this.pending === mark) this.pending = undefined;
  }

  /**
   * Writes in order, one at a time; a mark of an older generation is never written. A mark
   * emitted past is written with the fence of its emit; a reset's with the lease's now.
   */
  private write(mark: FeedMark, emitFence?: number): Promise<void> {
    const run = async () => {
      if (mark.generation !== this.generation) return;
      await this.o.store.save(this.o.feed, mark, emitFence ?? this.o.fence?.());
    };
    const p = this.writes.then(run, run);
    this.writes = p.catch(() => {});
    return p;
  }
}
