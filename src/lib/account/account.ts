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
import type { AccountKey, FeedLease, MarkStore, RateBudget, SharedState, TokenSource } from './types';
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
  /** Frees the client and the gates; the account can be built again after. */
  close(): Promise<void>;
}

/** Builds an account from settings already read by a config node. */
export function createAccount(opts: AccountOptions): Account {
  const key: AccountKey = {
    kind: opts.kind,
    id: opts.id,
    baseUrl: opts.baseUrl,
    principal: opts.principal ?? '',
    ...(opts.identity ? { identity: opts.identity } : {}),
    ...(opts.binding ? { binding: opts.binding } : {}),
  };
  let shared: SharedState | undefined;
  let sharedResolved = false;
  const sharedState = (): SharedState | undefined => {
    if (!sharedResolved) {
      sharedResolved = true;
      shared = typeof opts.shared === 'function' ? opts.shared() : opts.shared ?? sharedStateFor(key, opts.config ?? {});
    }
    return shared;
  };

  let client: ApiClient | undefined;
  let budget: RateBudget | undefined;
  let local: MemoryRateBudget | undefined;
  const auths = new Map<string, AuthProvider>();
  const localAuths = new Map<string, AuthProvider>();
  const localAuth = (name: string): AuthProvider => {
    let a = localAuths.get(name);
    if (!a) {
      const make = opts.auth[name];
      if (!make) throw new GatewayError('BAD_INPUT', `account ${opts.label}: no "${name}" credentials`, { field: 'credentials' });
      a = make();
      localAuths.set(name, a);
    }
    return a;
  };
  const sources = new Map<string, TokenSource>();
  let marks: MarkStore | undefined;
  let lease: FeedLease | undefined;
  const statusFeed = new EventEmitter();
  statusFeed.setMaxListeners(0);
  const watch = new AccountWatch();
  let unwatch: (() => void) | undefined;

  const localBudget = (): MemoryRateBudget => {
    local ??= new MemoryRateBudget({ label: opts.label, maxConcurrent: opts.maxConcurrent, maxQueue: opts.maxQueue ?? 10000, groups: opts.groups });
    return local;
  };

  const account: Account = {
    key,
    label: opts.label,
    client() {
      if (opts.configError) throw opts.configError;
      if (!client) {
        unwatch ??= watchAccount(account);
        client = new ApiClient({
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
          observer: watch,
          // A shared (Redis) budget that offers gates is what the client counts with (issue 19).
          gates: (account.budget as { gates?: MemoryRateBudget['gates'] }).gates ?? localBudget().gates,
        });
      }
      return client;
    },
    auth(name) {
      let a = auths.get(name);
      if (a) return a;
      const local = localAuth(name);
      const s = sharedState();
      // A bearer token shared between instances (renewable tokens only; static headers stay).
      a = s?.tokenSource && local.renew ? new TokenSourceAuth(s.tokenSource(key, name, account.tokens(name)), local.hint ?? 'Check the credentials in the config node.') : local;
      auths.set(name, a);
      return a;
    },
    tokens(name) {
      let t = sources.get(name);
      if (!t) {
        t = new AuthTokenSource(() => localAuth(name), () => account.client());
        sources.set(name, t);
      }
      return t;
    },
    get budget() {
      if (!budget) {
        const s = sharedState();
        budget = s?.rateBudget ? s.rateBudget(key, localBudget()) : localBudget();
      }
      return budget;
    },
    get marks() {
      if (!marks) {
        const s = sharedState();
        marks = s?.markStore ? s.markStore(key, new MemoryMarkStore()) : new MemoryMarkStore();
      }
      return marks;
    },
    get lease() {
      if (!lease) {
        const s = sharedState();
        lease = s?.feedLease ? s.feedLease(key, new MemoryFeedLease()) : new MemoryFeedLease();
      }
      return lease;
    },
    statusFeed,
    watch,
    figures: () => figures(),
    async close() {
      unwatch?.();
      unwatch = undefined;
      const c = client;
      const b = budget;
      const l = local;
      client = undefined;
      budget = undefined;
      local = undefined;
      auths.clear();
      localAuths.clear();
      const ts = [...sources.values()];
      sources.clear();
      await Promise.allSettled([c?.close(), b && b !== l ? b.close() : undefined, l?.close(), ...ts.map((t) => t.close())]);
    },
  };
  /** Each group's figures from the gates the client counts with (nothing is built here). */
  const groupFigures = async (): Promise<Record<string, GroupFigures>> => {
    const gates = budget ? (budget as { gates?: MemoryRateBudget['gates'] }).gates ?? (budget === local ? local.gates : undefined) : local?.gates;
    let fleet: Record<string, number> | undefined;
    if (budget?.fleetUsed && client) fleet = await budget.fleetUsed();
    const out: Record<string, GroupFigures> = {};
    for (const [name, g] of Object.entries(opts.groups ?? {})) {
      const lim = gates?.limiters.get(name) as (SlidingWindowLimiter & { waiting?: number }) | undefined;
      const limit = g.calls > 0 && g.windowMs > 0 ? g.calls : 0;
      out[name] = {
        limit,
        windowSeconds: Math.round(g.windowMs / 1000),
        used: fleet?.[name] ?? (typeof lim?.used === 'number' ? lim.used : 0),
        waiting: lim ? lim.waiting ?? lim.queued ?? 0 : 0,
        inFlight: typeof lim?.inFlightCalls === 'number' ? lim.inFlightCalls : 0,
        throttled: watch.throttledCount(name),
      };
    }
    return out;
  };

  const tokenFigures = (): AccountFigures['token'] => {
    const a = auths.get('bearer');
    if (!a) return { state: 'none', expiresInSeconds: null };
    // A static token (no state) is held as long as the account is.
    const state = a.tokenState ? a.tokenState() ?? 'valid' : 'valid';
    const left = state === 'valid' ? a.expiresInMs?.() : undefined;
    return { state, expiresInSeconds: left !== undefined && Number.isFinite(left) ? Math.round(left / 1000) : null };
  };

  const figures = async (): Promise<AccountFigures> => ({
    account: opts.name || opts.label,
    at: new Date().toISOString(),
    // Not resolved yet: asked without keeping the answer (a backend may not have started yet).
    shared: (sharedResolved ? shared : typeof opts.shared === 'function' ? undefined : opts.shared ?? sharedStateFor(key, opts.config ?? {})) ? 'redis' : 'local',
    groups: await groupFigures(),
    token: tokenFigures(),
    feeds: watch.feedFigures(),
    lastError: watch.lastError(),
  });

  unwatch = watchAccount(account);
  return account;
}
