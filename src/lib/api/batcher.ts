/**
 * Cross-message batching for the SEND group. A batch is cut only when a call can
 * actually leave: `acquire` has resolved with the call's slots (concurrency, then the
 * group's rate slot). Items from every message that arrives while no call could leave
 * go out together in calls of up to `maxBatch` items; each result goes back to the
 * message and position its item came from. A free slot with a partial batch sends at
 * once; the one exception is a batch still filling: while items keep arriving turn
 * after turn of the event loop (a burst being delivered), it waits for them, at most
 * `lingerMs` and never past `maxBatch`.
 *
 * A message whose items span several calls ends when all of them have settled: with
 * every result in input order, or, if one call failed, with that error and the results
 * of the calls that did succeed attached as `err.partial` (so nothing the gateway
 * accepted goes unreported; `err.partial.failed` lists the input positions without one).
 * Its items still queued are not sent.
 */
import { GatewayError, quote } from '../common/errors';
import { partialError, unanswered, type PartialResults } from './partial';

export type { PartialResults } from './partial';

export interface BatcherOptions<I, R, S> {
  maxBatch: () => number;
  /** Longest a partial batch holding its slots waits while items are still arriving (ms; 0: never). */
  lingerMs: number;
  /** Most items waiting; beyond it a message is refused with RATE_LIMITED. */
  maxQueued: number;
  /** Waits until a call may leave (its slots held); resolves with what `send` gets. */
  acquire: (signal: AbortSignal) => Promise<S>;
  /** Frees what `acquire` gave when no call is made with it. */
  release: (slot: S) => void;
  /** Sends one call with the slot held (and frees it); returns one result per item, in order. */
  send: (items: I[], slot: S, signal: AbortSignal) => Promise<R[]>;
  signal: AbortSignal;
}

class Owner<R> {
  results: Array<R | undefined>;
  queued: number;
  inFlight = 0;
  error: GatewayError | undefined;
  settled = false;
  constructor(
    n: number,
    readonly resolve: (r: R[]) => void,
    readonly reject: (e: GatewayError) => void,
  ) {
    this.results = new Array<R | undefined>(n);
    this.queued = n;
  }
  maybeSettle(): void {
    if (this.settled || this.inFlight > 0) return;
    if (this.error) {
      this.settled = true;
      // Each message gets its own error object: one failed call can end several messages.
      const partial: PartialResults<R> | undefined = this.results.some((r) => r !== undefined) ? { results: this.results, failed: unanswered(this.results) } : undefined;
      const err = partialError(this.error, partial);
      this.reject(err);
    } else if (this.queued === 0) {
      this.settled = true;
      this.resolve(this.results as R[]);
    }
  }
}

interface Entry<I, R> {
  item: I;
  owner: Owner<R>;
  index: number;
}

export class Batcher<I, R, S = () => void> {
  private queue: Array<Entry<I, R>> = [];
  private running = false;
  private readonly inFlight = new Set<Promise<void>>();
  /** Calls made (for status and tests). */
  calls = 0;

  constructor(private readonly opts: BatcherOptions<I, R, S>) {
    opts.signal.addEventListener('abort', () => this.abortQueued(), { once: true });
  }

  get queued(): number {
    return this.queue.length;
  }

  submit(items: I[]): Promise<R[]> {
    if (this.opts.signal.aborted) return Promise.reject(this.closedError());
    if (items.length === 0) return Promise.resolve([]);
    if (this.queue.length + items.length > this.opts.maxQueued) {
      return Promise.reject(
        new GatewayError(
          'RATE_LIMITED',
          `queue full: ${this.queue.length} items already wait for the gateway's SEND limit (at most ${this.opts.maxQueued}); this message was not sent`,
        ),
      );
    }
    return new Promise<R[]>((resolve, reject) => {
      const owner = new Owner<R>(items.length, resolve, reject);
      items.forEach((item, index) => this.queue.push({ item, owner, index }));
      void this.run();
    });
  }

  private closedError(): GatewayError {
    return new GatewayError('NETWORK', 'not sent: the node was closed (redeploy or shutdown) before a SEND slot was free');
  }

  private abortQueued(): void {
    const err = this.closedError();
    for (const e of this.queue.splice(0)) {
      e.owner.queued--;
      e.owner.error ??= err;
      e.owner.maybeSettle();
    }
  }

  private async run(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      while (this.queue.length > 0 && !this.opts.signal.aborted) {
        let slot: S;
        try {
          slot = await this.opts.acquire(this.opts.signal);
        } catch (err) {
          this.failQueued(err instanceof GatewayError ? err : this.closedError());
          break;
        }
        // Only a partial batch with a linger waits (an await per call costs a turn for nothing).
        if (this.opts.lingerMs > 0 && this.queue.length < this.opts.maxBatch()) await this.fill();
        const batch = this.opts.signal.aborted ? [] : this.queue.splice(0, this.opts.maxBatch());
        if (batch.length === 0) {
          this.opts.release(slot);
          continue;
        }
        const p = this.dispatch(batch, slot);
        this.inFlight.add(p);
        void p.finally(() => this.inFlight.delete(p));
      }
    } finally {
      this.running = false;
    }
  }

  /**
   * With a call's slots held and a partial batch: wait while the queue still grows from
   * one event-loop turn to the next (a burst is being delivered), up to `lingerMs`.
   */
  private async fill(): Promise<void> {
    const max = this.opts.maxBatch();
    if (this.opts.lingerMs <= 0 || this.queue.length >= max) return;
    const deadline = Date.now() + this.opts.lingerMs;
    let before: number;
    do {
      before = this.queue.length;
      await new Promise<void>((r) => setImmediate(r));
    } while (this.queue.length > before && this.queue.length < max && Date.now() < deadline && !this.opts.signal.aborted);
  }

  private failQueued(err: GatewayError): void {
    for (const e of this.queue.splice(0)) {
      e.owner.queued--;
      e.owner.error ??= err;
      e.owner.maybeSettle();
    }
  }

  private async dispatch(batch: Array<Entry<I, R>>, slot: S): Promise<void> {
    const owners = new Set(batch.map((e) => e.owner));
    for (const e of batch) e.owner.queued--;
    for (const o of owners) o.inFlight++;
    this.calls++;
    try {
      const results = await this.opts.send(
        batch.map((e) => e.item),
        slot,
        this.opts.signal,
      );
      if (results.length !== batch.length) {
        throw new GatewayError('BAD_RESPONSE', `the gateway answered ${results.length} results for ${batch.length} items`);
      }
      batch.forEach((e, i) => {
        e.owner.results[e.index] = results[i];
      });
    } catch (err) {
      const ge = err instanceof GatewayError ? err : new GatewayError('NETWORK', quote((err as Error)?.message ?? err));
      for (const o of owners) {
        o.error ??= ge;
        // Its items not yet sent stay unsent.
        const before = this.queue.length;
        this.queue = this.queue.filter((e) => e.owner !== o);
        o.queued -= before - this.queue.length;
      }
    } finally {
      // `send` frees the slot itself; this only covers a send that failed before it could.
      this.opts.release(slot);
      for (const o of owners) {
        o.inFlight--;
        o.maybeSettle();
      }
    }
  }

  /** Waits for the calls in flight (used when closing). */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
  }
}
