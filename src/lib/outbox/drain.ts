/**
 * The outbox's drain: one step at a time, never two at once.
 * - An attempt whose outcome is unknown (the sender said so, or open() found it
 *   'sending') is reconciled first: nothing else is sent while one is (whole outbox).
 *   `found` ends it accepted, `absent` puts it back in its place, `not-yet` asks again later,
 *   `unknown` (the gateway's records cannot tell) ends it 'unknown', never sent again, with the
 *   attempt's own failure as its code (TIMEOUT when the call timed out, else NETWORK).
 * - Otherwise the next batch: the run of one kind at the head of the order (at most
 *   batchMax), recorded as sending, then handed to the sender.
 * - `retry` outcomes wait with back-off (doubling, capped; the sender's Retry-After wins);
 *   timers are unref'ed, so a waiting outbox never keeps the process alive.
 */
import { keyOf } from './log-state';
import { makeKey } from './keys';
import type { EntryOutcome, JsonValue, OutboxEntry, OutboxOptions, OutboxState, OutboxStore, ReconcileOutcome, SendAttempt, SendOutcome } from './types';

interface UnknownGroup {
  attempt: SendAttempt;
  entries: OutboxEntry[];
  askAt: number;
  /** When its call ended without an answer, or (found 'sending' at open) the open's time: local ms, the reconciler's `unknownSince`. */
  since?: number;
  /** The attempt's failure, what the msg would have ended with without the outbox (absent: NETWORK, e.g. a kill during the call). */
  code?: 'NETWORK' | 'TIMEOUT';
}

type Loaded = OutboxEntry & { item: JsonValue };
export type End = { entry: OutboxEntry; outcome: EntryOutcome };

/** What the drain uses of its Outbox (an interface, so the two files import no circle). */
export interface DrainHost {
  readonly name: string;
  readonly store: OutboxStore;
  readonly options: OutboxOptions;
  readonly closed: boolean;
  /** Whether this instance drains (not closed; in a fleet, the lease holder). */
  drains(): boolean;
  now(): number;
  changed(): void;
  warn(message: string): void;
  /** Ends the waiting entries whose TTL ended; false when that could not be recorded. */
  expire(): Promise<boolean>;
  ended(ends: End[]): Promise<void>[];
  /** Entries out of the queue wait again, each in its place. */
  requeue(entries: OutboxEntry[]): void;
  /** The next entry in sending order (not taken). */
  head(): { kind: OutboxEntry['kind']; expiresAt: number } | undefined;
  /** The longest run at the head of the order that `fits` accepts (at most max), taken out. */
  takeRun(max: number, fits: (kind: OutboxEntry['kind'], expiresAt: number) => boolean): OutboxEntry[];
  /** A fleet's holder: the seq through which it read every entry (the store's mark refuses to overtake an older one after it). */
  seenThrough?(): number | undefined;
  /** A fleet's holder, after a mark refused 'unseen': reads what the others accepted now; false when that failed. */
  catchUp?(): Promise<boolean>;
}

/**
 * The store's end of these entries, less those another writer ended first (a fleet's store
 * says which: the lease's next holder ended them and emits their msgs), so the caller emits
 * nothing for them: one outcome per msg, also from a holder that stalled past its lease.
 */
export async function endInStore<T extends End>(store: OutboxStore, ends: T[], warn: (message: string) => void): Promise<T[]> {
  const got = await store.end(ends.map((x) => ({ id: x.entry.id, outcome: x.outcome })));
  const taken = new Set(got?.taken ?? []);
  if (!taken.size) return ends;
  warn(`${taken.size} entr${taken.size === 1 ? 'y' : 'ies'} of the outbox had been ended by another instance of the fleet (this one lost its lease meanwhile): the outcome is emitted there, not here`);
  return ends.filter((x) => !taken.has(x.entry.id));
}

/** Marks refused 'unseen' in a row (each followed by a read) before the drain backs off. */
const UNSEEN_TRIES = 3;

/** Entries per batch for a kind: `batchMaxByKind`, else `batchMax` (a to_multiple body is one call: 1). */
export function batchMaxOf(options: OutboxOptions, kind: OutboxEntry['kind']): number {
  return options.batchMaxByKind?.[kind] ?? (kind === 'multiple' ? 1 : options.batchMax ?? 100);
}

export class Drain {
  phase: OutboxState['phase'] = 'idle';
  problem?: string;
  private readonly unknown = new Map<string, UnknownGroup>();
  private running?: Promise<void>;
  private timer?: NodeJS.Timeout;
  private waitUntil = 0;
  private level = 0;
  private stopped = false;
  /** The batch being sent (taken out of the queue until its outcome is recorded). */
  private inFlight: OutboxEntry[] = [];
  /** Marks refused 'unseen' since the last mark made. */
  private unseen = 0;

  constructor(private readonly ob: DrainHost) {}

  addUnknown(attempt: SendAttempt, entries: OutboxEntry[], askAt = 0, since?: number, code?: UnknownGroup['code']): void {
    const g = this.unknown.get(attempt.id);
    if (g) g.entries.push(...entries);
    else this.unknown.set(attempt.id, { attempt, entries, askAt, ...(since === undefined ? {} : { since }), ...(code ? { code } : {}) });
  }

  unknownCount(): number {
    let n = 0;
    for (const g of this.unknown.values()) n += g.entries.length;
    return n;
  }

  /**
   * When the oldest entry the drain holds was accepted: in the batch in flight (out of the queue
   * until its outcome) or waiting to be reconciled. Without the batch in flight, an outbox whose
   * only entry was being sent said "1 waiting" and no oldest (seen on a slow machine).
   */
  oldestHeldAt(): number | undefined {
    let at: number | undefined;
    for (const e of this.inFlight) if (at === undefined || e.acceptedAt < at) at = e.acceptedAt;
    for (const g of this.unknown.values()) for (const e of g.entries) if (at === undefined || e.acceptedAt < at) at = e.acceptedAt;
    return at;
  }

  /** Starts the drain unless it runs (it looks at the queue again before it stops). */
  kick(): void {
    if (this.running || this.stopped || !this.ob.drains()) return;
    this.running = this.run().finally(() => {
      this.running = undefined;
    });
  }

  /** For good (a fleet's engine that lost the lease makes a new Drain when it gains it again). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
    clearTimeout(this.timer);
  }

  private async run(): Promise<void> {
    while (!this.stopped && this.ob.drains()) {
      const wait = this.waitUntil - this.ob.now();
      if (wait > 0) return this.later(wait, 'backoff');
      if (this.unknown.size) {
        const g = this.unknown.values().next().value as UnknownGroup;
        if (g.askAt > this.ob.now()) return this.later(g.askAt - this.ob.now(), 'reconciling');
        this.phase = 'reconciling';
        await this.reconcile(g);
        continue;
      }
      const first = this.ob.head();
      if (first && first.expiresAt <= this.ob.now()) {
        if (!(await this.ob.expire())) return this.later(1000, 'backoff');
        continue;
      }
      const batch = this.take();
      if (!batch.length) {
        this.phase = 'idle';
        this.ob.changed();
        return;
      }
      this.phase = 'sending';
      await this.send(batch);
    }
  }

  private later(ms: number, phase: OutboxState['phase']): void {
    this.phase = phase;
    this.ob.changed();
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.kick(), Math.max(1, ms));
    this.timer.unref();
  }

  /** The next run of one kind; an entry whose TTL ended is never taken (the expiry ends it). */
  private take(): OutboxEntry[] {
    const now = this.ob.now();
    const first = this.ob.head();
    if (!first) return [];
    return this.ob.takeRun(batchMaxOf(this.ob.options, first.kind), (kind, expiresAt) => kind === first.kind && expiresAt > now);
  }

  private async send(entries: OutboxEntry[]): Promise<void> {
    this.inFlight = entries;
    try {
      await this.sendNow(entries);
    } finally {
      this.inFlight = [];
    }
  }

  private async sendNow(entries: OutboxEntry[]): Promise<void> {
    const sender = this.ob.options.sender;
    const attempt: SendAttempt = { id: makeKey(this.ob.now()), startedAt: this.ob.now() };
    let loaded: Loaded[];
    try {
      loaded = await this.load(entries);
      if (sender.gatewayTime) {
        const t = await sender.gatewayTime();
        if (t !== undefined) attempt.gatewayTime = t;
      }
      attempt.startedAt = this.ob.now();
      await this.ob.store.markSending(entries.map((e) => e.id), attempt, this.ob.seenThrough?.());
      this.unseen = 0;
    } catch (err) {
      this.ob.requeue(entries);
      // An older entry another instance accepted is not read yet: read now, and it goes first.
      if ((err as { reason?: unknown })?.reason === 'unseen' && this.unseen++ < UNSEEN_TRIES && (await this.ob.catchUp?.())) return;
      return this.backoff(reasonOf(err));
    }
    for (const e of entries) {
      e.attempts++;
      e.state = { phase: 'sending', attempt };
    }
    let outcomes: SendOutcome[];
    try {
      // A fleet's holder that stalled after the mark and lost the lease meanwhile sends
      // nothing: the new holder reconciles the mark (nothing created: sent again, once).
      if (this.ob.store.holds && !this.ob.store.holds()) throw new Error('the outbox lease was lost before the request left');
      outcomes = await sender.send({ outbox: this.ob.name, kind: entries[0].kind, attempt, entries: loaded });
    } catch (err) {
      outcomes = entries.map(() => ({ result: 'unknown', reason: reasonOf(err) }));
    }
    await this.settle(entries, attempt, outcomes);
  }

  /** Records what the sender said; what cannot be recorded stays unknown (reconciled later). */
  private async settle(entries: OutboxEntry[], attempt: SendAttempt, outcomes: SendOutcome[]): Promise<void> {
    const at = this.ob.now();
    const ends: End[] = [];
    const retry: OutboxEntry[] = [];
    const unknown: OutboxEntry[] = [];
    let retryAfter: number | undefined;
    let reason = '';
    let code: UnknownGroup['code'];
    entries.forEach((entry, i) => {
      const o = outcomes[i] ?? { result: 'unknown', reason: 'the sender gave no outcome for it' };
      if (o.result === 'retry') {
        retry.push(entry);
        reason = o.reason;
        if (o.retryAfterMs !== undefined) retryAfter = Math.max(retryAfter ?? 0, o.retryAfterMs);
      } else if (o.result === 'unknown') {
        unknown.push(entry);
        reason = o.reason;
        if (o.code === 'TIMEOUT') code = 'TIMEOUT';
      } else ends.push({ entry, outcome: endOf(o, at) });
    });
    await this.record(ends, retry, attempt, at);
    if (unknown.length) this.addUnknown(attempt, unknown, this.ob.now() + this.reconcileEvery(), at, code);
    if (retry.length || unknown.length) this.backoff(reason, retryAfter);
    else this.succeeded();
  }

  /** `since`: when the attempt's call ended (what cannot be recorded is reconciled as of then). */
  private async record(ends: End[], back: OutboxEntry[], attempt: SendAttempt, since?: number, code?: UnknownGroup['code']): Promise<void> {
    const [endDone, backDone] = await Promise.allSettled([
      ends.length ? endInStore(this.ob.store, ends, (m) => this.ob.warn(m)) : [],
      back.length ? this.ob.store.backToWaiting(back.map((e) => e.id)) : undefined,
    ]);
    if (endDone.status === 'fulfilled') this.ob.ended(endDone.value);
    else this.addUnknown(attempt, ends.map((x) => x.entry), this.ob.now() + this.reconcileEvery(), since, code);
    if (backDone.status === 'fulfilled') this.ob.requeue(back);
    else this.addUnknown(attempt, back, this.ob.now() + this.reconcileEvery(), since, code);
    const refused = [endDone, backDone].find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (refused) this.problem = `the outbox store cannot be written: ${reasonOf(refused.reason)}`;
  }

  private async reconcile(g: UnknownGroup): Promise<void> {
    let outcomes: ReconcileOutcome[];
    try {
      const loaded = await this.load(g.entries);
      outcomes = await this.ob.options.reconciler.reconcile(g.attempt, loaded, g.since === undefined ? {} : { unknownSince: g.since });
    } catch (err) {
      this.problem = `reconciling a send whose outcome is unknown: ${reasonOf(err)}`;
      outcomes = [];
    }
    const at = this.ob.now();
    const ends: End[] = [];
    const absent: OutboxEntry[] = [];
    const pending: OutboxEntry[] = [];
    let askAfter = this.reconcileEvery();
    g.entries.forEach((entry, i) => {
      const o = outcomes[i] ?? { result: 'not-yet' };
      if (o.result === 'found') ends.push({ entry, outcome: { result: 'accepted', gatewayId: o.gatewayId, at } });
      else if (o.result === 'unknown') ends.push({ entry, outcome: { result: 'unknown', code: g.code ?? 'NETWORK', message: o.why, at } });
      else if (o.result === 'absent') absent.push(entry);
      else {
        pending.push(entry);
        if (o.retryAfterMs !== undefined) askAfter = o.retryAfterMs;
      }
    });
    this.unknown.delete(g.attempt.id);
    if (pending.length) this.addUnknown(g.attempt, pending, this.ob.now() + askAfter, g.since, g.code);
    await this.record(ends, absent, g.attempt, g.since, g.code);
    this.ob.changed();
  }

  private async load(entries: OutboxEntry[]): Promise<Loaded[]> {
    const items = await this.ob.store.load(entries.map((e) => e.id));
    return entries.map((e) => {
      if (!items.has(e.id)) throw new Error(`entry ${e.id} of msg ${keyOf(e.id)} has no stored item`);
      return { ...e, item: items.get(e.id) as JsonValue };
    });
  }

  private backoff(reason: string, retryAfterMs?: number): void {
    this.level = Math.min(this.level + 1, 30);
    const { first, max } = this.ob.options.backoffMs ?? { first: 1000, max: 60000 };
    const exp = Math.min(max, first * 2 ** (this.level - 1));
    const wait = retryAfterMs !== undefined ? Math.min(max, Math.max(retryAfterMs, first)) : exp * (0.75 + Math.random() / 4);
    this.waitUntil = this.ob.now() + wait;
    this.problem = reason;
    this.ob.changed();
  }

  private succeeded(): void {
    this.level = 0;
    this.waitUntil = 0;
    this.problem = undefined;
  }

  private reconcileEvery(): number {
    return this.ob.options.reconcileEveryMs ?? 5000;
  }
}

function endOf(o: Exclude<SendOutcome, { result: 'retry' | 'unknown' }>, at: number): EntryOutcome {
  if (o.result === 'accepted') return { result: 'accepted', gatewayId: o.gatewayId, at };
  if (o.result === 'rejected') return { result: 'rejected', errorId: o.errorId, errorName: o.errorName, at };
  return { result: 'failed', code: o.code, message: o.message, at };
}

/** A short reason for the status (a GatewayError's code and message; never a stack). */
function reasonOf(err: unknown): string {
  const e = err as { code?: unknown; message?: unknown } | null;
  const code = typeof e?.code === 'string' ? `${e.code}: ` : '';
  const msg = typeof e?.message === 'string' ? e.message : String(err);
  return `${code}${msg}`.slice(0, 200);
}
