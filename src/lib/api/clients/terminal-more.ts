/**
 * The calls of "More of the gateway" (issue 35) as TerminalClient methods: the inventory,
 * look-ups by message ID, service information, one message to many terminals, and any
 * call under the base. They are put on TerminalClient's prototype (clients/terminal.ts), so
 * that file stays within its size; each checks its input before any request, as the nodes do.
 */
import { GatewayError, badInput } from '../../common/errors';
import { joinProblems } from '../../common/checks';
import type { Query } from '../../transport/http';
import type { GatewayContext, LookupOptions } from '../gateway-context';
import { checkMaxPages, checkPageSize, checkPrimeId, getTerminal, getTerminalsPage, walkTerminals, type TerminalInfo, type TerminalPage } from '../terminal-inventory';
import { lookupMessages, type LookupPartial, type LookupResult } from '../terminal-lookup';
import { getBroadcastIds, getServiceInfo, getSubaccounts, type BroadcastInfo, type ServiceInfo, type Subaccount } from '../service-info';
import { checkCallBody, checkCallPath, checkGroup, checkMethod, gatewayCall } from '../gateway-call';
import { DEFAULT_MAX_DESTINATIONS, checkMultipleItem, postToMultiple } from '../to-multiple';
import { readIds } from '../terminal-inputs';
import { exactIds, type SubmitResult } from '../terminal';

export type { TerminalInfo, TerminalPage, LookupResult, LookupPartial, ServiceInfo, BroadcastInfo, Subaccount };

/** The message of submitToMultiple: the fields of a submitMessages item without DestinationID. */
export interface MultipleMessageInput {
  UserMessageID?: number | string | bigint;
  RawPayload?: Buffer | Uint8Array | number[] | string;
  Payload?: { Name?: string; SIN: number; MIN: number; Fields?: unknown };
  TransportType?: number;
  MessageLifetime?: number;
  MessageClass?: number;
}

type IdsInput = number | string | bigint | { ID: unknown } | Array<number | string | bigint | { ID: unknown }>;

export interface MoreCalls {
  /** One keyset page of the inventory: the page after `sinceId` (absent: the first), `pageSize` 1..1000 (default 1000). */
  terminalsPage(options?: LookupOptions & { sinceId?: string; pageSize?: number }): Promise<TerminalPage>;
  /**
   * Every page of the inventory in turn (one call per page; only the page at hand is held).
   * At most `maxPages` calls (default 1000, the empty page that ends the list included);
   * BAD_RESPONSE for a list not ended by then, pages that go round or out of PrimeID order.
   */
  terminals(options?: LookupOptions & { pageSize?: number; maxPages?: number }): AsyncGenerator<TerminalInfo[]>;
  /** One terminal by PrimeID; NOT_FOUND when the gateway does not know it. */
  terminal(primeId: string, options?: LookupOptions): Promise<TerminalInfo>;
  /**
   * Status records by message ID (calls of at most 100 IDs), in input order; unknown IDs listed apart.
   * When one call fails, the error carries what the others found as `err.partial` (LookupPartial).
   */
  lookupStatuses(ids: IdsInput, options?: LookupOptions): Promise<LookupResult>;
  /** Whole to-mobile messages by ID, as lookupStatuses. */
  lookupMessages(ids: IdsInput, options?: LookupOptions): Promise<LookupResult>;
  /** Version, server time and the live error catalogue. */
  serviceInfo(options?: LookupOptions): Promise<ServiceInfo>;
  broadcastIds(options?: LookupOptions): Promise<BroadcastInfo[]>;
  /** A super account's subaccounts (FORBIDDEN for another account). */
  subaccounts(options?: LookupOptions): Promise<Subaccount[]>;
  /** One message to many terminals (submit/to_multiple): one result per destination, in order. */
  submitToMultiple(message: MultipleMessageInput, destinations: string[], options?: LookupOptions & { maxDestinations?: number; maxRawBytes?: number }): Promise<SubmitResult[]>;
  /** Any call under /api/v{version}/ (e.g. POST terminal/reset): the reply, int64 exact. */
  call(spec: { method: 'GET' | 'POST'; path: string; group?: 'SEND' | 'GET' | 'INFO'; query?: Query; body?: unknown; signal?: AbortSignal }): Promise<unknown>;
}

const ids = (v: IdsInput) => readIds(v, 'ids');

export const moreCalls: MoreCalls & ThisType<GatewayContext> = {
  async terminalsPage(o = {}) {
    return getTerminalsPage(this, o.sinceId === undefined ? undefined : checkPrimeId(o.sinceId, 'sinceId'), checkPageSize(o.pageSize, 'pageSize'), o);
  },
  async *terminals(o = {}) {
    const size = checkPageSize(o.pageSize, 'pageSize');
    const maxPages = checkMaxPages(o.maxPages, 'maxPages');
    for await (const page of walkTerminals(this, size, maxPages, o)) if (page.terminals.length) yield page.terminals;
  },
  async terminal(primeId, o = {}) {
    return (await getTerminal(this, checkPrimeId(primeId, 'primeId'), o)).terminal;
  },
  async lookupStatuses(v, o = {}) {
    return lookupMessages(this, 'statuses', ids(v), o);
  },
  async lookupMessages(v, o = {}) {
    return lookupMessages(this, 'messages', ids(v), o);
  },
  async serviceInfo(o = {}) {
    return (await getServiceInfo(this, o)).info;
  },
  async broadcastIds(o = {}) {
    return (await getBroadcastIds(this, o)).broadcasts;
  },
  async subaccounts(o = {}) {
    return (await getSubaccounts(this, o)).subaccounts;
  },
  async submitToMultiple(message, destinations, o = {}) {
    const problems: string[] = [];
    const max = o.maxDestinations ?? DEFAULT_MAX_DESTINATIONS;
    const raw = { ...(message as Record<string, unknown>), Destinations: destinations };
    const item = checkMultipleItem(raw, 'message', { maxRawBytes: o.maxRawBytes ?? 1023 }, max, problems);
    if (!item) throw new GatewayError('BAD_INPUT', joinProblems(problems), { field: problems[0]?.split(':')[0] ?? 'message' });
    return (await postToMultiple(this, item, o)).map((r) => exactIds(r, ['ID', 'UserMessageID']));
  },
  async call(spec) {
    if (spec === null || typeof spec !== 'object') throw badInput('spec', 'give {method, path, group?, query?, body?}');
    const path = checkCallPath(spec.path);
    const method = checkMethod(spec.method);
    const body = method === 'POST' ? checkCallBody(spec.body, 'body') : undefined;
    return (await gatewayCall(this, { method, path, group: checkGroup(spec.group, path), query: spec.query, body, signal: spec.signal })).body;
  },
};
