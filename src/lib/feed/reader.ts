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
 * The reader knows nothing of Node-RED or HTTP: the caller gives the page fetcher, the
 * record key and time functions, the store and the emit callback.
 */
import type { FeedMark, MarkStore } from '../account/types';
import { GatewayError, badInput } from '../common/errors';
import { formatUtcSeconds, parseUtcSeconds } from './time';

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

export interface CrowdedSecond {
  /** The second that held a full reply (`yyyy-MM-dd HH:mm:ss`). */
  second: string;
  /** How many of its records were fetched (the rest, if any, cannot be). */
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
  /** Fencing token passed to `store.save` (from a FeedLease), when there is one. */
  fence?: () => number | undefined;
}

export interface PollResult {
  /** Records emitted by this poll (all replies). */
  emitted: number;
  /** Replies fetched. */
  pages: number;
  /** The mark after the poll. */
  mark: string;
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

  constructor(options: FeedReaderOptions<R>) {
    if (parseUtcSeconds(options.startFrom) === undefined) throw badInput('startFrom', `"${String(options.startFrom).slice(0, 30)}" is not a real UTC time as yyyy-MM-dd HH:mm:ss`);
    if (!Number.isInteger(options.pageSize) || options.pageSize < 1) throw badInput('pageSize', 'must be a whole number from 1');
    this.o = options;
  }

  /** The mark last loaded or written (undefined before the first load). */
  get mark(): FeedMark | undefined {
    return this.state ? { ...this.state, seen: [...this.state.seen] } : undefined;
  }

  /** Loads the stored mark (or the start mark); a newer generation in the store wins. */
  async load(): Promise<FeedMark> {
    const stored = await this.o.store.load(this.o.feed);
    if (stored && parseUtcSeconds(stored.fromUtc) !== undefined) {
      const gen = Number.isInteger(stored.generation) ? stored.generation : 0;
      if (!this.state || gen >= this.generation) {
        this.generation = Math.max(this.generation, gen);
        this.state = { fromUtc: stored.fromUtc, seen: Array.isArray(stored.seen) ? stored.seen.map(String) : [], generation: this.generation };
      }
    } else if (!this.state) {
      this.state = { fromUtc: this.o.startFrom, seen: [], generation: this.generation };
      this.unsaved = true;
    }
    return this.state!;
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
    this.generation++;
    this.unsaved = false;
    this.state = { fromUtc, seen: [], generation: this.generation };
    const mine = this.generation;
    const stored = await this.o.store.load(this.o.feed);
    if (this.generation === mine && stored && Number.isInteger(stored.generation) && stored.generation >= this.generation) {
      this.generation = stored.generation + 1;
      this.state = { fromUtc, seen: [], generation: this.generation };
    }
    const mark = this.state;
    await this.write(mark);
    return { ...mark, seen: [...mark.seen] };
  }

  private async drain(signal: AbortSignal): Promise<PollResult> {
    let emitted = 0;
    let pages = 0;
    for (;;) {
      if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new GatewayError('NETWORK', 'the poll was aborted');
      try {
        const r = await this.page(signal);
        pages++;
        emitted += r.emitted;
        if (!r.more) return { emitted, pages, mark: this.state!.fromUtc };
      } catch (err) {
        // A reset overtook this reply: ask again from the new mark.
        if (err instanceof Superseded) continue;
        throw err;
      }
    }
  }

  /** One request and its reply: emit what is new, write the mark. `more`: the reply was full. */
  private async page(signal: AbortSignal): Promise<{ emitted: number; more: boolean }> {
    const state = await this.load();
    const gen = this.generation;
    const from = state.fromUtc;
    const fromSec = parseUtcSeconds(from)!;
    const reply = await this.o.fetchPage(from, signal);
    if (gen !== this.generation) throw new Superseded();
    const records = Array.isArray(reply.records) ? reply.records : [];

    const rawNext = reply.nextFromUtc;
    let nextSec: number | undefined;
    if (rawNext !== null && rawNext !== undefined && rawNext !== '') {
      nextSec = parseUtcSeconds(rawNext);
      if (nextSec === undefined) {
        throw new GatewayError('BAD_RESPONSE', `NextFromUTC "${String(rawNext).slice(0, 30)}" is not a UTC time as yyyy-MM-dd HH:mm:ss; the mark stays at ${from}`);
      }
    }
    // A record without a readable time counts as the mark's second (it can only be later).
    const secs = records.map((r) => parseUtcSeconds(this.o.time(r)) ?? fromSec);
    if (nextSec === undefined && records.length) nextSec = Math.max(...secs);
    if (nextSec === undefined || nextSec < fromSec) nextSec = fromSec;

    const seen = new Set(state.seen);
    const fresh: R[] = [];
    records.forEach((r, i) => {
      // A record before the mark's second was read before (the service should not send it).
      if (secs[i]! < fromSec) return;
      const k = this.o.key(r);
      if (seen.has(k)) return;
      seen.add(k);
      fresh.push(r);
    });

    const full = records.length >= this.o.pageSize;
    let crowded: CrowdedSecond | undefined;
    let markSec = nextSec;
    if (full && nextSec === fromSec) {
      // The whole reply is one second (or NextFromUTC did not move): step past it.
      markSec = fromSec + 1;
      crowded = { second: from, fetched: secs.filter((s) => s === fromSec).length };
    }
    // Keys to keep: every key at or after the new mark's second (the mark's second itself,
    // normally). Keys of the old mark's second stay only while the mark stays there.
    const keep = new Set<string>();
    if (markSec === fromSec) for (const k of state.seen) keep.add(k);
    records.forEach((r, i) => {
      if (secs[i]! >= markSec) keep.add(this.o.key(r));
    });
    const next: FeedMark = { fromUtc: formatUtcSeconds(markSec), seen: [...keep], generation: gen };

    if (fresh.length) await this.o.emit(fresh, { fromUtc: from, nextFromUtc: next.fromUtc, fetched: records.length });
    if (crowded) this.o.onCrowded?.(crowded);
    // The start mark is written with the first reply, so that "now" stays the node's first
    // start even if nothing comes before a restart.
    const changed = this.unsaved || next.fromUtc !== state.fromUtc || next.seen.length !== state.seen.length || next.seen.some((k, i) => k !== state.seen[i]);
    if (changed) {
      this.state = next;
      this.unsaved = false;
      await this.write(next);
    }
    // After stepping past a second, go on at once only if the reply brought something new;
    // otherwise the next poll goes on (never a run of requests that bring nothing).
    if (crowded) return { emitted: fresh.length, more: fresh.length > 0 };
    return { emitted: fresh.length, more: full };
  }

  /** Writes in order, one at a time; a mark of an older generation is never written. */
  private write(mark: FeedMark): Promise<void> {
    const run = async () => {
      if (mark.generation !== this.generation) return;
      await this.o.store.save(this.o.feed, mark, this.o.fence?.());
    };
    const p = this.writes.then(run, run);
    this.writes = p.catch(() => {});
    return p;
  }
}
