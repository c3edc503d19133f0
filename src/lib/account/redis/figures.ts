/**
 * The fleet's side of an account's figures (src/lib/account/figures.ts): how many calls
 * each throttle group's shared window counts now, across every instance. One read-only
 * script per group on a status read, never on a call; members of the window are scored
 * with the time their slot stops counting (./rate-budget.ts), so the count is of the
 * scores still ahead of Redis's own clock.
 */
import type { AccountKeys } from './keys';
import type { RedisConnection } from './connection';
import { script } from './script';
import { int } from './replies';

/** KEYS: window. Members whose slot still counts (score after now, on Redis's clock). */
const WINDOW_SIZE = `local t = redis.call('TIME'); local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf')`;

const windowSize = script(WINDOW_SIZE);

/** Calls counted now in each group's shared window (a group with no limit: 0). */
export async function fleetUsed(conn: RedisConnection, keys: AccountKeys, groups: Record<string, { calls: number; windowMs: number }>, timeoutMs: number): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const [g, lim] of Object.entries(groups)) {
    out[g] = lim.calls > 0 && lim.windowMs > 0 ? await conn.run(`reading the ${g} window`, async (r) => int(await windowSize(r, [keys.key('rate', g)], []), 'the window script'), { timeoutMs }) : 0;
  }
  return out;
}
