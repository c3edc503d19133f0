/**
 * An account: one set of credentials on one service, shared by every node that uses it.
 * It holds the HTTP client, the token source(s), the rate budget, the feeds' mark store and
 * lease, and the status-record feed the tracker listens to. The config nodes read their
 * settings and call `createAccount`; nothing else builds clients or auth.
 *
 *   node --(request)--> account.client() --(budget, auth)--> gateway
 *
 * Parts are built lazily (a config error surfaces at first use, as BAD_INPUT), once.
 * A shared-state backend (see ./shared.ts) replaces the rate budget, token sources, mark
 * store and lease; without one everything is in-process (./memory/*).
 */
import { EventEmitter } from 'node:events';
import { ApiClient, type ApiResponse, type AuthProvider, type GroupLimit, type TlsOptions } from '../transport/http';
import { GatewayError } from '../common/errors';
import type { AccountKey, FeedLease, MarkStore, OutboxBounds, RateBudget, SharedState, TokenSource } from './types';
import type { OutboxStore } from '../outbox/types';
import { MemoryRateBudget } from './memory/rate-budget';
import { AuthTokenSource, TokenSourceAuth } from './memory/token-source';
import { MemoryFeedLease, MemoryMarkStore } from './memory/feed';
import { sharedStateFor } from './shared';
import { AccountWatch, watchAccount, type AccountFigures, type GroupFigures } from './figures';
import type { SlidingWindowLimiter } from '../transport/limiter';

export interface AccountOptions {
  /** 'gateway' | 'app' (part of the AccountKey). */
  kind: string;
  /** The config node's id. */
  id: string;
  /** Credential-free label for messages ("gateway host:port"). */
  label: string;
  /** The config node's name, when it has one (the account's name in its figures). */
  name?: string;
  baseUrl: string;
  timeoutMs: number;
  maxConcurrent: number;
  maxRetries: number;
  maxQueue?: number;
  groups?: Record<string, GroupLimit>;
  defaultGroup?: string;
  tls?: TlsOptions;
  /** Is a 2xx reply a rate limit in disguise (the gateway's 200 + ErrorID 24579/24581)? */
  throttled?: (res: ApiResponse) => boolean;
  /** A settings error found when the config node read its settings: thrown by client(). */
  configError?: GatewayError;
  /**
   * The account's auth providers by name ('bearer', 'broker', ...), built at first use;
   * a factory throws BAD_INPUT when its credentials are missing.
   */
  auth: Record<string, () => AuthProvider>;
  /** Public identity of the credentials for the AccountKey (a client ID), never a secret. */
  principal?: string;
  /** See AccountKey.identity and AccountKey.binding (computed at first use). */
  identity?: () => string;
  binding?: (name: string) => string;
  /** The config node's raw settings, for shared-state resolvers. */
  config?: Readonly<Record<string, unknown>>;
  /** A shared-state backend; default: asks the resolvers registered in ./shared.ts. */
  shared?: SharedState | (() => SharedState | undefined);
}

export interface Account {
  readonly key: AccountKey;
  readonly label: string;
  /** The shared HTTP client; throws the config error (BAD_INPUT) when the settings are invalid. */
  client(): ApiClient;
  /** The AuthProvider `name` for ApiClient requests (built once; throws BAD_INPUT without credentials). */
  auth(name: string): AuthProvider;
  /** The token source behind auth `name` (bearer tokens). */
  tokens(name: string): TokenSource;
  /** Each throttle group's window and the concurrency cap (what the client uses). */
  readonly budget: RateBudget;
  /** Where feeds keep their marks (in-process: memory; a node may keep its own in context). */
  readonly marks: MarkStore;
  /** Who may poll a feed (in-process: always this instance). */
  readonly lease: FeedLease;
  /** Status records as the status pollers fetch them ('records', records); 'pollers', count. */
  readonly statusFeed: EventEmitter;
  /** What the account writes down as it works (429s, the last error, its feeds). */
  readonly watch: AccountWatch;
  /** The account's figures now (nodes.md, "Seeing an account at work"); builds nothing. */
  figures(): Promise<AccountFigures>;
  /** The account's outbox `name` in its shared state (Redis), or undefined: a file store then (issue 45). */
  sharedOutboxStore(name: string, bounds?: OutboxBounds): OutboxStore | undefined;
  /** Frees the client and the gates; the account can be built again after. */
  close(): Promise<void>;
}

/** Builds an account from settings already read by a config node. */
export function createAccount(opts: AccountOptions): Account {
  return new LazyAccount(opts);
}

/** An account whose parts are built at first use, once (again after close()). */
class LazyAccount implements Account {
  readonly key: AccountKey;
  readonly label: string;
  readonly statusFeed = new EventEmitter();
  readonly watch = new AccountWatch();
  private shared: SharedState | undefined;
  private sharedResolved = false;
  private apiClient: ApiClient | undefined;
  private rateBudget: RateBudget | undefined;
  private local: MemoryRateBudget | undefined;
  private readonly auths = new Map<string, AuthProvider>();
  private readonly localAuths = new Map<string, AuthProvider>();
  private readonly sources = new Map<string, TokenSource>();
  private markStore: MarkStore | undefined;
  private feedLease: FeedLease | undefined;
  private unwatch: (() => void) | undefined;

  constructor(private readonly opts: AccountOptions) {
    this.key = {
      kind: opts.kind,
      id: opts.id,
      baseUrl: opts.baseUrl,
      principal: opts.principal ?? '',
      ...(opts.identity ? { identity: opts.identity } : {}),
      ...(opts.binding ? { binding: opts.binding } : {}),
    };
    this.label = opts.label;
    this.statusFeed.setMaxListeners(0);
    this.unwatch = watchAccount(this);
  }

  client(): ApiClient {
    const { opts } = this;
    if (opts.configError) throw opts.configError;
    if (!this.apiClient) {
      this.unwatch ??= watchAccount(this);
      this.apiClient = new ApiClient({
        label: opts.label,
        baseUrl: opts.baseUrl,
        timeoutMs: opts.timeoutMs,
        maxConcurrent: opts.maxConcurrent,
        maxRetries: opts.maxRetries,
        ...(opts.maxQueue !== undefined ? { maxQueue: opts.maxQueue } : {}),
        groups: opts.groups,
        ...(opts.defaultGroup !== undefined ? { defaultGroup: opts.defaultGroup } : {}),
        tls: opts.tls,
        ...(opts.throttled ? { throttled: opts.throttled } : {}),
        observer: this.watch,
        // A shared (Redis) budget that offers gates is what the client counts with (issue 19).
        gates: (this.budget as { gates?: MemoryRateBudget['gates'] }).gates ?? this.localBudget().gates,
      });
    }
    return this.apiClient;
  }

  auth(name: string): AuthProvider {
    let a = this.auths.get(name);
    if (a) return a;
    const local = this.localAuth(name);
    const s = this.sharedState();
    // A bearer token shared between instances (renewable tokens only; static headers stay).
    a = s?.tokenSource && local.renew ? new TokenSourceAuth(s.tokenSource(this.key, name, this.tokens(name)), local.hint ?? 'Check the credentials in the config node.') : local;
    this.auths.set(name, a);
    return a;
  }

  tokens(name: string): TokenSource {
    let t = this.sources.get(name);
    if (!t) {
      t = new AuthTokenSource(
        () => this.localAuth(name),
        () => this.client(),
      );
      this.sources.set(name, t);
    }
    return t;
  }

  get budget(): RateBudget {
    if (!this.rateBudget) {
      const s = this.sharedState();
      this.rateBudget = s?.rateBudget ? s.rateBudget(this.key, this.localBudget()) : this.localBudget();
    }
    return this.rateBudget;
  }

  get marks(): MarkStore {
    if (!this.markStore) {
      const s = this.sharedState();
      this.markStore = s?.markStore ? s.markStore(this.key, new MemoryMarkStore()) : new MemoryMarkStore();
    }
    return this.markStore;
  }

  get lease(): FeedLease {
    if (!this.feedLease) {
      const s = this.sharedState();
      this.feedLease = s?.feedLease ? s.feedLease(this.key, new MemoryFeedLease()) : new MemoryFeedLease();
    }
    return this.feedLease;
  }

  async figures(): Promise<AccountFigures> {
    const { opts } = this;
    return {
      account: opts.name || opts.label,
      at: new Date().toISOString(),
      // Not resolved yet: asked without keeping the answer (a backend may not have started yet).
      shared: (this.sharedResolved ? this.shared : typeof opts.shared === 'function' ? undefined : opts.shared ?? sharedStateFor(this.key, opts.config ?? {})) ? 'redis' : 'local',
      groups: await this.groupFigures(),
      token: this.tokenFigures(),
      feeds: this.watch.feedFigures(),
      outboxes: this.watch.outboxFigures(),
      lastError: this.watch.lastError(),
    };
  }

  async close(): Promise<void> {
    this.unwatch?.();
    this.unwatch = undefined;
    const c = this.apiClient;
    const b = this.rateBudget;
    const l = this.local;
    this.apiClient = undefined;
    this.rateBudget = undefined;
    this.local = undefined;
    this.auths.clear();
    this.localAuths.clear();
    const ts = [...this.sources.values()];
    this.sources.clear();
    await Promise.allSettled([c?.close(), b && b !== l ? b.close() : undefined, l?.close(), ...ts.map((t) => t.close())]);
  }

  /** The account's outbox `name` in its shared state (Redis), or undefined: the caller keeps it in a file store (issue 45). */
  sharedOutboxStore(name: string, bounds?: OutboxBounds): OutboxStore | undefined {
    return this.sharedState()?.outboxStore?.(this.key, name, bounds);
  }

  /** The shared-state backend, asked once (undefined: everything is in-process). */
  private sharedState(): SharedState | undefined {
    if (!this.sharedResolved) {
      this.sharedResolved = true;
      const { opts } = this;
      this.shared = typeof opts.shared === 'function' ? opts.shared() : opts.shared ?? sharedStateFor(this.key, opts.config ?? {});
    }
    return this.shared;
  }

  /** The config node's own auth provider `name` (built once). */
  private localAuth(name: string): AuthProvider {
    let a = this.localAuths.get(name);
    if (!a) {
      const make = this.opts.auth[name];
      if (!make) throw new GatewayError('BAD_INPUT', `account ${this.opts.label}: no "${name}" credentials`, { field: 'credentials' });
      a = make();
      this.localAuths.set(name, a);
    }
    return a;
  }

  private localBudget(): MemoryRateBudget {
    const { opts } = this;
    this.local ??= new MemoryRateBudget({ label: opts.label, maxConcurrent: opts.maxConcurrent, maxQueue: opts.maxQueue ?? 10000, groups: opts.groups });
    return this.local;
  }

  /** Each group's figures from the gates the client counts with (nothing is built here). */
  private async groupFigures(): Promise<Record<string, GroupFigures>> {
    const { rateBudget: budget, local } = this;
    const gates = budget ? (budget as { gates?: MemoryRateBudget['gates'] }).gates ?? (budget === local ? local.gates : undefined) : local?.gates;
    let fleet: Record<string, number> | undefined;
    if (budget?.fleetUsed && this.apiClient) fleet = await budget.fleetUsed();
    const out: Record<string, GroupFigures> = {};
    for (const [name, g] of Object.entries(this.opts.groups ?? {})) {
      const lim = gates?.limiters.get(name) as (SlidingWindowLimiter & { waiting?: number }) | undefined;
      const limit = g.calls > 0 && g.windowMs > 0 ? g.calls : 0;
      out[name] = {
        limit,
        windowSeconds: Math.round(g.windowMs / 1000),
        used: fleet?.[name] ?? (typeof lim?.used === 'number' ? lim.used : 0),
        waiting: lim ? lim.waiting ?? lim.queued ?? 0 : 0,
        inFlight: typeof lim?.inFlightCalls === 'number' ? lim.inFlightCalls : 0,
        throttled: this.watch.throttledCount(name),
      };
    }
    return out;
  }

  private tokenFigures(): AccountFigures['token'] {
    const a = this.auths.get('bearer');
    if (!a) return { state: 'none', expiresInSeconds: null };
    // A static token (no state) is held as long as the account is.
    const state = a.tokenState ? a.tokenState() ?? 'valid' : 'valid';
    const left = state === 'valid' ? a.expiresInMs?.() : undefined;
    return { state, expiresInSeconds: left !== undefined && Number.isFinite(left) ? Math.round(left / 1000) : null };
  }
}
