/** The gateway's `yyyy-MM-dd HH:mm:ss` UTC times, at one-second resolution. */

export const UTC_TIME_RE = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$/;

export function formatUtcSeconds(sec: number): string {
  return new Date(sec * 1000).toISOString().slice(0, 19).replace('T', ' ');
}

/** Seconds since the epoch, or undefined unless `s` is a real date in the gateway's form. */
export function parseUtcSeconds(s: unknown): number | undefined {
  if (typeof s !== 'string') return undefined;
  const m = UTC_TIME_RE.exec(s);
  if (!m) return undefined;
  const t = Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!);
  if (Number.isNaN(t)) return undefined;
  const sec = Math.floor(t / 1000);
  // Date.UTC rolls 2026-13-45 99:00:00 over into another date: a real one formats back to itself.
  return formatUtcSeconds(sec) === s ? sec : undefined;
}

export function isUtcTime(s: unknown): s is string {
  return parseUtcSeconds(s) !== undefined;
}
