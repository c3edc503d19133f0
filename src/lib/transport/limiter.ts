/**
 * Client-side limits of one account: a sliding-window rate limiter per throttle group
 * and a concurrency cap. Both queue waiters in FIFO order with a bounded queue; a full
 * queue refuses at once with RATE_LIMITED instead of growing without bound.
 */
import { GatewayError } from '../common/errors';

interface Waiter {
  resolve: (release: () => void) => void;
  /** Only waits until a slot could be granted; takes nothing. */
  peek?: boolean;
  reject: (err: unknown) => void;
  signal?: AbortSignal;
  onAbort?: () => void;
}

abstract class FifoGate {
  protected readonly waiters: Waiter[] = [];
  protected closed = false;

  constructor(
    protected readonly maxQueue: number,
    protected readonly label: string,
  ) {}

  get queued(): number {
    return this.waiters.length;
  }

  /** Resolves with a release function once a slot is granted. */
  acquire(signal?: AbortSignal): Promise<() => void> {
    if (this.closed) return Promise.reject(new GatewayError('NETWORK', `${this.label}: the account's client is closed`));
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.waiters.length === 0 && this.canGrant()) return Promise.resolve(this.grant());
    if (this.waiters.length >= this.maxQueue) {
      return Promise.reject(
        new GatewayError(
          'RATE_LIMITED',
          `${this.label}: queue full (${this.maxQueue} requests already waiting); the message was not sent, slow the flow down or raise the queue size`,
        ),
      );
    }
    return new Promise((resolve, reject) => this.enqueue({ resolve, reject, signal }));
  }

  /** Queues a waiter (removed again if its signal aborts) and grants what can be granted. */
  private enqueue(w: Waiter): void {
    const signal = w.signal;
    if (signal) {
      w.onAbort = () => {
        const i = this.waiters.indexOf(w);
        if (i >= 0) this.waiters.splice(i, 1);
        w.reject(signal.reason);
        this.pump();
      };
      signal.addEventListener('abort', w.onAbort, { once: true });
    }
    this.waiters.push(w);
    this.pump();
  }

  /** A slot now, if one is free (waiters or not), else undefined. */
  tryAcquire(): (() => void) | undefined {
    return !this.closed && this.canGrant() ? this.grant() : undefined;
  }

  /**
   * Resolves once a slot could be granted, taking none (the caller then takes another
   * slot first and `tryAcquire`s this one, waiting here again if it is gone by then).
   */
  ready(signal?: AbortSignal): Promise<void> {
    if (this.closed) return Promise.reject(new GatewayError('NETWORK', `${this.label}: the account's client is closed`));
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.canGrant()) return Promise.resolve();
    return new Promise((resolve, reject) => this.enqueue({ resolve: () => resolve(), reject, signal, peek: true }));
  }

  protected pump(): void {
    while (this.waiters.length > 0 && this.canGrant()) {
      const w = this.waiters.shift()!;
      if (w.signal && w.onAbort) w.signal.removeEventListener('abort', w.onAbort);
      w.resolve(w.peek ? () => {} : this.grant());
    }
    this.schedule();
  }

  close(): void {
    this.closed = true;
    const err = new GatewayError('NETWORK', `${this.label}: the account's client was closed before the request was sent`);
    for (const w of this.waiters.splice(0)) {
      if (w.signal && w.onAbort) w.signal.removeEventListener('abort', w.onAbort);
      w.reject(err);
    }
    this.unschedule();
  }

  protected abstract canGrant(): boolean;
  protected abstract grant(): () => void;
  protected schedule(): void {}
  protected unschedule(): void {}
}

/** At most `limit` concurrent holders. */
export class Semaphore extends FifoGate {
  private active = 0;

  constructor(
    private readonly limit: number,
    maxQueue: number,
    label = 'concurrency',
  ) {
    super(maxQueue, label);
  }

  get inFlight(): number {
    return this.active;
  }

  protected canGrant(): boolean {
    return this.limit <= 0 || this.active < this.limit;
  }

  protected grant(): () => void {
    this.active++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.active--;
      this.pump();
    };
  }
}

/**
 * At most `limit` calls in any `windowMs`. A call occupies its slot from the moment it
 * is granted; when it completes, the slot's time becomes the completion time. The server
 * saw the call no later than that, so the window we keep is never shorter than the
 * server's: waiting for our own window cannot provoke a 429.
 */
export class SlidingWindowLimiter extends FifoGate {
  /** Completion times; Infinity while the call is still in flight. */
  private stamps: number[] = [];
  private blockedUntil = 0;
  private timer: NodeJS.Timeout | undefined;
  /** Calls in flight while the limiter is off (no window to keep their stamps in). */
  private open = 0;

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    maxQueue: number,
    label: string,
    private readonly now: () => number = Date.now,
  ) {
    super(maxQueue, label);
  }

  get enabled(): boolean {
    return this.limit > 0 && this.windowMs > 0;
  }

  get window(): number {
    return this.windowMs;
  }

  private prune(now: number): void {
    const cutoff = now - this.windowMs;
    if (this.stamps.length && this.stamps[0]! <= cutoff) {
      this.stamps = this.stamps.filter((t) => t > cutoff);
    }
  }

  protected canGrant(): boolean {
    if (!this.enabled) return true;
    const now = this.now();
    if (now < this.blockedUntil) return false;
    this.prune(now);
    return this.stamps.length < this.limit;
  }

  protected grant(): () => void {
    if (!this.enabled) {
      this.open++;
      let done = false;
      return () => {
        if (done) return;
        done = true;
        this.open--;
      };
    }
    // Keep the array sorted: in-flight stamps (Infinity) sort last.
    this.stamps.push(Infinity);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const i = this.stamps.indexOf(Infinity);
      if (i >= 0) this.stamps.splice(i, 1);
      const t = this.now();
      // insert in order
      let j = this.stamps.length;
      while (j > 0 && this.stamps[j - 1]! > t) j--;
      this.stamps.splice(j, 0, t);
      this.pump();
    };
  }

  /** Calls counted in the window now (in flight included); 0 while the limiter is off. Computed on read. */
  get used(): number {
    if (!this.enabled) return 0;
    this.prune(this.now());
    return this.stamps.length;
  }

  /** Calls holding a slot (in flight): the stamps not yet completed sort last, as Infinity. */
  get inFlightCalls(): number {
    if (!this.enabled) return this.open;
    let n = 0;
    for (let i = this.stamps.length - 1; i >= 0 && this.stamps[i] === Infinity; i--) n++;
    return n;
  }

  /** After a 429 or 503: grant nothing before `ms` from now. */
  penalize(ms: number): void {
    if (!this.enabled) return;
    this.blockedUntil = Math.max(this.blockedUntil, this.now() + ms);
    this.schedule();
  }

  /** Milliseconds until the oldest completed call leaves the window (or the block ends). */
  msUntilFree(): number {
    const now = this.now();
    if (!this.enabled) return 0;
    const waits: number[] = [];
    if (now < this.blockedUntil) waits.push(this.blockedUntil - now);
    this.prune(now);
    if (this.stamps.length >= this.limit) {
      const oldest = this.stamps[this.stamps.length - this.limit];
      if (oldest !== undefined && Number.isFinite(oldest)) waits.push(oldest + this.windowMs - now);
    }
    return waits.length ? Math.max(0, ...waits) : 0;
  }

  protected override schedule(): void {
    this.unschedule();
    if (this.closed || this.waiters.length === 0 || !this.enabled) return;
    const now = this.now();
    let wake = Infinity;
    if (now < this.blockedUntil) wake = this.blockedUntil;
    else {
      this.prune(now);
      const oldest = this.stamps[this.stamps.length - this.limit];
      if (oldest !== undefined && Number.isFinite(oldest)) wake = oldest + this.windowMs;
    }
    if (!Number.isFinite(wake)) return; // woken by a release
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.pump();
    }, Math.max(1, wake - now + 1));
  }

  protected override unschedule(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
