/**
 * Service information (issue 35), group INFO: `info/service` (version, server time and the
 * live error catalogue), `info/broadcast` (broadcast IDs; the predecessor named the array
 * `BroadcastInfos`: both read) and `info/subaccount/list` (a super account's subaccounts;
 * `AccountName` or the predecessor's `Name`, `AccountID` a number or a decimal string: both
 * read, given out as `AccountID` number and `AccountName`).
 */
import { GatewayError, badInput } from '../common/errors';
import { showValue } from '../common/int64';
import { schema, type SchemaOf } from '../common/schema';
import { parseReply } from './terminal';
import { throwOnCallError } from './gateway-errors';
import { gatewayGet, type GatewayContext, type LookupOptions } from './gateway-context';

export type InfoWhat = 'service' | 'broadcast' | 'subaccounts';
export const INFO_PATHS = { service: 'info/service', broadcast: 'info/broadcast', subaccounts: 'info/subaccount/list' } as const;

const int32 = schema((z) => z.number().int());
const errorCode = schema((z) => z.object({ ID: z.number().int(), Name: z.string().nullish(), Description: z.string().nullish() }).loose());
const serviceReply = schema((z) => z.object({ ErrorID: int32().nullish(), Version: z.string().nullish(), ServerUTC: z.string().nullish(), ErrorCodes: z.array(errorCode()).nullish() }).loose());
const broadcastInfo = schema((z) => z.object({ ID: z.string(), Description: z.string().nullish(), SatelliteNetwork: int32().nullish() }).loose());
const broadcastReply = schema((z) => z.object({ ErrorID: int32().nullish(), BroadcastIDs: z.array(broadcastInfo()).nullish(), BroadcastInfos: z.array(broadcastInfo()).nullish() }).loose());
const subaccount = schema((z) =>
  z.object({ AccountID: z.union([z.number().int(), z.string().regex(/^\d{1,15}$/)]), AccountName: z.string().nullish(), Name: z.string().nullish() }).loose(),
);
const subaccountsReply = schema((z) => z.object({ ErrorID: int32().nullish(), Subaccounts: z.array(subaccount()).nullish() }).loose());

export interface ServiceInfo {
  Version: string | null;
  ServerUTC: string | null;
  ErrorCodes: Array<{ ID: number; Name?: string | null; Description?: string | null }>;
}
export type BroadcastInfo = { ID: string; Description?: string | null; SatelliteNetwork?: number | null } & Record<string, unknown>;
export type Subaccount = { AccountID: number; AccountName: string | null } & Record<string, unknown>;

/** 'service' (default), 'broadcast' or 'subaccounts'. */
export function checkInfoWhat(v: unknown, where = 'what'): InfoWhat {
  if (v === undefined || v === null || v === '') return 'service';
  if (v === 'service' || v === 'broadcast' || v === 'subaccounts') return v;
  throw badInput(where, `must be "service", "broadcast" or "subaccounts", not ${showValue(v)}`);
}

async function infoReply<T extends { ErrorID?: number | null }>(g: GatewayContext, what: InfoWhat, s: SchemaOf<T>, query: Record<string, string>, o: LookupOptions) {
  const res = await gatewayGet(g, INFO_PATHS[what], query, o);
  const where = `GET ${res.path}`;
  const reply = parseReply(s, res.body, where);
  await throwOnCallError(g, reply.ErrorID, where, res.statusCode, o.signal);
  return { reply, statusCode: res.statusCode };
}

/** GET info/service?GetErrorCodes=true: version, server time and the whole error catalogue. */
export async function getServiceInfo(g: GatewayContext, o: LookupOptions = {}): Promise<{ info: ServiceInfo; statusCode: number }> {
  const { reply, statusCode } = await infoReply(g, 'service', serviceReply, { GetErrorCodes: 'true' }, o);
  return { info: { Version: reply.Version ?? null, ServerUTC: reply.ServerUTC ?? null, ErrorCodes: reply.ErrorCodes ?? [] }, statusCode };
}

/** GET info/broadcast: the account's broadcast IDs (`BroadcastIDs`, or the predecessor's `BroadcastInfos`). */
export async function getBroadcastIds(g: GatewayContext, o: LookupOptions = {}): Promise<{ broadcasts: BroadcastInfo[]; statusCode: number }> {
  const { reply, statusCode } = await infoReply(g, 'broadcast', broadcastReply, {}, o);
  return { broadcasts: (reply.BroadcastIDs ?? reply.BroadcastInfos ?? []) as BroadcastInfo[], statusCode };
}

/** GET info/subaccount/list: FORBIDDEN (403) for an account that is not a super account. */
export async function getSubaccounts(g: GatewayContext, o: LookupOptions = {}): Promise<{ subaccounts: Subaccount[]; statusCode: number }> {
  const { reply, statusCode } = await infoReply(g, 'subaccounts', subaccountsReply, {}, o);
  const subaccounts = (reply.Subaccounts ?? []).map((raw) => {
    const { Name, ...rest } = raw;
    const id = typeof raw.AccountID === 'string' ? Number(raw.AccountID) : raw.AccountID;
    if (!Number.isSafeInteger(id)) throw new GatewayError('BAD_RESPONSE', `GET ${g.apiPath(INFO_PATHS.subaccounts)}: AccountID ${showValue(raw.AccountID)} is not a whole number`);
    return { ...rest, AccountID: id, AccountName: raw.AccountName ?? Name ?? null } as Subaccount;
  });
  return { subaccounts, statusCode };
}
