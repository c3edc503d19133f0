/**
 * The feed pollers' reply guarantees for the typed client (issue 34): a page of a feed
 * (status updates, from-mobile messages, terminal updates) goes through the same checks as
 * the nodes' reader (src/lib/feed/reply.ts): more records than a reply may hold, a
 * `NextFromUTC` that is no UTC time, or one (or, without one, a record's second) more than
 * a day ahead of the clock is BAD_RESPONSE, and nothing is returned. A record that breaks the
 * API's rules is left out of `records` and listed, as received, in `malformed`.
 */
import { checkReply, API_MAX_PER_REPLY } from '../../feed/reply';
import { FEED_BOUNDS } from '../../feed/reader';
import { GatewayError } from '../../common/errors';
import { MalformedRecord } from '../records';

/** One page of a feed as the client returns it. */
export interface GuardedPage<R> {
  records: R[];
  nextFromUtc: string | null | undefined;
  /** Records of the reply that break the API's rules, as received, with why. */
  malformed?: Array<{ raw: unknown; why: string }>;
}

/**
 * The page `page` (the reply to a request from `fromUtc`) when it keeps the rules, its good
 * records through `out`; BAD_RESPONSE naming `where` otherwise.
 */
export function guardedPage<R, O>(
  where: string,
  fromUtc: string,
  page: { records: Array<R | MalformedRecord>; nextFromUtc: string | null | undefined },
  time: (r: R | MalformedRecord) => unknown,
  out: (r: R) => O,
  now: () => number = Date.now,
): GuardedPage<O> {
  try {
    checkReply(page.records, page.nextFromUtc, fromUtc, {
      pageSize: API_MAX_PER_REPLY,
      time,
      maxAheadMs: FEED_BOUNDS.maxAheadMs,
      now,
      refused: () => 'nothing returned',
      capNote: '',
    });
  } catch (e) {
    if (e instanceof GatewayError) throw new GatewayError(e.code, `${where}: ${e.message}`);
    throw e;
  }
  const records: O[] = [];
  const malformed: Array<{ raw: unknown; why: string }> = [];
  for (const r of page.records) {
    if (r instanceof MalformedRecord) malformed.push({ raw: r.raw, why: r.why });
    else records.push(out(r));
  }
  return { nextFromUtc: page.nextFromUtc, records, ...(malformed.length ? { malformed } : {}) };
}
