import { badInput } from '../common/errors';
import { formatUtcSeconds, parseUtcSeconds } from './time';

/**
 * The first mark of a feed when none is stored, from a poller's "Start from" setting:
 * "" or "now" (the current second: FromUTC is inclusive), a time back such as "-24h",
 * "-30m", "-2d", "-90s", or a real UTC time as yyyy-MM-dd HH:mm:ss. Anything else
 * (`2026-13-45 99:00:00` included) is BAD_INPUT naming `field`.
 */
export function startMark(startFrom: unknown, now = Date.now(), field = 'startFrom'): string {
  const s = String(startFrom ?? '').trim();
  const nowSec = Math.floor(now / 1000);
  if (s === '' || s === 'now') return formatUtcSeconds(nowSec);
  const rel = /^-(\d+(?:\.\d+)?)\s*([smhd])$/.exec(s);
  if (rel) {
    const unit = { s: 1, m: 60, h: 3600, d: 86400 }[rel[2] as 's' | 'm' | 'h' | 'd'];
    return formatUtcSeconds(nowSec - Math.round(Number(rel[1]) * unit));
  }
  if (parseUtcSeconds(s) !== undefined) return s;
  throw badInput(field, `"${s.slice(0, 30)}" is not "now", a time back like -24h, or a real UTC time as yyyy-MM-dd HH:mm:ss`);
}
