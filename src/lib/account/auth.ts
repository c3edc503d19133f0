/**
 * Auth providers. Tokens and secrets live only here and in Node-RED credentials: they
 * are never put in a message, a status, a log line or an error text.
 */
import { ApiClient, type AuthProvider, type TlsOptions } from '../transport/http';
import { GatewayError } from '../common/errors';
import type { TokenSource, TokenState } from './types';
import { schema } from '../common/schema';

export class StaticBearer implements AuthProvider {
  readonly hint: string;
  constructor(
    private readonly token: string,
    what = 'token',
  ) {
    this.hint = `Check the ${what} in the config node's credentials.`;
  }
  async headers(): Promise<Record<string, string>> {
    return { authorization: `Bearer ${this.token}` };
  }
  secrets(): string[] {
    return [this.token];
  }
}

export class StaticHeaders implements AuthProvider {
  readonly hint: string;
  constructor(
    private readonly values: Record<string, string>,
    hint: string,
  ) {
    this.hint = hint;
  }
  async headers(): Promise<Record<string, string>> {
    return { ...this.values };
  }
  secrets(): string[] {
    // The access token; a client ID is a name, not a secret.
    return Object.entries(this.values).filter(([k]) => !/(^|_)id$/i.test(k)).map(([, v]) => v);
  }
}

const tokenReply = schema((z) =>
  z.object({
    access_token: z.string().min(1),
    token_type: z.string().optional(),
    expires_in: z.union([z.number(), z.string()]).optional(),
  }),
);

/**
 * OAuth2 client credentials against `POST {base}/api/v{version}/auth/token`, form
 * encoded. The token is cached until shortly before it expires, fetched once for all
 * concurrent callers, and renewed once after a 401.
 */
export class ClientCredentialsBearer implements AuthProvider {
  readonly hint = 'Check the client ID and client secret in the config node\'s credentials.';
  /** The account's client, for the token request (given with every headers() call). */
  private client: ApiClient | undefined;
  /**
   * One fetch serves every caller of the account, so it does not take any one caller's
   * abort signal (a node closing must not fail its siblings); the timeout bounds it.
   */
  private readonly cache: CachedToken;

  constructor(
    private readonly clientId: string,
    private readonly clientSecret: string,
    private readonly tokenPath: string,
    skewMs = 30_000,
    now: () => number = Date.now,
  ) {
    this.cache = new CachedToken(() => this.fetch(this.client!), async () => {}, skewMs, now);
  }

  async headers(client: ApiClient): Promise<Record<string, string>> {
    this.client = client;
    return { authorization: `Bearer ${await this.cache.token()}` };
  }

  secrets(): string[] {
    const token = this.cache.peek();
    return token ? [this.clientSecret, token] : [this.clientSecret];
  }

  expiresInMs(): number | undefined {
    return this.cache.expiresInMs();
  }

  tokenState(): TokenState {
    return this.cache.state();
  }

  renew(refused: Record<string, string>): boolean {
    // Only drop the token that was refused; a newer one fetched meanwhile stays.
    const m = /^Bearer (.+)$/.exec(refused.authorization ?? '');
    if (m) this.cache.invalidate(m[1]!);
    return true;
  }

  private async fetch(client: ApiClient): Promise<FetchedToken> {
    client.stats.tokenFetches++;
    let res;
    try {
      res = await client.request({
        method: 'POST',
        path: this.tokenPath,
        form: { grant_type: 'client_credentials', client_id: this.clientId, client_secret: this.clientSecret },
        idempotent: true,
      });
    } catch (err) {
      if (err instanceof GatewayError && (err.statusCode === 400 || err.statusCode === 401 || err.statusCode === 403)) {
        throw new GatewayError('UNAUTHORIZED', `the gateway refused the client credentials (HTTP ${err.statusCode}). ${this.hint}`, {
          statusCode: err.statusCode,
        });
      }
      throw err;
    }
    refusedLogin(res.body, `POST ${this.tokenPath}`, this.hint);
    const parsed = tokenReply().safeParse(res.body);
    if (!parsed.success) {
      throw new GatewayError('BAD_RESPONSE', `POST ${this.tokenPath}: the token reply has no access_token`, { statusCode: res.statusCode });
    }
    // No usable expires_in: an hour, as before.
    const ttl = Number(parsed.data.expires_in ?? 3600);
    return { token: parsed.data.access_token, ttlMs: (Number.isFinite(ttl) && ttl > 0 ? ttl : 3600) * 1000 };
  }
}

/**
 * A token endpoint can answer HTTP 200 with `{error}` instead of a token: that is a failed
 * login (UNAUTHORIZED), not a reply in a wrong shape.
 */
export function refusedLogin(body: unknown, where: string, hint: string): void {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return;
  const b = body as Record<string, unknown>;
  if (b.error === undefined || b.error === null || b.error === '' || b.access_token || b.authToken) return;
  const what = typeof b.error === 'string' ? b.error.slice(0, 60).replace(/[^\w .,:-]/g, '') : 'error';
  throw new GatewayError('UNAUTHORIZED', `${where}: the login was refused (${what}). ${hint}`, { statusCode: 200 });
}

/** What one fetch of a token gives: the token and, when the server says, its lifetime. */
export interface FetchedToken {
  token: string;
  ttlMs?: number;
}

/**
 * A token fetched on demand, cached (until shortly before its declared end, or until a 401
 * when none is declared), fetched once for all concurrent callers, dropped after a 401 so
 * the next call fetches a new one. The fetch is the caller's (a token URL, a login).
 */
export class CachedToken implements TokenSource {
  private current: string | undefined;
  private endsAt = Infinity;
  private pending: Promise<string> | undefined;
  /** Fetches so far (for tests and status). */
  fetches = 0;
  /** The last fetch failed (the account's figures: token state "failed"). */
  private failed = false;

  constructor(
    private readonly fetchToken: () => Promise<FetchedToken>,
    private readonly onClose: () => Promise<void> = async () => {},
    private readonly skewMs = 30_000,
    private readonly now: () => number = Date.now,
  ) {}

  token(): Promise<string> {
    if (this.current && this.now() < this.endsAt) return Promise.resolve(this.current);
    // One fetch serves every caller of the account: no one caller's abort signal ends it.
    this.pending ??= this.fetchToken()
      .then((t) => {
        this.fetches++;
        this.failed = false;
        this.current = t.token;
        const ttl = t.ttlMs;
        this.endsAt = ttl !== undefined && Number.isFinite(ttl) && ttl > 0 ? this.now() + Math.max(ttl / 2, ttl - this.skewMs) : Infinity;
        return t.token;
      })
      .finally(() => {
        this.pending = undefined;
      });
    this.pending.catch(() => {
      this.failed = true;
    });
    return this.pending;
  }

  /** "valid" while a token is held, "failed" after a failed fetch, else "none". */
  state(): TokenState {
    return this.current && this.now() < this.endsAt ? 'valid' : this.failed ? 'failed' : 'none';
  }

  /** The token held now, if any (no fetch): to refuse it where it must not go. */
  peek(): string | undefined {
    return this.current;
  }

  expiresInMs(): number | undefined {
    return this.current && Number.isFinite(this.endsAt) ? Math.max(0, this.endsAt - this.now()) : undefined;
  }

  invalidate(refused: string): boolean {
    // Only drop the token that was refused; a newer one fetched meanwhile stays.
    if (this.current === refused) {
      this.current = undefined;
      this.endsAt = Infinity;
    }
    return true;
  }

  close(): Promise<void> {
    this.current = undefined;
    return this.onClose();
  }
}

/** Auth headers made from a TokenSource's token; renewed once after a 401. */
export class TokenHeaders implements AuthProvider {
  constructor(
    private readonly source: TokenSource,
    private readonly make: (token: string) => Record<string, string>,
    private readonly tokenOf: (headers: Record<string, string>) => string | undefined,
    readonly hint: string,
  ) {}

  async headers(_client: ApiClient, signal?: AbortSignal): Promise<Record<string, string>> {
    return this.make(await this.source.token(signal));
  }

  expiresInMs(): number | undefined {
    return this.source.expiresInMs?.();
  }

  tokenState(): TokenState | undefined {
    return this.source.state?.();
  }

  renew(refused: Record<string, string>): boolean {
    const t = this.tokenOf(refused);
    return t !== undefined && this.source.invalidate(t);
  }
}

const oauthReply = schema((z) => z.object({ access_token: z.string().min(1), expires_in: z.union([z.number(), z.string()]).nullish() }).loose());

/**
 * The LoRaWAN/SMS API gateway's OAuth endpoint (`client_credentials`, the client
 * authenticated with HTTP Basic): the `access_token` header's value, fetched and renewed.
 * The token URL may be on another host: it gets its own small client.
 */
export function oauthClientCredentials(opts: { tokenUrl: string; clientId: string; clientSecret: string; timeoutMs: number; tls?: TlsOptions }): CachedToken {
  const url = new URL(opts.tokenUrl);
  const client = new ApiClient({ label: `token endpoint ${url.host}`, baseUrl: opts.tokenUrl, timeoutMs: opts.timeoutMs, maxConcurrent: 1, maxRetries: 2, tls: opts.tls });
  const hint = "Check the broker client ID, client secret and token URL in the config node's credentials.";
  const basic = Buffer.from(`${encodeURIComponent(opts.clientId)}:${encodeURIComponent(opts.clientSecret)}`).toString('base64');
  return new CachedToken(
    async () => {
      client.stats.tokenFetches++;
      let res;
      try {
        res = await client.request({ method: 'POST', path: '', form: { grant_type: 'client_credentials' }, headers: { authorization: `Basic ${basic}` }, idempotent: true });
      } catch (err) {
        if (err instanceof GatewayError && (err.statusCode === 400 || err.statusCode === 401 || err.statusCode === 403)) {
          throw new GatewayError('UNAUTHORIZED', `POST ${url.pathname}: the token endpoint refused the broker client credentials (HTTP ${err.statusCode}). ${hint}`, { statusCode: err.statusCode });
        }
        throw err;
      }
      refusedLogin(res.body, `POST ${url.pathname}`, hint);
      const parsed = oauthReply().safeParse(res.body);
      if (!parsed.success) throw new GatewayError('BAD_RESPONSE', `POST ${url.pathname}: the token reply has no access_token`, { statusCode: res.statusCode });
      const ttl = Number(parsed.data.expires_in ?? NaN);
      return { token: parsed.data.access_token, ttlMs: Number.isFinite(ttl) && ttl > 0 ? ttl * 1000 : undefined };
    },
    () => client.close(),
  );
}

const loginReply = schema((z) => z.object({ authToken: z.string().min(1) }).loose());

/**
 * The application platform's login (`POST {app_base_url}{loginPath}` with JSON
 * `{email, password}` -> `{authToken}`), through the account's own client. The token's
 * lifetime is not told: it is kept until a 401.
 */
export function appLogin(opts: { client: () => ApiClient; loginPath: string; email: string; password: string; group?: string }): CachedToken {
  const hint = "Check the email and password in the iotgw-app config node's credentials.";
  return new CachedToken(async () => {
    const client = opts.client();
    client.stats.tokenFetches++;
    let res;
    try {
      res = await client.request({
        method: 'POST',
        path: opts.loginPath,
        body: { email: opts.email, password: opts.password },
        headers: { 'content-type': 'application/json' },
        group: opts.group,
        idempotent: true,
      });
    } catch (err) {
      if (err instanceof GatewayError && (err.statusCode === 400 || err.statusCode === 401 || err.statusCode === 403)) {
        throw new GatewayError('UNAUTHORIZED', `POST ${opts.loginPath}: the login was refused (HTTP ${err.statusCode}). ${hint}`, { statusCode: err.statusCode });
      }
      throw err;
    }
    refusedLogin(res.body, `POST ${opts.loginPath}`, hint);
    const parsed = loginReply().safeParse(res.body);
    if (!parsed.success) throw new GatewayError('BAD_RESPONSE', `POST ${opts.loginPath}: the login reply has no authToken`, { statusCode: res.statusCode });
    return { token: parsed.data.authToken };
  });
}
