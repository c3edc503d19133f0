/**
 * The SEND-group batching a node does against its account: one Batcher per distinct
 * msg.query (only messages with the same query share a call), all sharing the account's
 * SEND limiter. Used by iotgw-terminal-mode and iotgw-cancel.
 */
import { Batcher } from '../api/batcher';
import type { HeldCall, Query } from '../transport/http';
import { queryKey } from './node-kit';
import type { GatewayNode } from './config-nodes';

const EMPTY_QUERY_KEY = queryKey({});

function isEmpty(q: Query): boolean {
  for (const k in q) if (Object.hasOwn(q, k)) return false;
  return true;
}

export type SendCall<I, R> = (g: GatewayNode, items: I[], query: Query, slot: HeldCall, signal: AbortSignal) => Promise<R[]>;

export class SendPool<I, R> {
  private readonly batchers = new Map<string, Batcher<I, R, HeldCall>>();

  constructor(
    private readonly lingerMs: number,
    private readonly signal: AbortSignal,
    private readonly call: SendCall<I, R>,
  ) {}

  submit(g: GatewayNode, items: I[], query: Query): Promise<R[]> {
    // Most messages carry no query: their key is known without sorting and serialising.
    const key = isEmpty(query) ? EMPTY_QUERY_KEY : queryKey(query);
    let b = this.batchers.get(key);
    if (!b) {
      const client = g.client();
      b = new Batcher<I, R, HeldCall>({
        maxBatch: () => g.settings.maxBatchSize,
        lingerMs: this.lingerMs,
        maxQueued: g.settings.maxQueue,
        // The call's auth headers, concurrency slot and SEND rate slot: the batch is cut once a call can leave.
        acquire: (signal) => client.acquireCall('SEND', signal, g.bearerAuth()),
        release: (slot) => slot.release(),
        signal: this.signal,
        send: (batch, slot, signal) => this.call(g, batch, query, slot, signal),
      });
      this.batchers.set(key, b);
    }
    return b.submit(items);
  }

  /** Calls made so far, over all batchers. */
  get calls(): number {
    let n = 0;
    for (const b of this.batchers.values()) n += b.calls;
    return n;
  }
}
