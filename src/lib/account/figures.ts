/**
 * What an account shows of itself at work (nodes.md, "Seeing an account at work"): the
 * figures of `iotgw-account-status` msgs, of `GET /iotgw/accounts` and of the editor's
 * sidebar tab. They cost nothing per call beyond a counter: the window's `used`, the
 * `waiting` and `inFlight` counts are read from the rate budget's own state when someone
 * asks; only a 429 (a timestamp), a failed request (one object) and a feed's poll (two
 * numbers) are written down as they happen.
 *
 * Every live account is listed in one process-wide registry (`liveAccounts()`), so the
 * admin route and the sidebar find them without knowing any node. The registry sits on
 * `globalThis` under a `Symbol.for` key: the editor plugin is loaded as its own module and
 * must see the accounts the nodes made.
 */
import { GatewayError } from '../common/errors';
import type { TokenState } from './types';

export interface GroupFigures {
  /** Calls allowed per window (0: no limit). */
  limit: number;
  windowSeconds: number;
  /** Calls counted in the current window (across every instance when shared). */
  used: number;
  /** Msgs or batches of this instance waiting for a slot of the group. */
  waiting: number;
  /** Calls of this instance in flight. */
  inFlight: number;
  /** 429s and throttling ErrorIDs answered in the last hour. */
  throttled: number;
}

export interface FeedFigures {
  type: 'status' | 'messages' | 'terminals';
  /** The poller node's name, or its id when it has none. */
  node: string;
  state: 'active' | 'standby' | 'stopped' | 'error';
  /** `yyyy-MM-dd HH:mm:ss` the next poll asks from; null before the first poll. */
  mark: string | null;
  /** How far the mark is behind now, in seconds; null without a mark. */
  behindSeconds: number | null;
  emittedLastMinute: number;
}

/**
 * One outbox of the account in this runtime (issue 45). `state`: `idle` (nothing waits),
 * `draining` (entries go out as the limits allow), `waiting for the link` (the last send
 * failed: network, timeout, 5xx or 429; retried with back-off), `reconciling` (a send's
 * outcome is unknown: the gateway's records are read before anything is sent again),
 * `unauthorized` (401/403: waiting until the account is fixed and deployed).
 */
export interface OutboxFigures {
  /** The outbox name (`outboxName`, else the node's id). */
  name: string;
  /** The name (else the id) of the node that opened it. */
  node: string;
  /** Entries not ended (waiting or sending). */
  waiting: number;
  /** What its live msgs take in the store. */
  bytes: number;
  /** Age of the oldest entry not ended, in whole seconds; null when none waits. */
  oldestSeconds: number | null;
  /** Entries that ended with the gateway's answer (accepted, rejected or refused) in the last hour. */
  sentLastHour: number;
  /** Entries that ended EXPIRED in the last hour. */
  expiredLastHour: number;
  state: OutboxStateName;
}

export type OutboxStateName = 'idle' | 'draining' | 'waiting for the link' | 'reconciling' | 'unauthorized';

/** What an outbox tells the accounts it serves: read only when someone asks. */
export interface OutboxReporter {
  figures(now: number): OutboxFigures;
}

export interface AccountFigures {
  /** The config node's label (its name, else the account's host label). */
  account: string;
  /** ISO time of the read. */
  at: string;
  shared: 'redis' | 'local';
  groups: Record<string, GroupFigures>;
  token: { state: TokenState; expiresInSeconds: number | null };
  feeds: FeedFigures[];
  /** One per outbox of the account in this runtime, by name. */
  outboxes: OutboxFigures[];
  lastError: { code: string; message: string; at: string } | null;
}

/** What a poller tells its account: read only when someone asks. */
export interface FeedReporter {
  figures(now: number): FeedFigures;
}

const HOUR = 3_600_000;
/** More 429s than this in an hour are counted, not all kept (the oldest go first). */
const MAX_THROTTLES = 4096;

/**
 * The figures an account writes down as they happen: throttled replies per group (their
 * times, for the last hour), the last failed request, and its feeds' reporters.
 */
export class AccountWatch {
  private readonly throttles = new Map<string, number[]>();
  private last: { code: string; message: string; at: number } | undefined;
  readonly feeds = new Set<FeedReporter>();
  readonly outboxes = new Set<OutboxReporter>();

  constructor(private readonly now: () => number = Date.now) {}

  /** A 429, 503 or throttling ErrorID for `group`. */
  throttled(group: string): void {
    let list = this.throttles.get(group);
    if (!list) this.throttles.set(group, (list = []));
    list.push(this.now());
    if (list.length > MAX_THROTTLES) list.splice(0, list.length - MAX_THROTTLES);
  }

  /** A failed request or poll; a closing node's abort is no error of the account. */
  failed(err: unknown): void {
    if (!(err instanceof GatewayError) || err.code === 'BAD_INPUT') return;
    if (err.code === 'NETWORK' && /\b(was|is) closed\b/.test(err.message)) return;
    // Already free of secrets (the client cuts them out of every error it makes).
    this.last = { code: err.code, message: err.message.slice(0, 300), at: this.now() };
  }

  /** Throttled replies of `group` in the last hour. */
  throttledCount(group: string): number {
    const list = this.throttles.get(group);
    if (!list) return 0;
    const cutoff = this.now() - HOUR;
    let i = 0;
    while (i < list.length && list[i]! <= cutoff) i++;
    if (i) list.splice(0, i);
    return list.length;
  }

  lastError(): AccountFigures['lastError'] {
    return this.last ? { code: this.last.code, message: this.last.message, at: new Date(this.last.at).toISOString() } : null;
  }

  feedFigures(): FeedFigures[] {
    const now = this.now();
    return [...this.feeds].map((f) => f.figures(now));
  }

  outboxFigures(): OutboxFigures[] {
    const now = this.now();
    return [...this.outboxes].map((o) => o.figures(now)).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }
}

/** What the registry holds of an account. */
export interface WatchedAccount {
  figures(): Promise<AccountFigures>;
}

const KEY = Symbol.for('@iotgateway/node-red-gateway/accounts');

function registry(): Set<WatchedAccount> {
  const g = globalThis as unknown as Record<symbol, Set<WatchedAccount> | undefined>;
  return (g[KEY] ??= new Set());
}

/** Lists an account (until the returned function is called). */
export function watchAccount(a: WatchedAccount): () => void {
  registry().add(a);
  return () => {
    registry().delete(a);
  };
}

/** Every account of the running flows, in the order they were made. */
export function liveAccounts(): WatchedAccount[] {
  return [...registry()];
}

/** The figures of every live account (an account whose read fails is left out). */
export async function allFigures(): Promise<AccountFigures[]> {
  const out = await Promise.allSettled(liveAccounts().map((a) => a.figures()));
  return out.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
}
