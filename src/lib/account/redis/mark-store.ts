/**
 * A feed's mark in Redis: `fromUtc`, the keys already emitted for the mark's second and
 * the generation, in one hash, written by one Lua script that first checks the fence: a
 * writer whose fencing token is older than the feed's counter (a newer lease holder
 * exists) is refused with SHARED_STATE / reason 'fenced', and a write of an older
 * generation than the stored one (a `{fromUTC}` reset happened meanwhile) with reason
 * 'generation'.
 *
 * A mark Redis lost (issue 28): the sentinels may promote a replica that has not synced
 * yet (a restarted one, still empty), and the other node then resyncs from it and drops
 * every key, acknowledged or not; a restart without persistence does the same. Each
 * instance remembers the newest mark it wrote or read (standbys read it at each look at
 * the lease: `observe`), and writes it back when the mark is gone (newest wins, by
 * generation, fence, second); the holder that found it gone waits `settleMs` for the
 * others' before it polls, so the feed goes on from the last holder's mark, not from its
 * start.
 */
import type { FeedMark, MarkStore } from '../types';
import type { AccountKeys } from './keys';
import { SharedStateError, abortableSleep, type RedisConnection } from './connection';
import { script } from './script';
import { int, markFields } from './replies';

/** KEYS: mark, fence. ARGV: fromUtc, seen JSON, generation, fence ('' = none). */
const SAVE = `if ARGV[4] ~= '' then
  local cur = tonumber(redis.call('GET', KEYS[2]) or '0')
  if cur > tonumber(ARGV[4]) then return redis.error_reply('FENCED a newer lease holder exists (fence ' .. cur .. ')') end
end
local g = tonumber(redis.call('HGET', KEYS[1], 'generation') or '-1')
if g > tonumber(ARGV[3]) then return redis.error_reply('GENERATION the mark was reset (generation ' .. g .. ')') end
redis.call('HSET', KEYS[1], 'fromUtc', ARGV[1], 'seen', ARGV[2], 'generation', ARGV[3], 'fence', ARGV[4])
return 1`;

/** KEYS: mark. ARGV: fromUtc, seen JSON, generation, fence. Writes unless the stored mark is as new. 1 written, 0 kept. */
const RESTORE = `local h = redis.call('HMGET', KEYS[1], 'fromUtc', 'generation', 'fence')
if h[1] then
  local g, f = tonumber(h[2] or '') or 0, tonumber(h[3] or '') or 0
  local G, F = tonumber(ARGV[3]), tonumber(ARGV[4])
  if g > G or (g == G and (f > F or (f == F and h[1] >= ARGV[1]))) then return 0 end
end
redis.call('HSET', KEYS[1], 'fromUtc', ARGV[1], 'seen', ARGV[2], 'generation', ARGV[3], 'fence', ARGV[4])
return 1`;

/**
 * KEYS: mark. ARGV: the most bytes of keys to read. The mark's fields and the length of its
 * keys; the keys themselves only within the bound (false beyond it), so a mark grown past
 * the connection's reply bound (8 MiB; older versions kept every key of a second) is still
 * read, without them, instead of dropping the connection at every try (issue 43).
 */
const READ = `local h = redis.call('HMGET', KEYS[1], 'fromUtc', 'generation', 'fence')
local n = redis.call('HSTRLEN', KEYS[1], 'seen')
local seen = false
if n <= tonumber(ARGV[1]) then seen = redis.call('HGET', KEYS[1], 'seen') end
return {h[1] or false, h[2] or false, h[3] or false, seen or false, n}`;

/** The most bytes of a mark's keys read back: far above a mark of 10,000 keys (1.3 MB), far below the reply bound. */
export const MAX_MARK_KEYS_BYTES = 4 * 1024 * 1024;

export { SharedStateError };

/** A mark as this instance last knew it, with the fence it was written under (0: none). */
interface KnownMark extends FeedMark {
  fence: number;
}

/** True when `a` is newer than `b`: a later generation, then a later fence, then a later second. */
function newer(a: KnownMark, b: KnownMark | undefined): boolean {
  if (!b) return true;
  if (a.generation !== b.generation) return a.generation > b.generation;
  if (a.fence !== b.fence) return a.fence > b.fence;
  return a.fromUtc > b.fromUtc || (a.fromUtc === b.fromUtc && a.seen.length > b.seen.length);
}

function parseMark(h: Record<string, string> | null | undefined): KnownMark | undefined {
  if (!h || typeof h.fromUtc !== 'string') return undefined;
  let seen: string[] = [];
  try {
    const parsed: unknown = JSON.parse(h.seen ?? '[]');
    if (Array.isArray(parsed)) seen = parsed.map(String);
  } catch {
    seen = [];
  }
  const mark: KnownMark = { fromUtc: h.fromUtc, seen, generation: Number(h.generation ?? 0) || 0, fence: Number(h.fence ?? 0) || 0 };
  if (h.seen === undefined && Number(h.seenBytes) > 0) mark.keysUnread = `its keys are ${(Number(h.seenBytes) / 1048576).toFixed(1)} MiB, more than the ${MAX_MARK_KEYS_BYTES / 1048576} MiB read back`;
  return mark;
}

export interface RedisMarkStoreOptions {
  /** How long a caller waits for Redis. */
  timeoutMs: number;
  /** How long a holder that found its feed's mark gone waits for the other instances to write theirs back (default 0). */
  settleMs?: number;
}

export class RedisMarkStore implements MarkStore {
  private readonly saveLua = script(SAVE);
  private readonly restoreLua = script(RESTORE);
  /** The newest mark of each feed this instance wrote or read. */
  private readonly known = new Map<string, KnownMark>();
  /** When this instance first wrote a feed's mark back (Redis had lost it), until its next load. */
  private readonly lost = new Map<string, number>();

  constructor(
    private readonly conn: RedisConnection,
    private readonly keys: AccountKeys,
    private readonly opts: RedisMarkStoreOptions,
  ) {}

  async load(feed: string): Promise<FeedMark | undefined> {
    let mark = this.note(feed, await this.read(feed));
    // Redis lost it (or holds an older one): write back what this instance knew.
    if (this.behind(feed, mark)) await this.restore(feed, !mark);
    const since = this.lost.get(feed);
    if (since !== undefined) {
      // Give the others (the last holder knows the newest) time to write theirs; go on from the newest.
      const left = since + (this.opts.settleMs ?? 0) - Date.now();
      if (left > 0) await abortableSleep(left);
      this.lost.delete(feed);
      mark = this.note(feed, await this.read(feed));
    }
    return mark && { fromUtc: mark.fromUtc, seen: mark.seen, generation: mark.generation, ...(mark.keysUnread ? { keysUnread: mark.keysUnread } : {}) };
  }

  /**
   * A standby's look at the feed's mark (at each look at the lease): remembered, or written
   * back when Redis lost it. Errors are the caller's to ignore.
   */
  async observe(feed: string, timeoutMs = this.opts.timeoutMs): Promise<void> {
    const key = this.keys.key('mark', feed);
    const h = await this.conn.run('reading the feed mark', async (r) => markFields(await r.eval(READ, 1, key, MAX_MARK_KEYS_BYTES), 'the mark read'), { timeoutMs });
    const mark = this.note(feed, parseMark(h));
    if (this.behind(feed, mark)) await this.restore(feed, !mark);
  }

  private async read(feed: string): Promise<KnownMark | undefined> {
    const key = this.keys.key('mark', feed);
    // Sentinel, cluster: the read also waits until what this instance wrote before (the
    // last mark, the lease) is on a replica, so nothing is emitted past a mark a promoted
    // replica would not hold.
    const h = this.conn.replicated
      ? await this.conn.acknowledged<unknown>('reading the feed mark', key, this.opts.timeoutMs, (p) => p.eval(READ, 1, key, MAX_MARK_KEYS_BYTES))
      : await this.conn.run('reading the feed mark', (r) => r.eval(READ, 1, key, MAX_MARK_KEYS_BYTES), { timeoutMs: this.opts.timeoutMs });
    return parseMark(this.conn.checkReply(() => markFields(h, 'the mark read')));
  }

  /** Remembers `mark` when it is the newest this instance has seen of `feed`; returns it. */
  private note(feed: string, mark: KnownMark | undefined): KnownMark | undefined {
    if (mark && newer(mark, this.known.get(feed))) this.known.set(feed, { ...mark, seen: [...mark.seen] });
    return mark;
  }

  /** True when Redis holds no mark of `feed`, or an older one, than this instance knows. */
  private behind(feed: string, stored: KnownMark | undefined): boolean {
    const known = this.known.get(feed);
    return !!known && newer(known, stored);
  }

  /**
   * Writes back the newest mark this instance knows of `feed` (kept if Redis holds one as
   * new). `missing`: Redis held none, so the others may know a newer one (see load).
   */
  private async restore(feed: string, missing: boolean): Promise<void> {
    const m = this.known.get(feed)!;
    if (missing && !this.lost.has(feed)) this.lost.set(feed, Date.now());
    const key = this.keys.key('mark', feed);
    await this.conn.run('writing the feed mark back', async (r) => int(await this.restoreLua(r, [key], [m.fromUtc, JSON.stringify(m.seen), m.generation, m.fence]), 'the mark script'), { timeoutMs: this.opts.timeoutMs });
    await this.conn.acknowledged('writing the feed mark back', key, this.opts.timeoutMs).catch(() => {
      /* the mark is written; the next write's acknowledgement covers it */
    });
  }

  async save(feed: string, mark: FeedMark, fence?: number): Promise<void> {
    const keys = [this.keys.key('mark', feed), this.keys.key('fence', feed)];
    const args = [mark.fromUtc, JSON.stringify(mark.seen), mark.generation, fence === undefined ? '' : fence];
    // Known before it is written: a mark emitted past is written back if Redis loses it.
    this.note(feed, { ...mark, fence: fence ?? 0 });
    try {
      await this.conn.run('writing the feed mark', async (r) => int(await this.saveLua(r, keys, args), 'the mark script'), { timeoutMs: this.opts.timeoutMs });
      await this.conn.acknowledged('writing the feed mark', keys[0]!, this.opts.timeoutMs);
    } catch (err) {
      const m = err instanceof Error ? err.message : '';
      if (m.startsWith('FENCED')) throw new SharedStateError(`feed ${feed}: the mark was not written: this poller lost its lease (${m.slice(7)})`, 'fenced');
      if (m.startsWith('GENERATION')) throw new SharedStateError(`feed ${feed}: the mark was not written: ${m.slice(11)}`, 'generation');
      throw err;
    }
  }
}
