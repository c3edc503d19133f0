/**
 * The waiting entries in sending order: one FIFO per priority (0 first), each sorted by
 * seq. An entry taken for a send and given back (a retry, a reconciliation that found
 * nothing) goes back to its place, so nothing overtakes it.
 */
import type { OutboxEntry } from './types';

export const PRIORITIES = 10;

class Fifo {
  items: OutboxEntry[] = [];
  head = 0;

  get size(): number {
    return this.items.length - this.head;
  }

  front(): OutboxEntry | undefined {
    return this.items[this.head];
  }

  shift(): OutboxEntry | undefined {
    const e = this.items[this.head];
    if (e === undefined) return undefined;
    this.items[this.head++] = undefined as unknown as OutboxEntry;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return e;
  }

  /** Puts an entry in its place by seq (the common cases, last and first, without a search). */
  insert(e: OutboxEntry): void {
    const n = this.items.length;
    if (this.head === n || this.items[n - 1].seq < e.seq) {
      this.items.push(e);
      return;
    }
    if (this.head > 0 && e.seq < this.items[this.head].seq) {
      this.items[--this.head] = e;
      return;
    }
    let lo = this.head;
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.items[mid].seq < e.seq) lo = mid + 1;
      else hi = mid;
    }
    this.items.splice(lo, 0, e);
  }

  /** Takes out the entries `out` says, keeping the rest in order. */
  removeWhere(out: (e: OutboxEntry) => boolean): OutboxEntry[] {
    const gone: OutboxEntry[] = [];
    const kept: OutboxEntry[] = [];
    for (let i = this.head; i < this.items.length; i++) (out(this.items[i]) ? gone : kept).push(this.items[i]);
    this.items = kept;
    this.head = 0;
    return gone;
  }
}

export class SendQueue {
  private readonly fifos: Fifo[] = Array.from({ length: PRIORITIES }, () => new Fifo());

  get size(): number {
    let n = 0;
    for (const f of this.fifos) n += f.size;
    return n;
  }

  insert(e: OutboxEntry): void {
    this.fifos[e.priority].insert(e);
  }

  /** The next entry in sending order (not taken). */
  peek(): OutboxEntry | undefined {
    for (const f of this.fifos) {
      const e = f.front();
      if (e) return e;
    }
    return undefined;
  }

  /**
   * The longest run of entries at the head of the order that `fits` accepts (one kind),
   * at most `max`, taken out of the queue. The run stops at the first entry `fits` refuses.
   */
  takeRun(max: number, fits: (e: OutboxEntry) => boolean): OutboxEntry[] {
    const run: OutboxEntry[] = [];
    for (const f of this.fifos) {
      for (;;) {
        const e = f.front();
        if (!e) break;
        if (run.length >= max || !fits(e)) return run;
        run.push(f.shift() as OutboxEntry);
      }
    }
    return run;
  }

  /** The oldest entry (lowest seq, any priority): what drop-oldest ends first. Taken out. */
  takeOldest(): OutboxEntry | undefined {
    let best: Fifo | undefined;
    for (const f of this.fifos) {
      const e = f.front();
      if (e && (!best || e.seq < (best.front() as OutboxEntry).seq)) best = f;
    }
    return best?.shift();
  }

  /** The earliest acceptance time of an entry waiting. */
  oldestAt(): number | undefined {
    let at: number | undefined;
    for (const f of this.fifos) {
      const e = f.front();
      if (e && (at === undefined || e.acceptedAt < at)) at = e.acceptedAt;
    }
    return at;
  }

  /** Takes out every entry `out` says (e.g. expired), in order. */
  removeWhere(out: (e: OutboxEntry) => boolean): OutboxEntry[] {
    const gone: OutboxEntry[] = [];
    for (const f of this.fifos) for (const e of f.removeWhere(out)) gone.push(e);
    return gone;
  }

  /** The earliest expiresAt of an entry waiting (a walk over all of them). */
  nextExpiry(): number {
    let at = Infinity;
    for (const f of this.fifos) for (let i = f.head; i < f.items.length; i++) at = Math.min(at, f.items[i].expiresAt);
    return at;
  }
}
