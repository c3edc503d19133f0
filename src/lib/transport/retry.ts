/**
 * The retry policy: how long to wait before sending again after a 429/503 (Retry-After,
 * the group's window, or exponential backoff, each bounded) or after a transient failure.
 */

/**
 * Retry-After in ms: delta-seconds or an HTTP date (RFC 9110). "0" means "now" (0 ms).
 * A value that makes no sense (negative, a date now or in the past, beyond a year,
 * garbage, several differing values) counts as absent: the caller then waits what the
 * limit itself justifies instead of retrying back to back.
 */
export function parseRetryAfter(value: string | string[] | undefined, now: number): number | undefined {
  const values = Array.isArray(value) ? value : value === undefined ? [] : [value];
  if (values.length !== 1 && new Set(values.map((v) => v.trim())).size !== 1) return undefined;
  const v = String(values[0] ?? '').trim();
  if (!v || v.length > 64) return undefined;
  let ms: number;
  if (/^\d{1,10}(\.\d{1,3})?$/.test(v)) ms = Math.round(Number(v) * 1000);
  else if (/^[A-Za-z]{3}, \d{2} [A-Za-z]{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/.test(v)) {
    ms = Date.parse(v) - now;
    if (!(ms > 0)) return undefined; // a date in the past: a broken clock or a hostile server
  } else return undefined;
  return Number.isFinite(ms) && ms >= 0 && ms <= 365 * 86400_000 ? ms : undefined;
}

/** Longest wait a 429/503 can cause when the group has no window (no limit to justify more). */
export const MAX_WAIT_WITHOUT_WINDOW_MS = 30_000;

/**
 * The wait before retrying a 429/503: the server's Retry-After when given, else the
 * group's window, else exponential backoff; never more than twice the group's window
 * (a full window frees every slot, so a longer wait stalls the account for nothing),
 * never more than 30 s when there is no window, and never more than `maxRetryWaitMs`.
 */
export function rateLimitWait(retryAfterMs: number | undefined, windowMs: number | undefined, backoffMs: number, maxRetryWaitMs: number): number {
  const hasWindow = windowMs !== undefined && windowMs > 0;
  const bound = Math.min(maxRetryWaitMs, hasWindow ? 2 * windowMs : MAX_WAIT_WITHOUT_WINDOW_MS);
  return Math.min(bound, retryAfterMs ?? (hasWindow ? windowMs : backoffMs));
}

/** Exponential backoff with jitter (0.75 to 1.25 of base * 2^(attempt-1)), at most `maxRetryWaitMs`. */
export function backoff(attempt: number, baseMs: number, maxRetryWaitMs: number): number {
  const base = baseMs * 2 ** (attempt - 1);
  return Math.min(maxRetryWaitMs, Math.round(base * (0.75 + Math.random() * 0.5)));
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
