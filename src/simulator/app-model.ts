/**
 * Area (d), the application API's facts: its options and their defaults, the accepted
 * query parameter names and how they are read, the platform's error statuses, and the
 * seeded accounts (users, tokens, tags) with their deterministic UUID-shaped IDs.
 */
import type { SimReply, SimRequest } from './server';
import { json } from './server';

export type AppErrorShape = 'platform' | 'error';

export interface AppOptions {
  rateLimitCalls: number;
  rateLimitWindowMs: number;
  /** `platform`: {code, message, payload}; `error`: {error}. */
  errorShape: AppErrorShape;
  /** Tags of the demo account's customer. */
  tagCount: number;
  /** per_page when the request gives none. */
  defaultPerPage: number;
  maxPerPage: number;
  /** Password of every user at `POST /app/auth/login` {email, password} -> {authToken}. */
  loginPassword: string;
  /** How long a token from the login endpoint lives (ms; 0 = a day). */
  loginTokenLifetimeMs: number;
  /** Leave `nextPage`/`prevPage` out of the tag pages (the end is then an empty page). */
  omitNextPage: boolean;
}

export const DEFAULT_APP_OPTIONS: AppOptions = {
  rateLimitCalls: 10,
  rateLimitWindowMs: 20_000,
  errorShape: 'platform',
  tagCount: 45,
  defaultPerPage: 20,
  maxPerPage: 100,
  loginPassword: 'demo-password',
  loginTokenLifetimeMs: 0,
  omitNextPage: false,
};

/** Accepted names of each query parameter (first = the name the nodes send). */
export const PARAMS = {
  user: ['user_id', 'userId', 'id', 'uuid'],
  token: ['token', 'customer_token', 'tokenManager', 'token_manager'],
  page: ['page', 'curPage'],
  perPage: ['per_page', 'perPage', 'pageSize', 'page_size', 'limit'],
  offset: ['offset', 'skip'],
  search: ['search', 'q', 'filter', 'device_name'],
  tagId: ['tag_id', 'tagId', 'tag', 'id'],
  serial: ['serial_number', 'serialNumber', 'serial'],
  chipset: ['chipset', 'vendor', 'chipset_vendor'],
  version: ['version', 'config_version', 'configVersion'],
} as const;

const ERROR_TEXT = {
  400: { code: 'ERROR_CODE_INPUT_ERROR', error: 'Input error. Check the request payload for issues.' },
  401: { code: 'ERROR_CODE_UNAUTHORIZED', error: 'This request requires authentication.' },
  403: { code: 'ERROR_CODE_ACCESS_DENIED', error: 'Access denied. Additional privileges are needed.' },
  404: { code: 'ERROR_CODE_NOT_FOUND', error: 'Not found. The requested resource does not exist.' },
  429: { code: 'ERROR_CODE_TOO_MANY_REQUESTS', error: 'Rate limited. Too many requests.' },
  500: { code: 'ERROR_FATAL', error: 'Unexpected error.' },
} as const;

export type AppStatus = keyof typeof ERROR_TEXT;

/** An error reply in the configured body shape. */
export function errorReply(shape: AppErrorShape, status: AppStatus, detail?: string, param?: string): SimReply {
  const e = ERROR_TEXT[status];
  const message = detail ? `${e.error.replace(/\.$/, '')}: ${detail}` : e.error;
  if (shape === 'error') return json(status, { error: message });
  return json(status, { code: e.code, message, payload: param ? { param } : null });
}

export interface AppUser {
  id: string;
  created_at: string;
  accounts_id: string;
  name: string;
  email: string;
  username: string;
  role: string;
  lastSeen: number;
  ativo: boolean;
  tokenManager: string;
  token_expire: number;
}

export interface AppAccount {
  id: string;
  /** Bearer tokens of the account's users, by user ID. */
  tokens: Record<string, string>;
  users: AppUser[];
  tags: Array<Record<string, unknown> & { id: string; serial_number: string; device_name: string }>;
}

export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Deterministic UUID-shaped IDs. */
export function simUuid(kind: number, n: number): string {
  return `${kind.toString(16).padStart(8, '0')}-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
}

const CHIPSETS = ['nrf52', 'esp32'];
export const BASE_TIME = Date.UTC(2024, 10, 5, 16, 12, 27);

function makeTag(accountId: string, n: number, serialPrefix: string): AppAccount['tags'][number] {
  const chipset = CHIPSETS[n % CHIPSETS.length]!;
  return {
    id: simUuid(3, n),
    created_at: new Date(BASE_TIME + n * 3_600_000).toISOString(),
    accounts_id: accountId,
    device_name: `Tag ${String(n).padStart(3, '0')}`,
    serial_number: `${serialPrefix}${String(n).padStart(6, '0')}`,
    operational_status: n % 7 === 0 ? 'inactive' : 'active',
    battery: 100 - (n % 60),
    last_connected: BASE_TIME + n * 60_000,
    lastConfiguration: { version: 1 + (n % 3), chipset },
    lastReport: { temperature: 20 + (n % 10), motion: n % 2 === 0 },
    isTag: true,
    address: { street: `Rua ${n}`, city: 'Campinas' },
    icone: 'tag',
    nextTo: '',
    PontoREF: n % 5 === 0,
    geo_point: `-22.${900 + n},-47.${100 + n}`,
    image: { access: 'public', path: `/img/tag${n}.png`, name: `tag${n}.png`, type: 'image', size: 1024 + n, mime: 'image/png', meta: {}, url: `https://files.example.invalid/tag${n}.png` },
    groups: { id: 1 + (n % 3), created_at: new Date(BASE_TIME).toISOString(), accounts_id: accountId, title: `Group ${1 + (n % 3)}`, color: '#C0DEED' },
    products: { id: 1 + (n % 2), created_at: new Date(BASE_TIME).toISOString(), deviceBrand: chipset, deviceType: 'tag', productName: `${chipset.toUpperCase()} tag`, account_id: accountId },
  };
}

function makeUser(accountId: string, n: number, name: string, username: string, role: string, tokenManager: string): AppUser {
  return {
    id: simUuid(2, n),
    created_at: new Date(BASE_TIME - n * 86_400_000).toISOString(),
    accounts_id: accountId,
    name,
    email: `${username}@example.com`,
    username,
    role,
    lastSeen: BASE_TIME + n * 1000,
    ativo: true,
    tokenManager,
    token_expire: 86_400,
  };
}

export function defaultAccounts(tagCount: number): AppAccount[] {
  const demoId = simUuid(1, 1);
  const otherId = simUuid(1, 2);
  const demo: AppAccount = {
    id: demoId,
    users: [makeUser(demoId, 1, 'Demo User', 'demo', 'admin', 'mgr-demo-customer'), makeUser(demoId, 3, 'Field Operator', 'operator', 'user', 'mgr-demo-customer')],
    tokens: {},
    tags: Array.from({ length: tagCount }, (_, i) => makeTag(demoId, i + 1, 'SN')),
  };
  demo.tokens[demo.users[0]!.id] = 'app-demo-token';
  const other: AppAccount = {
    id: otherId,
    users: [makeUser(otherId, 2, 'Other Customer', 'other', 'admin', 'mgr-other-customer')],
    tokens: {},
    tags: Array.from({ length: 3 }, (_, i) => makeTag(otherId, 1001 + i, 'OT')),
  };
  other.tokens[other.users[0]!.id] = 'app-other-token';
  return [demo, other];
}

/** What the area's parts share of the AppApi. */
export interface AppContext {
  /** Replaced as a whole by configure(): read it through the context each time. */
  readonly options: AppOptions;
  readonly accounts: AppAccount[];
  readonly now: () => number;
  readonly counters: { served: number; throttled: number; unauthorized: number; failed: number };
}

/** A refusal a handler throws; the guard turns it into an error reply. */
export class AppFail {
  constructor(
    readonly status: AppStatus,
    readonly detail?: string,
    readonly param?: string,
  ) {}
}

/** The value of a parameter under any of its accepted names. */
export function param(r: SimRequest, names: readonly string[]): { name: string; value: string } | undefined {
  for (const n of names) {
    const v = r.query.get(n);
    if (v !== null) return { name: n, value: v };
  }
  return undefined;
}

export function intParam(r: SimRequest, names: readonly string[], min: number, max: number, fallback: number): number {
  const p = param(r, names);
  if (!p || p.value === '') return fallback;
  const n = Number(p.value);
  if (!/^\d+$/.test(p.value.trim()) || n < min || n > max) throw new AppFail(400, `${p.name} must be an integer from ${min} to ${max}`, p.name);
  return n;
}
