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

export interface AccountOptions {
  /** 'gateway' | 'app' (part of the AccountKey). */
  kind: string;
  /** The config node's id. */
  id: string;
  /** Credential-free label for messages ("gateway host:port"). */
  label: string;
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
    async close() {
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
  return account;
}
