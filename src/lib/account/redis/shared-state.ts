/**
 * The Redis shared-state backend (issue 19) for the account factory (../shared.ts): with
 * `redis` set on an `iotgw-gateway` / `iotgw-app`, the account's rate budget, bearer token,
 * feed marks and feed lease live in Redis, shared by every instance naming the same account.
 */
import type { Semaphore, SlidingWindowLimiter } from '../../transport/limiter';
import type { AccountKey, FeedLease, MarkStore, OutboxBounds, RateBudget, SharedState, TokenSource } from '../types';
import type { OutboxStore } from '../../outbox/types';
import type { RedisConnection } from './connection';
import { AccountKeys } from './keys';
import { RedisRateBudget, type RateGroup } from './rate-budget';
import { RedisTokenSource } from './token-source';
import { RedisFeedLease } from './feed-lease';
import { RedisMarkStore } from './mark-store';
import { RedisOutboxStore } from './outbox-store';
import { fleetUsed } from './figures';

/** What the backend needs of the account beyond its key. */
export interface RedisAccountSettings {
  groups: Record<string, RateGroup>;
  maxConcurrent: number;
  timeoutMs: number;
  /** Lifetime assumed for a token whose source does not tell it (ms). Default 10 min. */
  tokenLifetimeMs?: number;
  leaseMs?: number;
  marginMs?: number;
}

/**
 * The Redis budget in the form ApiClient takes its gates (ClientOptions.gates: a semaphore
 * and a limiter per group), so the account's client counts its calls in Redis.
 */
export function redisGates(budget: RedisRateBudget, groups: string[]): { concurrency: Semaphore; limiters: Map<string, SlidingWindowLimiter> } {
  let inFlight = 0;
  const concurrency = {
    get inFlight() {
      return inFlight;
    },
    queued: 0,
    async acquire(signal?: AbortSignal) {
      const release = await budget.acquireConcurrency(signal);
      inFlight++;
      let done = false;
      return () => {
        if (done) return;
        done = true;
        inFlight--;
        release();
      };
    },
    close() {
      void budget.close();
    },
  };
  const limiters = new Map<string, unknown>();
  for (const g of groups) limiters.set(g, redisLimiter(budget, g));
  return { concurrency: concurrency as unknown as Semaphore, limiters: limiters as Map<string, SlidingWindowLimiter> };
}

/** The Redis budget of group `g` in the form of a SlidingWindowLimiter (for redisGates). */
function redisLimiter(budget: RedisRateBudget, g: string): unknown {
  // For the account's figures: this instance's calls waiting for and holding a slot (two counters).
  let waiting = 0;
  let inFlightCalls = 0;
  return {
    get enabled() {
      return budget.windowMs(g) > 0;
    },
    get window() {
      return budget.windowMs(g);
    },
    queued: 0,
    get waiting() {
      return waiting;
    },
    get inFlightCalls() {
      return inFlightCalls;
    },
    acquire: async (signal?: AbortSignal) => {
      waiting++;
      let release: () => void;
      try {
        release = await budget.acquireRate(g, signal);
      } finally {
        waiting--;
      }
      inFlightCalls++;
      let done = false;
      return () => {
        if (done) return;
        done = true;
        inFlightCalls--;
        release();
      };
    },
    penalize: (ms: number) => budget.penalize(g, ms),
    msUntilFree: () => budget.msUntilFree(g),
    close: () => {},
  };
}

/** A RateBudget that also hands ApiClient its gates (see account.ts). */
export class GatedRedisRateBudget extends RedisRateBudget {
  readonly gates: { concurrency: Semaphore; limiters: Map<string, SlidingWindowLimiter> };
  /** Calls counted now in each group's window by the whole fleet (the account's figures; ./figures.ts). */
  readonly fleetUsed: () => Promise<Record<string, number>>;
  constructor(...args: ConstructorParameters<typeof RedisRateBudget>) {
    super(...args);
    this.gates = redisGates(this, Object.keys(args[2].groups));
    const [conn, keys, opts] = args;
    this.fleetUsed = () => fleetUsed(conn, keys, opts.groups, opts.timeoutMs);
  }
}

/**
 * One mark store per account (`marksOf(account)`), so that its lease's looks while standing by
 * feed the store's memory of the marks. A holder that finds a mark gone waits a lease time
 * for the others to write back theirs.
 */
function markStores(conn: RedisConnection, keysOf: (a: AccountKey) => AccountKeys, settings: (a: AccountKey) => RedisAccountSettings): (a: AccountKey) => RedisMarkStore {
  const stores = new Map<string, RedisMarkStore>();
  return (a) => {
    const keys = keysOf(a);
    const id = `${keys.prefix}${keys.hash}`;
    let store = stores.get(id);
    if (!store) {
      const s = settings(a);
      store = new RedisMarkStore(conn, keys, { timeoutMs: s.timeoutMs, settleMs: s.leaseMs ?? 10_000 });
      stores.set(id, store);
    }
    return store;
  };
}

/**
 * The fleet's outbox `name` of an account (outbox-store.ts; SharedState.outboxStore): a new
 * store per call, in the outbox's drain lease from its open().
 */
function outboxStores(conn: RedisConnection, keysOf: (a: AccountKey) => AccountKeys, settings: (a: AccountKey) => RedisAccountSettings, instanceId?: string) {
  return (account: AccountKey, name: string, bounds: OutboxBounds = {}): OutboxStore => {
    const s = settings(account);
    return new RedisOutboxStore(conn, keysOf(account), name, {
      timeoutMs: s.timeoutMs,
      ...bounds,
      ...(s.leaseMs !== undefined ? { leaseMs: s.leaseMs } : {}),
      ...(instanceId ? { instanceId } : {}),
    });
  };
}

export function redisSharedState(conn: RedisConnection, settings: (account: AccountKey) => RedisAccountSettings, instanceId?: string): SharedState {
  // The account is its base URL and credentials (issue 25): the client ID, else a hash of
  // the static token or login; the config node's id only when it has no credentials at all.
  const keysOf = (a: AccountKey) => {
    const identity = a.principal ? '' : a.identity?.() ?? '';
    return AccountKeys.of(conn.keyPrefix, { baseUrl: a.baseUrl, ...(a.principal ? { clientId: a.principal } : identity ? { token: identity } : { clientId: `${a.kind}:${a.id}` }) });
  };
  const marksOf = markStores(conn, keysOf, settings);
  return {
    rateBudget(account: AccountKey, _local: RateBudget): RateBudget {
      const s = settings(account);
      return new GatedRedisRateBudget(conn, keysOf(account), {
        groups: s.groups,
        maxConcurrent: s.maxConcurrent,
        timeoutMs: s.timeoutMs,
        ...(s.leaseMs !== undefined ? { leaseMs: s.leaseMs } : {}),
        ...(s.marginMs !== undefined ? { marginMs: s.marginMs } : {}),
        label: `${account.kind} ${account.baseUrl}`,
      });
    },
    tokenSource(account: AccountKey, name: string, local: TokenSource): TokenSource {
      const s = settings(account);
      const keys = keysOf(account);
      const lifetime = s.tokenLifetimeMs ?? 600_000;
      let last: string | undefined;
      // The fetch for the fleet goes through the account's own provider: drop what it cached, then ask it.
      const fetcher = async (signal?: AbortSignal) => {
        if (last) local.invalidate(last);
        const token = await local.token(signal);
        last = token;
        // The lifetime the service gave this token (expires_in, less the provider's skew);
        // the setting's lifetime only when the service gave none.
        const left = local.expiresInMs?.();
        return { token, expiresInMs: left !== undefined && Number.isFinite(left) && left > 0 ? left : lifetime };
      };
      const binding = account.binding?.(name) ?? '';
      return new RedisTokenSource(conn, new AccountKeys(keys.prefix, keys.hash), fetcher, { timeoutMs: s.timeoutMs, skewMs: 0, ...(binding ? { binding } : {}) }).named(name);
    },
    markStore(account: AccountKey, _local: MarkStore): MarkStore {
      return marksOf(account);
    },
    feedLease(account: AccountKey, _local: FeedLease): FeedLease {
      const s = settings(account);
      const marks = marksOf(account);
      return new RedisFeedLease(conn, keysOf(account), {
        ...(s.leaseMs !== undefined ? { leaseMs: s.leaseMs } : {}),
        ...(instanceId ? { instanceId } : {}),
        observe: (feed, timeoutMs) => marks.observe(feed, timeoutMs),
      });
    },
    outboxStore: outboxStores(conn, keysOf, settings, instanceId),
  };
}
