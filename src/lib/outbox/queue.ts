/**
 * The waiting entries in sending order: one FIFO per priority (0 first), each sorted by
 * seq. An entry taken for a send and given back (a retry, a reconciliation that found
 * nothing) goes back to its place, so nothing overtakes it. The FIFOs hold slots of the
 * engine's EntryTable (small integers: 8 bytes an entry), never objects.
 */
import type { EntryTable } from './table';

export const PRIORITIES = 10;

class Fifo {
  items: number[] = [];
  head = 0;

  constructor(private readonly t: EntryTable) {}

  get size(): number {
    return this.items.length - this.head;
  }

  front(): number {
    return this.head < this.items.length ? this.items[this.head] : -1;
  }

  shift(): number {
    if (this.head >= this.items.length) return -1;
    const s = this.items[this.head++];
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return s;
  }

  /** Puts a slot in its place by seq (the common cases, last and first, without a search). */
  insert(s: number): void {
    const seq = this.t.seq;
    const n = this.items.length;
    if (this.head === n || seq.get(this.items[n - 1]) < seq.get(s)) {
      this.items.push(s);
      return;
    }
    if (this.head > 0 && seq.get(s) < seq.get(this.items[this.head])) {
      this.items[--this.head] = s;
      return;
    }
    let lo = this.head;
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (seq.get(this.items[mid]) < seq.get(s)) lo = mid + 1;
      else hi = mid;
    }
    this.items.splice(lo, 0, s);
  }

  /** Takes out the slots `out` says, keeping the rest in order. */
  removeWhere(out: (s: number) => boolean): number[] {
    const gone: number[] = [];
    const kept: number[] = [];
    for (let i = this.head; i < this.items.length; i++) (out(this.items[i]) ? gone : kept).push(this.items[i]);
    this.items = kept;
    this.head = 0;
    return gone;
  }

  /** After the table moved its slots. */
  remap(map: Int32Array): void {
    const next: number[] = [];
    for (let i = this.head; i < this.items.length; i++) next.push(map[this.items[i]]);
    this.items = next;
    this.head = 0;
  }
}

export class SendQueue {
  private readonly fifos: Fifo[];

  constructor(private readonly t: EntryTable) {
    this.fifos = Array.from({ length: PRIORITIES }, () => new Fifo(t));
  }

  get size(): number {
    let n = 0;
    for (const f of this.fifos) n += f.size;
    return n;
  }

  insert(slot: number): void {
    this.fifos[this.t.priority.get(slot)].insert(slot);
  }

  /** The next slot in sending order (not taken), or -1. */
  peek(): number {
    for (const f of this.fifos) {
      const s = f.front();
      if (s >= 0) return s;
    }
    return -1;
  }

  /**
   * The longest run of slots at the head of the order that `fits` accepts (one kind), at
   * most `max`, taken out of the queue. The run stops at the first slot `fits` refuses.
   */
  takeRun(max: number, fits: (s: number) => boolean): number[] {
    const run: number[] = [];
    for (const f of this.fifos) {
      for (;;) {
        const s = f.front();
        if (s < 0) break;
        if (run.length >= max || !fits(s)) return run;
        run.push(f.shift());
      }
    }
    return run;
  }

  /** The oldest slot (lowest seq, any priority): what drop-oldest ends first. Taken out; -1 when none. */
  takeOldest(): number {
    let best: Fifo | undefined;
    for (const f of this.fifos) {
      const s = f.front();
      if (s >= 0 && (!best || this.t.seq.get(s) < this.t.seq.get(best.front()))) best = f;
    }
    return best ? best.shift() : -1;
  }

  /** The earliest acceptance time of an entry waiting. */
  oldestAt(): number | undefined {
    let at: number | undefined;
    for (const f of this.fifos) {
      const s = f.front();
      if (s < 0) continue;
      const a = this.t.acceptedAt.get(this.t.firstOf(s));
      if (at === undefined || a < at) at = a;
    }
    return at;
  }

  /** Takes out every slot `out` says (e.g. expired), in order. */
  removeWhere(out: (s: number) => boolean): number[] {
    const gone: number[] = [];
    for (const f of this.fifos) for (const s of f.removeWhere(out)) gone.push(s);
    return gone;
  }

  /** The earliest expiresAt of an entry waiting (a walk over all of them). */
  nextExpiry(): number {
    let at = Infinity;
    const x = this.t.expiresAt;
    for (const f of this.fifos) for (let i = f.head; i < f.items.length; i++) if (x.get(f.items[i]) < at) at = x.get(f.items[i]);
    return at;
  }

  remap(map: Int32Array): void {
    for (const f of this.fifos) f.remap(map);
  }
}

/**
 * drop-oldest: takes the oldest waiting entries out of `queue` until `roomAfter(entries freed,
 * bytes freed)` says the new msg fits (a msg's bytes are freed with its last open entry).
 */
export function takeOldestUntil(t: EntryTable, queue: SendQueue, roomAfter: (freeEntries: number, freeBytes: number) => boolean): number[] {
  const victims: number[] = [];
  const open = new Map<number, number>();
  let freeEntries = 0;
  let freeBytes = 0;
  while (!roomAfter(freeEntries, freeBytes)) {
    const v = queue.takeOldest();
    if (v < 0) break;
    victims.push(v);
    freeEntries++;
    const first = t.firstOf(v);
    const left = (open.get(first) ?? t.open.get(first)) - 1;
    open.set(first, left);
    if (left === 0) freeBytes += t.bytes.get(first);
  }
  return victims;
}
