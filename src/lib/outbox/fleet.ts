/**
 * An outbox shared by a fleet (issue 45; nodes.md "A fleet"): a store with a drain lease
 * (Redis, RedisOutboxStore). Only the instance that holds the lease drains; the others
 * accept only (the engine's checks, then the store's accept: its bound is the guard,
 * OUTBOX_FULL), keep nothing in memory and run no TTL timer, so a non-holder never ends
 * an entry that the holder sent (a second, wrong outcome).
 *
 * - Lease gained: the engine loads the store (`openAfter(0)`): the entries the last holder
 *   left 'sending' are reconciled, the msgs it ended and did not forget are emitted, the
 *   rest drains. Lease lost: the drain stops (an attempt in flight finishes; its records
 *   are refused, 'fenced'), emissions in flight finish, memory is emptied.
 * - While it drains, the holder reads what the other instances accepted: every `refreshMs`
 *   (default 1 s) the msgs after the last seq it read through (`openAfter(seq)`). Chosen
 *   over re-opening the whole store (100,000 entries read each time) and over a Redis
 *   pub/sub (a message lost is an entry never sent); a read by seq costs one short script
 *   when nothing is new. Seqs are given in the accept script with its writes, so once a read
 *   saw the counter at N, every entry up to N is there or already forgotten.
 * - The holder's own accepts go into its memory at once (`own`: their keys, so a read
 *   that crosses them does not take them twice, also after they were forgotten).
 * - Acceptance order across the fleet: an own accept may be newer than another instance's
 *   not read yet. Each mark gives the store the seq read through (`seenThrough`: below that
 *   of any own accept still in flight, whose seq is not known yet); the store refuses a mark
 *   that would overtake an older waiting entry of the same priority ('unseen'), and the
 *   drain then reads at once (`catchUp`: after the own accepts in flight ended) and takes its
 *   batch again, in order.
 * - Outcomes: the instance that sends a msg's entries emits its outcome (from the msg's
 *   JSON as accepted, through its node with that outboxName). An instance that has no such
 *   node has no engine for the outbox and never takes its lease.
 * - Seen: an instance that does not drain shows the fleet's outbox as Redis holds it (entries
 *   not ended, bytes, the oldest), read every `refreshMs` while it does not drain (one short
 *   script, `summary`), so its status and account status follow the queue the holder drains.
 */
import { Drain, type DrainHost } from './drain';
import { SendQueue } from './queue';
import { ENDED, EntryTable, OUT, WAITING } from './table';
import type { AcceptedMsg, AcceptReceipt, OpenedStore, OutboxEntry, OutboxState, OutboxStore, StoredMsg, StoreSummary } from './types';

/** What the fleet uses of its Outbox (an interface, so the two files import no circle). */
export interface FleetHost extends DrainHost {
  table: EntryTable;
  queue: SendQueue;
  drain: Drain;
  live: { entries: number; bytes: number };
  readonly emitting: Set<Promise<void>>;
  emit(event: string, ...args: unknown[]): boolean;
  /** After entries were loaded: the outcomes left unemitted emitted, the TTL timer set, the drain started. */
  started(lost: { torn: number; corrupt: number }): void;
  scheduleExpiry(at: number): void;
}

export type FleetStore = OutboxStore & Required<Pick<OutboxStore, 'join' | 'holds' | 'onLease' | 'openAfter'>>;

export function isFleetStore(store: OutboxStore): store is FleetStore {
  return typeof store.join === 'function' && typeof store.holds === 'function' && typeof store.onLease === 'function' && typeof store.openAfter === 'function';
}

/** One msg as the store found it, into the engine's table (and its queue, or the drain's unknowns). */
export function adopt(ob: FleetHost, m: StoredMsg, entries: OutboxEntry[]): boolean {
  const inOrder = entries.length === m.entryIds.length && entries.every((e, i) => e.id === m.entryIds[i]);
  const byIndex = inOrder ? entries : m.entryIds.map((id) => entries.find((e) => e.id === id));
  if (byIndex.some((e) => !e) || ob.table.byKey.has(m.key)) return false;
  const list = byIndex as OutboxEntry[];
  const first = ob.table.add({ key: m.key, msgId: m.msgId, acceptedAt: m.acceptedAt, bytes: m.bytes, entries: list });
  ob.live.bytes += m.bytes;
  list.forEach((e, i) => {
    const slot = first + i;
    const phase = e.state.phase === 'waiting' ? WAITING : e.state.phase === 'sending' ? OUT : ENDED;
    if (phase !== WAITING || e.attempts > 0 || e.sentAt !== undefined) ob.table.record(slot, e, phase);
    if (phase === ENDED) ob.table.open.set(first, ob.table.open.get(first) - 1);
    else ob.live.entries++;
    if (phase === WAITING) ob.queue.insert(slot);
    // Its request may have been in flight until the process that sent it died (or, in a fleet, until now).
    else if (e.state.phase === 'sending') ob.drain.addUnknown(e.state.attempt, [e], 0, ob.now());
  });
  return true;
}

/** A store's open() (msgs and entries apart), grouped by msg into the table; `skip` leaves msgs out. */
export function adoptAll(ob: FleetHost, found: OpenedStore, skip?: (key: string) => boolean): OpenedStore {
  const byMsg = new Map<string, OutboxEntry[]>();
  for (const e of found.entries) {
    const list = byMsg.get(e.msgKey);
    if (list) list.push(e);
    else byMsg.set(e.msgKey, [e]);
  }
  for (const m of found.msgs) if (!skip?.(m.key)) adopt(ob, m, byMsg.get(m.key) ?? []);
  return found;
}

/**
 * Whether this instance emits a msg's outcome (one writer wins, the store's claim with the lease
 * held): not when another instance does or did (the holder that ended the msg lost its lease
 * before its outcome, and the next holder read it ended: one of the two emits it). The last
 * holder's fresh claim is waited for (it forgets the msg once emitted); a claim that failed is
 * tried again while this instance drains.
 */
export async function claimed(ob: { store: OutboxStore; drains(): boolean }, key: string): Promise<boolean> {
  if (!ob.store.claim) return true;
  for (;;) {
    let wait: number;
    try {
      wait = await ob.store.claim(key);
    } catch {
      wait = 1000;
    }
    if (wait === 0) return true;
    if (wait < 0 || !ob.drains()) return false;
    await new Promise((resolve) => setTimeout(resolve, Math.min(wait, 1000)).unref());
  }
}

export class Fleet {
  /** Holding the lease, loaded: this instance drains. */
  active = false;
  /** Bumped at each change of `active`: an accept that crossed one leaves memory alone. */
  gen = 0;
  /** The last seq read from the store (every entry up to it is in memory, or was forgotten). */
  readThrough = 0;
  /** This holder's own accepts: key -> first seq (Infinity while the store's accept runs). */
  readonly own = new Map<string, number>();
  /** Its own accepts in flight: key -> readThrough when it started (its seq is above it), and its end. */
  private readonly pending = new Map<string, { floor: number; done: Promise<void>; end: () => void }>();
  private steps: Promise<void> = Promise.resolve();
  private reading: Promise<void> = Promise.resolve();
  private timer?: NodeJS.Timeout;
  /** Not draining: the store's summary as last read, and the timer of the next read. */
  private seen?: StoreSummary;
  private watchTimer?: NodeJS.Timeout;
  private unsubscribe?: () => void;
  private closed = false;

  constructor(
    private readonly ob: FleetHost,
    private readonly store: FleetStore,
  ) {}

  async open(): Promise<void> {
    this.unsubscribe = this.store.onLease((held) => this.step(held ? () => this.gain() : () => this.lose()));
    await this.store.join();
    if (this.store.holds()) this.step(() => this.gain());
    else this.watch(0);
    this.ob.changed();
  }

  close(): void {
    this.closed = true;
    this.active = false;
    this.gen++;
    clearTimeout(this.timer);
    clearTimeout(this.watchTimer);
    this.unsubscribe?.();
  }

  /** Accepted by an instance that does not drain: in the store only. */
  async acceptOnly(msg: AcceptedMsg, list: OutboxEntry[]): Promise<AcceptReceipt> {
    await this.store.accept(msg, list);
    const f = this.store.figures();
    if (this.seen) this.seen = { entries: f.entries, bytes: f.bytes, oldestAt: Math.min(this.seen.oldestAt ?? Infinity, msg.acceptedAt) };
    this.ob.changed();
    return { key: msg.key, ids: msg.entryIds, standby: true };
  }

  /** The holder's accept starts: its key is its own (a read that crosses it leaves it). */
  accepting(key: string): number {
    this.own.set(key, Infinity);
    let end!: () => void;
    const done = new Promise<void>((resolve) => (end = resolve));
    this.pending.set(key, { floor: this.readThrough, done, end });
    return this.gen;
  }

  /** Its store accept failed (nothing kept). */
  failed(key: string): void {
    this.own.delete(key);
    this.settle(key);
  }

  /** Its store accept resolved: false when the lease changed meanwhile (it is then the store's alone). */
  accepted(key: string, seq: number, gen: number): boolean {
    this.settle(key);
    if (gen !== this.gen || !this.active) {
      this.own.delete(key);
      return false;
    }
    this.own.set(key, seq);
    return true;
  }

  /** Every entry up to this seq is in memory or was forgotten, and no own accept in flight is older (undefined: not draining). */
  seenThrough(): number | undefined {
    if (!this.active) return undefined;
    let seen = this.readThrough;
    for (const p of this.pending.values()) seen = Math.min(seen, p.floor);
    return seen;
  }

  /**
   * A mark was refused 'unseen': the own accepts in flight end, then what the others accepted
   * is read. Not queued behind the steps (a lease lost meanwhile waits for the drain that
   * waits here), but the reads are one at a time (`refresh`).
   */
  async catchUp(): Promise<boolean> {
    await Promise.all([...this.pending.values()].map((p) => p.done));
    try {
      await this.refresh();
      return this.active;
    } catch {
      return false;
    }
  }

  private settle(key: string): void {
    this.pending.get(key)?.end();
    this.pending.delete(key);
  }

  /** Not draining: the fleet's outbox as last read from the store (summary), else its figures of the last call. */
  state(): OutboxState {
    const f = this.seen ?? this.store.figures();
    return { outbox: this.ob.name, waiting: f.entries, unknown: 0, bytes: f.bytes, ...(this.seen?.oldestAt !== undefined ? { oldestAt: this.seen.oldestAt } : {}), phase: 'idle' };
  }

  /** While this instance does not drain: the store's summary read after `ms`, then every refresh (a failed read keeps the last). */
  private watch(ms: number): void {
    clearTimeout(this.watchTimer);
    if (this.active || this.closed || !this.store.summary) return;
    this.watchTimer = setTimeout(() => {
      void this.store.summary!().then(
        (s) => {
          const was = this.seen;
          this.seen = s;
          if (!was || was.entries !== s.entries || was.bytes !== s.bytes || was.oldestAt !== s.oldestAt) this.ob.changed();
        },
        () => undefined,
      ).finally(() => this.watch(this.every()));
    }, ms);
    this.watchTimer.unref();
  }

  /** Lease changes and reads, one at a time, in order. */
  private step(run: () => Promise<void>): void {
    this.steps = this.steps.then(run).catch((err: unknown) => {
      this.ob.warn(`the outbox's fleet step failed (${(err as Error)?.message ?? String(err)}); it is tried again`.slice(0, 300));
      if (this.active) this.later();
      else if (this.store.holds()) setTimeout(() => this.step(() => this.gain()), this.every()).unref();
    });
  }

  private async gain(): Promise<void> {
    if (this.active || this.closed || !this.store.holds()) return;
    const found = await this.store.openAfter(0);
    if (this.closed || !this.store.holds()) return;
    adoptAll(this.ob, found);
    this.readThrough = found.nextSeq - 1;
    this.active = true;
    this.gen++;
    clearTimeout(this.watchTimer);
    this.seen = undefined;
    this.ob.started(found.lost);
    this.ob.emit('lease', true);
    this.later();
  }

  private async lose(): Promise<void> {
    if (!this.active) return;
    this.active = false;
    this.gen++;
    clearTimeout(this.timer);
    this.own.clear();
    await this.reset();
    this.readThrough = 0;
    this.watch(0);
    if (!this.closed) this.ob.emit('lease', false);
  }

  /** The lease lost: nothing in memory (the store keeps it all), nothing timed; a send or an emission in flight finishes first. */
  private async reset(): Promise<void> {
    const ob = this.ob;
    ob.scheduleExpiry(Infinity);
    await ob.drain.stop();
    await Promise.allSettled([...ob.emitting]);
    ob.table = new EntryTable();
    ob.queue = new SendQueue(ob.table);
    ob.drain = new Drain(ob);
    ob.live = { entries: 0, bytes: 0 };
    ob.changed();
  }

  /**
   * What the other instances accepted since the last read, into memory; one read at a time:
   * two from the same seq could both take a msg that ended and was forgotten between them.
   */
  private refresh(): Promise<void> {
    const run = this.reading.then(() => this.readNew());
    this.reading = run.catch(() => undefined);
    return run;
  }

  private async readNew(): Promise<void> {
    if (!this.active || this.closed) return;
    const gen = this.gen;
    const found = await this.store.openAfter(this.readThrough);
    if (gen !== this.gen || !this.active) return;
    const before = this.ob.table.byKey.size;
    adoptAll(this.ob, found, (key) => this.own.has(key));
    this.readThrough = Math.max(this.readThrough, found.nextSeq - 1);
    for (const [key, seq] of this.own) if (seq <= this.readThrough) this.own.delete(key);
    if (this.ob.table.byKey.size !== before) this.ob.started(found.lost);
    this.later();
  }

  private later(): void {
    clearTimeout(this.timer);
    if (!this.active || this.closed) return;
    this.timer = setTimeout(() => this.step(() => this.refresh()), this.every());
    this.timer.unref();
  }

  private every(): number {
    return this.ob.options.refreshMs ?? 1000;
  }
}
