/** The simulator's throttle: a sliding window of arrival times (server.ts re-exports it). */

export class SimWindow {
  private stamps: number[] = [];
  constructor(
    public limit: number,
    public windowMs: number,
  ) {}
  /** Records a call if under the limit; false when over. */
  take(now = Date.now()): boolean {
    if (this.limit <= 0 || this.windowMs <= 0) return true;
    const cutoff = now - this.windowMs;
    while (this.stamps.length && this.stamps[0]! <= cutoff) this.stamps.shift();
    if (this.stamps.length >= this.limit) return false;
    this.stamps.push(now);
    return true;
  }
  /** Milliseconds until a slot frees. */
  retryAfterMs(now = Date.now()): number {
    return this.stamps.length ? Math.max(0, this.stamps[0]! + this.windowMs - now) : 0;
  }
}

