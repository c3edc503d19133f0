/**
 * In-process RateBudget: the existing SlidingWindowLimiter per throttle group and the
 * Semaphore of requests in flight. The account's ApiClient is handed the same gate
 * objects (ClientOptions.gates), so the budget and the client count the same slots.
 */
import { Semaphore, SlidingWindowLimiter } from '../../transport/limiter';
import type { GroupLimit } from '../../transport/http';
import type { RateBudget, Release } from '../types';

const none: Release = () => {};

export class MemoryRateBudget implements RateBudget {
  readonly concurrency: Semaphore;
  readonly limiters = new Map<string, SlidingWindowLimiter>();

  constructor(opts: { label: string; maxConcurrent: number; maxQueue: number; groups?: Record<string, GroupLimit> }) {
    this.concurrency = new Semaphore(opts.maxConcurrent, opts.maxQueue, `${opts.label}: concurrency`);
    for (const [name, g] of Object.entries(opts.groups ?? {})) {
      this.limiters.set(name, new SlidingWindowLimiter(g.calls, g.windowMs, opts.maxQueue, `${opts.label}: ${name} rate limit`));
    }
  }

  /** The gates in the form ApiClient takes them (ClientOptions.gates). */
  get gates(): { concurrency: Semaphore; limiters: Map<string, SlidingWindowLimiter> } {
    return { concurrency: this.concurrency, limiters: this.limiters };
  }

  acquireConcurrency(signal?: AbortSignal): Promise<Release> {
    return this.concurrency.acquire(signal);
  }

  acquireRate(group: string, signal?: AbortSignal): Promise<Release> {
    const lim = this.limiters.get(group);
    return lim ? lim.acquire(signal) : Promise.resolve(none);
  }

  penalize(group: string, ms: number): void {
    this.limiters.get(group)?.penalize(ms);
  }

  msUntilFree(group: string): number {
    return this.limiters.get(group)?.msUntilFree() ?? 0;
  }

  windowMs(group: string): number {
    const lim = this.limiters.get(group);
    return lim?.enabled ? lim.window : 0;
  }

  async close(): Promise<void> {
    this.concurrency.close();
    for (const l of this.limiters.values()) l.close();
  }
}
