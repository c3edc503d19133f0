/**
 * Areas (b) and (c), the broker's facts: its options and their defaults, the seeded
 * customers and special IDs, the accepted parameter names and how they are read (paging,
 * customers), and what its parts (access, contracts, devices, SMS) share of the area.
 */
import type { SimReply, SimRequest } from './server';
import { json } from './server';

export interface BrokerOptions {
  clientId: string;
  accessToken: string;
  /** Devices in the inventory (generated on demand). */
  deviceCount: number;
  /** Customers 1..customers own the devices, round robin. */
  customers: number;
  /** Wrap the device page in a one-element array, as the documentation shows. */
  wrapDevicePage: boolean;
  /** Check client_id / access_token on the device list too. */
  devicesRequireAuth: boolean;
  /** Number of the first page (1 as the sibling endpoints; 0 for zero-based). */
  firstPage: number;
  defaultPageSize: number;
  /** Larger page sizes are capped silently, as Spring does. */
  maxPageSize: number;
  contracts: number;
  referrals: number;
  /** Time for one SMS of the seeded draining batch to leave the pending state. */
  smsMsPerMessage: number;
  /** A query string longer than this is refused with `{valueInBytes}`. */
  maxQueryBytes: number;
  /** A path before the broker and SMS routes (the real base ends in `/v1`: set `/v1`). */
  basePath: string;
  /** Secret of `clientId` at the OAuth token endpoint `POST {basePath}/oauth/access-token`. */
  clientSecret: string;
  /** `expires_in` the token endpoint declares (seconds). */
  tokenExpiresIn: number;
  /** How long an issued token really lives (ms; 0 = as declared): shorter = revoked mid-run. */
  tokenLifetimeMs: number;
  /** Is the static `accessToken` accepted? (false: only tokens from the token endpoint) */
  staticTokenValid: boolean;
  /** `full` page envelopes, or `no-last`: no `last`, `totalPages` or `totalElements` (the end is an empty page). */
  pageEnd: 'full' | 'no-last';
}

export const DEFAULT_BROKER_OPTIONS: BrokerOptions = {
  clientId: 'sim-client',
  accessToken: 'sim-access-token',
  deviceCount: 2500,
  customers: 5,
  wrapDevicePage: true,
  devicesRequireAuth: true,
  firstPage: 1,
  defaultPageSize: 20,
  maxPageSize: 1000,
  contracts: 45,
  referrals: 500,
  smsMsPerMessage: 200,
  maxQueryBytes: 1024,
  basePath: '',
  clientSecret: 'sim-client-secret',
  tokenExpiresIn: 3600,
  tokenLifetimeMs: 0,
  staticTokenValid: true,
  pageEnd: 'full',
};

/** A customer that exists but belongs to another client (403). */
export const FOREIGN_CUSTOMER = 900;
/** An SMS batch of another client (403). */
export const FOREIGN_SMS_BATCH = 4;
/** An SMS batch whose pending count never falls. */
export const STUCK_SMS_BATCH = 3;

/** Accepted names of each parameter, ours first. */
export const ALIASES = {
  page: ['page', 'pageNumber', 'pagina'],
  pageSize: ['pageSize', 'size', 'perPage', 'per_page', 'limit'],
  customerId: ['customerId', 'customer', 'idCustomer', 'customer_id', 'clienteId'],
  planDesc: ['planDesc', 'name', 'contractName', 'plan'],
  externalId: ['externalId', 'external_id', 'idExternal'],
  receivable: ['receivable', 'isReceivable', 'receivableView', 'recebivel'],
  devEui: ['devEui', 'deveui', 'dev_eui', 'devEUI'],
  referralId: ['id', 'referralId', 'idReferral', 'referral_id', 'idEncaminhamento'],
  smsId: ['id', 'batchId', 'requestId', 'smsRequestId', 'idRequest'],
} as const;

export const CUSTOMER_NAMES = ['Cliente Alfa', 'Cliente Beta', 'Cliente Gama', 'Cliente Delta', 'Cliente Épsilon'];

export interface BrokerCounters {
  unauthorized: number;
  contractsCreated: number;
  referralsDeleted: number;
  devicePages: number;
  smsLookups: number;
}

/** What the area's parts share of the BrokerApi. */
export interface BrokerContext {
  /** Replaced as a whole by configure(): read it through the context each time. */
  readonly options: BrokerOptions;
  readonly now: () => number;
  readonly counters: BrokerCounters;
}

export function hex(n: bigint, digits: number): string {
  return n.toString(16).padStart(digits, '0').slice(-digits);
}

export function isoNoZone(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19);
}

/** The first alias present, or undefined. */
export function param(r: SimRequest, name: keyof typeof ALIASES): string | undefined {
  for (const a of ALIASES[name]) {
    const v = r.query.get(a);
    if (v !== null) return v;
  }
  return undefined;
}

/** An integer parameter: undefined when absent, a reply when malformed. */
export function intParam(r: SimRequest, name: keyof typeof ALIASES, min: number): number | undefined | SimReply {
  const v = param(r, name);
  if (v === undefined || v === '') return undefined;
  if (!/^-?\d+$/.test(v.trim()) || Number(v) < min) return json(400, { errors: `Parâmetro ${name} inválido: ${v.slice(0, 40)}` });
  return Number(v);
}

/** The 0-based page and its capped size, or the 400 reply for a malformed one. */
export function paging(r: SimRequest, o: BrokerOptions): { page: number; size: number } | SimReply {
  const page = intParam(r, 'page', o.firstPage);
  if (typeof page === 'object') return page;
  const size = intParam(r, 'pageSize', 1);
  if (typeof size === 'object') return size;
  return {
    page: (page ?? o.firstPage) - o.firstPage,
    size: Math.min(size ?? o.defaultPageSize, o.maxPageSize),
  };
}

export function customerCheck(id: number, o: BrokerOptions): SimReply | undefined {
  if (id === FOREIGN_CUSTOMER) return json(403, { errors: `Acesso negado: o cliente ${id} não pertence a este client_id` });
  if (id < 1 || id > o.customers) return json(404, { errors: `Cliente ${id} não encontrado` });
  return undefined;
}

/** The customer filter of a list: undefined when absent, a reply when malformed or not the client's. */
export function customerFilter(r: SimRequest, o: BrokerOptions): number | undefined | SimReply {
  const customer = intParam(r, 'customerId', 0);
  if (typeof customer === 'object') return customer;
  if (customer !== undefined) {
    const denied = customerCheck(customer, o);
    if (denied) return denied;
  }
  return customer;
}
