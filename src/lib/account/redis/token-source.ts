/**
 * One bearer token for every instance of the account. The first instance that needs one
 * takes a lock key (`SET NX PX`) and fetches it; the others wait for it to appear in Redis
 * (single flight for the fleet). The token is stored with its own lifetime (minus a skew),
 * so it expires in Redis as it would at the gateway. Only the bearer token is written to
 * Redis, never a client secret. After a 401, `invalidate(refused)` deletes it in Redis only
 * if it is still the refused one, so three instances seeing one 401 cause one new fetch.
 */
import { randomUUID } from 'node:crypto';
import { GatewayError } from '../../common/errors';
import type { TokenSource } from '../types';
import type { AccountKeys } from './keys';
import { abortableSleep, type RedisConnection } from './connection';
import { script } from './script';
import { ok, stringAndInt } from './replies';

export interface FetchedToken {
  token: string;
  /** Lifetime from now, ms. */
  expiresInMs: number;
}

/** Fetches a new token from the service (client credentials, app login). */
export type TokenFetcher = (signal?: AbortSignal) => Promise<FetchedToken>;

export interface RedisTokenSourceOptions {
  /** How long one fetch may take, and how long a caller waits for Redis. */
  timeoutMs: number;
  /** Taken off the lifetime (at most half of it). Default 30 s. */
  skewMs?: number;
  /**
   * A digest of the credentials that fetch the token (keys.ts credentialDigest), stored
   * beside the token, so an instance with other credentials (a wrong secret) never uses it.
   */
  binding?: string;
}

/** KEYS: token. Returns {token, pttl} or nil. */
const GET_TOKEN = `local v = redis.call('GET', KEYS[1])
if not v then return nil end
return {v, redis.call('PTTL', KEYS[1])}`;

/** KEYS: key. ARGV: value. Deletes the key only if it holds `value`. */
const DEL_IF = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

export class RedisTokenSource implements TokenSource {
  private readonly getToken = script(GET_TOKEN);
  private readonly delIf = script(DEL_IF);
  private cached: string | undefined;
  private cachedUntil = 0;
  private pending: Promise<string> | undefined;
  private readonly invalidated = new Set<string>();
  private closed = false;
  /** Fetches this instance made, for tests and benchmarks. */
  readonly stats = { fetches: 0 };

  constructor(
    private readonly conn: RedisConnection,
    private readonly keys: AccountKeys,
    private readonly fetcher: TokenFetcher,
    private readonly opts: RedisTokenSourceOptions,
  ) {}

  private name = 'bearer';

  /** Several token sources of one account (bearer, broker) keep separate keys. */
  named(name: string): this {
    this.name = name.replace(/[^A-Za-z0-9_-]/g, '_') || 'bearer';
    return this;
  }

  private tokenKey(): string {
    return this.name === 'bearer' ? this.keys.key('token') : this.keys.key('token', this.name);
  }

  /** The token as stored: after the digest of the credentials that fetched it, when bound. */
  private stored(token: string): string {
    return this.opts.binding ? `${this.opts.binding}\n${token}` : token;
  }

  /** The token of a stored value, or undefined when other credentials fetched it. */
  private ours(value: string): string | undefined {
    if (!this.opts.binding) return value;
    const head = `${this.opts.binding}\n`;
    return value.startsWith(head) ? value.slice(head.length) : undefined;
  }

  token(signal?: AbortSignal): Promise<string> {
    if (this.cached && Date.now() < this.cachedUntil) return Promise.resolve(this.cached);
    // One flight per instance; it takes no caller's signal (one closing node must not fail its siblings).
    if (!this.pending) {
      this.pending = this.fleetToken().finally(() => {
        this.pending = undefined;
      });
    }
    if (!signal) return this.pending;
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      const onAbort = () => reject(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      this.pending!.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    });
  }

  private async fleetToken(): Promise<string> {
    const tokenKey = this.tokenKey();
    const lockKey = `${tokenKey}:lock`;
    const timeoutMs = this.opts.timeoutMs;
    const lockMs = timeoutMs + 5000;
    const deadline = Date.now() + lockMs + timeoutMs;
    const me = randomUUID();
    let delay = 25;
    for (;;) {
      if (this.closed) throw new Error('token source closed');
      const shared = await this.readShared(tokenKey);
      if (shared) return this.remember(shared.token, shared.ttlMs);
      const locked = await this.conn.run('locking the token fetch', async (r) => ok(await r.set(lockKey, me, 'PX', lockMs, 'NX'), 'SET NX', true), { timeoutMs });
      if (locked === 'OK') {
        try {
          // Read again under the lock: another instance may have fetched, stored and unlocked
          // between the read above and this lock (a slow or starved instance), and a second
          // fetch for the fleet is what the lock is for.
          const meanwhile = await this.readShared(tokenKey);
          if (meanwhile) return this.remember(meanwhile.token, meanwhile.ttlMs);
          this.stats.fetches++;
          const f = await this.fetcher();
          const skew = Math.min(this.opts.skewMs ?? 30_000, f.expiresInMs / 2);
          const ttl = Math.max(1000, Math.floor(f.expiresInMs - skew));
          await this.conn.run('storing the shared token', async (r) => ok(await r.set(tokenKey, this.stored(f.token), 'PX', ttl), 'SET'), { timeoutMs });
          return this.remember(f.token, ttl);
        } finally {
          await this.conn.run('unlocking the token fetch', (r) => this.delIf(r, [lockKey], [me]), { timeoutMs }).catch(() => {});
        }
      }
      // A lock holder that died leaves a lock that ends by itself (lockMs); past that, give up.
      if (Date.now() > deadline) {
        throw new GatewayError('TIMEOUT', `no shared token appeared within ${Math.round((lockMs + timeoutMs) / 1000)} s while another instance was fetching it`);
      }
      await abortableSleep(delay);
      delay = Math.min(250, delay * 2);
    }
  }

  /**
   * The stored token of this account's credentials with its time to live, or undefined. A token
   * fetched with other credentials (a wrong secret here, or there) is never used: this instance
   * fetches with its own, and the service answers (401 for a wrong secret).
   */
  private async readShared(tokenKey: string): Promise<{ token: string; ttlMs: number } | undefined> {
    const got = await this.conn.run('reading the shared token', async (r) => stringAndInt(await this.getToken(r, [tokenKey], []), 'the token script'), { timeoutMs: this.opts.timeoutMs });
    const mine = got && got[1] > 0 ? this.ours(String(got[0])) : undefined;
    return mine === undefined ? undefined : { token: mine, ttlMs: Number(got![1]) };
  }

  private remember(token: string, ttlMs: number): string {
    this.cached = token;
    this.cachedUntil = Date.now() + ttlMs;
    return token;
  }

  invalidate(refused: string): boolean {
    if (this.invalidated.has(refused)) return false;
    this.invalidated.add(refused);
    if (this.invalidated.size > 16) this.invalidated.delete(this.invalidated.values().next().value as string);
    if (this.cached === refused) {
      this.cached = undefined;
      this.cachedUntil = 0;
    }
    const tokenKey = this.tokenKey();
    void this.conn.run('dropping the refused token', (r) => this.delIf(r, [tokenKey], [this.stored(refused)]), { timeoutMs: this.opts.timeoutMs }).catch(() => {});
    return true;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.cached = undefined;
  }
}
