/** In-process FeedLease (always active: one instance polls) and MarkStore (a Map). */
import { EventEmitter } from 'node:events';
import type { FeedLease, FeedMark, MarkStore } from '../types';

export class MemoryFeedLease extends EventEmitter implements FeedLease {
  private readonly feeds = new Set<string>();
  private fence = 0;

  async acquire(feed: string, signal?: AbortSignal): Promise<number> {
    if (signal?.aborted) throw signal.reason;
    if (!this.feeds.has(feed)) {
      this.feeds.add(feed);
      this.emit('state', feed, 'active');
    }
    return ++this.fence;
  }

  held(feed: string): boolean {
    return this.feeds.has(feed);
  }

  async release(feed: string): Promise<void> {
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
