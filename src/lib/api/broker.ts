/**
 * Areas (b) and (c): the LoRaWAN broker and SMS API. Request checks (the contract
 * creation body, IDs, devEui), reply schemas (liberal: unknown fields are kept, money may
 * be a string or a number), the one request path every broker node uses, and the
 * redaction of device session keys. The schemas are built at their first use (common/schema).
 */
import { GatewayError, badInput, quote } from '../common/errors';
import { describeType, showValue, toInt64 } from '../common/int64';
import { isPlainObject, joinProblems } from '../common/checks';
import type { ApiClient, ApiResponse, AuthProvider, Query, RequestSpec } from '../transport/http';
import { schema, type Infer, type Zod } from '../common/schema';

/** What translates a status text: Node-RED's `RED` (its `_`), or anything with the same method. */
export interface Translator {
  _(key: string, vars?: Record<string, string | number>): string;
}

/** A status text from the node's own catalogue, or the English fallback outside a full runtime. */
export function say(i18n: Translator, key: string, fallback: string, vars?: Record<string, string | number>): string {
  const out = i18n._(key, vars);
  return out && out !== key ? out : fallback;
}

/** What a broker/SMS request needs of its account: an `iotgw-gateway` config node, or a BrokerClient. */
export interface BrokerContext {
  /** The client of the LoRaWAN/SMS endpoints. */
  brokerClient(): ApiClient;
  /** The `client_id` / `access_token` headers. */
  brokerAuth(): AuthProvider;
}

export const PATHS = {
  contract: '/lorawan/broker/contract',
  referrals: '/lorawan/broker/referrals',
  devices: '/lorawan/broker/devices',
  sms: '/sms/request',
} as const;

/**
 * Sends one broker/SMS request: the account's client (its concurrency cap, no throttle
 * group), the client_id/access_token headers, and the Content-Type the API lists.
 */
export function brokerRequest(gw: BrokerContext, spec: Omit<RequestSpec, 'auth' | 'headers'>): Promise<ApiResponse> {
  return gw.brokerClient().request({ ...spec, auth: gw.brokerAuth(), headers: { 'content-type': 'application/json' } });
}

// ---- requests ----

const nonNegativeNumber = (z: Zod, what: string) => z.number({ error: `must be a number or a numeric string, ${what}` }).min(0, { error: 'must not be negative' });
/** Prices: a number, or a numeric string as the documented examples send them ("0.10"), passed on as given. */
const nonNegative = (z: Zod, what: string) =>
  z.union([nonNegativeNumber(z, what), z.string().regex(/^\s*\d+(\.\d+)?\s*$/, { error: `must be a number or a numeric string like "0.10", ${what}` })], {
    error: `must be a number or a numeric string, ${what}`,
  });
const count = schema((z) => z.number({ error: 'must be an integer' }).int({ error: 'must be an integer' }).min(0, { error: 'must not be negative' }));

/** The contract creation body (interface.md, "LoRaWAN contract, creation body"). */
export const contractCreate = schema((z) =>
  z
    .object({
      customerId: z.number({ error: 'required, the customer ID (a positive integer)' }).int({ error: 'must be an integer' }).positive({ error: 'must be positive' }),
      planDesc: z.string({ error: 'required, the contract name (a non-empty string)' }).trim().min(1, { error: 'must not be empty' }).max(255, { error: 'at most 255 characters' }),
      monthlyFee: nonNegative(z, 'the monthly fee').optional(),
      activationPrice: nonNegative(z, 'the activation price').optional(),
      sharingType: count().optional(),
      uplinkCount: count().optional(),
      downlinkCount: count().optional(),
      excessUplinkPrice: nonNegative(z, 'the price of an uplink above the plan').optional(),
      excessDownlinkPrice: nonNegative(z, 'the price of a downlink above the plan').optional(),
    })
    .loose(),
);
export type ContractCreate = Infer<typeof contractCreate>;

/**
 * Checks a creation body and reports every bad field at once. Fields the interface does
 * not list pass through (the real service may accept more, e.g. externalId), except those
 * that differ from a listed one only in case: those are typos.
 */
export function checkContractBody(payload: unknown, where = 'msg.payload'): ContractCreate {
  if (!isPlainObject(payload)) throw badInput(where, `must be the contract creation object, not ${describeType(payload)}`);
  const problems: string[] = [];
  const fields = Object.keys(contractCreate().shape);
  for (const k of Object.keys(payload)) {
    const known = fields.find((f) => f.toLowerCase() === k.toLowerCase());
    if (known && known !== k) problems.push(`${where}.${k}: unknown field (did you mean ${known}?)`);
  }
  const r = contractCreate().safeParse(payload);
  if (!r.success) for (const issue of r.error.issues) problems.push(`${where}.${quote(issue.path.join('.'))}: ${quote(issue.message)}`);
  if (problems.length) throw new GatewayError('BAD_INPUT', joinProblems(problems), { field: problems[0]!.split(':')[0] });
  return r.data!;
}

/** A positive integer ID (number, decimal string or BigInt), as a query value. */
export function positiveId(value: unknown, field: string, what: string): bigint {
  if (value === undefined || value === null || value === '') throw badInput(field, `required, ${what} (a positive integer)`);
  const id = toInt64(typeof value === 'string' ? value.trim() : value);
  if (typeof id === 'string') throw badInput(field, `${what} ${id}`);
  if (id <= 0n) throw badInput(field, `${what} must be positive, not ${id}`);
  return id;
}

/**
 * An optional non-negative integer setting or msg value; undefined when empty. A string
 * must be a plain decimal integer as typed ("16", not "0x10", "1e3", "1.0" or "+1"): what
 * is sent is exactly what the user wrote.
 */
export function optionalInt(value: unknown, field: string, min = 0, max = Number.MAX_SAFE_INTEGER): number | undefined {
  if (value === undefined || value === null || (typeof value === 'string' && value.trim() === '')) return undefined;
  const n = typeof value === 'string' ? (/^-?\d{1,16}$/.test(value.trim()) ? Number(value.trim()) : NaN) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) {
    throw badInput(field, `must be an integer from ${min} to ${max}, not ${showValue(value)}`);
  }
  return n;
}

/** A query parameter name from a setting (the real names of some are not public). */
export function paramName(value: unknown, fallback: string, field: string): string {
  const s = String(value ?? '').trim();
  if (s === '') return fallback;
  if (!/^[\w.\-[\]]{1,100}$/.test(s)) throw badInput(field, `"${s.slice(0, 40)}" is not a query parameter name (letters, digits, _ . - [ ])`);
  return s;
}

export const DEV_EUI_RE = /^[0-9a-fA-F]{16}$/;

/** A devEui filter: 16 hex digits, sent in lowercase as the service stores them. */
export function checkDevEui(value: unknown, field: string): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string' || !DEV_EUI_RE.test(value.trim())) {
    throw badInput(field, `must be 16 hexadecimal digits (e.g. 70b3d5e75e000001), not ${showValue(value)}`);
  }
  return value.trim().toLowerCase();
}

/** The receivable/payable view flag: true, false, or undefined (not sent). */
export function checkView(value: unknown, field: string): boolean | undefined {
  if (value === undefined || value === null || value === '' || value === 'any') return undefined;
  if (value === true || value === 'true' || value === 'receivable') return true;
  if (value === false || value === 'false' || value === 'payable') return false;
  throw badInput(field, `must be true (receivable view), false (payable view) or empty, not ${showValue(value)}`);
}

/**
 * Settings overridden by the same names in msg.payload when it is a plain object (any other
 * payload, such as an inject timestamp, is ignored). Unknown names are refused with a hint.
 * Returns the merged values and, for messages, where each value came from.
 */
export function withOverrides(config: object, payload: unknown, allowed: readonly string[]): { src: Record<string, unknown>; where: (k: string) => string } {
  if (!isPlainObject(payload)) return { src: { ...config }, where: (k) => k };
  for (const k of Object.keys(payload)) {
    if (!allowed.includes(k)) {
      const hint = allowed.find((f) => f.toLowerCase() === k.toLowerCase());
      throw badInput(`msg.payload.${k}`, `unknown option${hint ? ` (did you mean ${hint}?)` : `; allowed: ${allowed.join(', ')} (other parameters go in msg.query)`}`);
    }
  }
  return { src: { ...config, ...payload }, where: (k) => (k in payload ? `msg.payload.${k}` : k) };
}

/** Adds the defined entries of `values` to a query. */
export function defined(values: Record<string, string | number | boolean | bigint | undefined>): Query {
  const q: Query = {};
  for (const [k, v] of Object.entries(values)) if (v !== undefined) q[k] = v;
  return q;
}

/** The contract list's filters and paging (endpoint 5). */
export const CONTRACT_FILTERS = ['planDesc', 'customerId', 'externalId', 'page', 'pageSize'] as const;
export type ContractFilters = Partial<Record<(typeof CONTRACT_FILTERS)[number], string | number>>;

/** The list query: settings, overridden by the same names in `payload` (a plain object). */
export function contractListQuery(settings: object, payload: unknown): Record<string, string | number | undefined> {
  const { src, where } = withOverrides(settings, payload, CONTRACT_FILTERS);
  const text = (k: 'planDesc' | 'externalId') => {
    const v = src[k];
    if (v === undefined || v === null || v === '') return undefined;
    if (typeof v !== 'string') throw badInput(where(k), `must be a string, not ${typeof v}`);
    return v;
  };
  return {
    planDesc: text('planDesc'),
    customerId: optionalInt(src.customerId, where('customerId'), 1),
    externalId: text('externalId'),
    page: optionalInt(src.page, where('page'), 0),
    pageSize: optionalInt(src.pageSize, where('pageSize'), 1, 100000),
  };
}

// ---- replies ----

const int = schema((z) => z.number().int());
const money = schema((z) => z.union([z.string(), z.number()]));

export const messageReply = schema((z) => z.object({ message: z.string() }).loose());

export const contractRecord = schema((z) =>
  z
    .object({
      id: int(),
      customer: z.object({ id: int().nullish(), name: z.string().nullish() }).loose().nullish(),
      planDesc: z.string().nullish(),
      status: z.string().nullish(),
      uplinkCount: int().nullish(),
      downlinkCount: int().nullish(),
      activationPrice: money().nullish(),
      excessUplinkPrice: money().nullish(),
      excessDownlinkPrice: money().nullish(),
      externalId: z.string().nullish(),
      createdAt: z.string().nullish(),
      createdBy: z.string().nullish(),
      sharingType: int().nullish(),
      monthlyFee: money().nullish(),
      nbVirtualAccounts: int().nullish(),
    })
    .loose(),
);
export const contractList = schema((z) => z.array(contractRecord()));

export const deviceRecord = schema((z) =>
  z
    .object({
      id: int().nullish(),
      devEui: z.string(),
      tags: z.array(z.string()).nullish(),
      status: z.string().nullish(),
      customer: z.object({ id: int().nullish() }).loose().nullish(),
    })
    .loose(),
);
export type DeviceRecord = Infer<typeof deviceRecord>;

export const devicePage = schema((z) =>
  z
    .object({
      content: z.array(deviceRecord()),
      pageable: z.union([z.object({ pageNumber: int().nullish(), pageSize: int().nullish() }).loose(), z.string()]).nullish(),
      totalElements: int().nullish(),
      totalPages: int().nullish(),
      /** The end of the list: `last`, else an empty page (some services omit `last`). */
      last: z.boolean().nullish(),
      first: z.boolean().nullish(),
      numberOfElements: int().nullish(),
      size: int().nullish(),
      number: int().nullish(),
      empty: z.boolean().nullish(),
    })
    .loose(),
);
export type DevicePage = Infer<typeof devicePage>;

/** The device list's page: the documented one-element array, or the bare page. */
export const devicePageReply = schema((z) => z.union([devicePage(), z.tuple([devicePage()])]).transform((v) => (Array.isArray(v) ? v[0] : v)));

/** The checks of `devicePageReply` without copying what they do not name (for `checkReply`). */
const devicePageCheck = schema((z) => z.object({ ...devicePage().shape, content: z.array(z.object(deviceRecord().shape)) }));
export const devicePageReplyCheck = schema((z) => z.union([devicePageCheck(), z.tuple([devicePageCheck()])]));
/** The page of a reply `devicePageReplyCheck` accepted (the documented array, or the bare page). */
export const devicePageOf = (reply: DevicePage | [DevicePage]): DevicePage => (Array.isArray(reply) ? reply[0] : reply);

export const smsEnvelope = schema((z) =>
  z
    .object({
      sendSmsRequest: z.object({ id: int().nullish(), status: z.string().nullish() }).loose().nullish(),
      successCount: int(),
      errorCount: int(),
      pendingCount: int(),
    })
    .loose(),
);
export type SmsEnvelope = Infer<typeof smsEnvelope>;

/** Device session keys (and root keys, should a service return them): secrets. */
const KEY_FIELDS = new Set(['nwkskey', 'appskey', 'appkey', 'nwkkey']);

/** A copy of a device without its session keys (any spelling of their names). */
export function redactDevice<T extends Record<string, unknown>>(device: T): T {
  const out: Record<string, unknown> = {};
  // for...in and a length test before lower-casing: no entry arrays and no key copies per
  // field (a walk of 100,000 devices made gigabytes of them).
  for (const k in device) {
    if (!Object.prototype.hasOwnProperty.call(device, k)) continue;
    if ((k.length === 6 || k.length === 7) && KEY_FIELDS.has(k.toLowerCase())) continue;
    out[k] = device[k];
  }
  return out as T;
}
