/**
 * Area (d), the application API (endpoints 9 to 11): paths, the query-parameter names
 * we send (the real ones are not public; `msg.query` adds or renames them), reply shapes
 * validated with zod, and the checks of node inputs done before any request.
 *
 * Replies are liberal: unknown fields are kept and documented fields may be null or
 * missing, but a documented field of the wrong type is refused as BAD_RESPONSE. The
 * schemas are built at their first use (common/schema).
 */
import { GatewayError, badInput } from '../common/errors';
import type { Query } from '../transport/http';
import { describeType } from '../common/int64';
import { schema, type Infer } from '../common/schema';

export const APP_PATHS = {
  user: '/auth/user',
  tags: '/costummer/tag', // sic: the platform's path
  tagConfig: '/tag/chipset/config',
} as const;

/** The query-parameter names the nodes send. */
export const APP_PARAMS = {
  user: 'user_id',
  token: 'token',
  page: 'page',
  perPage: 'per_page',
  offset: 'offset',
  search: 'search',
  tagId: 'tag_id',
  serialNumber: 'serial_number',
  chipset: 'chipset',
  version: 'version',
} as const;

/** The five parameters of endpoint 11, as node property -> query name. */
export const TAG_CONFIG_PARAMS = [
  ['token', APP_PARAMS.token],
  ['tagId', APP_PARAMS.tagId],
  ['serialNumber', APP_PARAMS.serialNumber],
  ['chipset', APP_PARAMS.chipset],
  ['version', APP_PARAMS.version],
] as const;

/** The bounds of the tag list's paging values (endpoint 10). */
export const TAG_PAGING = {
  page: { min: 1, max: 1_000_000 },
  pageSize: { min: 1, max: 10_000 },
  offset: { min: 0, max: 1_000_000_000 },
} as const;

const str = schema((z) => z.string());
const int = schema((z) => z.number().int());
/** Timestamps: the interface says string; the platform's native form is epoch ms. */
const stamp = schema((z) => z.union([z.string(), z.number()]));
const obj = schema((z) => z.record(z.string(), z.unknown()));

export const userRecord = schema((z) =>
  z
    .object({
      id: str().nullish(),
      created_at: stamp().nullish(),
      accounts_id: str().nullish(),
      name: str().nullish(),
      email: str().nullish(),
      username: str().nullish(),
      role: str().nullish(),
      lastSeen: z.number().nullish(),
      ativo: z.boolean().nullish(),
      tokenManager: str().nullish(),
      token_expire: z.number().nullish(),
    })
    .loose(),
);
export type UserRecord = Infer<typeof userRecord>;

export const tagRecord = schema((z) =>
  z
    .object({
      id: str().nullish(),
      created_at: stamp().nullish(),
      accounts_id: str().nullish(),
      device_name: str().nullish(),
      serial_number: str().nullish(),
      operational_status: str().nullish(),
      battery: z.number().nullish(),
      last_connected: z.number().nullish(),
      lastConfiguration: obj().nullish(),
      lastReport: obj().nullish(),
      isTag: z.boolean().nullish(),
      address: obj().nullish(),
      icone: str().nullish(),
      nextTo: str().nullish(),
      PontoREF: z.boolean().nullish(),
      geo_point: str().nullish(),
      image: obj().nullish(),
      groups: obj().nullish(),
      products: obj().nullish(),
    })
    .loose(),
);
export type TagRecord = Infer<typeof tagRecord>;

export const tagPage = schema((z) =>
  z
    .object({
      itemsReceived: int().nullish(),
      curPage: int().nullish(),
      nextPage: int().nullish(),
      prevPage: int().nullish(),
      offset: int().nullish(),
      perPage: int().nullish(),
      items: z.array(tagRecord()),
    })
    .loose(),
);
export type TagPage = Infer<typeof tagPage>;

/** The configuration of a tag: a JSON object whose fields are not public. */
export const tagConfig = obj;

const MAX_PARAM = 4096;

/**
 * One query value from a setting or the msg: a string, a finite number or a boolean
 * (sent as text); undefined, null and '' mean "not sent". Anything else is BAD_INPUT.
 */
export function queryValue(v: unknown, field: string): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw badInput(field, `must be a finite number, not ${v}`);
    return String(v);
  }
  if (typeof v === 'bigint' || typeof v === 'boolean') return String(v);
  if (typeof v !== 'string') throw badInput(field, `must be a string, number or boolean, not ${describeType(v)}`);
  const s = v.trim();
  if (s.length > MAX_PARAM) throw badInput(field, `must be at most ${MAX_PARAM} characters`);
  if (/[\u0000-\u001f\u007f]/.test(s)) throw badInput(field, 'must not contain control characters');
  return s === '' ? undefined : s;
}

/**
 * A paging number from a setting ('' = unset) or the msg (undefined = unset): an integer
 * in [min, max], given as a number or a decimal string.
 */
export function pagingNumber(v: unknown, field: string, min: number, max: number): number | undefined {
  if (v === undefined || v === null || (typeof v === 'string' && v.trim() === '')) return undefined;
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\s*-?\d+\s*$/.test(v) ? Number(v) : NaN;
  if (!Number.isInteger(n) || n < min || n > max) {
    const got = typeof v === 'string' ? `"${v.slice(0, 20)}"` : typeof v === 'number' ? String(v) : describeType(v);
    throw badInput(field, `must be an integer from ${min} to ${max}, not ${got}`);
  }
  return n;
}

/**
 * The auth token goes in the Authorization header only: a query that would carry it
 * (for example a `msg.query` copied from somewhere) is refused before any request. The same
 * holds for the token of an email/password login and for the password itself (`what` and
 * `sentIn` name them in the message, never the value).
 */
export function refuseTokenInQuery(query: Query, token: string | undefined, what = 'auth token', sentIn = 'the Authorization header'): void {
  if (!token) return;
  for (const [k, v] of Object.entries(query)) {
    const text = v === undefined || v === null ? '' : String(v);
    if (text === token || (token.length >= 8 && text.includes(token))) {
      throw new GatewayError('BAD_INPUT', `msg.query.${k}: holds the config node's ${what}; it is sent only in ${sentIn}, never in a URL`, {
        field: `msg.query.${k}`,
      });
    }
  }
}

/** `loginPath`: a path under the base ('' = /auth/login). */
export function loginPathSetting(v: unknown): string {
  const p = String(v ?? '').trim() || '/auth/login';
  if (!/^\/?[\w\-./~]{1,200}$/.test(p) || p.split('/').some((seg) => seg === '..')) {
    throw new GatewayError('BAD_INPUT', `loginPath: "${p.slice(0, 40)}" is not a path like /auth/login`, { field: 'loginPath' });
  }
  return p.startsWith('/') ? p : `/${p}`;
}
