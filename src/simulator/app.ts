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
 *
 * The area is cut by role: app-model.ts (options, parameters, errors, seeded accounts),
 * app-auth.ts (login, tokens, rate limit, the user endpoint) and app-tags.ts (the tag list
 * and tag configuration); this class wires them and keeps the methods tests call.
 */
import type { SimServer, SimReply } from './server';
import { json } from './server';
import type { SimArea } from './area';
import { parseJson } from '../lib/common/int64';
import { AppAuth } from './app-auth';
import { DEFAULT_APP_OPTIONS, defaultAccounts, errorReply, type AppAccount, type AppContext, type AppOptions, type AppStatus } from './app-model';
import { tagConfig, tags } from './app-tags';

export { DEFAULT_APP_OPTIONS, PARAMS, defaultAccounts, simUuid } from './app-model';
export type { AppAccount, AppErrorShape, AppOptions, AppStatus, AppUser } from './app-model';

export class AppApi implements SimArea, AppContext {
  options: AppOptions;
  accounts: AppAccount[];
  readonly counters = { served: 0, throttled: 0, unauthorized: 0, failed: 0 };
  now: () => number = Date.now;
  private readonly auth = new AppAuth(this);

  constructor(options: Partial<AppOptions> = {}) {
    this.options = { ...DEFAULT_APP_OPTIONS, ...options };
    this.accounts = defaultAccounts(this.options.tagCount);
  }

  /** Logins accepted and refused. */
  get loginCounters(): AppAuth['loginCounters'] {
    return this.auth.loginCounters;
  }

  configure(options: Partial<AppOptions>): void {
    const tagsChanged = options.tagCount !== undefined && options.tagCount !== this.options.tagCount;
    this.options = { ...this.options, ...options };
    this.auth.resetWindows();
    if (tagsChanged) this.accounts = defaultAccounts(this.options.tagCount);
  }

  /** The next `count` authenticated requests fail with 500 ERROR_FATAL. */
  failNext(count = 1): void {
    this.auth.fatal = count;
  }

  /** An error reply in the configured body shape. */
  errorReply(status: AppStatus, detail?: string, param?: string): SimReply {
    return errorReply(this.options.errorShape, status, detail, param);
  }

  state(): unknown {
    return { options: this.options, counters: this.counters, accounts: this.accounts.map((a) => ({ id: a.id, users: a.users.length, tags: a.tags.length })) };
  }

  mount(sim: SimServer): void {
    sim.route('POST', /^\/app\/auth\/login\/?$/, 'app/login', (r) => this.auth.login(r));
    sim.route('GET', /^\/app\/auth\/user\/?$/, 'app/user', (r) => this.auth.guard(r, (u, a) => this.auth.user(r, u, a)));
    sim.route('GET', /^\/app\/costummer\/tag\/?$/, 'app/tags', (r) => this.auth.guard(r, (u, a) => tags(this, r, a)));
    sim.route('GET', /^\/app\/tag\/chipset\/config\/?$/, 'app/tag-config', (r) => this.auth.guard(r, (u, a) => tagConfig(this, r, a)));
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
}

/** Creates the area from the simulator's options (`options.app`). */
export function createAppArea(options: Record<string, unknown>): AppApi {
  const o = options.app;
  return new AppApi(o && typeof o === 'object' ? (o as Partial<AppOptions>) : {});
}
