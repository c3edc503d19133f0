/**
 * The account's rate budget in Redis, shared by every Node-RED instance of the account.
 *
 * - Each throttle group's SLIDING window is a sorted set counted by one Lua script
 *   (atomic; the clock is Redis's own TIME, so instances need no synchronised clocks).
 *   Member = one call, score = the time its slot stops counting: while the call is in
 *   flight `now + inflightMs` (a crashed instance's slot ends by itself), and once the
 *   reply is in `completion + window + margin`. The gateway counts arrivals; a slot that
 *   counts from our completion plus a margin is never shorter than the gateway's.
 * - The concurrency cap is a sorted set of leases with a time-to-live, renewed while
 *   held, so a crashed instance frees its slots after `leaseMs`.
 * - A waiter polls with back-off (exactly as long as the window says when it is full of
 *   finished calls; at most 50 ms apart for a concurrency slot, which a caller waits for
 *   holding its window's slot: see acquireShared in transport/http.ts) and honours its AbortSignal; while Redis is unreachable it waits up
 *   to `timeoutMs` and then fails with SHARED_STATE.
 */
import { randomUUID } from 'node:crypto';
import { GatewayError } from '../../common/errors';
import type { RateBudget, Release } from '../types';
import type { AccountKeys } from './keys';
import { abortableSleep, type RedisConnection } from './connection';
import { script } from './script';
import { int } from './replies';

const NOW = `local t = redis.call('TIME'); local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/**
 * KEYS: window, penalty. ARGV: limit, windowMs+margin, member, inflightMs, unknownMs.
 * Returns 0 (granted), >0 wait ms, -1 busy (calls in flight). unknownMs > 0 (after a
 * failover: the window the new master holds may lack calls) counts the window as full
 * for that long first.
 */
const RATE_ACQUIRE = `${NOW}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local unknown = tonumber(ARGV[5] or '0')
if unknown > 0 and redis.call('PTTL', KEYS[2]) < unknown then redis.call('SET', KEYS[2], '1', 'PX', unknown) end
local pen = redis.call('PTTL', KEYS[2])
if pen > 0 then return pen end
local limit = tonumber(ARGV[1])
if redis.call('ZCARD', KEYS[1]) < limit then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[4]), ARGV[3])
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[4]) + tonumber(ARGV[2]))
  return 0
end
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local wait = tonumber(first[2]) - now
if wait > tonumber(ARGV[2]) then return -1 end
return math.max(1, wait)`;

/** KEYS: window. ARGV: member, windowMs+margin, inflightMs. The slot now counts from the completion. */
const RATE_RELEASE = `${NOW}
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]) + tonumber(ARGV[2]))
return 1`;

/** KEYS: penalty. ARGV: ms. Only ever lengthens a penalty. */
const PENALIZE = `local left = redis.call('PTTL', KEYS[1])
if left < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], '1', 'PX', ARGV[1]) end
return 1`;

/** KEYS: leases. ARGV: max, member, leaseMs. Returns 0 granted, -1 full. */
const CONC_ACQUIRE = `${NOW}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]) * 2)
  return 0
end
return -1`;

/** KEYS: leases. ARGV: leaseMs, members... Extends the leases still present. */
const CONC_RENEW = `${NOW}
local n = 0
for i = 2, #ARGV do
  n = n + redis.call('ZADD', KEYS[1], 'XX', 'CH', now + tonumber(ARGV[1]), ARGV[i])
end
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]) * 2)
return n`;

export interface RateGroup {
  calls: number;
  windowMs: number;
}

export interface RedisRateBudgetOptions {
  /** Throttle groups (SEND, GET, ...): calls per window. A group absent or 0 has no limit. */
  groups: Record<string, RateGroup>;
  /** The account's cap on requests in flight across every instance (0: none). */
  maxConcurrent: number;
  /** How long a caller waits for Redis when it cannot be reached (the request timeout). */
  timeoutMs: number;
  /** Added to every finished call's window slot. Default: 1% of the window, at least 100 ms, at most 1 s. */
  marginMs?: number;
  /** Time-to-live of a concurrency lease (renewed every third of it while held). Default 15 s. */
  leaseMs?: number;
  /** Time-to-live of a rate slot while its call is in flight. Default 2 x timeout + window. */
  inflightMs?: number;
  label?: string;
}

interface Waiter {
  reject: (err: unknown) => void;
}


export class RedisRateBudget implements RateBudget {
  private readonly rateAcquire = script(RATE_ACQUIRE);
  private readonly rateRelease = script(RATE_RELEASE);
  private readonly penalizeLua = script(PENALIZE);
  private readonly concAcquire = script(CONC_ACQUIRE);
  private readonly concRenew = script(CONC_RENEW);
  private readonly leaseMs: number;
  private readonly held = new Set<string>();
  private readonly waiters = new Set<Waiter>();
  private readonly freeAt = new Map<string, number>();
  /** The master each group's window was last counted on; groups whose window is unknown. */
  private readonly masters = new Map<string, string>();
  private readonly unknown = new Set<string>();
  private renewTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly label: string;
  /** Calls granted (both slots), for tests and benchmarks. */
  readonly stats = { concurrencyGrants: 0, rateGrants: 0, polls: 0 };

  constructor(
    private readonly conn: RedisConnection,
    private readonly keys: AccountKeys,
    private readonly opts: RedisRateBudgetOptions,
  ) {
    this.leaseMs = opts.leaseMs ?? 15_000;
    this.label = opts.label ?? 'rate budget';
  }

  windowMs(group: string): number {
    const g = this.opts.groups[group];
    return g && g.calls > 0 && g.windowMs > 0 ? g.windowMs : 0;
  }

  private marginMs(windowMs: number): number {
    return this.opts.marginMs ?? Math.min(1000, Math.max(100, Math.round(windowMs * 0.01)));
  }

  private inflightMs(windowMs: number): number {
    return this.opts.inflightMs ?? 2 * this.opts.timeoutMs + windowMs;
  }

  /**
   * Sentinel, cluster: true when the master holding this group's window changed since the
   * last grant (a failover): the new master may lack calls granted on the old one, so the
   * window counts as full for one window (RATE_ACQUIRE's unknownMs).
   */
  private unknownWindow(group: string, key: string): boolean {
    if (!this.conn.replicated) return false;
    const now = this.conn.master(key);
    if (!now) return this.unknown.has(group);
    const before = this.masters.get(group);
    this.masters.set(group, now);
    if (before && before !== now) this.unknown.add(group);
    return this.unknown.has(group);
  }

  msUntilFree(group: string): number {
    return Math.max(0, (this.freeAt.get(group) ?? 0) - Date.now());
  }

  /** Polls `attempt` (0: granted, >0 exact wait, -1 busy) with back-off until granted. */
  private async wait(what: string, attempt: () => Promise<number>, group: string | undefined, signal?: AbortSignal): Promise<void> {
    if (this.closed) throw this.closedError();
    const waiter: Waiter = { reject: () => {} };
    const ac = new AbortController();
    const onAbort = () => ac.abort(signal!.reason);
    if (signal?.aborted) throw signal.reason;
    signal?.addEventListener('abort', onAbort, { once: true });
    waiter.reject = (err) => ac.abort(err);
    this.waiters.add(waiter);
    let busyDelay = 20;
    try {
      for (;;) {
        const r = await this.conn.run(what, () => attempt(), { timeoutMs: this.opts.timeoutMs, signal: ac.signal });
        if (r === 0) {
          if (group) this.freeAt.delete(group);
          return;
        }
        this.stats.polls++;
        let delay: number;
        if (r > 0) {
          delay = r + Math.floor(Math.random() * 8);
          busyDelay = 20;
        } else {
          delay = busyDelay + Math.floor(Math.random() * busyDelay);
          // A concurrency slot is waited for by calls that hold their window's slot: a
          // call's time at most, so look again soon; a window busy with calls in flight, slower.
          busyDelay = Math.min(group ? 250 : 50, busyDelay * 2);
        }
        if (group) this.freeAt.set(group, Date.now() + delay);
        await abortableSleep(delay, ac.signal);
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
      this.waiters.delete(waiter);
    }
  }

  async acquireConcurrency(signal?: AbortSignal): Promise<Release> {
    const max = this.opts.maxConcurrent;
    if (!(max > 0)) return () => {};
    const member = randomUUID();
    const key = this.keys.key('conc');
    await this.wait(
      'waiting for a concurrency slot',
      async () => int(await this.concAcquire(this.conn.client, [key], [max, member, this.leaseMs]), 'the concurrency script'),
      undefined,
      signal,
    );
    this.stats.concurrencyGrants++;
    this.held.add(member);
    this.scheduleRenew();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.held.delete(member);
      if (this.held.size === 0) this.unscheduleRenew();
      void this.conn.run('releasing a concurrency slot', (r) => r.zrem(key, member), { timeoutMs: this.leaseMs }).catch(() => {
        /* the lease ends by itself */
      });
    };
  }

  async acquireRate(group: string, signal?: AbortSignal): Promise<Release> {
    const windowMs = this.windowMs(group);
    if (windowMs === 0) {
      if (signal?.aborted) throw signal.reason;
      return () => {};
    }
    const calls = this.opts.groups[group]!.calls;
    const span = windowMs + this.marginMs(windowMs);
    const inflight = this.inflightMs(windowMs);
    const member = randomUUID();
    const wkey = this.keys.key('rate', group);
    const pkey = this.keys.key('pen', group);
    await this.wait(
      `waiting for a ${group} slot`,
      async () => {
        const unknown = this.unknownWindow(group, wkey) ? span : 0;
        const r = int(await this.rateAcquire(this.conn.client, [wkey, pkey], [calls, span, member, inflight, unknown]), 'the rate script');
        if (unknown) this.unknown.delete(group);
        return r;
      },
      group,
      signal,
    );
    this.stats.rateGrants++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      void this.conn.run('recording a finished call', (r) => this.rateRelease(r, [wkey], [member, span, inflight]), { timeoutMs: inflight }).catch(() => {
        /* the in-flight slot ends by itself, later: never early */
      });
    };
  }

  penalize(group: string, ms: number): void {
    if (!(ms > 0)) return;
    const until = Date.now() + ms;
    if ((this.freeAt.get(group) ?? 0) < until) this.freeAt.set(group, until);
    const pkey = this.keys.key('pen', group);
    void this.conn.run('recording a rate-limit penalty', (r) => this.penalizeLua(r, [pkey], [Math.ceil(ms)]), { timeoutMs: ms }).catch(() => {});
  }

  private scheduleRenew(): void {
    if (this.renewTimer) return;
    this.renewTimer = setInterval(() => {
      if (this.held.size === 0) return;
      const key = this.keys.key('conc');
      void this.conn
        .run('renewing concurrency leases', (r) => this.concRenew(r, [key], [this.leaseMs, ...this.held]), { timeoutMs: this.leaseMs / 3 })
        .catch(() => {});
    }, Math.max(50, Math.floor(this.leaseMs / 3)));
    this.renewTimer.unref();
  }

  private unscheduleRenew(): void {
    if (this.renewTimer) clearInterval(this.renewTimer);
    this.renewTimer = undefined;
  }

  private closedError(): GatewayError {
    return new GatewayError('NETWORK', `${this.label}: the account's client was closed before the request was sent`);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const w of [...this.waiters]) w.reject(this.closedError());
    this.unscheduleRenew();
    const members = [...this.held];
    this.held.clear();
    if (members.length && this.conn.ready) {
      await this.conn.client.zrem(this.keys.key('conc'), ...members).catch(() => {});
    }
  }
}
