/** In-process FeedLease (always active: one instance polls) and MarkStore (a Map). */
import { EventEmitter } from 'node:events';
import type { FeedLease, FeedMark, MarkStore } from '../types';

export class MemoryFeedLease extends EventEmitter implements FeedLease {
  private readonly feeds = new Set<string>();
  /** In-process: no other instance holds it. */
  readonly shared = false;
  private fences = 0;
  private readonly held_ = new Map<string, number>();

  async acquire(feed: string, signal?: AbortSignal): Promise<number> {
    if (signal?.aborted) throw signal.reason;
    if (!this.feeds.has(feed)) {
      this.feeds.add(feed);
      this.emit('state', feed, 'active');
    }
    const f = ++this.fences;
    this.held_.set(feed, f);
    return f;
  }

  held(feed: string): boolean {
    return this.feeds.has(feed);
  }

  fence(feed: string): number | undefined {
    return this.held_.get(feed);
  }

  async release(feed: string): Promise<void> {
    this.held_.delete(feed);
    if (this.feeds.delete(feed)) this.emit('state', feed, 'down');
  }
}

/** Marks in memory (lost on restart); a node that needs durability stores its own. */
export class MemoryMarkStore implements MarkStore {
  private readonly marks = new Map<string, FeedMark>();

  async load(feed: string): Promise<FeedMark | undefined> {
    const m = this.marks.get(feed);
    return m && { ...m, seen: [...m.seen] };
  }

  async save(feed: string, mark: FeedMark): Promise<void> {
    this.marks.set(feed, { ...mark, seen: [...mark.seen] });
  }
}
