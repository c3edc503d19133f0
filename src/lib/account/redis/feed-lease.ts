/**
 * One active poller per feed across every instance: a lease key taken with `SET NX PX`
 * and renewed every third of its lifetime, and a fencing counter (INCR) bumped at every
 * new holder (seeded from Redis's clock, so it never goes back after a restart that lost
 * the data). The fencing token goes with every mark write (RedisMarkStore), so a poller
 * that lost its lease (paused, cut off) can never write the mark again.
 *
 * States, per feed: 'active' (this instance holds the lease), 'standby' (another does),
 * 'down' (Redis cannot be reached: hold off polling). After a lost lease the caller calls
 * `acquire()` again.
 */
import { EventEmitter } from 'node:events';
import { randomUUID } from 'node:crypto';
import type { FeedLease } from '../types';
import type { AccountKeys } from './keys';
import { abortableSleep, type RedisConnection } from './connection';
import { script } from './script';
import { int } from './replies';

export type LeaseState = 'active' | 'standby' | 'down';

/** KEYS: lease, fence. ARGV: owner, leaseMs. Returns the fence (> 0) or -PTTL of the other holder. */
const ACQUIRE = `local cur = redis.call('GET', KEYS[1])
if cur then
  local owner, fence = string.match(cur, '^(.*):(%d+)$')
  if owner == ARGV[1] then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return tonumber(fence)
  end
  return -math.max(1, redis.call('PTTL', KEYS[1]))
end
-- A counter lost with the server's data (a restart without persistence) starts again from
-- Redis's clock in ms, so a fence never goes back below one handed out before.
if redis.call('EXISTS', KEYS[2]) == 0 then
  local t = redis.call('TIME')
  redis.call('SET', KEYS[2], tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
end
local fence = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1] .. ':' .. fence, 'NX', 'PX', ARGV[2])
return fence`;

/** KEYS: lease. ARGV: owner:fence, leaseMs. 1 renewed, 0 lost. */
const RENEW = `if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0`;

const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

interface Held {
  fence: number;
  timer: NodeJS.Timeout;
  validUntil: number;
}

export interface RedisFeedLeaseOptions {
  /** Lease lifetime, ms: a standby takes over at most this long after the holder died. Default 10 s. */
  leaseMs?: number;
  /** This instance's name in the lease (default: a random ID). */
  instanceId?: string;
  /**
   * Called at each look at the lease while not holding it (errors ignored): the mark store
   * remembers the feed's mark, to write it back if Redis loses it (RedisMarkStore.observe).
   */
  observe?: (feed: string, timeoutMs: number) => Promise<void>;
}

export class RedisFeedLease extends EventEmitter implements FeedLease {
  /** Other instances share the feed: one of them polls, the others stand by. */
  readonly shared = true;
  private readonly acquireLua = script(ACQUIRE);
  private readonly renewLua = script(RENEW);
  private readonly releaseLua = script(RELEASE);
  readonly leaseMs: number;
  readonly instanceId: string;
  private readonly observe: RedisFeedLeaseOptions['observe'];
  private readonly holds = new Map<string, Held>();
  private readonly states = new Map<string, LeaseState>();

  constructor(
    private readonly conn: RedisConnection,
    private readonly keys: AccountKeys,
    opts: RedisFeedLeaseOptions = {},
  ) {
    super();
    this.leaseMs = opts.leaseMs ?? 10_000;
    this.instanceId = (opts.instanceId ?? randomUUID()).replace(/:/g, '_');
    this.observe = opts.observe;
  }

  private setState(feed: string, state: LeaseState): void {
    if (this.states.get(feed) === state) return;
    this.states.set(feed, state);
    this.emit('state', feed, state);
  }

  state(feed: string): LeaseState | undefined {
    return this.states.get(feed);
  }

  async acquire(feed: string, signal?: AbortSignal): Promise<number> {
    const h = this.holds.get(feed);
    if (h && this.held(feed)) return h.fence;
    const leaseKey = this.keys.key('lease', feed);
    const fenceKey = this.keys.key('fence', feed);
    for (;;) {
      await this.observe?.(feed, Math.max(200, this.leaseMs / 4)).catch(() => {});
      if (signal?.aborted) throw signal.reason;
      let r: number;
      const started = Date.now();
      try {
        r = await this.conn.run('taking the feed lease', async (c) => int(await this.acquireLua(c, [leaseKey, fenceKey], [this.instanceId, this.leaseMs]), 'the lease script'), {
          timeoutMs: Math.max(500, this.leaseMs / 3),
          signal,
        });
      } catch (err) {
        if (signal?.aborted) throw signal.reason;
        if ((err as { code?: string }).code !== 'SHARED_STATE') throw err;
        this.setState(feed, 'down');
        // A refusal at once (a wrong password, a peer that is not our Redis) must not make
        // this a loop without a pause: each look takes at least a quarter of the lease time.
        await abortableSleep(Math.max(0, Math.max(50, Math.floor(this.leaseMs / 4)) - (Date.now() - started)), signal);
        continue;
      }
      if (r > 0) {
        try {
          // Sentinel, cluster: held only once a replica has it (a promoted replica must not grant it again).
          await this.conn.acknowledged('taking the feed lease', leaseKey, Math.max(500, this.leaseMs / 3));
        } catch (err) {
          if (signal?.aborted) throw signal.reason;
          if ((err as { code?: string }).code !== 'SHARED_STATE') throw err;
          this.setState(feed, 'down');
          await abortableSleep(Math.max(50, Math.floor(this.leaseMs / 4)), signal);
          continue;
        }
        this.hold(feed, r, started);
        this.setState(feed, 'active');
        return r;
      }
      this.setState(feed, 'standby');
      // Look again when the holder's lease would end, and a few times in between.
      await abortableSleep(Math.max(50, Math.min(-r, Math.floor(this.leaseMs / 4))), signal);
    }
  }

  private hold(feed: string, fence: number, started: number): void {
    const old = this.holds.get(feed);
    if (old) clearInterval(old.timer);
    const leaseKey = this.keys.key('lease', feed);
    const value = `${this.instanceId}:${fence}`;
    const held: Held = {
      fence,
      validUntil: started + this.leaseMs - 100,
      timer: setInterval(() => {
        const t0 = Date.now();
        this.conn
          .run('renewing the feed lease', async (c) => int(await this.renewLua(c, [leaseKey], [value, this.leaseMs]), 'the lease script'), { timeoutMs: Math.max(200, this.leaseMs / 3) })
          .then(async (ok) => {
            // Sentinel, cluster: the longer lifetime counts only once a replica has it.
            if (Number(ok) === 1) await this.conn.acknowledged('renewing the feed lease', leaseKey, Math.max(200, this.leaseMs / 3));
            return ok;
          })
          .then(
            (ok) => {
              if (this.holds.get(feed) !== held) return;
              if (Number(ok) === 1) {
                held.validUntil = t0 + this.leaseMs - 100;
              } else {
                this.drop(feed);
                this.setState(feed, 'standby');
              }
            },
            () => {
              if (this.holds.get(feed) !== held) return;
              // Cannot tell whether we still hold it: stop now (the fence protects the mark anyway).
              this.drop(feed);
              this.setState(feed, 'down');
            },
          );
      }, Math.max(50, Math.floor(this.leaseMs / 3))),
    };
    held.timer.unref();
    this.holds.set(feed, held);
  }

  private drop(feed: string): void {
    const h = this.holds.get(feed);
    if (h) clearInterval(h.timer);
    this.holds.delete(feed);
  }

  held(feed: string): boolean {
    const h = this.holds.get(feed);
    return !!h && Date.now() < h.validUntil;
  }

  /** The fencing token of a held lease. */
  fence(feed: string): number | undefined {
    return this.held(feed) ? this.holds.get(feed)!.fence : undefined;
  }

  async release(feed: string): Promise<void> {
    const h = this.holds.get(feed);
    this.drop(feed);
    this.states.delete(feed);
    if (!h) return;
    const leaseKey = this.keys.key('lease', feed);
    await this.conn
      .run('releasing the feed lease', (c) => this.releaseLua(c, [leaseKey], [`${this.instanceId}:${h.fence}`]), { timeoutMs: 1000 })
      .catch(() => {
        /* it ends by itself */
      });
  }

  async close(): Promise<void> {
    await Promise.all([...this.holds.keys()].map((f) => this.release(f)));
  }
}
