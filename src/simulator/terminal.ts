/**
 * Area (a): the satellite terminal gateway (IDP and OGx). Token endpoint, mode
 * submission, cancellation, status updates with NextFromUTC, the error catalogue,
 * throttle groups with a sliding window, a concurrency cap, and messages that move
 * through their states over time.
 *
 * Status updates are paged as the real gateway does (./feed.ts): FromUTC inclusive at
 * one-second resolution, at most `maxStatuses` a reply, NextFromUTC = the second of the
 * last record (so the next poll returns that second again), any number of records in one
 * second, and (options) records that become visible late into a second already read, and
 * an empty reply's NextFromUTC null, "" or FromUTC.
 */
import type { SimServer, SimReply, SimRequest } from './server';
import { SimWindow, json } from './server';
import { INT64_MAX } from '../lib/common/int64';
import { MobileMessages } from './messages';
import { FeedLog, formatUtc, pageFeed, parseUtc } from './feed';

export { formatUtc, parseUtc };

export const STATE = {
  SUBMITTED: 0,
  RECEIVED: 1,
  ERROR: 2,
  DELIVERY_FAILED: 3,
  TIMED_OUT: 4,
  CANCELLED: 5,
  WAITING: 6,
  BROADCAST_SUBMITTED: 7,
  SENDING_IN_PROGRESS: 8,
} as const;

export const ERRORS = {
  INVALID_DESTINATION: 101,
  MODE_NOT_SUPPORTED: 102,
  WAKEUP_INTERVAL_NOT_SUPPORTED: 103,
  TOO_MANY_MESSAGES: 104,
  INVALID_REQUEST: 105,
  MESSAGE_NOT_FOUND: 106,
  MESSAGE_ALREADY_CLOSED: 107,
  INVALID_FROM_UTC: 108,
  SUBMIT_RATE_EXCEEDED: 24579,
  STATUS_RATE_EXCEEDED: 24581,
} as const;

const CATALOGUE = [
  { ID: 0, Name: 'NO_ERROR', Description: 'No error' },
  { ID: 101, Name: 'INVALID_DESTINATION', Description: 'The destination ID is not a terminal of this account' },
  { ID: 102, Name: 'MODE_NOT_SUPPORTED', Description: 'The terminal does not support this operating mode (RECEIVE_ON_SEND and HYBRID are OGx only)' },
  { ID: 103, Name: 'WAKEUP_INTERVAL_NOT_SUPPORTED', Description: 'The terminal does not support this wake-up interval (above 60 minutes is OGx only)' },
  { ID: 104, Name: 'TOO_MANY_MESSAGES', Description: 'Too many messages in one call' },
  { ID: 105, Name: 'INVALID_REQUEST', Description: 'The request is malformed' },
  { ID: 106, Name: 'MESSAGE_NOT_FOUND', Description: 'No to-mobile message with this ID' },
  { ID: 107, Name: 'MESSAGE_ALREADY_CLOSED', Description: 'The message is already closed and cannot be cancelled' },
  { ID: 108, Name: 'INVALID_FROM_UTC', Description: 'FromUTC is missing or not yyyy-MM-dd HH:mm:ss' },
  { ID: 24579, Name: 'SUBMIT_RATE_EXCEEDED', Description: 'Submit rate exceeded' },
  { ID: 24581, Name: 'STATUS_RATE_EXCEEDED', Description: 'Status retrieval rate exceeded' },
];

/** Wake-up interval code -> seconds. */
export const WAKEUP_SECONDS = [0, 30, 60, 120, 180, 300, 600, 900, 1200, 1800, 3600, 7200, 10800, 21600, 43200, 86400];

export interface Terminal {
  id: string;
  family: 'IDP' | 'OGx';
  online: boolean;
  mode: number;
  wakeup: number;
  account: string;
}

export interface Account {
  clientId: string;
  clientSecret: string;
  /** Static tokens that are always valid. */
  staticTokens: string[];
  superAccount: boolean;
  subaccounts: string[];
}

export interface TerminalOptions {
  rateLimitCalls: number;
  rateLimitWindowMs: number;
  maxConcurrent: number;
  maxBatch: number;
  maxStatuses: number;
  tokenTtlSeconds: number;
  /** Include Retry-After on 429 replies (the real gateway does not document one). */
  retryAfter: boolean;
  /** Service-wide limit (503) across all accounts; 0 = off. */
  serviceCalls: number;
  serviceWindowMs: number;
  sendingAfterMs: number;
  receivedAfterMs: number;
  offlineTimeoutMs: number;
  /** Unknown destinations matching the prime-ID form become online IDP terminals. */
  acceptUnknownTerminals: boolean;
  /** Failed submission entries: omit ID (default) or carry ID = -1. */
  failedId: 'omit' | 'minus1';
  /** NextFromUTC of an empty status reply: null (default), "" or the FromUTC asked for. */
  emptyNextFromUTC: 'null' | 'empty' | 'from';
  /**
   * A status record becomes visible this many seconds after its StatusUTC (0: at once), so
   * it lands in a second that a poll may already have read (the real gateway's late records).
   */
  lateBySeconds: number;
  /** Not real, kind: serve a second only once it is complete. Off; no poller test uses it. */
  completedSecondsOnly: boolean;
  /**
   * How a throttled call is answered: `http` (429, the default) or `errorId` (HTTP 200 with a
   * top-level ErrorID 24579 for SEND, 24581 for GET), as the real gateway can.
   */
  throttleAs: 'http' | 'errorId';
  /** The next N calls of a throttle group (SEND or GET) are throttled whatever the window says. */
  throttleNext: number;
  /** A path before `/api/v{version}` (e.g. `/gw/v1`: the gateway then lives at `{url}/gw/v1/api/v1.0/`). */
  basePath: string;
  /** Echo `DestinationID` `as-sent`, in `lower` case, or `padded` with spaces. */
  echoDestination: 'as-sent' | 'lower' | 'padded';
  /** Give per-item results `in-order` or `reversed` (match them by UserMessageID). */
  resultOrder: 'in-order' | 'reversed';
  /** The token endpoint answers a refused login with `http` 401 or with HTTP 200 + `error`. */
  tokenErrorAs: 'http' | 'ok-with-error';
}

export const DEFAULT_TERMINAL_OPTIONS: TerminalOptions = {
  rateLimitCalls: 5,
  rateLimitWindowMs: 60_000,
  maxConcurrent: 3,
  maxBatch: 100,
  maxStatuses: 500,
  tokenTtlSeconds: 3600,
  retryAfter: false,
  serviceCalls: 0,
  serviceWindowMs: 60_000,
  sendingAfterMs: 2000,
  receivedAfterMs: 5000,
  offlineTimeoutMs: 60_000,
  acceptUnknownTerminals: false,
  failedId: 'omit',
  emptyNextFromUTC: 'null',
  lateBySeconds: 0,
  completedSecondsOnly: false,
  throttleAs: 'http',
  throttleNext: 0,
  basePath: '',
  echoDestination: 'as-sent',
  resultOrder: 'in-order',
  tokenErrorAs: 'http',
};

export const DEFAULT_ACCOUNTS: Account[] = [
  { clientId: 'demo', clientSecret: 'demo-secret', staticTokens: ['demo-token'], superAccount: true, subaccounts: ['sub'] },
  { clientId: 'sub', clientSecret: 'sub-secret', staticTokens: ['sub-token'], superAccount: false, subaccounts: [] },
];

export const DEFAULT_TERMINALS: Array<Pick<Terminal, 'id' | 'family' | 'online'>> = [
  { id: '01000001SKYA001', family: 'IDP', online: true },
  { id: '01000002SKYA002', family: 'IDP', online: false },
  { id: '01000003SKYB003', family: 'OGx', online: true },
  { id: '01000004SKYB004', family: 'OGx', online: false },
];

interface StatusEvent {
  sec: number;
  ID: bigint;
  State: number;
  IsClosed: boolean;
  CreateUTC: string;
  Transport: number;
  RegionName?: string;
  ReferenceNumber: number;
  AccountID: string;
  ErrorID?: number;
}

interface Message {
  id: bigint;
  account: string;
  terminal: string;
  mode: number;
  wakeup: number;
  createdAt: number;
  createSec: number;
  state: number;
  closed: boolean;
}

/** A backlog generated on demand: record i of `count`, `perSecond` per second from `startSec`. */
interface Backlog {
  startSec: number;
  count: number;
  perSecond: number;
  baseId: bigint;
  account: string;
}

const PRIME_ID = /^\d{8}SKY[0-9A-F]{4}$/;

export class TerminalGateway {
  options: TerminalOptions;
  accounts = new Map<string, Account>();
  terminals = new Map<string, Terminal>();
  messages = new Map<string, Message>();
  private tokens = new Map<string, { account: string; expiresAt: number }>();
  private windows = new Map<string, SimWindow>();
  private service: SimWindow;
  private inFlight = new Map<string, number>();
  private nextId = 1n;
  private nextCancelId = 1n;
  private nextRef = 1;
  private events = new FeedLog<StatusEvent>();
  private backlogs: Backlog[] = [];
  private pendingTransitions: Array<{ at: number; id: string; to: 'sending' | 'final' }> = [];
  private ticker: NodeJS.Timeout | undefined;
  /** Counters for tests and benchmarks. */
  readonly counters = { submitted: 0, rejected: 0, cancelled: 0, statusRecordsServed: 0, throttled: 0, unauthorized: 0 };
  now: () => number = Date.now;

  constructor(options: Partial<TerminalOptions> = {}) {
    this.options = { ...DEFAULT_TERMINAL_OPTIONS, ...options };
    this.service = new SimWindow(this.options.serviceCalls, this.options.serviceWindowMs);
    for (const a of DEFAULT_ACCOUNTS) this.accounts.set(a.clientId, { ...a });
    for (const t of DEFAULT_TERMINALS) this.addTerminal(t);
  }

  configure(options: Partial<TerminalOptions>): void {
    this.options = { ...this.options, ...options };
    this.windows.clear();
    this.service = new SimWindow(this.options.serviceCalls, this.options.serviceWindowMs);
  }

  addTerminal(t: Partial<Terminal> & { id: string }): Terminal {
    const term: Terminal = { family: 'IDP', online: true, mode: 0, wakeup: 0, account: 'demo', ...t };
    this.terminals.set(term.id, term);
    return term;
  }

  /** Makes the next message IDs start at `id` (for example near 2^63 - 1). */
  setNextId(id: bigint | string | number): void {
    this.nextId = BigInt(id);
  }

  /** Invalidates every issued token (as if they expired). */
  expireTokens(): void {
    for (const v of this.tokens.values()) v.expiresAt = 0;
  }

  /**
   * Seeds a backlog of `count` closed status records in the past, `perSecond` per second
   * (default 100: a reply of 500 spans five seconds, and its last second comes again in
   * the next reply, as on the real gateway). A `perSecond` above the reply cap makes
   * crowded seconds.
   */
  seedBacklog(count: number, opts: { perSecond?: number; account?: string; baseId?: bigint } = {}): void {
    const perSecond = Math.max(1, Math.floor(opts.perSecond ?? 100));
    const seconds = Math.ceil(count / perSecond);
    const firstReal = this.events.first ? this.events.first.sec : this.nowSec();
    const earliestBacklog = this.backlogs.length ? this.backlogs[0]!.startSec : firstReal;
    const startSec = Math.min(firstReal, earliestBacklog) - seconds - 1;
    const baseId = opts.baseId ?? 10_000_000_000n + BigInt(this.backlogs.reduce((n, b) => n + b.count, 0));
    this.backlogs.unshift({ startSec, count, perSecond, baseId, account: opts.account ?? 'demo' });
  }

  start(): void {
    if (!this.ticker) {
      this.ticker = setInterval(() => this.tick(), 50);
      this.ticker.unref();
    }
    this.mobile.start();
  }

  stop(): void {
    if (this.ticker) clearInterval(this.ticker);
    this.ticker = undefined;
    this.mobile.stop();
  }

  private nowSec(): number {
    return Math.floor(this.now() / 1000);
  }

  /**
   * Adds `count` closed RECEIVED status records in the second `sec` (any number: more than
   * a reply holds is allowed, as on the real gateway), in time order among the others.
   */
  addStatusRecords(count: number, sec: number, opts: { account?: string; baseId?: bigint } = {}): bigint[] {
    const ids: bigint[] = [];
    for (let i = 0; i < count; i++) {
      const id = opts.baseId !== undefined ? opts.baseId + BigInt(i) : this.nextId++;
      ids.push(id);
      this.events.add({ sec, ID: id, State: STATE.RECEIVED, IsClosed: true, CreateUTC: formatUtc(sec - 60), Transport: 1, ReferenceNumber: this.nextRef++, AccountID: opts.account ?? 'demo' });
    }
    return ids;
  }

  private record(m: Message): void {
    const term = this.terminals.get(m.terminal);
    this.events.add({
      sec: this.nowSec() - Math.max(0, this.options.lateBySeconds),
      ID: m.id,
      State: m.state,
      IsClosed: m.closed,
      CreateUTC: formatUtc(m.createSec),
      Transport: 1,
      RegionName: term?.family === 'OGx' ? 'AMERRB' : undefined,
      ReferenceNumber: this.nextRef++,
      AccountID: m.account,
    });
  }

  /** Moves messages whose time has come to their next state. */
  tick(): void {
    const now = this.now();
    if (this.pendingTransitions.length === 0) return;
    const due = this.pendingTransitions.filter((p) => p.at <= now);
    if (!due.length) return;
    this.pendingTransitions = this.pendingTransitions.filter((p) => p.at > now);
    due.sort((a, b) => a.at - b.at);
    for (const p of due) {
      const m = this.messages.get(p.id);
      if (!m || m.closed) continue;
      const term = this.terminals.get(m.terminal);
      if (p.to === 'sending') {
        m.state = STATE.SENDING_IN_PROGRESS;
        this.record(m);
      } else if (term?.online) {
        m.state = STATE.RECEIVED;
        m.closed = true;
        if (term) {
          term.mode = m.mode;
          term.wakeup = m.wakeup;
        }
        this.record(m);
      } else {
        m.state = STATE.TIMED_OUT;
        m.closed = true;
        this.record(m);
      }
    }
  }

  // ---- HTTP ----

  mount(sim: SimServer): void {
    // `(.*?)` is the part before /api/v{version}: it must be exactly `options.basePath`, so a
    // doubled `/api/v1.0/api/v1.0/...` is a 404 as on the real service.
    const at = (method: string, rest: string, name: string, h: (r: SimRequest) => SimReply | Promise<SimReply>) =>
      sim.route(method, new RegExp(`^(.*?)/api/v([^/]+)/${rest}$`), name, (r) => {
        const before = r.params[0] ?? '';
        if (before !== this.options.basePath.replace(/\/+$/, '')) return json(404, { Message: `No HTTP resource was found that matches the request URI '${r.path}'.` });
        return h(r);
      });
    at('POST', 'auth/token', 'terminal/auth', (r) => this.token(r));
    at('POST', 'terminal/mode', 'terminal/mode', (r) => this.guard(r, 'SEND', () => this.submitMode(r)));
    at('POST', 'submit/cancellations', 'terminal/cancel', (r) => this.guard(r, 'SEND', () => this.cancel(r)));
    at('GET', 'get/subaccounts/fw_status_updates', 'terminal/status', (r) => this.guard(r, 'GET', (acct) => this.statusUpdates(r, acct), true));
    this.mobile.mount(sim, at);
    at('GET', 'info/service', 'terminal/info', (r) =>
      this.guard(r, undefined, () => json(200, { ErrorID: 0, Version: '1.0.0', ErrorCodes: r.query.get('GetErrorCodes') === 'true' ? CATALOGUE : null })),
    );
  }

  /** A throttled reply in the configured form. */
  private throttledReply(group: 'SEND' | 'GET', w?: SimWindow): SimReply {
    this.counters.throttled++;
    const errorId = group === 'SEND' ? ERRORS.SUBMIT_RATE_EXCEEDED : ERRORS.STATUS_RATE_EXCEEDED;
    if (this.options.throttleAs === 'errorId') {
      return json(200, group === 'SEND' ? { ErrorID: errorId, Submissions: null } : { ErrorID: errorId, NextFromUTC: null, Statuses: null });
    }
    return json(429, { ErrorID: errorId }, w ? this.retryHeader(w) : undefined);
  }

  /** Marks a message unknown-to-the-gateway in the status feed: a record with only ID and ErrorID. */
  addUnknownStatus(id: bigint | string, errorId: number = ERRORS.MESSAGE_NOT_FOUND): void {
    this.events.add({ sec: this.nowSec(), ID: BigInt(id), State: -1, IsClosed: false, CreateUTC: '', Transport: 0, ReferenceNumber: this.nextRef++, AccountID: 'demo', ErrorID: errorId });
  }

  private token(r: SimRequest): SimReply {
    const ct = String(r.headers['content-type'] ?? '');
    if (!ct.startsWith('application/x-www-form-urlencoded')) return json(400, { error: 'invalid_request', error_description: 'form-encoded body expected' });
    const form = new URLSearchParams(r.text);
    if (form.get('grant_type') !== 'client_credentials') return json(400, { error: 'unsupported_grant_type' });
    const acct = this.accounts.get(form.get('client_id') ?? '');
    if (!acct || acct.clientSecret !== form.get('client_secret')) {
      this.counters.unauthorized++;
      if (this.options.tokenErrorAs === 'ok-with-error') return json(200, { error: 'invalid_client', error_description: 'The client credentials are invalid' });
      return json(401, { error: 'invalid_client' });
    }
    const asked = Number(form.get('expires_in') ?? NaN);
    const ttl = Number.isFinite(asked) && asked > 0 ? Math.min(asked, this.options.tokenTtlSeconds) : this.options.tokenTtlSeconds;
    const token = `tok_${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
    this.tokens.set(token, { account: acct.clientId, expiresAt: this.now() + ttl * 1000 });
    return json(200, { access_token: token, token_type: 'bearer', expires_in: ttl });
  }

  private authenticate(r: SimRequest): string | undefined {
    const h = String(r.headers.authorization ?? '');
    const m = /^Bearer (.+)$/i.exec(h);
    if (!m) return undefined;
    const tok = m[1]!;
    const issued = this.tokens.get(tok);
    if (issued && issued.expiresAt > this.now()) return issued.account;
    for (const a of this.accounts.values()) if (a.staticTokens.includes(tok)) return a.clientId;
    return undefined;
  }

  /** General to-mobile and from-mobile messages (messages.ts). */
  readonly mobile = new MobileMessages(this);

  /**
   * A to-mobile message accepted for `term` (general messages, messages.ts): its ID. Its
   * status records follow as for mode messages, so the tracker and status poller see it.
   */
  acceptMessage(term: Terminal): bigint {
    const now = this.now();
    const id = this.nextId;
    this.nextId = this.nextId >= INT64_MAX ? 1n : this.nextId + 1n;
    const m: Message = { id, account: term.account, terminal: term.id, mode: term.mode, wakeup: term.wakeup, createdAt: now, createSec: Math.floor(now / 1000), state: STATE.SUBMITTED, closed: false };
    this.messages.set(id.toString(), m);
    this.record(m);
    this.pendingTransitions.push({ at: now + this.options.sendingAfterMs, id: id.toString(), to: 'sending' });
    this.pendingTransitions.push({ at: now + (term.online ? this.options.receivedAfterMs : this.options.offlineTimeoutMs), id: id.toString(), to: 'final' });
    this.counters.submitted++;
    return id;
  }

  /** Auth, service limit, concurrency cap and the throttle group's window (also used by messages.ts). */
  async guard(r: SimRequest, group: 'SEND' | 'GET' | undefined, handle: (account: string) => SimReply | Promise<SimReply>, superOnly = false): Promise<SimReply> {
    const account = this.authenticate(r);
    if (!account) {
      this.counters.unauthorized++;
      return json(401, { Message: 'Authorization has been denied for this request.' });
    }
    if (superOnly && !this.accounts.get(account)?.superAccount) {
      return json(403, { Message: 'The caller is not a super account user.' });
    }
    if (!this.service.take(this.now())) {
      this.counters.throttled++;
      return json(503, { Message: 'Service busy' }, this.retryHeader(this.service));
    }
    const busy = this.inFlight.get(account) ?? 0;
    if (this.options.maxConcurrent > 0 && busy >= this.options.maxConcurrent) {
      this.counters.throttled++;
      return json(429, { Message: 'Too many concurrent requests' });
    }
    if (group) {
      const key = `${account}:${group}`;
      let w = this.windows.get(key);
      if (!w) this.windows.set(key, (w = new SimWindow(this.options.rateLimitCalls, this.options.rateLimitWindowMs)));
      if (this.options.throttleNext > 0) {
        this.options.throttleNext--;
        return this.throttledReply(group);
      }
      if (!w.take(this.now())) return this.throttledReply(group, w);
    }
    this.inFlight.set(account, busy + 1);
    try {
      return await handle(account);
    } finally {
      this.inFlight.set(account, (this.inFlight.get(account) ?? 1) - 1);
    }
  }

  private retryHeader(w: SimWindow): Record<string, string> | undefined {
    return this.options.retryAfter ? { 'retry-after': String(Math.max(1, Math.ceil(w.retryAfterMs(this.now()) / 1000))) } : undefined;
  }

  jsonArray(r: SimRequest): unknown[] | SimReply {
    const ct = String(r.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (!(ct === 'application/json' || ct === 'text/json' || (ct.startsWith('application/') && ct.endsWith('+json')))) {
      return json(415, { Message: `unsupported content type ${ct || '(none)'}` });
    }
    let body: unknown;
    try {
      body = r.json();
    } catch {
      return json(400, { Message: 'The request body is not valid JSON.' });
    }
    if (!Array.isArray(body)) return json(400, { Message: 'A JSON array is expected.' });
    return body;
  }

  private submitMode(r: SimRequest): SimReply {
    const body = this.jsonArray(r);
    if (!Array.isArray(body)) return body;
    if (body.length > this.options.maxBatch) return json(200, { ErrorID: ERRORS.TOO_MANY_MESSAGES, Submissions: null });
    const now = this.now();
    const submissions = body.map((item) => {
      const it = (item ?? {}) as Record<string, unknown>;
      const dest = typeof it.DestinationID === 'string' ? it.DestinationID : '';
      const userId = it.UserMessageID === undefined || it.UserMessageID === null ? undefined : BigInt(String(it.UserMessageID));
      const mode = it.Mode;
      const wakeup = it.WakeupInterval ?? 0;
      const fail = (errorId: number) => {
        this.counters.rejected++;
        const e: Record<string, unknown> = { ErrorID: errorId, DestinationID: dest, OperationMode: typeof mode === 'number' ? mode : null };
        if (userId !== undefined) e.UserMessageID = userId;
        if (this.options.failedId === 'minus1') e.ID = -1;
        return e;
      };
      let term = this.terminals.get(dest);
      if (!term && this.options.acceptUnknownTerminals && PRIME_ID.test(dest)) term = this.addTerminal({ id: dest });
      if (!term) return fail(ERRORS.INVALID_DESTINATION);
      if (typeof mode !== 'number' || !Number.isInteger(mode) || mode < 0 || mode > 3) return fail(ERRORS.INVALID_REQUEST);
      if (typeof wakeup !== 'number' || !Number.isInteger(wakeup) || wakeup < 0 || wakeup > 15) return fail(ERRORS.INVALID_REQUEST);
      if (term.family === 'IDP' && mode >= 2) return fail(ERRORS.MODE_NOT_SUPPORTED);
      if (term.family === 'IDP' && (mode === 1 || mode === 3) && wakeup > 10) return fail(ERRORS.WAKEUP_INTERVAL_NOT_SUPPORTED);
      const id = this.nextId;
      this.nextId = this.nextId >= INT64_MAX ? 1n : this.nextId + 1n;
      const m: Message = { id, account: term.account, terminal: dest, mode, wakeup, createdAt: now, createSec: Math.floor(now / 1000), state: STATE.SUBMITTED, closed: false };
      this.messages.set(id.toString(), m);
      this.record(m);
      this.pendingTransitions.push({ at: now + this.options.sendingAfterMs, id: id.toString(), to: 'sending' });
      this.pendingTransitions.push({ at: now + (term.online ? this.options.receivedAfterMs : this.options.offlineTimeoutMs), id: id.toString(), to: 'final' });
      this.counters.submitted++;
      // The reply describes the terminal's current mode (how the message will reach it).
      const echo = this.options.echoDestination === 'lower' ? dest.toLowerCase() : this.options.echoDestination === 'padded' ? ` ${dest} ` : dest;
      const out: Record<string, unknown> = { ID: id, DestinationID: echo, ErrorID: 0, OTAMessageSize: 6 };
      if (userId !== undefined) out.UserMessageID = userId;
      if (term.mode !== 0) {
        out.OperationMode = term.mode;
        if (term.mode === 1 || term.mode === 3) {
          const period = WAKEUP_SECONDS[term.wakeup] ?? 0;
          out.TerminalWakeupPeriod = period;
          out.ScheduledSendUTC = formatUtc(Math.floor(now / 1000) + period);
        }
      }
      return out;
    });
    if (this.options.resultOrder === 'reversed') submissions.reverse();
    return json(200, { Submissions: submissions });
  }

  private cancel(r: SimRequest): SimReply {
    const body = this.jsonArray(r);
    if (!Array.isArray(body)) return body;
    if (body.length > this.options.maxBatch) return json(200, { ErrorID: ERRORS.TOO_MANY_MESSAGES, Cancellations: null });
    const cancellations = body.map((raw) => {
      const reqId = this.nextCancelId++;
      let key: string;
      try {
        key = BigInt(String(raw)).toString();
      } catch {
        return { ID: null, CancellationStatus: 0, CancelRequestID: reqId, ErrorID: ERRORS.INVALID_REQUEST };
      }
      const m = this.messages.get(key);
      if (!m) return { ID: BigInt(key), CancellationStatus: 0, CancelRequestID: reqId, ErrorID: ERRORS.MESSAGE_NOT_FOUND };
      if (m.closed) return { ID: m.id, CancellationStatus: 0, CancelRequestID: reqId, ErrorID: ERRORS.MESSAGE_ALREADY_CLOSED };
      m.state = STATE.CANCELLED;
      m.closed = true;
      this.record(m);
      this.counters.cancelled++;
      return { ID: m.id, CancellationStatus: 1, CancelRequestID: reqId };
    });
    if (this.options.resultOrder === 'reversed') cancellations.reverse();
    return json(200, { Cancellations: cancellations });
  }

  private backlogEvent(b: Backlog, i: number): StatusEvent {
    const sec = b.startSec + Math.floor(i / b.perSecond);
    return {
      sec,
      ID: b.baseId + BigInt(i),
      State: STATE.RECEIVED,
      IsClosed: true,
      CreateUTC: formatUtc(sec - 60),
      Transport: 1,
      ReferenceNumber: i + 1,
      AccountID: b.account,
    };
  }

  private statusUpdates(r: SimRequest, account: string): SimReply {
    this.tick();
    const from = r.query.get('FromUTC') ?? r.query.get('fromUTC') ?? '';
    const fromSec = parseUtc(from);
    if (fromSec === undefined) return json(200, { ErrorID: ERRORS.INVALID_FROM_UTC, NextFromUTC: null, Statuses: null });
    const acct = this.accounts.get(account)!;
    const visible = new Set([account, ...acct.subaccounts]);
    const page = pageFeed(
      this.eventsFrom(fromSec),
      from,
      fromSec,
      this.nowSec(),
      { maxPerReply: this.options.maxStatuses, emptyNextFromUTC: this.options.emptyNextFromUTC, completedSecondsOnly: this.options.completedSecondsOnly },
      (e) => visible.has(e.AccountID),
    );
    const out = page.items;
    this.counters.statusRecordsServed += out.length;
    const statuses = out.map((e) => {
      if (e.ErrorID) return { ID: e.ID, ErrorID: e.ErrorID };
      const rec: Record<string, unknown> = {
        ID: e.ID,
        IsClosed: e.IsClosed,
        State: e.State,
        CreateUTC: e.CreateUTC,
        StatusUTC: formatUtc(e.sec),
        Transport: e.Transport,
        ReferenceNumber: e.ReferenceNumber,
        AccountID: e.AccountID,
      };
      if (e.RegionName) rec.RegionName = e.RegionName;
      return rec;
    });
    return json(200, { ErrorID: 0, NextFromUTC: page.NextFromUTC, Statuses: statuses });
  }

  /** Events at or after `fromSec`, in time order (backlogs, then live ones; both sorted). */
  private *eventsFrom(fromSec: number): Generator<StatusEvent> {
    // Backlogs lie before every live event; the live log is kept in time order.
    for (const b of this.backlogs) {
      const endSec = b.startSec + Math.ceil(b.count / b.perSecond);
      if (endSec <= fromSec) continue;
      for (let i = Math.max(0, (fromSec - b.startSec) * b.perSecond); i < b.count; i++) yield this.backlogEvent(b, i);
    }
    yield* this.events.from(fromSec);
  }
}
