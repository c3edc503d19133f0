/**
 * Area (d): the application API (endpoints 9 to 11) at `{url}/app`, behaving like the
 * hosted no-code backend platform it runs on (shared/spec/real-services.md):
 *
 * - `Authorization: Bearer <authToken>`; the demo tokens are `app-demo-token` and
 *   `app-other-token` (a second account, for 403 cases).
 * - Errors in the platform's native body `{code, message, payload}` or in the
 *   interface's `{error}` (option `errorShape`), with the platform's statuses:
 *   400 ERROR_CODE_INPUT_ERROR, 401 ERROR_CODE_UNAUTHORIZED, 403 ERROR_CODE_ACCESS_DENIED,
 *   404 ERROR_CODE_NOT_FOUND, 429 ERROR_CODE_TOO_MANY_REQUESTS, 500 ERROR_FATAL.
 * - The free plan's rate limit: 10 requests per 20 s per token (settable), no Retry-After.
 * - Paging of the tag list: `page` (1-based) and `per_page`; the reply's envelope has
 *   `nextPage`/`prevPage` null at the ends and `offset = (curPage - 1) * perPage`
 *   (plus the request's own `offset`, which skips items before the first page).
 *
 * The names of the other query parameters are not public: the simulator uses the names
 * the nodes send (`user_id`, `token`, `search`, `tag_id`, `serial_number`, `chipset`,
 * `version`) and also accepts the aliases listed in PARAMS.
 */
import type { SimServer, SimReply, SimRequest } from './server';
import { SimWindow, json } from './server';
import type { SimArea } from './area';
import { parseJson } from '../lib/common/int64';

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

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Deterministic UUID-shaped IDs. */
export function simUuid(kind: number, n: number): string {
  return `${kind.toString(16).padStart(8, '0')}-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
}

const CHIPSETS = ['nrf52', 'esp32'];
const BASE_TIME = Date.UTC(2024, 10, 5, 16, 12, 27);

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

class AppFail {
  constructor(
    readonly status: AppStatus,
    readonly detail?: string,
    readonly param?: string,
  ) {}
}

export class AppApi implements SimArea {
  options: AppOptions;
  accounts: AppAccount[];
  readonly counters = { served: 0, throttled: 0, unauthorized: 0, failed: 0 };
  private windows = new Map<string, SimWindow>();
  private fatal = 0;
  now: () => number = Date.now;

  constructor(options: Partial<AppOptions> = {}) {
    this.options = { ...DEFAULT_APP_OPTIONS, ...options };
    this.accounts = defaultAccounts(this.options.tagCount);
  }

  configure(options: Partial<AppOptions>): void {
    const tagsChanged = options.tagCount !== undefined && options.tagCount !== this.options.tagCount;
    this.options = { ...this.options, ...options };
    this.windows.clear();
    if (tagsChanged) this.accounts = defaultAccounts(this.options.tagCount);
  }

  /** The next `count` authenticated requests fail with 500 ERROR_FATAL. */
  failNext(count = 1): void {
    this.fatal = count;
  }

  state(): unknown {
    return { options: this.options, counters: this.counters, accounts: this.accounts.map((a) => ({ id: a.id, users: a.users.length, tags: a.tags.length })) };
  }

  mount(sim: SimServer): void {
    sim.route('POST', /^\/app\/auth\/login\/?$/, 'app/login', (r) => this.login(r));
    sim.route('GET', /^\/app\/auth\/user\/?$/, 'app/user', (r) => this.guard(r, (u, a) => this.user(r, u, a)));
    sim.route('GET', /^\/app\/costummer\/tag\/?$/, 'app/tags', (r) => this.guard(r, (u, a) => this.tags(r, a)));
    sim.route('GET', /^\/app\/tag\/chipset\/config\/?$/, 'app/tag-config', (r) => this.guard(r, (u, a) => this.tagConfig(r, a)));
    sim.route('POST', /^\/_sim\/app-options$/, '_sim/app-options', (r) => {
      const b = r.text.trim() ? parseJson(r.text) : {};
      if (!b || typeof b !== 'object' || Array.isArray(b)) return json(400, { error: 'a JSON object of options is expected' });
      const o = b as Partial<AppOptions> & { failNext?: number };
      if (o.failNext !== undefined) this.failNext(Number(o.failNext));
      delete o.failNext;
      if (o.errorShape !== undefined && o.errorShape !== 'platform' && o.errorShape !== 'error') return json(400, { error: 'errorShape must be platform or error' });
      this.configure(o);
      return json(200, this.options);
    });
  }

  /** Tokens from the login endpoint: token -> user ID and the time it ends. */
  private loginTokens = new Map<string, { userId: string; endsAt: number }>();
  readonly loginCounters = { logins: 0, refused: 0 };

  /** The platform's default login: JSON {email, password} -> {authToken}. */
  private login(r: SimRequest): SimReply {
    let b: unknown;
    try {
      b = r.text.trim() ? parseJson(r.text) : undefined;
    } catch {
      return this.errorReply(400, 'the body is not JSON');
    }
    const o = (b && typeof b === 'object' ? b : {}) as Record<string, unknown>;
    if (typeof o.email !== 'string' || typeof o.password !== 'string') return this.errorReply(400, 'email and password are required', 'email');
    const user = this.accounts.flatMap((a) => a.users).find((u) => u.email === o.email);
    if (!user || o.password !== this.options.loginPassword) {
      this.loginCounters.refused++;
      return this.errorReply(403, 'Invalid Credentials.');
    }
    const token = `app_${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
    this.loginTokens.set(token, { userId: user.id, endsAt: this.now() + (this.options.loginTokenLifetimeMs > 0 ? this.options.loginTokenLifetimeMs : 86_400_000) });
    this.loginCounters.logins++;
    return json(200, { authToken: token });
  }

  /** An error reply in the configured body shape. */
  errorReply(status: AppStatus, detail?: string, param?: string): SimReply {
    const e = ERROR_TEXT[status];
    const message = detail ? `${e.error.replace(/\.$/, '')}: ${detail}` : e.error;
    if (this.options.errorShape === 'error') return json(status, { error: message });
    return json(status, { code: e.code, message, payload: param ? { param } : null });
  }

  private async guard(r: SimRequest, handle: (user: AppUser, account: AppAccount) => SimReply | Promise<SimReply>): Promise<SimReply> {
    const auth = String(r.headers.authorization ?? '');
    const m = /^Bearer\s+(\S+)$/i.exec(auth);
    const token = m?.[1];
    const key = token ?? `ip:${r.headers.host ?? ''}`;
    let w = this.windows.get(key);
    if (!w) this.windows.set(key, (w = new SimWindow(this.options.rateLimitCalls, this.options.rateLimitWindowMs)));
    if (!w.take(this.now())) {
      this.counters.throttled++;
      return this.errorReply(429);
    }
    let found: { user: AppUser; account: AppAccount } | undefined;
    for (const a of this.accounts) {
      for (const [uid, t] of Object.entries(a.tokens)) {
        if (token !== undefined && t === token) found = { user: a.users.find((u) => u.id === uid)!, account: a };
      }
    }
    const fromLogin = token === undefined ? undefined : this.loginTokens.get(token);
    if (!found && fromLogin && fromLogin.endsAt > this.now()) {
      const a = this.accounts.find((x) => x.users.some((u) => u.id === fromLogin.userId));
      if (a) found = { user: a.users.find((u) => u.id === fromLogin.userId)!, account: a };
    }
    if (!found) {
      this.counters.unauthorized++;
      return this.errorReply(401, token ? 'the token is invalid or expired' : undefined);
    }
    if (this.fatal > 0) {
      this.fatal--;
      this.counters.failed++;
      return this.errorReply(500);
    }
    try {
      const reply = await handle(found.user, found.account);
      this.counters.served++;
      return reply;
    } catch (err) {
      if (err instanceof AppFail) return this.errorReply(err.status, err.detail, err.param);
      this.counters.failed++;
      return this.errorReply(500);
    }
  }

  /** The value of a parameter under any of its accepted names. */
  private param(r: SimRequest, names: readonly string[]): { name: string; value: string } | undefined {
    for (const n of names) {
      const v = r.query.get(n);
      if (v !== null) return { name: n, value: v };
    }
    return undefined;
  }

  private intParam(r: SimRequest, names: readonly string[], min: number, max: number, fallback: number): number {
    const p = this.param(r, names);
    if (!p || p.value === '') return fallback;
    const n = Number(p.value);
    if (!/^\d+$/.test(p.value.trim()) || n < min || n > max) throw new AppFail(400, `${p.name} must be an integer from ${min} to ${max}`, p.name);
    return n;
  }

  /** The account whose customer token is given (own account when none is). */
  private customer(r: SimRequest, own: AppAccount): AppAccount {
    const p = this.param(r, PARAMS.token);
    if (!p || p.value === '') return own;
    const acct = this.accounts.find((a) => a.users.some((u) => u.tokenManager === p.value));
    if (!acct) throw new AppFail(404, 'no customer with this token', p.name);
    if (acct !== own) throw new AppFail(403, 'the customer belongs to another account', p.name);
    return acct;
  }

  private user(r: SimRequest, me: AppUser, account: AppAccount): SimReply {
    const p = this.param(r, PARAMS.user);
    if (!p || p.value === '' || p.value === me.id) return json(200, me);
    if (!UUID_RE.test(p.value)) throw new AppFail(400, `${p.name} must be a user ID (UUID)`, p.name);
    const mine = account.users.find((u) => u.id === p.value);
    if (mine) return json(200, mine);
    if (this.accounts.some((a) => a.users.some((u) => u.id === p.value))) throw new AppFail(403, 'the user belongs to another account', p.name);
    throw new AppFail(404, 'no user with this ID', p.name);
  }

  private tags(r: SimRequest, own: AppAccount): SimReply {
    const acct = this.customer(r, own);
    const page = this.intParam(r, PARAMS.page, 1, 1_000_000, 1);
    const perPage = this.intParam(r, PARAMS.perPage, 1, this.options.maxPerPage, this.options.defaultPerPage);
    const skip = this.intParam(r, PARAMS.offset, 0, 1_000_000_000, 0);
    const search = this.param(r, PARAMS.search)?.value.toLowerCase() ?? '';
    const all = search ? acct.tags.filter((t) => t.device_name.toLowerCase().includes(search) || t.serial_number.toLowerCase().includes(search)) : acct.tags;
    const start = skip + (page - 1) * perPage;
    const items = all.slice(start, start + perPage);
    if (this.options.omitNextPage) return json(200, { itemsReceived: items.length, curPage: page, offset: start, perPage, items });
    return json(200, {
      itemsReceived: items.length,
      curPage: page,
      nextPage: start + perPage < all.length ? page + 1 : null,
      prevPage: page > 1 ? page - 1 : null,
      offset: start,
      perPage,
      items,
    });
  }

  private tagConfig(r: SimRequest, own: AppAccount): SimReply {
    const acct = this.customer(r, own);
    const id = this.param(r, PARAMS.tagId);
    const serial = this.param(r, PARAMS.serial);
    if ((!id || id.value === '') && (!serial || serial.value === '')) throw new AppFail(400, 'give tag_id or serial_number', 'tag_id');
    if (id && id.value !== '' && !UUID_RE.test(id.value)) throw new AppFail(400, `${id.name} must be a tag ID (UUID)`, id.name);
    const match = (t: AppAccount['tags'][number]) => (!id || id.value === '' || t.id === id.value) && (!serial || serial.value === '' || t.serial_number === serial.value);
    const tag = acct.tags.find(match);
    if (!tag) {
      if (this.accounts.some((a) => a !== acct && a.tags.some(match))) throw new AppFail(403, 'the tag belongs to another account');
      throw new AppFail(404, 'no tag with this ID or serial number');
    }
    const last = tag.lastConfiguration as { version: number; chipset: string };
    const chipset = this.param(r, PARAMS.chipset);
    if (chipset && chipset.value !== '' && chipset.value.toLowerCase() !== last.chipset) {
      throw new AppFail(400, `${chipset.name} does not match the tag's chipset`, chipset.name);
    }
    const v = this.param(r, PARAMS.version);
    let version = last.version;
    if (v && v.value !== '' && v.value !== 'latest') {
      version = Number(v.value);
      if (!/^\d+$/.test(v.value) || version < 1) throw new AppFail(400, `${v.name} must be a positive integer or latest`, v.name);
      if (version > last.version) throw new AppFail(404, `the tag has no configuration version ${version}`);
    }
    const n = Number(tag.serial_number.replace(/\D/g, '')) || 0;
    return json(200, {
      tag_id: tag.id,
      serial_number: tag.serial_number,
      chipset: last.chipset,
      version,
      reportIntervalSeconds: 300 * version,
      motionSensitivity: 1 + (n % 5),
      advertisingIntervalMs: 1000,
      txPowerDbm: last.chipset === 'esp32' ? 9 : 4,
      geofence: { enabled: n % 2 === 0, radiusMeters: 100 + n },
      updated_at: new Date(BASE_TIME + version * 86_400_000).toISOString(),
    });
  }
}

/** Creates the area from the simulator's options (`options.app`). */
export function createAppArea(options: Record<string, unknown>): AppApi {
  const o = options.app;
  return new AppApi(o && typeof o === 'object' ? (o as Partial<AppOptions>) : {});
}
