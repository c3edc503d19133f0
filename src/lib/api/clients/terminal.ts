/**
 * The terminals' API (area a) without Node-RED: the request of each endpoint, shared by the
 * nodes (an `iotgw-gateway` config node is a `TerminalContext`) and `TerminalClient`, the
 * plain typed client built on an account of its own (token, rate limits, retries).
 */
import { GatewayError, badInput } from '../../common/errors';
import { int64Key, showValue } from '../../common/int64';
import { joinProblems } from '../../common/checks';
import type { ApiClient, AuthProvider, HeldCall, Query } from '../../transport/http';
import { resolveGatewayBase } from '../../transport/endpoints';
import { ClientCredentialsBearer, StaticBearer } from '../../account/auth';
import type { Account } from '../../account/account';
import { tokenIdentity, type AccountIdentity } from '../../account/redis/keys';
import { ErrorCatalogue } from '../catalogue';
import { withExtraQuery as withQuery } from '../gateway-context';
import { nameErrors, throwOnCallError, type CatalogueHolder } from '../gateway-errors';
import {
  CANCELLATION_STATUS_NAMES,
  FROM_UTC_RE,
  STATE_NAMES,
  TERMINAL_PATHS,
  TRANSPORT_NAMES,
  cancelReply,
  checkReply,
  exactIds,
  isThrottleReply,
  matchByKey,
  parseReply,
  reMessagesReply,
  sameDestination,
  statusReplyCheck,
  statusRecordCheck,
  STATUS_TIME,
  submitReply,
  type Cancellation,
  type FromMobileMessage,
  type FeedMessage,
  readMessage,
  type StatusRecord,
  type SubmitResult,
} from '../terminal';
import { checkGeneralItem, checkModeItem, readIds, type GeneralItem, type ItemDefaults, type ModeItem } from '../terminal-inputs';
import { MalformedRecord, readRecords } from '../records';
import { guardedPage } from './feed-guard';
import { getTerminalUpdatesPage, terminalOut, terminalTime, type TerminalInfo } from '../terminal-info';
import { moreCalls, type MoreCalls, type MultipleMessageInput } from './terminal-more';
import { clientAccount, closedError, commonLimits, intOption, optionsObject, requiredText, textOption, type CommonClientOptions } from './options';

/** What a request of area (a) needs of its account: an `iotgw-gateway` config node, or a TerminalClient. */
export interface TerminalContext extends CatalogueHolder {
  client(): ApiClient;
  bearerAuth(): AuthProvider;
  /** `/api/v{version}/<rest>` */
  apiPath(rest: string): string;
}

/** Per call: extra query parameters, an abort signal, and (for the nodes' batching) a slot already held. */
export interface CallOptions {
  query?: Query;
  signal?: AbortSignal;
  slot?: HeldCall;
}

/** One page of a feed: its records and the reply's `NextFromUTC` (the mark to ask from next). */
export interface FeedReply<R> {
  records: R[];
  nextFromUtc: string | null | undefined;
  /** Messages of the reply that break the API's rules (from-mobile feed only), as received, with why. */
  malformed?: Array<{ raw: unknown; why: string }>;
}

type Named<T> = T & { ErrorName?: string; ErrorDescription?: string };

/** POST terminal/mode (endpoint 1): results matched to the items by UserMessageID, else by position. */
export async function postModes(g: TerminalContext, items: ModeItem[], o: CallOptions = {}): Promise<Array<Named<SubmitResult>>> {
  const path = g.apiPath(TERMINAL_PATHS.mode);
  const res = await g.client().request({ method: 'POST', path, body: items, group: 'SEND', auth: g.bearerAuth(), idempotent: false, signal: o.signal, query: o.query }, o.slot);
  const reply = parseReply(submitReply, res.body, `POST ${path}`);
  await throwOnCallError(g, reply.ErrorID, `POST ${path}`, res.statusCode, o.signal);
  const subs = reply.Submissions ?? [];
  if (subs.length !== items.length) throw new GatewayError('BAD_RESPONSE', `POST ${path}: ${subs.length} results for ${items.length} messages`);
  // By UserMessageID where one was given, else by position; destinations without case or spaces.
  const order = matchByKey(
    items.map((it) => it.UserMessageID?.toString()),
    subs.map((s) => (s.UserMessageID === null || s.UserMessageID === undefined ? undefined : int64Key(s.UserMessageID))),
  );
  const matched = order.map((j, i) => {
    const s = subs[j]!;
    if (s.DestinationID && !sameDestination(s.DestinationID, items[i]!.DestinationID)) {
      throw new GatewayError('BAD_RESPONSE', `POST ${path}: result ${j} is for ${s.DestinationID.trim()}, expected ${items[i]!.DestinationID}`);
    }
    return s;
  });
  return nameErrors(g, matched, o.signal);
}

/** POST submit/cancellations (endpoint 2): results matched to the IDs by the echoed ID, else by position. */
export async function postCancellations(g: TerminalContext, ids: bigint[], o: CallOptions = {}): Promise<Array<Named<Cancellation>>> {
  const path = g.apiPath(TERMINAL_PATHS.cancellations);
  const res = await g.client().request({ method: 'POST', path, body: ids, group: 'SEND', auth: g.bearerAuth(), idempotent: false, signal: o.signal, query: o.query }, o.slot);
  const reply = parseReply(cancelReply, res.body, `POST ${path}`);
  await throwOnCallError(g, reply.ErrorID, `POST ${path}`, res.statusCode, o.signal);
  const list = reply.Cancellations ?? [];
  if (list.length !== ids.length) throw new GatewayError('BAD_RESPONSE', `POST ${path}: ${list.length} results for ${ids.length} IDs`);
  const order = matchByKey(
    ids.map((id) => id.toString()),
    list.map((c) => (c.ID === null || c.ID === undefined ? undefined : int64Key(c.ID))),
  );
  const matched = order.map((j, i) => {
    const c = list[j]!;
    if (c.ID !== null && c.ID !== undefined && int64Key(c.ID) !== ids[i]!.toString()) {
      throw new GatewayError('BAD_RESPONSE', `POST ${path}: result ${j} is for ID ${c.ID}, expected ${ids[i]}`);
    }
    return c;
  });
  return nameErrors(g, matched, o.signal);
}

/** POST submit/messages: results in input order (each checked against its destination). */
export async function postMessages(g: TerminalContext, items: GeneralItem[], o: CallOptions = {}): Promise<Array<Named<SubmitResult>>> {
  const path = g.apiPath(TERMINAL_PATHS.submitMessages);
  const res = await g.client().request({ method: 'POST', path, body: items, group: 'SEND', auth: g.bearerAuth(), idempotent: false, signal: o.signal, query: o.query }, o.slot);
  const reply = parseReply(submitReply, res.body, `POST ${path}`);
  await throwOnCallError(g, reply.ErrorID, `POST ${path}`, res.statusCode, o.signal);
  const subs = reply.Submissions ?? [];
  if (subs.length !== items.length) throw new GatewayError('BAD_RESPONSE', `POST ${path}: ${subs.length} results for ${items.length} messages`);
  subs.forEach((s, i) => {
    if (s.DestinationID && !sameDestination(s.DestinationID, items[i]!.DestinationID)) {
      throw new GatewayError('BAD_RESPONSE', `POST ${path}: result ${i} is for ${s.DestinationID}, expected ${items[i]!.DestinationID}`);
    }
  });
  return nameErrors(g, subs, o.signal);
}

/**
 * GET get/subaccounts/fw_status_updates (endpoint 3): one page from `fromUtc` (the reply's own
 * records, not copies), each record checked on its own: a malformed one is a MalformedRecord.
 */
export async function getStatusPage(g: TerminalContext, fromUtc: string, o: CallOptions = {}): Promise<FeedReply<StatusRecord | MalformedRecord>> {
  const p = g.apiPath(TERMINAL_PATHS.statusUpdates);
  const res = await g.client().request({ method: 'GET', path: p, query: withQuery({ FromUTC: fromUtc }, o.query), group: 'GET', auth: g.bearerAuth(), idempotent: true, signal: o.signal });
  const reply = checkReply<{ ErrorID?: number | null; NextFromUTC?: string | null; Statuses?: unknown[] | null }>(statusReplyCheck, res.body, `GET ${p}`);
  await throwOnCallError(g, reply.ErrorID, `GET ${p}`, res.statusCode, o.signal);
  return { records: readRecords<StatusRecord>(statusRecordCheck, reply.Statuses, STATUS_TIME), nextFromUtc: reply.NextFromUTC };
}

/**
 * GET get/re_messages: one page of from-mobile messages from `fromUtc`; with `allAccounts`,
 * those of every subaccount (`get/subaccounts/re_messages`, a super account's call: 403 for
 * another is FORBIDDEN saying so).
 */
export async function getMessagePage(g: TerminalContext, fromUtc: string, includeRaw: boolean, o: CallOptions & { allAccounts?: boolean } = {}): Promise<FeedReply<FeedMessage>> {
  const p = g.apiPath(o.allAccounts ? TERMINAL_PATHS.subaccountMessages : TERMINAL_PATHS.messages);
  const base: Query = includeRaw ? { FromUTC: fromUtc, IncludeRawPayload: 'true' } : { FromUTC: fromUtc };
  const res = await g
    .client()
    .request({ method: 'GET', path: p, query: withQuery(base, o.query), group: 'GET', auth: g.bearerAuth(), idempotent: true, signal: o.signal })
    .catch((e: unknown) => {
      if (!(o.allAccounts && e instanceof GatewayError && e.code === 'FORBIDDEN')) throw e;
      throw new GatewayError('FORBIDDEN', `GET ${p}: HTTP 403: this account is not a super account, so it cannot read its subaccounts' messages; read its own (accounts: own) or use a super account's credentials`, { statusCode: 403 });
    });
  const reply = parseReply(reMessagesReply, res.body, `GET ${p}`);
  await throwOnCallError(g, reply.ErrorID, `GET ${p}`, res.statusCode, o.signal);
  return { records: (reply.Messages ?? []).map(readMessage), nextFromUtc: reply.NextFromUTC };
}

// ---- the client ----

/** Options of a TerminalClient: the gateway's base URL and the account's credentials. */
export interface TerminalClientOptions extends CommonClientOptions {
  /** Default `1.0`; a base URL ending in `/api/v{version}` sets it too. */
  apiVersion?: string;
  /** OAuth2 client credentials (the token is fetched, cached and renewed)... */
  clientId?: string;
  clientSecret?: string;
  /** ...or a bearer token as issued. */
  token?: string;
  /** Items per call (longer lists are sent in several calls, in turn). Default 100. */
  maxBatchSize?: number;
  /** Calls per window of the INFO group (info/*). Default: rateLimitCalls. */
  infoRateLimitCalls?: number;
}

/** A ModeMessage (endpoint 1); Mode and WakeupInterval default to the call's options. */
export interface ModeInput {
  DestinationID: string;
  Mode?: number;
  WakeupInterval?: number;
  /** Your own ID (int64: a number up to 2^53, else a decimal string or a BigInt), echoed in the result. */
  UserMessageID?: number | string | bigint;
}

/** A general to-mobile message: RawPayload (SIN, MIN, then the bytes) or Payload in the common message format. */
export interface MessageInput extends MultipleMessageInput {
  DestinationID: string;
}

export interface SubmitModesOptions extends Omit<CallOptions, 'slot'> {
  /** Checks the modes against the family ('IDP' refuses OGx-only modes). Default 'any'. */
  family?: 'any' | 'IDP' | 'OGx';
  mode?: number;
  wakeupInterval?: number;
}

export interface SubmitMessagesOptions extends Omit<CallOptions, 'slot'> {
  transportType?: number;
  messageLifetime?: number;
  messageClass?: number;
  /** Longest RawPayload accepted. Default 1,023 (OGx). */
  maxRawBytes?: number;
}

/** A result with its ErrorName; int64 IDs as numbers up to 2^53, else exact decimal strings. */
export type SubmitOutcome = Named<SubmitResult>;
export type CancelOutcome = Named<Cancellation> & { CancellationStatusName?: string };
export type StatusUpdate = StatusRecord;
export type MobileMessage = FromMobileMessage;

/** `yyyy-MM-dd HH:mm:ss` from a Date (UTC) or as given; BAD_INPUT otherwise. */
function fromUtcText(v: unknown): string {
  if (v instanceof Date && !Number.isNaN(v.getTime())) return v.toISOString().slice(0, 19).replace('T', ' ');
  if (typeof v === 'string' && FROM_UTC_RE.test(v.trim())) return v.trim();
  throw badInput('fromUtc', `must be a Date or "yyyy-MM-dd HH:mm:ss" (UTC), not ${showValue(v)}`);
}

/** Throws BAD_INPUT with every problem, as the nodes do. */
/** submitModes' items checked (the client's call and its outbox alike): BAD_INPUT naming every bad field. */
export function checkModeItems(items: ModeInput | ModeInput[], options: SubmitModesOptions): ModeItem[] {
  const family = options.family ?? 'any';
  if (family !== 'any' && family !== 'IDP' && family !== 'OGx') throw badInput('family', `must be "IDP", "OGx" or "any", not ${showValue(family)}`);
  const defaults = { mode: options.mode ?? 0, wakeup: options.wakeupInterval ?? 0 };
  const problems: string[] = [];
  const checked = asList(items, 'items').map((raw, i) => checkModeItem(raw, Array.isArray(items) ? `items[${i}]` : 'items', defaults, family, problems));
  refuse(problems);
  return checked as ModeItem[];
}

export function refuse(problems: string[]): void {
  if (problems.length) throw new GatewayError('BAD_INPUT', joinProblems(problems), { field: problems[0]!.split(':')[0] });
}

/** A list of inputs (or one), or BAD_INPUT when empty. */
export function asList(v: unknown, name: string): unknown[] {
  const list = Array.isArray(v) ? v : [v];
  if (list.length === 0) throw badInput(name, 'an empty array; give at least one');
  return list;
}

/**
 * The terminals' API for Node.js: submit modes and messages, cancel, read the status and
 * from-mobile feeds. Inputs are checked before any request (GatewayError BAD_INPUT naming
 * the field); a throttled call waits for its window and retries; int64 IDs stay exact.
 * Call `close()` when done: it ends the client's connections.
 */
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export class TerminalClient implements TerminalContext {
  readonly catalogue: ErrorCatalogue;
  private readonly account: Account;
  private readonly apiVersion: string;
  private readonly maxBatchSize: number;
  private closed = false;
  /** What close() closes first (the client's outboxes: terminal-outbox.ts); and the account's identity for Redis keys. */
  readonly dependents = new Set<{ close(): Promise<void> }>();
  readonly keyIdentity: () => AccountIdentity;

  constructor(options: TerminalClientOptions) {
    const opts = optionsObject(options, 'TerminalClient');
    const version = textOption(opts, 'apiVersion') ?? '1.0';
    if (!/^[0-9A-Za-z.]{1,16}$/.test(version)) throw badInput('apiVersion', `"${version.slice(0, 20)}" is not a version like 1.0`);
    const base = resolveGatewayBase(requiredText(opts, 'baseUrl', 'the gateway address (https://host or https://host/api/v1.0/)'), version);
    this.apiVersion = base.apiVersion;
    const limits = commonLimits(opts, { timeoutMs: 65_000, rateLimitCalls: 5, rateLimitWindowMs: 60_000, maxConcurrent: 3 });
    this.maxBatchSize = intOption(opts, 'maxBatchSize', 100, 1, 100_000);
    const clientId = textOption(opts, 'clientId');
    const clientSecret = textOption(opts, 'clientSecret');
    const token = textOption(opts, 'token');
    if (!(clientId && clientSecret) && !token) throw badInput('credentials', 'give clientId and clientSecret, or token');
    const limit = { calls: limits.rateLimitCalls, windowMs: limits.rateLimitWindowMs };
    this.account = clientAccount({
      kind: 'gateway',
      label: `gateway ${new URL(base.baseUrl).host}`,
      baseUrl: base.baseUrl,
      ...limits,
      groups: { SEND: limit, GET: limit, INFO: { calls: intOption(opts, 'infoRateLimitCalls', limit.calls, 0, 100_000), windowMs: limit.windowMs } },
      throttled: isThrottleReply,
      principal: clientId,
      auth: {
        bearer: () => (clientId && clientSecret ? new ClientCredentialsBearer(clientId, clientSecret, this.apiPath(TERMINAL_PATHS.token)) : new StaticBearer(token!, 'bearer token')),
      },
    });
    this.keyIdentity = () => ({ baseUrl: base.baseUrl, ...(clientId ? { clientId } : { token: tokenIdentity('token', token!) }) });
    this.catalogue = new ErrorCatalogue(() => ({ client: this.client(), auth: this.bearerAuth(), path: this.apiPath(TERMINAL_PATHS.errorCodes) }));
  }

  /** The account's HTTP client (for TerminalContext). */
  client(): ApiClient {
    if (this.closed) throw closedError('TerminalClient');
    return this.account.client();
  }

  bearerAuth(): AuthProvider {
    return this.account.auth('bearer');
  }

  apiPath(rest: string): string {
    return `/api/v${this.apiVersion}/${rest.replace(/^\/+/, '')}`;
  }

  /** Sets operating modes / wake-up intervals (endpoint 1). One result per item, in order. */
  async submitModes(items: ModeInput | ModeInput[], options: SubmitModesOptions = {}): Promise<SubmitOutcome[]> {
    const checked = checkModeItems(items, options);
    return this.inBatches(checked, (batch) => postModes(this, batch, options), ['ID', 'UserMessageID']);
  }

  /** Sends general to-mobile messages (`submit/messages`). One result per item, in order. */
  async submitMessages(items: MessageInput | MessageInput[], options: SubmitMessagesOptions = {}): Promise<SubmitOutcome[]> {
    const d: ItemDefaults = {
      TransportType: options.transportType,
      MessageLifetime: options.messageLifetime,
      MessageClass: options.messageClass,
      maxRawBytes: intOption(options as Record<string, unknown>, 'maxRawBytes', 1023, 2, 1_000_000),
    };
    const problems: string[] = [];
    const checked = asList(items, 'items').map((raw, i) => checkGeneralItem(raw, Array.isArray(items) ? `items[${i}]` : 'items', d, problems));
    refuse(problems);
    return this.inBatches(checked as GeneralItem[], (batch) => postMessages(this, batch, options), ['ID', 'UserMessageID']);
  }

  /** Asks to cancel to-mobile messages by ID (endpoint 2): IDs, or results carrying `ID`. */
  async cancel(ids: number | string | bigint | { ID: unknown } | Array<number | string | bigint | { ID: unknown }>, options: Omit<CallOptions, 'slot'> = {}): Promise<CancelOutcome[]> {
    const list = readIds(ids, 'ids');
    const out = await this.inBatches(list, (batch) => postCancellations(this, batch, options), ['ID', 'CancelRequestID']);
    return out.map((c) => {
      const name = CANCELLATION_STATUS_NAMES[Number(c.CancellationStatus)];
      return name ? { ...c, CancellationStatusName: name } : c;
    });
  }

  /**
   * One page of the status updates of to-mobile messages from `fromUtc` (inclusive), with
   * StateName and TransportName; the reply checked as the nodes check it (see feed-guard.ts).
   */
  async statusUpdates(fromUtc: Date | string, options: Omit<CallOptions, 'slot'> = {}): Promise<FeedReply<StatusUpdate>> {
    const from = fromUtcText(fromUtc);
    const page = await getStatusPage(this, from, options);
    return guardedPage(`GET ${this.apiPath(TERMINAL_PATHS.statusUpdates)}`, from, page, (r) => (r instanceof MalformedRecord ? r.time : r.StatusUTC), (r) => {
      const out = exactIds(r, ['ID']);
      if (typeof r.State === 'number') out.StateName = STATE_NAMES[r.State] ?? `STATE_${r.State}`;
      if (typeof r.Transport === 'number') out.TransportName = TRANSPORT_NAMES[r.Transport] ?? `TRANSPORT_${r.Transport}`;
      return out;
    });
  }

  /**
   * One page of from-mobile messages from `fromUtc` (inclusive); RawPayload (base64) too unless
   * `includeRaw` is false; with `accounts: 'all'` those of every subaccount (a super account).
   */
  async messages(fromUtc: Date | string, options: Omit<CallOptions, 'slot'> & { includeRaw?: boolean; accounts?: 'own' | 'all' } = {}): Promise<FeedReply<MobileMessage>> {
    const from = fromUtcText(fromUtc);
    const all = options.accounts === 'all';
    if (!all && options.accounts !== undefined && options.accounts !== 'own') throw badInput('accounts', `must be "own" or "all", not ${showValue(options.accounts)}`);
    const page = await getMessagePage(this, from, options.includeRaw !== false, { ...options, allAccounts: all });
    const where = `GET ${this.apiPath(all ? TERMINAL_PATHS.subaccountMessages : TERMINAL_PATHS.messages)}`;
    return guardedPage(where, from, page, (m) => (m instanceof MalformedRecord ? m.time : (m.ReceiveUTC ?? m.MessageUTC)), (m) => exactIds(m, ['ID']));
  }

  /**
   * One page of the terminal changes feed (`info/terminal_updates`) from `fromUtc` (inclusive):
   * each terminal's current state (TerminalInfo), LastRegistrationMessageID exact; checked as
   * the nodes check it. A reader de-duplicates on PrimeID + UpdateUTC (the last second comes again).
   */
  async terminalUpdates(fromUtc: Date | string, options: Omit<CallOptions, 'slot'> = {}): Promise<FeedReply<TerminalInfo>> {
    const from = fromUtcText(fromUtc);
    const page = await getTerminalUpdatesPage(this, from, options);
    return guardedPage(`GET ${this.apiPath('info/terminal_updates')}`, from, page, terminalTime, terminalOut);
  }

  /** Closes its outboxes (terminal-outbox.ts), then ends the client's connections and its token; the client refuses requests after. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.dependents].map((d) => d.close()));
    this.closed = true;
    await this.account.close();
  }

  /** Calls of at most `maxBatchSize` items, one after the other; results with exact IDs. */
  private async inBatches<I, R extends object>(items: I[], call: (batch: I[]) => Promise<R[]>, idKeys: readonly string[]): Promise<R[]> {
    if (this.closed) throw closedError('TerminalClient');
    const out: R[] = [];
    for (let i = 0; i < items.length; i += this.maxBatchSize) {
      for (const r of await call(items.slice(i, i + this.maxBatchSize))) out.push(exactIds(r, idKeys));
    }
    return out;
  }
}

// ---- issue 35, "More of the gateway": terminalsPage, terminals, terminal, lookupStatuses, lookupMessages,
// serviceInfo, broadcastIds, subaccounts, submitToMultiple, call (clients/terminal-more.ts) ----
// eslint-disable-next-line @typescript-eslint/no-empty-object-type, @typescript-eslint/no-unsafe-declaration-merging
export interface TerminalClient extends MoreCalls {}
Object.assign(TerminalClient.prototype, moreCalls);
