/**
 * One reply of a feed, step by step, as the reader (./reader.ts) takes it: checked against
 * the API's rules, its new records picked, the next mark worked out. Pure: no store, no
 * emit, no state of the reader.
 */
import { createHash } from 'node:crypto';
import type { FeedMark } from '../account/types';
import { GatewayError } from '../common/errors';
import { formatUtcSeconds, parseUtcSeconds } from './time';

/** The most records the API documents in one status or from-mobile reply (real-services.md). */
export const API_MAX_PER_REPLY = 500;

export interface CrowdedSecond {
  /** The second that held a full reply (`yyyy-MM-dd HH:mm:ss`). */
  second: string;
  /** How many of its records were fetched (the rest, if any, cannot be). */
  fetched: number;
}

/** A second whose records outgrew the keys a mark keeps (see nextMark). */
export interface OverfullSecond {
  /** The second stepped past (`yyyy-MM-dd HH:mm:ss`). */
  second: string;
  /** Records of it emitted, by key: more than the mark keeps. */
  keys: number;
  /** The most keys a mark keeps. */
  bound: number;
}

/** The most characters of a record's key kept as it is; a longer one is kept as its SHA-256. */
export const MAX_KEY_CHARS = 128;

/** A record's key as a mark keeps it: at most MAX_KEY_CHARS, so a mark's size is bounded by its count of keys. */
export function markKey(k: string): string {
  return k.length <= MAX_KEY_CHARS ? k : `#sha256:${createHash('sha256').update(k, 'utf8').digest('hex')}`;
}

/** What a reply is checked against. */
export interface ReplyRules<R> {
  /** The service's cap on records per reply ("Full at"). */
  pageSize: number;
  time: (record: R) => unknown;
  /** How far ahead of the clock the next mark may be. */
  maxAheadMs: number;
  now: () => number;
  /** What a refused reply leads to (default: nothing emitted, the mark kept; a client: nothing returned). */
  refused?: (from: string) => string;
  /** Where the cap comes from, after it (default: the API's, or "Full at" when larger). */
  capNote?: string;
}

const keptMark = (from: string): string => `nothing emitted, the mark stays at ${from}`;

/** A reply that keeps the API's rules: its records, their seconds, the second it leads to. */
export interface CheckedReply<R> {
  records: R[];
  /** Each record's second (a record without a readable time: the mark's second). */
  secs: number[];
  /** The second of `NextFromUTC` (or, without one, of the latest record), never before the mark's. */
  nextSec: number;
}

/**
 * Checks a reply to a request from `from`: BAD_RESPONSE (nothing emitted, the mark kept) for
 * more records than a reply may hold, a `NextFromUTC` that is no UTC time, or a next mark
 * far ahead of the clock.
 */
export function checkReply<R>(rawRecords: unknown, rawNext: unknown, from: string, rules: ReplyRules<R>): CheckedReply<R> {
  const fromSec = parseUtcSeconds(from)!;
  const records = Array.isArray(rawRecords) ? (rawRecords as R[]) : [];
  const most = Math.max(rules.pageSize, API_MAX_PER_REPLY);
  const refused = (rules.refused ?? keptMark)(from);
  if (records.length > most) {
    throw new GatewayError('BAD_RESPONSE', `the reply holds ${records.length} records, more than the ${most} a reply may hold${rules.capNote ?? ` (the API's ${API_MAX_PER_REPLY}, or "Full at" when larger)`}; ${refused}`);
  }
  let nextSec: number | undefined;
  if (rawNext !== null && rawNext !== undefined && rawNext !== '') {
    nextSec = parseUtcSeconds(rawNext);
    if (nextSec === undefined) {
      throw new GatewayError('BAD_RESPONSE', `NextFromUTC "${String(rawNext).slice(0, 30)}" is not a UTC time as yyyy-MM-dd HH:mm:ss; ${refused}`);
    }
  }
  // A record without a readable time counts as the mark's second (it can only be later).
  const secs = records.map((r) => parseUtcSeconds(rules.time(r)) ?? fromSec);
  if (nextSec === undefined && records.length) nextSec = secs.reduce((a, b) => (b > a ? b : a), fromSec);
  if (nextSec === undefined || nextSec < fromSec) nextSec = fromSec;
  // A mark far ahead of the clock would stop the feed until that day: refused, mark kept.
  const aheadMs = nextSec * 1000 - rules.now();
  if (nextSec > fromSec && aheadMs > rules.maxAheadMs) {
    throw new GatewayError('BAD_RESPONSE', `NextFromUTC ${formatUtcSeconds(nextSec)} is ${Math.round(aheadMs / 3_600_000)} h ahead of this machine's clock; ${refused} (check the gateway's and this machine's clocks)`);
  }
  return { records, secs, nextSec };
}

/** The records of a reply to a request from `mark` that were not emitted before. */
export function freshRecords<R>(reply: CheckedReply<R>, mark: FeedMark, key: (record: R) => string, recent: { has(k: string): boolean }): R[] {
  const fromSec = parseUtcSeconds(mark.fromUtc)!;
  const seen = new Set(mark.seen);
  const fresh: R[] = [];
  reply.records.forEach((r, i) => {
    // A record before the mark's second was read before (the service should not send it).
    if (reply.secs[i]! < fromSec) return;
    const k = key(r);
    if (seen.has(k)) return;
    seen.add(k);
    // Emitted recently at another second (a broken or hostile gateway): not again.
    if (recent.has(k)) return;
    fresh.push(r);
  });
  return fresh;
}

/**
 * The mark after a reply to a request from `mark` (of generation `gen`); `crowded` when the
 * reply was full (`full`) and did not move the mark: the mark then steps past that second.
 * `overfull` when the mark's second would keep more than `maxSeen` keys (a gateway whose
 * `NextFromUTC` stays on one second while new records keep coming): the mark steps past that
 * second too, so a mark never holds more than `maxSeen` keys.
 */
export function nextMark<R>(
  reply: CheckedReply<R>,
  mark: FeedMark,
  gen: number,
  full: boolean,
  key: (record: R) => string,
  maxSeen = Infinity,
): { next: FeedMark; crowded?: CrowdedSecond; overfull?: OverfullSecond } {
  const from = mark.fromUtc;
  const fromSec = parseUtcSeconds(from)!;
  let crowded: CrowdedSecond | undefined;
  let overfull: OverfullSecond | undefined;
  let markSec = reply.nextSec;
  if (full && reply.nextSec === fromSec) {
    // The whole reply is one second (or NextFromUTC did not move): step past it.
    markSec = fromSec + 1;
    crowded = { second: from, fetched: reply.secs.filter((s) => s === fromSec).length };
  }
  // Keys to keep: every key at or after the new mark's second (the mark's second itself,
  // normally). Keys of the old mark's second stay only while the mark stays there.
  let keep = keysFrom(reply, markSec, key, markSec === fromSec ? mark.seen : []);
  if (keep.size > maxSeen) {
    // More records of one second than a mark tells apart: the ones to come cannot be told
    // from those sent, so the mark steps past that second (as past a crowded one).
    overfull = { second: formatUtcSeconds(markSec), keys: keep.size, bound: maxSeen };
    markSec += 1;
    keep = keysFrom(reply, markSec, key, []);
  }
  return { next: { fromUtc: formatUtcSeconds(markSec), seen: [...keep], generation: gen }, ...(crowded ? { crowded } : {}), ...(overfull ? { overfull } : {}) };
}

/** The keys `kept` and those of the reply's records at or after `sec`. */
function keysFrom<R>(reply: CheckedReply<R>, sec: number, key: (record: R) => string, kept: string[]): Set<string> {
  const keep = new Set<string>(kept);
  reply.records.forEach((r, i) => {
    if (reply.secs[i]! >= sec) keep.add(key(r));
  });
  return keep;
}
