/**
 * To-mobile messages by ID (issue 35): `get/fw_statuses` (status records) or `get/fw_messages`
 * (whole messages), group GET, `IDList` as one comma-separated value. At most 100 IDs a
 * call: more are split and the records joined back in input order. An ID the gateway does
 * not know (no entry, or an entry with only its ID and an ErrorID: real-services.md, a
 * guess) is left out of the records and listed in `unknown`. When one call fails, the
 * others still end, and the error carries what they found (`err.partial`).
 */
import { GatewayError, badInput, toGatewayError } from '../common/errors';
import { partialError } from './partial';
import { int64Key, int64Out, showValue } from '../common/int64';
import { schema } from '../common/schema';
import { STATE_NAMES, TRANSPORT_NAMES, exactIds, parseReply, statusRecord } from './terminal';
import { throwOnCallError } from './gateway-errors';
import { terminalIdText } from './records';
import { gatewayGet, type GatewayContext, type LookupOptions } from './gateway-context';

export type LookupWhat = 'statuses' | 'messages';
export const LOOKUP_PATHS = { statuses: 'get/fw_statuses', messages: 'get/fw_messages' } as const;
/** Most IDs in one call (real-services.md: likely). */
export const MAX_LOOKUP_IDS = 100;

const int32 = schema((z) => z.number().int());
const int64Field = schema((z) => z.union([z.number().int(), z.string().regex(/^-?\d+$/)]));
const toMobileMessage = schema((z) =>
  z.object({ ID: int64Field(), DestinationID: terminalIdText().nullish(), State: int32().nullish(), ErrorID: int32().nullish(), IsClosed: z.boolean().nullish() }).loose(),
);
const statusesReply = schema((z) => z.object({ ErrorID: int32().nullish(), Statuses: z.array(statusRecord()).nullish() }).loose());
const messagesReply = schema((z) => z.object({ ErrorID: int32().nullish(), Messages: z.array(toMobileMessage()).nullish() }).loose());

type LookupRecord = { ID: number | string; State?: number | null; ErrorID?: number | null; Transport?: number | null } & Record<string, unknown>;

export interface LookupResult {
  /** The records of the known IDs, in input order. */
  records: Array<Record<string, unknown>>;
  /** The IDs the gateway does not know, in input order (numbers up to 2^53, else decimal strings). */
  unknown: Array<number | string>;
  /** Calls made. */
  calls: number;
}

/** 'statuses' (default) or 'messages'. */
export function checkLookupWhat(v: unknown, where = 'what'): LookupWhat {
  if (v === undefined || v === null || v === '' || v === 'statuses') return 'statuses';
  if (v === 'messages') return 'messages';
  throw badInput(where, `must be "statuses" or "messages", not ${showValue(v)}`);
}

/** An entry for an ID the gateway does not know: an ErrorID and no state of a message. */
const isUnknownEntry = (r: LookupRecord) => (r.ErrorID ?? 0) > 0 && (r.State === undefined || r.State === null);

function named(r: LookupRecord): Record<string, unknown> {
  const out: Record<string, unknown> = exactIds(r, ['ID', 'ReferenceNumber']);
  if (typeof r.State === 'number') out.StateName = STATE_NAMES[r.State] ?? `STATE_${r.State}`;
  if (typeof r.Transport === 'number') out.TransportName = TRANSPORT_NAMES[r.Transport] ?? `TRANSPORT_${r.Transport}`;
  return out;
}

/** One call of at most MAX_LOOKUP_IDS distinct IDs: the records by ID key. */
async function lookupChunk(g: GatewayContext, what: LookupWhat, ids: bigint[], o: LookupOptions): Promise<Map<string, LookupRecord>> {
  const res = await gatewayGet(g, LOOKUP_PATHS[what], { IDList: ids.join(',') }, o);
  const where = `GET ${res.path}`;
  const reply = what === 'statuses' ? parseReply(statusesReply, res.body, where) : parseReply(messagesReply, res.body, where);
  await throwOnCallError(g, reply.ErrorID, where, res.statusCode, o.signal);
  const list = ((what === 'statuses' ? (reply as { Statuses?: unknown[] | null }).Statuses : (reply as { Messages?: unknown[] | null }).Messages) ?? []) as LookupRecord[];
  const asked = new Set(ids.map(String));
  const out = new Map<string, LookupRecord>();
  for (const r of list) {
    const key = int64Key(r.ID)!;
    if (!asked.has(key)) throw new GatewayError('BAD_RESPONSE', `${where}: a record for ID ${key}, which was not asked for`);
    if (!out.has(key)) out.set(key, r);
  }
  return out;
}

/** What a look-up that failed in part still gives (`err.partial`): the answered calls' records, and the IDs of the failed ones. */
export interface LookupPartial {
  /** The records of the known IDs of the calls that were answered, in input order. */
  records: Array<Record<string, unknown>>;
  /** The IDs those calls say the gateway does not know. */
  unknown: Array<number | string>;
  /** The IDs whose call failed, in input order: the part to look up again. */
  failed: Array<number | string>;
}

/**
 * Looks up `ids` (checked int64s) in calls of at most `maxIds`; records joined in input order.
 * Every call runs to its end; when one failed, the look-up ends with its error carrying what
 * the others found (`err.partial`, a LookupPartial).
 */
export async function lookupMessages(g: GatewayContext, what: LookupWhat, ids: bigint[], o: LookupOptions = {}, maxIds = MAX_LOOKUP_IDS): Promise<LookupResult> {
  const distinct = [...new Set(ids.map(String))].map((s) => BigInt(s));
  const chunks: bigint[][] = [];
  for (let i = 0; i < distinct.length; i += maxIds) chunks.push(distinct.slice(i, i + maxIds));
  // The calls leave as the account's limits allow; the join waits for them all.
  const settled = await Promise.allSettled(chunks.map((c) => lookupChunk(g, what, c, o)));
  const found = new Map<string, LookupRecord>();
  const missed = new Set<string>();
  let failure: unknown;
  settled.forEach((s, i) => {
    if (s.status === 'fulfilled') for (const [k, r] of s.value) found.set(k, r);
    else {
      failure ??= s.reason;
      for (const id of chunks[i]!) missed.add(id.toString());
    }
  });
  const records: Array<Record<string, unknown>> = [];
  const unknown: Array<number | string> = [];
  const failed: Array<number | string> = [];
  for (const id of ids) {
    const r = found.get(id.toString());
    if (missed.has(id.toString())) failed.push(int64Out(id));
    else if (r && !isUnknownEntry(r)) records.push(named(r));
    else unknown.push(int64Out(id));
  }
  if (failure !== undefined) throw partialError<LookupPartial>(toGatewayError(failure), failed.length < ids.length ? { records, unknown, failed } : undefined);
  return { records, unknown, calls: chunks.length };
}
