/**
 * TokenSource over the existing auth providers (StaticBearer, ClientCredentialsBearer),
 * and the way back: an AuthProvider (what ApiClient takes) over any TokenSource, which is
 * how a shared (Redis) token source reaches the client.
 */
import type { ApiClient, AuthProvider } from '../../transport/http';
import type { TokenSource, TokenState } from '../types';

const BEARER = /^Bearer (.+)$/;

/** The in-process TokenSource: a view over the account's bearer AuthProvider. */
export class AuthTokenSource implements TokenSource {
  private renewed = new Set<string>();

  constructor(
    private readonly auth: () => AuthProvider,
    private readonly client: () => ApiClient,
  ) {}

  async token(signal?: AbortSignal): Promise<string> {
    const h = await this.auth().headers(this.client(), signal);
    const m = BEARER.exec(h.authorization ?? '');
    return m ? m[1]! : '';
  }

  invalidate(refused: string): boolean {
    const a = this.auth();
    if (!a.renew || this.renewed.has(refused)) return false;
    this.renewed.add(refused);
    if (this.renewed.size > 16) this.renewed.delete(this.renewed.values().next().value!);
    return a.renew({ authorization: `Bearer ${refused}` });
  }

  expiresInMs(): number | undefined {
    return this.auth().expiresInMs?.();
  }

  state(): TokenState | undefined {
    return this.auth().tokenState?.();
  }

  async close(): Promise<void> {
    this.renewed.clear();
  }
}

/** An AuthProvider (bearer header, renew once after a 401) over a TokenSource. */
export class TokenSourceAuth implements AuthProvider {
  /** How the last token() ended, for a source that cannot tell (a shared one). */
  private last: TokenState = 'none';

  constructor(
    private readonly source: TokenSource,
    readonly hint: string,
  ) {}

  async headers(_client: ApiClient, signal?: AbortSignal): Promise<Record<string, string>> {
    let token: string;
    try {
      token = await this.source.token(signal);
    } catch (err) {
      if (!signal?.aborted) this.last = 'failed';
      throw err;
    }
    this.last = 'valid';
    return { authorization: `Bearer ${token}` };
  }

  expiresInMs(): number | undefined {
    return this.source.expiresInMs?.();
  }

  tokenState(): TokenState {
    return this.source.state?.() ?? this.last;
  }

  renew(refused: Record<string, string>): boolean {
    const m = BEARER.exec(refused.authorization ?? '');
    return m ? this.source.invalidate(m[1]!) : false;
  }
}
