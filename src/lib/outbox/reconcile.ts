/**
 * Outbox reconciliation (issue 45; real-services.md "Outbox reconciliation"): was a send
 * whose reply never came created at the gateway? The gateway keeps no client key, so the
 * answer is in its own records:
 *
 * 1. the status feed (`get/subaccounts/fw_status_updates`, as the status poller reads it)
 *    from `sentAfterUtc` less the clock skew: every message created since has a record
 *    (State 0, or a CreateUTC at or after that time); its pages are followed while
 *    `NextFromUTC` moves, at most `maxPages`;
 * 2. `get/fw_messages` for those IDs, 100 a call: their destination, CreateUTC and payload;
 * 3. each entry, in the attempt's order, is the earliest message not yet matched with its
 *    destination (without case or spaces) and payload (RawPayload bytes equal, or Payload
 *    deep-equal, keys in any order): two identical entries are told apart by count.
 *
 * An entry with no match is `absent` (it may be sent again) only once the gateway's own clock
 * is `settleSeconds` past the attempt (seen in the feed's records, or `ServerUTC` of
 * info/service asked before the feed is read, so the read covers that time) and our clock is
 * too, less the skew, past the attempt's start and its call's end (`sentAfterUtc` is an
 * estimate that errs early, and a request held in the account's limiter or by a slow link
 * leaves or arrives late: neither cuts the settle time short); else `not-yet`.
 *
 * What the feed could not give (real-services.md: "many records can share one second, more than
 * a reply holds"): a full reply whose NextFromUTC does not move is a crowded second, read no
 * further than that reply (the scan steps one second past it, as the FeedReader does); a scan
 * that read `maxPages` replies stops where it is. When either left seconds unread up to the
 * settle point (counted from the call's end too), an entry with no match is `unknown` once
 * settled, never `absent`: its record may be among the unread ones, and a send again could
 * create it twice. The outbox ends such an entry with an error that says so (results.ts).
 * A reconciliation is a few GET calls, never one per entry.
 *
 * Mode messages (`terminal/mode`) are to-mobile messages like any other: they reconcile the
 * same way, with the payload the gateway shows of them (`modeEntryBody`).
 *
 * Cancellations (`reconcileCancels`): a cancel creates nothing, so one whose outcome is unknown
 * may be sent again: a second cancel of a message the first one cancelled cancels nothing (the
 * message is closed; the simulator answers ErrorID 107 MESSAGE_ALREADY_CLOSED, `isAlreadyClosed`).
 * That answer counts as the first attempt's success only when the message's State is 5
 * (CANCELLED): it is also the answer for a message delivered before the cancel came, which
 * is a real failure. `reconcileCancels` reads the State of each in one call per 100 IDs, so the
 * outbox need not resend at all: `cancelled` ends the entry accepted, `open` sends it again,
 * `closed` ends it with the gateway's refusal.
 */
import { GatewayError, badInput } from '../common/errors';
import { int64Key, int64Out } from '../common/int64';
import { formatUtcSeconds, parseUtcSeconds } from '../feed/time';
import { API_MAX_PER_REPLY } from '../feed/reply';
import { TERMINAL_PATHS, sameDestination } from '../api/terminal';
import { LOOKUP_PATHS, MAX_LOOKUP_IDS } from '../api/terminal-lookup';
import { gatewayGet, type GatewayContext } from '../api/gateway-context';
import { throwOnCallError } from '../api/gateway-errors';

export interface SentEntry {
  key: string;
  /** A PrimeID or a broadcast ID. */
  destination: string;
  /** As sent. */
  body: { RawPayload?: number[] | string; Payload?: unknown };
}

export interface LostAttempt {
  /** Gateway time (yyyy-MM-dd HH:mm:ss) a moment before the send. */
  sentAfterUtc: string;
  /** Local ms. */
  startedAt: number;
  /** When the call ended without an answer (local ms), when known: the settle time counts from the later of the two. */
  endedAt?: number;
  entries: SentEntry[];
}

/** `unknown`: no match, and the feed's unread part could hold its record (`why`, in plain words). */
export type Found = { state: 'found'; id: number | string; createUtc: string } | { state: 'absent' } | { state: 'not-yet' } | { state: 'unknown'; why: string };

export interface ReconcileOptions {
  /** How long after a call a created message may still be missing from the feed (real-services.md: a guess, a setting). Default 30. */
  settleSeconds: number;
  /** Clock skew allowed between the client and the gateway. Default 5. */
  skewSeconds: number;
  now?: () => number;
  /** Most feed pages read (default 20). */
  maxPages?: number;
  /** The feed's path (default the subaccounts form the status poller reads). */
  statusPath?: string;
}

export const DEFAULT_RECONCILE: ReconcileOptions = { settleSeconds: 30, skewSeconds: 5 };

/** The settle times a user may set (settings.js `iotgwOutboxSettleSeconds`, a TerminalClient outbox's `settleSeconds`): 5 to 600 s. */
export const SETTLE_SECONDS_RANGE = { min: 5, max: 600 } as const;

/** Is `v` a settle time a user may set (SETTLE_SECONDS_RANGE)? */
export function isSettleSeconds(v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v) && v >= SETTLE_SECONDS_RANGE.min && v <= SETTLE_SECONDS_RANGE.max;
}

/** A GET under the account's `/api/v{version}/`: the reply's body (a top-level ErrorID > 0 throws). */
export type ReconcileGet = (rest: string, query: Record<string, string>) => Promise<unknown>;

/** The GET calls of an account (an `iotgw-gateway` config node or a TerminalClient): its token, limits and retries. */
export function accountGet(g: GatewayContext, signal?: AbortSignal): ReconcileGet {
  return async (rest, query) => {
    const res = await gatewayGet(g, rest, query, { signal });
    const b = res.body as { ErrorID?: unknown } | null;
    if (!b || typeof b !== 'object' || Array.isArray(b)) throw new GatewayError('BAD_RESPONSE', `GET ${res.path}: not a JSON object`);
    await throwOnCallError(g, typeof b.ErrorID === 'number' ? b.ErrorID : 0, `GET ${res.path}`, res.statusCode, signal);
    return b;
  };
}

/** The body of a mode message's entry: what get/fw_messages shows of it (not public; the simulator's guess: SIN 0, MIN 70, mode, wake-up code). */
export function modeEntryBody(mode: number, wakeup: number): SentEntry['body'] {
  return { RawPayload: [0, 70, mode, wakeup] };
}

/** A cancel's ErrorID that says the message was already closed (the simulator's 107, or a catalogue name saying so). */
export function isAlreadyClosed(errorId: number | null | undefined, errorName?: string): boolean {
  return errorId === 107 || /ALREADY_(CLOSED|CANCEL)/i.test(errorName ?? '');
}

type Row = Record<string, unknown>;

const rows = (v: unknown): Row[] => (Array.isArray(v) ? v.filter((x): x is Row => !!x && typeof x === 'object' && !Array.isArray(x)) : []);

/** What the feed gave: candidate IDs, the latest gateway second it proves, and what it could not read. */
interface FeedScan {
  ids: Set<string>;
  latestSec: number;
  /** Seconds that held a full reply not moving NextFromUTC: records past that reply were not read. */
  crowded: number[];
  /** The scan stopped after `maxPages` replies: the second it would have read from next. */
  cutAt?: number;
}

/** The feed from `fromSec`, pages followed while NextFromUTC moves; past a crowded second by one second. */
async function scanFeed(get: ReconcileGet, path: string, fromSec: number, maxPages: number): Promise<FeedScan> {
  const scan: FeedScan = { ids: new Set(), latestSec: -Infinity, crowded: [] };
  let at = fromSec;
  for (let page = 0; ; page++) {
    if (page >= maxPages) {
      scan.cutAt = at;
      break;
    }
    const body = (await get(path, { FromUTC: formatUtcSeconds(at) })) as { Statuses?: unknown; NextFromUTC?: unknown };
    const records = rows(body.Statuses);
    for (const r of records) {
      const id = int64Key(r.ID);
      const statusSec = parseUtcSeconds(r.StatusUTC);
      if (statusSec !== undefined) scan.latestSec = Math.max(scan.latestSec, statusSec);
      const createSec = parseUtcSeconds(r.CreateUTC);
      if (id && typeof r.State === 'number' && (r.State === 0 || (createSec !== undefined && createSec >= fromSec))) scan.ids.add(id);
    }
    const next = parseUtcSeconds(body.NextFromUTC);
    if (next !== undefined) scan.latestSec = Math.max(scan.latestSec, next);
    if (!records.length || next === undefined) break;
    if (next > at) at = next;
    else if (records.length < API_MAX_PER_REPLY) break; // that second read to its end: the feed's end
    else {
      scan.crowded.push(at); // a full reply that does not move: the rest of that second cannot be fetched
      at += 1;
    }
  }
  return scan;
}

/** Why an entry with no match may still have been created: the unread part of the feed up to `lastSec` could hold it. */
function unreadWhy(scan: FeedScan, fromSec: number, lastSec: number, maxPages: number): string | undefined {
  const crowded = scan.crowded.filter((sec) => sec <= lastSec);
  if (crowded.length) {
    const when = crowded.slice(0, 3).map((sec) => formatUtcSeconds(sec)).join(', ') + (crowded.length > 3 ? ` and ${crowded.length - 3} more seconds` : '');
    return `the gateway's status feed had more than ${API_MAX_PER_REPLY} records in ${when} (a reply holds at most ${API_MAX_PER_REPLY}, the rest of that second cannot be fetched), so whether it was created cannot be told`;
  }
  if (scan.cutAt !== undefined && scan.cutAt <= lastSec) {
    return `the gateway's status feed from ${formatUtcSeconds(fromSec)} was more than ${maxPages} replies long before ${formatUtcSeconds(lastSec)}, so whether it was created cannot be told`;
  }
  return undefined;
}

/** A message of get/fw_messages, as the match needs it. */
interface GatewayMessage {
  id: string;
  destination: string;
  createSec: number;
  createUtc: string;
  raw?: string;
  payload?: string;
}

/** get/fw_messages for `ids`, 100 a call; unknown IDs (an ErrorID and no DestinationID) left out. */
async function fetchMessages(get: ReconcileGet, ids: string[]): Promise<Row[]> {
  const out: Row[] = [];
  for (let i = 0; i < ids.length; i += MAX_LOOKUP_IDS) {
    const body = (await get(LOOKUP_PATHS.messages, { IDList: ids.slice(i, i + MAX_LOOKUP_IDS).join(',') })) as { Messages?: unknown };
    out.push(...rows(body.Messages).filter((m) => typeof m.DestinationID === 'string' && int64Key(m.ID) !== undefined));
  }
  return out;
}

/** JSON with object keys sorted (deep-equal values give equal text). */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Row)[k])}`)
      .join(',')}}`;
  }
  return typeof v === 'bigint' ? v.toString() : (JSON.stringify(v) ?? 'null');
}

/** RawPayload (bytes or base64) as canonical base64, or undefined. */
function rawKey(v: unknown): string | undefined {
  if (typeof v === 'string') return Buffer.from(v, 'base64').toString('base64');
  if (Array.isArray(v) || v instanceof Uint8Array) return Buffer.from(v as number[]).toString('base64');
  return undefined;
}

function readMessage(m: Row, fromSec: number): GatewayMessage | undefined {
  const createSec = parseUtcSeconds(m.CreateUTC);
  if (createSec !== undefined && createSec < fromSec) return undefined;
  const raw = rawKey(m.RawPayload);
  return {
    id: int64Key(m.ID)!,
    destination: m.DestinationID as string,
    createSec: createSec ?? Infinity,
    createUtc: typeof m.CreateUTC === 'string' ? m.CreateUTC : '',
    raw,
    payload: raw === undefined && m.Payload !== undefined && m.Payload !== null ? canonical(m.Payload) : undefined,
  };
}

const byAge = (a: GatewayMessage, b: GatewayMessage) => a.createSec - b.createSec || (BigInt(a.id) < BigInt(b.id) ? -1 : BigInt(a.id) > BigInt(b.id) ? 1 : 0);

function sameBody(e: SentEntry, m: GatewayMessage): boolean {
  const raw = rawKey(e.body.RawPayload);
  if (raw !== undefined) return raw === m.raw;
  return e.body.Payload !== undefined && m.payload !== undefined && canonical(e.body.Payload) === m.payload;
}

/** The gateway's second now, from info/service (asked before the feed is read). */
async function serverSec(get: ReconcileGet): Promise<number> {
  const body = (await get('info/service', {})) as { ServerUTC?: unknown };
  return parseUtcSeconds(body.ServerUTC) ?? -Infinity;
}

function checkAttempt(attempt: LostAttempt): number {
  const sec = parseUtcSeconds(attempt.sentAfterUtc);
  if (sec === undefined) throw badInput('attempt.sentAfterUtc', 'must be the gateway time yyyy-MM-dd HH:mm:ss');
  return sec;
}

/** Each entry of `attempt` (by key): found (the gateway's ID), absent (send it again), not-yet, or unknown (never send it again). */
export async function reconcile(api: ReconcileGet, attempt: LostAttempt, opts: ReconcileOptions = DEFAULT_RECONCILE): Promise<Map<string, Found>> {
  const sentSec = checkAttempt(attempt);
  const fromSec = sentSec - Math.max(0, opts.skewSeconds);
  const now = opts.now ?? Date.now;
  const settledAt = sentSec + Math.max(0, opts.settleSeconds);
  // Our clock first: the settle time may be over only once it is past it too (less the skew).
  const since = Math.max(attempt.startedAt, attempt.endedAt ?? -Infinity);
  const mayBeSettled = now() - since >= opts.settleSeconds * 1000 - opts.skewSeconds * 1000;
  // ServerUTC then (only when the settle time may be over): the feed read after it covers that time.
  const server = mayBeSettled ? await serverSec(api) : -Infinity;
  const maxPages = opts.maxPages ?? 20;
  const scan = await scanFeed(api, opts.statusPath ?? TERMINAL_PATHS.statusUpdates, fromSec, maxPages);
  const settled = mayBeSettled && Math.max(server, scan.latestSec) >= settledAt;
  // The last second the entries' records could be in that the settle time covers: counted from the call's end too.
  const callSeconds = Math.max(0, Math.ceil((since - attempt.startedAt) / 1000));
  const unread = settled ? unreadWhy(scan, fromSec, settledAt + callSeconds, maxPages) : undefined;
  const messages = (await fetchMessages(api, [...scan.ids]))
    .map((m) => readMessage(m, fromSec))
    .filter((m): m is GatewayMessage => m !== undefined)
    .sort(byAge);
  const used = new Set<string>();
  const out = new Map<string, Found>();
  for (const e of attempt.entries) {
    const m = messages.find((x) => !used.has(x.id) && sameDestination(x.destination, e.destination) && sameBody(e, x));
    if (m) {
      used.add(m.id);
      out.set(e.key, { state: 'found', id: int64Out(BigInt(m.id)), createUtc: m.createUtc });
    } else out.set(e.key, !settled ? { state: 'not-yet' } : unread ? { state: 'unknown', why: unread } : { state: 'absent' });
  }
  return out;
}

export type CancelFound = { state: 'cancelled' } | { state: 'open'; State: number } | { state: 'closed'; State: number } | { state: 'unknown' };

/** The state of each message a lost cancel was for (one get/fw_messages call per 100 IDs): see the file's comment. */
export async function reconcileCancels(api: ReconcileGet, ids: Array<string | number | bigint>): Promise<Map<string, CancelFound>> {
  const keys = [...new Set(ids.map((id) => int64Key(id)).filter((k): k is string => k !== undefined))];
  const byId = new Map<string, Row>();
  for (const m of await fetchMessages(api, keys)) byId.set(int64Key(m.ID)!, m);
  const out = new Map<string, CancelFound>();
  for (const k of keys) {
    const state = byId.get(k)?.State;
    if (typeof state !== 'number') out.set(k, { state: 'unknown' });
    else if (state === 5) out.set(k, { state: 'cancelled' });
    else out.set(k, [1, 2, 3, 4].includes(state) || byId.get(k)?.IsClosed === true ? { state: 'closed', State: state } : { state: 'open', State: state });
  }
  return out;
}
