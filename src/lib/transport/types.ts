/**
 * The shapes of the HTTP layer: a client's options, one request, its reply, the auth
 * provider that signs it and the slots a call holds. Types only, no code.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Semaphore, SlidingWindowLimiter } from './limiter';

export interface TlsOptions {
  ca?: string | Buffer;
  cert?: string | Buffer;
  key?: string | Buffer;
  passphrase?: string;
  servername?: string;
  rejectUnauthorized?: boolean;
}

export interface GroupLimit {
  calls: number;
  windowMs: number;
}

export interface ClientOptions {
  /** A short, credential-free label for messages ("gateway https://host"). */
  label: string;
  baseUrl: string;
  timeoutMs: number;
  maxConcurrent: number;
  /** Most requests that may wait for a slot (per gate) before new ones are refused. */
  maxQueue?: number;
  /** Retries of 429 and throttling ErrorIDs (every request), and of 503, network errors and other 5xx (idempotent requests only). */
  maxRetries?: number;
  /** Throttle groups and their sliding-window limits. */
  groups?: Record<string, GroupLimit>;
  /** Rate-limit group used for calls that name none (undefined: no limit). */
  defaultGroup?: string;
  maxResponseBytes?: number;
  tls?: TlsOptions;
  /** Upper bound of a single wait between retries. */
  maxRetryWaitMs?: number;
  /** Base of the exponential backoff for calls without a group window. */
  backoffBaseMs?: number;
  /** The gates of the account's rate budget (account/memory/rate-budget.ts); default: own ones. */
  gates?: { concurrency: Semaphore; limiters: Map<string, SlidingWindowLimiter> };
  /**
   * Is this 2xx reply a rate limit in disguise (the gateway's 200 + ErrorID 24579/24581)?
   * Such a reply takes the same retry path as a 429. A request's own `throttled` wins.
   */
  throttled?: (res: ApiResponse) => boolean;
  /** Told of each throttled reply and each failed request (the account's figures); nothing else per call. */
  observer?: ClientObserver;
}

/** What an account keeps of its calls for a status read (src/lib/account/figures.ts). */
export interface ClientObserver {
  /** A 429, 503 or throttling ErrorID came back for `group`. */
  throttled(group: string): void;
  /** A request failed (thrown to its caller). */
  failed(err: unknown): void;
}

/** What an auth provider may use of the client that asks it for headers (ApiClient is one). */
export interface RequestClient {
  readonly stats: ClientStats;
  request(spec: RequestSpec, held?: HeldCall): Promise<ApiResponse>;
}

export interface AuthProvider {
  /** Headers to add to a request (may fetch a token). */
  headers(client: RequestClient, signal?: AbortSignal): Promise<Record<string, string>>;
  /**
   * Called after a 401 with the headers that were refused. Returns true when a new
   * attempt may succeed (a renewed token), false when retrying is pointless.
   */
  renew?(refused: Record<string, string>): boolean;
  /** What to tell the user after a 401 that cannot be fixed by retrying. */
  hint?: string;
  /** The account's secrets this provider holds (token, client secret): cut out of every reply. */
  secrets?(): string[];
  /** How long the token held now stays good (ms), when known (see TokenSource.expiresInMs). */
  expiresInMs?(): number | undefined;
  /** "valid" | "none" | "failed" for a fetched token (the account's figures); undefined for a static one. */
  tokenState?(): 'valid' | 'none' | 'failed' | undefined;
}

export type Query = Record<string, string | number | boolean | bigint | null | undefined>;

export interface RequestSpec {
  method: 'GET' | 'POST' | 'DELETE' | 'PUT' | 'PATCH';
  path: string;
  query?: Query;
  /** JSON body (serialised exactly, BigInt as JSON integers), or a form for `form`. */
  body?: unknown;
  form?: Record<string, string>;
  headers?: Record<string, string>;
  /** Throttle group (SEND, GET, ...). */
  group?: string;
  auth?: AuthProvider;
  /** May the request be sent again after a network error or a 5xx (503 included)? A POST that may have arrived: false. */
  idempotent?: boolean;
  signal?: AbortSignal;
  /** Accept a reply with no body. */
  allowEmpty?: boolean;
  /** Is this 2xx reply a throttle (nothing was done; send again)? Default: the client's. */
  throttled?: (res: ApiResponse) => boolean;
}

/** The slots (concurrency, then rate) and auth headers of one call that may leave now. */
export interface HeldCall {
  headers: Record<string, string>;
  /** Frees both slots; calling it again is harmless. */
  release: () => void;
}

export interface ApiResponse {
  statusCode: number;
  headers: IncomingHttpHeaders;
  body: unknown;
}

export interface ClientStats {
  requests: number;
  retries: number;
  rateLimited: number;
  tokenFetches: number;
}
