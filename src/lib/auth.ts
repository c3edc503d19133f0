/**
 * Auth providers. Tokens and secrets live only here and in Node-RED credentials: they
 * are never put in a message, a status, a log line or an error text.
 */
import { z } from 'zod';
import type { ApiClient, AuthProvider } from './http';
import { GatewayError } from './errors';

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

const tokenReply = z.object({
  access_token: z.string().min(1),
  token_type: z.string().optional(),
  expires_in: z.union([z.number(), z.string()]).optional(),
});

/**
 * OAuth2 client credentials against `POST {base}/api/v{version}/auth/token`, form
 * encoded. The token is cached until shortly before it expires, fetched once for all
 * concurrent callers, and renewed once after a 401.
 */
export class ClientCredentialsBearer implements AuthProvider {
  readonly hint = 'Check the client ID and client secret in the config node\'s credentials.';
  private token: string | undefined;
  private expiresAt = 0;
  private pending: Promise<string> | undefined;

  constructor(
    private readonly clientId: string,
    private readonly clientSecret: string,
    private readonly tokenPath: string,
    private readonly skewMs = 30_000,
    private readonly now: () => number = Date.now,
  ) {}

  async headers(client: ApiClient): Promise<Record<string, string>> {
    return { authorization: `Bearer ${await this.get(client)}` };
  }

  secrets(): string[] {
    return this.token ? [this.clientSecret, this.token] : [this.clientSecret];
  }

  renew(refused: Record<string, string>): boolean {
    // Only drop the token that was refused; a newer one fetched meanwhile stays.
    if (this.token && refused.authorization === `Bearer ${this.token}`) {
      this.token = undefined;
      this.expiresAt = 0;
    }
    return true;
  }

  /**
   * One fetch serves every caller of the account, so it does not take any one caller's
   * abort signal (a node closing must not fail its siblings); the timeout bounds it.
   */
  private get(client: ApiClient): Promise<string> {
    if (this.token && this.now() < this.expiresAt) return Promise.resolve(this.token);
    if (!this.pending) {
      this.pending = this.fetch(client).finally(() => {
        this.pending = undefined;
      });
    }
    return this.pending;
  }

  private async fetch(client: ApiClient): Promise<string> {
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
    const parsed = tokenReply.safeParse(res.body);
    if (!parsed.success) {
      throw new GatewayError('BAD_RESPONSE', `POST ${this.tokenPath}: the token reply has no access_token`, { statusCode: res.statusCode });
    }
    const ttl = Number(parsed.data.expires_in ?? 3600);
    this.token = parsed.data.access_token;
    const ttlMs = (Number.isFinite(ttl) && ttl > 0 ? ttl : 3600) * 1000;
    this.expiresAt = this.now() + Math.max(ttlMs / 2, ttlMs - this.skewMs);
    return this.token;
  }
}
