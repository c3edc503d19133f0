/**
 * The seams of an account (issue 14). An account is one set of credentials on one service
 * (an `iotgw-gateway` or an `iotgw-app` config node). Everything a node needs of its account
 * sits behind one of these small interfaces, so that the in-process implementations (the
 * default, and what `npm start` uses) and the Redis-backed ones (several Node-RED instances
 * sharing one account, issue 19) are interchangeable without touching any node file.
 *
 * This file holds types only. Implementations: `./memory/*` (in-process) and
 * `./redis/*` (shared through an `iotgw-redis` config node).
 */
import type { OutboxStore } from '../outbox/types';

/** Releases a slot; calling it more than once is harmless. */
export type Release = () => void;

/**
 * The account's rate budget: each throttle group's sliding window (SEND, GET, ...) and the
 * cap on requests in flight. Order of use for one call: the rate slot of its group first,
 * then the concurrency slot (so no concurrency slot waits for a window); both released when
 * the reply is in (a call's window slot counts from its completion).
 */
export interface RateBudget {
  /** Waits for one of the account's in-flight slots. Rejects with the signal's reason on abort. */
  acquireConcurrency(signal?: AbortSignal): Promise<Release>;
  /** Waits for a slot of `group`'s sliding window; resolves at once for a group with no limit. */
  acquireRate(group: string, signal?: AbortSignal): Promise<Release>;
  /** After a 429/503 (or a throttling ErrorID): no slot of `group` is granted for `ms`. */
  penalize(group: string, ms: number): void;
  /** Milliseconds until a slot of `group` could be granted (0: now); for status texts. */
  msUntilFree(group: string): number;
  /** The window of `group` in ms (0: no limit). */
  windowMs(group: string): number;
  /** Refuses every waiter (redeploy) and frees what it holds. */
  close(): Promise<void>;
  /** A shared budget: calls counted now in each group's window across every instance (one read; figures only). */
  fleetUsed?(): Promise<Record<string, number>>;
}

/** A bearer token shared by every node of the account (and every instance, with Redis). */
export interface TokenSource {
  /** The current token, fetching one if there is none (one fetch for all callers). */
  token(signal?: AbortSignal): Promise<string>;
  /**
   * After a 401 with `refused`: drop it so the next `token()` fetches a new one. Returns
   * false when renewing cannot help (a static token, or `refused` was already renewed once).
   */
  invalidate(refused: string): boolean;
  /**
   * How long the token held now stays good (ms, after the source's own skew), when the
   * service said so (`expires_in`); undefined when unknown or there is no token yet.
   */
  expiresInMs?(): number | undefined;
  /** "valid" (a token is held), "failed" (the last fetch failed) or "none"; undefined when unknown. */
  state?(): TokenState | undefined;
  close(): Promise<void>;
}

/** What the account's figures say of its token. */
export type TokenState = 'valid' | 'none' | 'failed';

/**
 * The persisted position of one feed (status updates, from-mobile messages): the mark
 * (`FromUTC` to ask for next) and the keys already emitted for the mark's second. Both are
 * always written together, in one write.
 */
export interface FeedMark {
  /** `yyyy-MM-dd HH:mm:ss`, the gateway's own form. */
  fromUtc: string;
  /** Keys of the records already emitted whose time is the mark's second. */
  seen: string[];
  /** Bumped by a `{fromUTC}` reset, so a poll begun before it can neither emit nor write. */
  generation: number;
  /**
   * Set by a store that could read the mark's second but not its keys (too large to read):
   * why, e.g. "its keys are 9 MB". The reader then goes on from that second without them.
   */
  keysUnread?: string;
}

/** Where a feed's mark lives: node context / a file (in-process), or Redis (shared). */
export interface MarkStore {
  load(feed: string): Promise<FeedMark | undefined>;
  /**
   * Writes the mark durably before resolving. With a `fence` (from a FeedLease), the write
   * is refused (rejects with code SHARED_STATE / reason 'fenced') when a newer lease holder exists.
   */
  save(feed: string, mark: FeedMark, fence?: number): Promise<void>;
}

/** Who may poll a feed: always this instance in-process; one active instance with Redis. */
export interface FeedLease {
  /** Resolves with a fencing token once this instance holds the lease; renews it itself. */
  acquire(feed: string, signal?: AbortSignal): Promise<number>;
  /** True while the lease is held (false after a lost renewal). */
  held(feed: string): boolean;
  release(feed: string): Promise<void>;
  /** 'active' | 'standby' | 'down' changes, for the node's status. */
  on(event: 'state', listener: (feed: string, state: 'active' | 'standby' | 'down') => void): this;
  /* Added by pollers: what a poller node needs to use the lease without knowing its backend. */
  /** True when other instances may hold the lease (shared state, e.g. Redis): the node then stands by unless it holds it. */
  readonly shared: boolean;
  /** The fencing token of a held lease (undefined when not held), for MarkStore.save. */
  fence(feed: string): number | undefined;
  off(event: 'state', listener: (feed: string, state: 'active' | 'standby' | 'down') => void): this;
}

/* ---- Added by arch (issue 14): how a shared-state backend plugs into the account factory. ---- */

/** What identifies an account to a shared-state backend (the same on every instance). */
export interface AccountKey {
  /** 'gateway' | 'app' */
  kind: string;
  /** The config node's id (the same in every instance running the same flows). */
  id: string;
  /** The service's base URL; with the credential's public part it names the account. */
  baseUrl: string;
  /** A public, secret-free identity of the credentials (a client ID), '' when there is none. */
  principal: string;
  /**
   * Without a principal: a secret-free name of the credentials (a SHA-256 of a static
   * token, of an app's login e-mail), so the account's keys follow its credentials, not
   * the config node's id (issue 25); '' when there are none.
   */
  identity?: () => string;
  /**
   * A one-way digest of the credentials behind auth `name` that fetch its token (client ID
   * and secret, login and password): a shared token is kept under it, so only an instance
   * with the same credentials uses it; '' when `name` fetches no token.
   */
  binding?: (name: string) => string;
}

/**
 * A shared-state backend (issue 19: Redis). Every method is optional: what it does not
 * provide stays in-process. `local` is the in-process implementation, for a backend that
 * wraps it (or falls back to it while its server is down).
 */
export interface SharedState {
  rateBudget?(account: AccountKey, local: RateBudget): RateBudget;
  tokenSource?(account: AccountKey, name: string, local: TokenSource): TokenSource;
  markStore?(account: AccountKey, local: MarkStore): MarkStore;
  feedLease?(account: AccountKey, local: FeedLease): FeedLease;
  /**
   * The outbox `name` of the account, shared by the fleet (issue 45; nodes.md "A fleet"):
   * one store per call (each takes part in the outbox's drain lease; close it with its
   * Outbox). `bounds`: the outbox's outboxMaxEntries and outboxMaxBytes, checked fleet-wide
   * at accept. Without it the outbox is a file store (FileOutboxStore).
   */
  outboxStore?(account: AccountKey, name: string, bounds?: OutboxBounds): OutboxStore;
}

/** The bounds a shared outbox store checks at accept. */
export interface OutboxBounds {
  maxEntries?: number;
  maxBytes?: number;
}
