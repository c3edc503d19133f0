/**
 * The application API (area d) without Node-RED: `AppClient`, built on an account of its
 * own (a static auth token, or an email/password login renewed after a 401), with the
 * paths, query names, input checks and reply schemas of ../app.ts.
 */
import { badInput } from '../../common/errors';
import { checkBaseUrl, type Query } from '../../transport/http';
import { StaticBearer, TokenHeaders, appLogin, type CachedToken } from '../../account/auth';
import type { Account } from '../../account/account';
import {
  APP_PARAMS,
  APP_PATHS,
  TAG_CONFIG_PARAMS,
  TAG_PAGING,
  loginPathSetting,
  pagingNumber,
  queryValue,
  refuseTokenInQuery,
  tagConfig,
  tagPage,
  userRecord,
  type TagPage,
  type TagRecord,
  type UserRecord,
} from '../app';
import { parseReply } from '../terminal';
import { clientAccount, closedError, commonLimits, optionsObject, requiredText, textOption, type CommonClientOptions } from './options';

/** The one throttle group of the application API. */
const GROUP = 'APP';

/** Options of an AppClient: the application API's base URL and an auth token, or an email and password. */
export interface AppClientOptions extends CommonClientOptions {
  token?: string;
  email?: string;
  password?: string;
  /** Where to log in with email and password (default `/auth/login`). */
  loginPath?: string;
}

export type { TagPage, TagRecord, UserRecord };

/** The tag list's query (endpoint 10). */
export interface TagQuery {
  /** The customer's token-like string. */
  token?: string;
  page?: number;
  pageSize?: number;
  offset?: number;
  search?: string;
}

/** The five parameters of a tag's configuration (endpoint 11). */
export type TagConfigQuery = Partial<Record<(typeof TAG_CONFIG_PARAMS)[number][0], string | number>>;

interface CallOpts {
  /** Extra query parameters (the real names of some are not public). */
  query?: Query;
  signal?: AbortSignal;
}

/**
 * The application API for Node.js: the current user, the tag list and a tag's
 * configuration. Requests share one sliding window (10 calls per 20 s unless told) and
 * wait for it; the auth token never goes in a URL. Call `close()` when done.
 */
export class AppClient {
  private readonly account: Account;
  private login: CachedToken | undefined;
  private readonly token: string | undefined;
  private readonly password: string | undefined;
  private closed = false;

  constructor(options: AppClientOptions) {
    const opts = optionsObject(options, 'AppClient');
    const baseUrl = requiredText(opts, 'baseUrl', 'the application API address (https://host)');
    checkBaseUrl(baseUrl);
    const limits = commonLimits(opts, { timeoutMs: 30_000, rateLimitCalls: 10, rateLimitWindowMs: 20_000, maxConcurrent: 3 });
    const loginPath = loginPathSetting(opts.loginPath);
    const email = textOption(opts, 'email');
    this.password = typeof opts.password === 'string' && opts.password !== '' ? opts.password : undefined;
    this.token = email && this.password ? undefined : textOption(opts, 'token');
    if (!(email && this.password) && !this.token) throw badInput('credentials', 'give token, or email and password');
    this.account = clientAccount({
      kind: 'app',
      label: `application API ${new URL(baseUrl).host}`,
      baseUrl,
      ...limits,
      groups: { [GROUP]: { calls: limits.rateLimitCalls, windowMs: limits.rateLimitWindowMs } },
      defaultGroup: GROUP,
      auth: {
        bearer: () => {
          if (!this.token) {
            this.login = appLogin({ client: () => this.account.client(), loginPath, email: email!, password: this.password!, group: GROUP });
            return new TokenHeaders(this.login, (t) => ({ authorization: `Bearer ${t}` }), (h) => /^Bearer (.+)$/.exec(h.authorization ?? '')?.[1], 'Check the email and password.');
          }
          return new StaticBearer(this.token, 'auth token');
        },
      },
    });
  }

  /** The user record (endpoint 9): of `userId`, or of the token's own user when none is given. */
  async user(userId?: string, o: CallOpts & { param?: string } = {}): Promise<UserRecord> {
    const value = queryValue(userId, 'userId');
    const res = await this.get(APP_PATHS.user, { ...(value === undefined ? {} : { [o.param ?? APP_PARAMS.user]: value }), ...o.query }, o.signal);
    return parseReply(userRecord, res, `GET ${APP_PATHS.user}`);
  }

  /** One page of a customer's tags (endpoint 10), the page envelope as the API returns it. */
  async tags(q: TagQuery = {}, o: CallOpts = {}): Promise<TagPage> {
    const num = (k: keyof typeof TAG_PAGING) => pagingNumber(q[k], k, TAG_PAGING[k].min, TAG_PAGING[k].max);
    const query: Query = {
      [APP_PARAMS.token]: queryValue(q.token, 'token'),
      [APP_PARAMS.page]: num('page'),
      [APP_PARAMS.perPage]: num('pageSize'),
      [APP_PARAMS.offset]: num('offset'),
      [APP_PARAMS.search]: queryValue(q.search, 'search'),
      ...o.query,
    };
    return parseReply(tagPage, await this.get(APP_PATHS.tags, query, o.signal), `GET ${APP_PATHS.tags}`);
  }

  /** The configuration of a tag (endpoint 11): a JSON object whose fields are not public. */
  async tagConfig(q: TagConfigQuery, o: CallOpts = {}): Promise<Record<string, unknown>> {
    const query: Query = {};
    for (const [prop, name] of TAG_CONFIG_PARAMS) query[name] = queryValue(q?.[prop], prop);
    return parseReply(tagConfig, await this.get(APP_PATHS.tagConfig, { ...query, ...o.query }, o.signal), `GET ${APP_PATHS.tagConfig}`);
  }

  /** Ends the client's connections and its login; the client refuses requests after. */
  async close(): Promise<void> {
    this.closed = true;
    const login = this.login;
    this.login = undefined;
    await Promise.allSettled([this.account.close(), login?.close()]);
  }

  /** GET with the account's auth, window and retries; a query that holds a credential is refused first. */
  private async get(path: string, query: Query, signal: AbortSignal | undefined): Promise<unknown> {
    if (this.closed) throw closedError('AppClient');
    const client = this.account.client();
    const auth = this.account.auth('bearer');
    for (const k of Object.keys(query)) if (query[k] === undefined) delete query[k];
    refuseTokenInQuery(query, this.token);
    refuseTokenInQuery(query, this.login?.peek(), 'login token');
    refuseTokenInQuery(query, this.password && !this.token ? this.password : undefined, 'password', "the login request's body");
    const res = await client.request({ method: 'GET', path, query, auth, group: GROUP, idempotent: true, signal });
    return res.body;
  }
}
