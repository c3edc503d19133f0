/**
 * A feed's mark in Redis: `fromUtc`, the keys already emitted for the mark's second and
 * the generation, in one hash, written by one Lua script that first checks the fence: a
 * writer whose fencing token is older than the feed's counter (a newer lease holder
 * exists) is refused with SHARED_STATE / reason 'fenced', and a write of an older
 * generation than the stored one (a `{fromUTC}` reset happened meanwhile) with reason
 * 'generation'.
 */
import type { FeedMark, MarkStore } from '../types';
import type { AccountKeys } from './keys';
import { SharedStateError, type RedisConnection } from './connection';
import { script } from './script';

/** KEYS: mark, fence. ARGV: fromUtc, seen JSON, generation, fence ('' = none). */
const SAVE = `if ARGV[4] ~= '' then
  local cur = tonumber(redis.call('GET', KEYS[2]) or '0')
  if cur > tonumber(ARGV[4]) then return redis.error_reply('FENCED a newer lease holder exists (fence ' .. cur .. ')') end
end
local g = tonumber(redis.call('HGET', KEYS[1], 'generation') or '-1')
if g > tonumber(ARGV[3]) then return redis.error_reply('GENERATION the mark was reset (generation ' .. g .. ')') end
redis.call('HSET', KEYS[1], 'fromUtc', ARGV[1], 'seen', ARGV[2], 'generation', ARGV[3], 'fence', ARGV[4])
return 1`;

export { SharedStateError };

export interface RedisMarkStoreOptions {
  /** How long a caller waits for Redis. */
  timeoutMs: number;
}

export class RedisMarkStore implements MarkStore {
  private readonly saveLua = script(SAVE);

  constructor(
    private readonly conn: RedisConnection,
    private readonly keys: AccountKeys,
    private readonly opts: RedisMarkStoreOptions,
  ) {}

  async load(feed: string): Promise<FeedMark | undefined> {
    const key = this.keys.key('mark', feed);
    // Sentinel, cluster: the read also waits until what this instance wrote before (the
    // last mark, the lease) is on a replica, so nothing is emitted past a mark a promoted
    // replica would not hold.
    const h = this.conn.replicated
      ? await this.conn.acknowledged<Record<string, string>>('reading the feed mark', key, this.opts.timeoutMs, (p) => p.hgetall(key))
      : await this.conn.run('reading the feed mark', (r) => r.hgetall(key), { timeoutMs: this.opts.timeoutMs });
    if (!h || typeof h.fromUtc !== 'string') return undefined;
    let seen: string[] = [];
    try {
      const parsed: unknown = JSON.parse(h.seen ?? '[]');
      if (Array.isArray(parsed)) seen = parsed.map(String);
    } catch {
      seen = [];
    }
    return { fromUtc: h.fromUtc, seen, generation: Number(h.generation ?? 0) || 0 };
  }

  async save(feed: string, mark: FeedMark, fence?: number): Promise<void> {
    const keys = [this.keys.key('mark', feed), this.keys.key('fence', feed)];
    const args = [mark.fromUtc, JSON.stringify(mark.seen), mark.generation, fence === undefined ? '' : fence];
    try {
      await this.conn.run('writing the feed mark', (r) => this.saveLua(r, keys, args), { timeoutMs: this.opts.timeoutMs });
      await this.conn.acknowledged('writing the feed mark', keys[0]!, this.opts.timeoutMs);
    } catch (err) {
      const m = err instanceof Error ? err.message : '';
      if (m.startsWith('FENCED')) throw new SharedStateError(`feed ${feed}: the mark was not written: this poller lost its lease (${m.slice(7)})`, 'fenced');
      if (m.startsWith('GENERATION')) throw new SharedStateError(`feed ${feed}: the mark was not written: ${m.slice(11)}`, 'generation');
      throw err;
    }
  }
}
