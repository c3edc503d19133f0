/**
 * The HTTP layer every node uses. One ApiClient per config node (per account): it owns
 * one undici dispatcher (keep-alive, proxy from the environment, TLS options from a
 * tls-config node), the account's auth, a rate limiter per throttle group and the
 * concurrency cap. It retries what is safe to retry and maps every failure to a
 * GatewayError with one of the contract's codes. No credential ever enters an error
 * message: messages name the method and the path, never the query or the headers.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { GatewayError } from '../common/errors';
import { Semaphore, SlidingWindowLimiter } from './limiter';
import { JsonDepthError, MAX_JSON_DEPTH, bodyProblem, jsonTooDeep, parseJson, stringifyJson } from '../common/int64';
import type { Dispatcher } from 'undici';
import { GatewayDispatcher, isLoopbackHost, proxyFor } from './proxy';
import { reportedAcquire } from './wait-status';
import { BasePathWatch, localhostTypo, localhostTypoText, refusedHint } from './network-cause';

export { isLoopbackHost };

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
  /** Retries of 429/503 (all methods) and of network errors and 5xx (GET only). */
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

export interface AuthProvider {
  /** Headers to add to a request (may fetch a token). */
  headers(client: ApiClient, signal?: AbortSignal): Promise<Record<string, string>>;
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
  /** May the request be sent again after a network error or a 5xx other than 503? */
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

/** Certificate errors from Node's TLS layer: permanent, never retried. */
const TLS_ERROR_CODES = /CERT|SELF_SIGNED|UNABLE_TO_(VERIFY|GET)|ERR_TLS|DEPTH_ZERO/;

/** A TLS handshake that met a plain-HTTP server (OpenSSL's texts for it). */
const PLAIN_HTTP_ON_TLS = /wrong version number|packet length too long|http request|WRONG_VERSION_NUMBER|PACKET_LENGTH_TOO_LONG/i;

/** Network error codes in words. */
const NETWORK_WORDS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host name not found',
  EAI_AGAIN: 'host name lookup failed (temporary)',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  UND_ERR_SOCKET: 'the connection closed unexpectedly',
};

/** "ECONNREFUSED connect ECONNREFUSED 127.0.0.1:1881" without saying the code twice. */
export function networkText(code: string | undefined, message: string | undefined): string {
  const msg = (message ?? '').trim() || 'network error';
  const words = code ? NETWORK_WORDS[code] : undefined;
  if (!code) return msg;
  const detail = msg.includes(code) ? msg : `${code} ${msg}`;
  return words ? `${words} (${detail})` : detail;
}

/** Checks a base URL: https, or http on a loopback address; no user info, query or fragment. */
export function checkBaseUrl(raw: string, field = 'baseUrl'): URL {
  let url: URL;
  try {
    url = new URL(String(raw ?? '').trim());
  } catch {
    throw new GatewayError('BAD_INPUT', `${field}: "${String(raw ?? '').slice(0, 100)}" is not a URL; use https://host[:port][/path]`, { field });
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new GatewayError('BAD_INPUT', `${field}: only https:// (or http:// on a loopback address) is allowed`, { field });
  }
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
    if (localhostTypo(url.hostname)) throw new GatewayError('BAD_INPUT', localhostTypoText(field, url), { field });
    throw new GatewayError(
      'BAD_INPUT',
      `${field}: http:// is allowed only for loopback addresses (localhost, 127.0.0.0/8, ::1); use https:// for ${url.hostname}`,
      { field },
    );
  }
  if (url.username || url.password) {
    throw new GatewayError('BAD_INPUT', `${field}: must not contain a user name or password; put credentials in the node's credentials`, { field });
  }
  if (url.search || url.hash) {
    throw new GatewayError('BAD_INPUT', `${field}: must not contain a query string or fragment`, { field });
  }
  return url;
}

/** Encodes one path segment, refusing what could change the path. */
export function pathSegment(value: string, field: string): string {
  if (value === '.' || value === '..' || /[\u0000-\u001f\u007f]/.test(value)) {
    throw new GatewayError('BAD_INPUT', `${field}: "${value.slice(0, 40)}" is not allowed in a URL path`, { field });
  }
  return encodeURIComponent(value);
}

function headerValueOk(v: string): boolean {
  return !/[\r\n\u0000]/.test(v);
}

/**
 * Retry-After in ms: delta-seconds or an HTTP date (RFC 9110). "0" means "now" (0 ms).
 * A value that makes no sense (negative, a date now or in the past, beyond a year,
 * garbage, several differing values) counts as absent: the caller then waits what the
 * limit itself justifies instead of retrying back to back.
 */
export function parseRetryAfter(value: string | string[] | undefined, now: number): number | undefined {
  const values = Array.isArray(value) ? value : value === undefined ? [] : [value];
  if (values.length !== 1 && new Set(values.map((v) => v.trim())).size !== 1) return undefined;
  const v = String(values[0] ?? '').trim();
  if (!v || v.length > 64) return undefined;
  let ms: number;
  if (/^\d{1,10}(\.\d{1,3})?$/.test(v)) ms = Math.round(Number(v) * 1000);
  else if (/^[A-Za-z]{3}, \d{2} [A-Za-z]{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/.test(v)) {
    ms = Date.parse(v) - now;
    if (!(ms > 0)) return undefined; // a date in the past: a broken clock or a hostile server
  } else return undefined;
  return Number.isFinite(ms) && ms >= 0 && ms <= 365 * 86400_000 ? ms : undefined;
}

/** Longest wait a 429/503 can cause when the group has no window (no limit to justify more). */
export const MAX_WAIT_WITHOUT_WINDOW_MS = 30_000;

/**
 * The wait before retrying a 429/503: the server's Retry-After when given, else the
 * group's window, else exponential backoff; never more than twice the group's window
 * (a full window frees every slot, so a longer wait stalls the account for nothing),
 * never more than 30 s when there is no window, and never more than `maxRetryWaitMs`.
 */
export function rateLimitWait(retryAfterMs: number | undefined, windowMs: number | undefined, backoffMs: number, maxRetryWaitMs: number): number {
  const hasWindow = windowMs !== undefined && windowMs > 0;
  const bound = Math.min(maxRetryWaitMs, hasWindow ? 2 * windowMs : MAX_WAIT_WITHOUT_WINDOW_MS);
  return Math.min(bound, retryAfterMs ?? (hasWindow ? windowMs : backoffMs));
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * The server's own error text from the usual error bodies, never more than 300 chars.
 * `secrets` (the credentials the request carried) are cut out first: a server that quotes
 * the request in its error must not put a token into our error messages and logs.
 */
export function serverErrorText(body: unknown, secrets: string[] = []): string | undefined {
  const full = rawServerText(body);
  if (full === undefined) return undefined;
  const text = redactText(full, secrets);
  return text.length > 300 ? `${text.slice(0, 297)}...` : text;
}

/** What a secret is replaced with, in error texts and in replies. */
export const REDACTED = '[credential]';

/** Cuts every secret (of 4 or more characters; pass them longest first) out of a text. */
export function redactText(text: string, secrets: string[]): string {
  let out = text;
  for (const s of secrets) if (s.length >= 4 && out.includes(s)) out = out.split(s).join(REDACTED);
  return out;
}

/**
 * A parsed reply with every secret cut out of its strings and keys. `raw` is the reply's
 * text: when no secret occurs in it (as is or JSON-escaped), which is the common case, the
 * value is returned as it is without a walk. The value is at most MAX_JSON_DEPTH deep
 * (parseJson refused deeper), so the recursion is bounded.
 */
export function redactReply(value: unknown, raw: string, secrets: string[], escaped?: string[]): unknown {
  let any = false;
  for (let i = 0; i < secrets.length && !any; i++) {
    const s = secrets[i]!;
    any = s.length >= 4 && (raw.includes(s) || raw.includes(escaped?.[i] ?? JSON.stringify(s).slice(1, -1)));
  }
  // The common case: no secret in the reply, the value is returned as it is.
  if (!any) return value;
  const present = secrets.filter((s) => s.length >= 4 && (raw.includes(s) || raw.includes(JSON.stringify(s).slice(1, -1))));
  if (!present.length) return value;
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return redactText(v, present);
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) out[redactText(k, present)] = walk(x);
      return out;
    }
    return v;
  };
  return walk(value);
}

/** The account's secrets a reply must never carry: the auth provider's, and a form's secret values. */
function replySecrets(authHeaders: Record<string, string>, spec: RequestSpec): string[] {
  const out = spec.auth?.secrets ? [...spec.auth.secrets()] : [];
  for (const v of Object.values(authHeaders)) {
    const m = /^Bearer\s+(.+)$/i.exec(v);
    if (m) out.push(m[1]!);
  }
  for (const [k, v] of Object.entries(spec.form ?? {})) if (/secret|password|token/i.test(k)) out.push(v);
  return out.filter((s) => typeof s === 'string' && s.length >= 4).sort((a, b) => b.length - a.length);
}

/** The credential values a request carried (auth headers, and a form's values but its grant type). */
function secretsOf(authHeaders: Record<string, string>, spec: RequestSpec): string[] {
  const out: string[] = [];
  for (const v of Object.values(authHeaders)) {
    out.push(v);
    const m = /^\S+\s+(.+)$/.exec(v); // "Bearer <token>"
    if (m) out.push(m[1]!);
  }
  for (const [k, v] of Object.entries(spec.form ?? {})) if (k !== 'grant_type') out.push(v);
  // Longest first, so that "Bearer X" goes before X.
  return out.sort((a, b) => b.length - a.length);
}

function rawServerText(body: unknown): string | undefined {
  // Some API gateways answer with a bare JSON string ("Client Id in the request ... is invalid").
  if (typeof body === 'string' && body.trim()) return body.trim();
  if (body === null || typeof body !== 'object') return undefined;
  const b = body as Record<string, unknown>;
  const pick = (v: unknown) => (typeof v === 'string' && v.trim() ? v.trim() : undefined);
  const text =
    pick(b.errors) ??
    (Array.isArray(b.errors) ? b.errors.filter((e) => typeof e === 'string').join('; ') || undefined : undefined) ??
    pick(b.message) ??
    pick(b.Message) ??
    pick(b.error_description) ??
    pick(b.error) ??
    pick(b.fault && typeof b.fault === 'object' ? (b.fault as Record<string, unknown>).faultstring : undefined) ??
    (typeof b.valueInBytes === 'number' ? `valueInBytes ${b.valueInBytes}` : undefined);
  if (!text) return undefined;
  const code = pick(b.code);
  return code && !text.includes(code) ? `${code}: ${text}` : text;
}

let lastCt: string | undefined;
let lastCtJson = false;
function isJsonType(ct: string | undefined): boolean {
  if (!ct) return true; // no content type: try to parse
  // A server sends the same content type every time: the last answer is kept.
  if (ct === lastCt) return lastCtJson;
  const t = ct.split(';')[0]!.trim().toLowerCase();
  lastCtJson = t === 'application/json' || t === 'text/json' || t.endsWith('+json');
  lastCt = ct;
  return lastCtJson;
}

/**
 * The abort handle of one call as undici takes it (an emitter's `on`/`once`/`removeListener`):
 * a call's timeout and its caller's signal abort it. Cheaper than an AbortController (an
 * EventTarget) and its listeners per call.
 */
class CallAbort {
  aborted = false;
  reason: unknown = undefined;
  timedOut = false;
  /** When the call times out (Date.now() based); its place in the client's FIFO of deadlines. */
  deadline = 0;
  /** The set of calls following the caller's signal this call is in. */
  followed: Set<CallAbort> | undefined;
  private listener: (() => void) | undefined;
  constructor(readonly where: string) {}
  on(_event: 'abort', fn: () => void): this {
    this.listener = fn;
    return this;
  }
  once(event: 'abort', fn: () => void): this {
    return this.on(event, fn);
  }
  removeListener(_event: 'abort', fn: () => void): this {
    if (this.listener === fn) this.listener = undefined;
    return this;
  }
  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const l = this.listener;
    this.listener = undefined;
    l?.();
  }
}

/** The secrets of one auth provider and headers, with their JSON-escaped forms (kept per client). */
interface SecretCache {
  auth: AuthProvider | undefined;
  key: string;
  secrets: string[];
  /** The secrets as they appear inside a JSON string. */
  escaped: string[];
}

/** A reply read whole: status, headers (as undici's request() gives them) and the body as text. */
interface WholeReply {
  statusCode: number;
  headers: IncomingHttpHeaders;
  text: string;
}

/** Header values as undici's request() gives them: names lower-cased, repeated ones in an array. */
function parseHeaders(raw: Array<Buffer | string>): IncomingHttpHeaders {
  const out: Record<string, string | string[]> = {};
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const key = raw[i]!.toString('latin1').toLowerCase();
    const value = raw[i + 1]!.toString('latin1');
    const had = Object.hasOwn(out, key) ? out[key] : undefined;
    if (had === undefined) {
      if (key === '__proto__') Object.defineProperty(out, key, { value, enumerable: true, configurable: true, writable: true });
      else out[key] = value;
    } else if (typeof had === 'string') out[key] = [had, value];
    else had.push(value);
  }
  return out as IncomingHttpHeaders;
}

/**
 * One call's reply, read whole through undici's dispatch interface: no response stream,
 * no async iterator, no AbortSignal. The size cap is checked on the declared length and
 * on every chunk; the call's abort handle (timeout, caller's signal) aborts the request.
 */
class WholeReplyHandler {
  private abortRequest: ((err: Error) => void) | undefined;
  private statusCode = 0;
  private headers: IncomingHttpHeaders = {};
  private chunks: Buffer[] = [];
  private size = 0;
  private settled = false;

  constructor(
    private readonly call: CallAbort,
    private readonly max: number,
    private readonly where: string,
    private readonly resolve: (r: WholeReply) => void,
    private readonly reject: (err: unknown) => void,
  ) {
    // Aborted before the request got a connection: it ends now, and is aborted once it has one.
    call.on('abort', () => {
      if (this.abortRequest) this.abortRequest(call.reason as Error);
      else this.fail(call.reason);
    });
  }

  private fail(err: unknown): void {
    if (this.settled) return;
    this.settled = true;
    this.chunks = [];
    this.reject(err);
  }

  private tooLarge(): GatewayError {
    return new GatewayError('BAD_RESPONSE', `${this.where}: reply larger than ${this.max} bytes; refused`, { statusCode: this.statusCode });
  }

  onConnect(abort: (err?: Error) => void): void {
    this.abortRequest = abort;
    if (this.call.aborted || this.settled) abort((this.call.reason as Error) ?? new Error('aborted'));
  }

  onHeaders(statusCode: number, rawHeaders: Array<Buffer | string>): boolean {
    if (statusCode < 200) return true; // informational (100 Continue, 103): the reply follows
    this.statusCode = statusCode;
    this.headers = parseHeaders(rawHeaders);
    const declared = contentLength(this.headers['content-length'] as string | string[] | undefined);
    if (declared !== undefined && declared > this.max) {
      const err = this.tooLarge();
      this.fail(err);
      this.abortRequest?.(err);
      return false;
    }
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.settled) return false;
    this.size += chunk.length;
    if (this.size > this.max) {
      const err = this.tooLarge();
      this.fail(err);
      this.abortRequest?.(err);
      return false;
    }
    this.chunks.push(chunk);
    return true;
  }

  onComplete(): void {
    if (this.settled) return;
    this.settled = true;
    const chunks = this.chunks;
    this.chunks = [];
    const text = chunks.length === 0 ? '' : chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks, this.size).toString('utf8');
    this.resolve({ statusCode: this.statusCode, headers: this.headers, text });
  }

  onError(err: Error): void {
    this.fail(err);
  }
}

/** Content-Length as a number when it is one plain decimal value, else undefined. */
function contentLength(v: string | string[] | undefined): number | undefined {
  if (typeof v !== 'string' || v.length === 0 || v.length > 15) return undefined;
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c < 48 || c > 57) return undefined;
  }
  return Number(v);
}

export class ApiClient {
  readonly options: Required<Omit<ClientOptions, 'tls' | 'groups' | 'defaultGroup' | 'gates' | 'throttled' | 'observer'>> &
    Pick<ClientOptions, 'tls' | 'groups' | 'defaultGroup' | 'throttled' | 'observer'>;
  readonly base: URL;
  readonly stats: ClientStats = { requests: 0, retries: 0, rateLimited: 0, tokenFetches: 0 };
  private readonly dispatcher: GatewayDispatcher;
  private readonly limiters: Map<string, SlidingWindowLimiter>;
  private readonly concurrency: Semaphore;
  private closed = false;
  /** The base's origin as a URL (the dispatcher routes a URL origin without parsing it again). */
  private readonly originUrl: URL;
  /** The base path without trailing slashes. */
  private readonly basePath: string;
  /** Calls in flight by deadline: every call has the same timeout, so insertion order is deadline order. */
  private readonly deadlines = new Set<CallAbort>();
  private deadlineTimer: NodeJS.Timeout | undefined;
  /** Calls in flight by the caller's signal: one listener per signal instead of one per call. */
  private readonly bySignal = new WeakMap<AbortSignal, Set<CallAbort>>();
  private secretCache: SecretCache | undefined;
  /** The last value of each header name that passed the CR/LF/NUL check. */
  private readonly headersOk = new Map<string, string>();
  /** 404s before any success hint at the base URL's path (network-cause.ts). */
  private readonly firstReplies: BasePathWatch;

  constructor(opts: ClientOptions) {
    this.base = checkBaseUrl(opts.baseUrl);
    this.firstReplies = new BasePathWatch(this.base);
    this.originUrl = new URL(this.base.origin);
    this.basePath = this.base.pathname.replace(/\/+$/, '');
    this.options = {
      maxQueue: 10000,
      maxRetries: 3,
      maxResponseBytes: 32 * 1024 * 1024,
      maxRetryWaitMs: 5 * 60 * 1000,
      backoffBaseMs: 1000,
      ...opts,
    };
    const connect: Record<string, unknown> = {};
    if (opts.tls) {
      for (const k of ['ca', 'cert', 'key', 'passphrase', 'servername'] as const) {
        if (opts.tls[k] !== undefined) connect[k] = opts.tls[k];
      }
      // Verification stays on unless a tls-config node explicitly turned it off
      // (the config node warns loudly about that).
      if (opts.tls.rejectUnauthorized === false) connect.rejectUnauthorized = false;
    }
    // Loopback origins go direct (never through a proxy); others follow http(s)_proxy/no_proxy.
    this.dispatcher = new GatewayDispatcher({
      keepAliveTimeout: 30_000,
      keepAliveMaxTimeout: 600_000,
      connections: Math.max(1, opts.maxConcurrent || 8),
      connect,
      requestTls: connect,
    });
    this.concurrency = opts.gates?.concurrency ?? new Semaphore(opts.maxConcurrent, this.options.maxQueue, `${opts.label}: concurrency`);
    this.limiters = opts.gates?.limiters ?? new Map();
    if (!opts.gates) for (const [name, g] of Object.entries(opts.groups ?? {})) {
      this.limiters.set(name, new SlidingWindowLimiter(g.calls, g.windowMs, this.options.maxQueue, `${opts.label}: ${name} rate limit`));
    }
  }

  limiter(group: string | undefined): SlidingWindowLimiter | undefined {
    const g = group ?? this.options.defaultGroup;
    return g ? this.limiters.get(g) : undefined;
  }

  get inFlight(): number {
    return this.concurrency.inFlight;
  }

  /** Waits for a slot of `group` and returns its release (the rate slot alone). */
  acquireGroup(group: string | undefined, signal?: AbortSignal): Promise<() => void> {
    const lim = this.limiter(group);
    return lim ? reportedAcquire(group ?? this.options.defaultGroup ?? '', lim, signal) : Promise.resolve(() => {});
  }

  /**
   * Everything one call needs before it can leave, in the agreed order (RateBudget in
   * account/types.ts): the auth headers (a token fetch is itself a call, so it is never
   * awaited while holding a slot), then a concurrency slot, then the group's rate slot
   * right before the call leaves. A concurrency slot is never held while waiting for a
   * rate window (that would stall the account's other groups): the window is waited for
   * first, then both are taken, and if the rate slot went to another call meanwhile the
   * concurrency slot is given back and the wait starts again. Batchers cut their batch
   * only once this resolves, so a batch forms while no call could leave.
   */
  async acquireCall(group: string | undefined, signal?: AbortSignal, auth?: AuthProvider): Promise<HeldCall> {
    const headers = auth ? await auth.headers(this, signal) : {};
    const lim = this.limiter(group);
    let conc: () => void;
    let rate: (() => void) | undefined;
    if (lim?.enabled && typeof lim.tryAcquire !== 'function') {
      // A shared (Redis) gate counts the window across instances and cannot be peeked at: the
      // concurrency slot first, then the rate slot right before the call leaves (issue 19).
      conc = await this.concurrency.acquire(signal);
      try {
        rate = await reportedAcquire(group ?? this.options.defaultGroup ?? '', lim, signal);
      } catch (err) {
        conc();
        throw err;
      }
      let done = false;
      return { headers, release: () => { if (done) return; done = true; rate?.(); conc(); } };
    }
    for (;;) {
      // The wait for the window is reported ("waiting for a SEND slot (23 s)") to the msg's node.
      if (lim?.enabled) await reportedAcquire(group ?? this.options.defaultGroup ?? '', { acquire: (s) => lim.ready(s).then(() => () => {}), msUntilFree: () => lim.msUntilFree() }, signal);
      conc = await this.concurrency.acquire(signal);
      if (!lim?.enabled) {
        // No window: the slot only counts the group's calls in flight (for the account's figures).
        rate = typeof lim?.tryAcquire === 'function' ? lim.tryAcquire() : undefined;
        break;
      }
      rate = lim.tryAcquire();
      if (rate) break;
      conc();
    }
    let released = false;
    return {
      headers,
      release: () => {
        if (released) return;
        released = true;
        rate?.();
        conc();
      },
    };
  }

  url(path: string, query?: Query): URL {
    // An empty path is the base itself (a token URL given in full).
    const url = new URL(this.base.origin + this.basePath + (path === '' || path.startsWith('/') ? path : `/${path}`));
    for (const [k, v] of Object.entries(query ?? {})) {
      if (v === undefined || v === null) continue;
      url.searchParams.append(k, typeof v === 'bigint' ? v.toString() : String(v));
    }
    return url;
  }

  /**
   * Sends a request with the account's limits and retries. A call already held for the
   * group (`acquireCall`, with its slots and headers) may be passed in: the first attempt uses it.
   */
  request(spec: RequestSpec, held?: HeldCall): Promise<ApiResponse> {
    const run = this.run(spec, held);
    const observer = this.options.observer;
    return observer ? run.catch((err: unknown) => {
      observer.failed(err);
      throw err;
    }) : run;
  }

  private async run(spec: RequestSpec, held?: HeldCall): Promise<ApiResponse> {
    const where = `${spec.method} ${spec.path}`;
    const maxRetries = this.options.maxRetries;
    let attempt = 0;
    let renewedAuth = false;
    let slot = held;
    // Serialised once, before any slot, token or request: a body that cannot be JSON is bad input.
    let bodyText: string | undefined;
    if (!spec.form && spec.body !== undefined) {
      try {
        bodyText = stringifyJson(spec.body);
      } catch (err) {
        slot?.release();
        throw new GatewayError('BAD_INPUT', `${bodyProblem(spec.body) ?? `msg.payload: cannot be sent as JSON (${(err as Error)?.message ?? err})`}; a request body must be plain JSON data`, { field: 'msg.payload' });
      }
      // Nested deeper than any reply may be: no real body comes near it (one indexOf pass).
      if (jsonTooDeep(bodyText, MAX_JSON_DEPTH)) {
        slot?.release();
        throw new GatewayError('BAD_INPUT', `${bodyProblem(spec.body, 'msg.payload', MAX_JSON_DEPTH) ?? `msg.payload: nested deeper than ${MAX_JSON_DEPTH} levels`}; a request body must be plain JSON data`, { field: 'msg.payload' });
      }
    }
    for (;;) {
      if (this.closed) {
        slot?.release();
        throw new GatewayError('NETWORK', `${where}: not sent, the account's client was closed (redeploy or shutdown)`);
      }
      const lim = this.limiter(spec.group);
      let call = slot;
      slot = undefined;
      let authHeaders: Record<string, string>;
      let res: ApiResponse | undefined;
      try {
        call ??= await this.acquireCall(spec.group, spec.signal, spec.auth);
        authHeaders = call.headers;
        res = await this.send(spec, authHeaders, bodyText);
      } catch (err) {
        call?.release();
        const ge = err instanceof GatewayError ? err : new GatewayError('NETWORK', `${where}: ${(err as Error)?.message ?? err}`);
        if ((ge.code === 'NETWORK' || ge.code === 'TIMEOUT') && !(ge as { permanent?: boolean }).permanent && spec.idempotent && attempt < maxRetries && !spec.signal?.aborted && !this.closed) {
          attempt++;
          this.stats.retries++;
          await sleep(this.backoff(attempt), spec.signal);
          continue;
        }
        throw ge;
      }
      call.release();
      const status = res.statusCode;
      if (status === 401 && spec.auth?.renew && !renewedAuth && spec.auth.renew(authHeaders)) {
        renewedAuth = true;
        continue;
      }
      // 429, 503 and a 2xx that says "rate exceeded" are one case: nothing was done.
      const throttled = status === 429 || status === 503 || (status >= 200 && status < 300 && (spec.throttled ?? this.options.throttled)?.(res) === true);
      if (throttled) {
        this.stats.rateLimited++;
        this.options.observer?.throttled(spec.group ?? this.options.defaultGroup ?? '');
        const retryAfter = parseRetryAfter(res.headers['retry-after'], Date.now());
        // Retry-After when given, else wait out the group's window (known even when our own
        // pacing is off), else back off exponentially; bounded by what the window justifies.
        const wait = rateLimitWait(retryAfter, lim?.window, this.backoff(attempt + 1), this.options.maxRetryWaitMs);
        // The group (every node of the account) waits at most one window, which frees every
        // slot; a longer Retry-After delays only this call and its retries.
        const groupWait = lim?.enabled && lim.window > 0 ? Math.min(wait, lim.window) : wait;
        lim?.penalize(groupWait);
        if (attempt < maxRetries) {
          attempt++;
          this.stats.retries++;
          await sleep(lim?.enabled && wait <= groupWait ? 0 : wait, spec.signal);
          continue;
        }
        if (status < 300) {
          const errorId = (res.body as { ErrorID?: unknown } | null)?.ErrorID;
          throw new GatewayError('RATE_LIMITED', `${where}: HTTP ${status} with a "rate exceeded" error${typeof errorId === 'number' ? ` (ErrorID ${errorId})` : ''}, gave up after ${attempt + 1} attempts; lower the rate or the rate-limit settings of the config node`, {
            statusCode: status,
            errorId: typeof errorId === 'number' ? errorId : undefined,
          });
        }
        throw this.errorFor(res, spec, `gave up after ${attempt + 1} attempts`, authHeaders);
      }
      if (status >= 500 && spec.idempotent && attempt < maxRetries) {
        attempt++;
        this.stats.retries++;
        await sleep(this.backoff(attempt), spec.signal);
        continue;
      }
      if (status < 200 || status >= 300) throw this.firstReplies.annotate(this.errorFor(res, spec, undefined, authHeaders));
      this.firstReplies.ok();
      return res;
    }
  }

  private backoff(attempt: number): number {
    const base = this.options.backoffBaseMs * 2 ** (attempt - 1);
    return Math.min(this.options.maxRetryWaitMs, Math.round(base * (0.75 + Math.random() * 0.5)));
  }

  /** One attempt (its slots held by the caller): timeout, size cap, JSON parse. */
  private async send(spec: RequestSpec, authHeaders: Record<string, string>, bodyText?: string): Promise<ApiResponse> {
    const where = `${spec.method} ${spec.path}`;
    const headers: Record<string, string> = { accept: 'application/json', ...spec.headers, ...authHeaders };
    for (const k in headers) {
      const v = headers[k]!;
      // A call sends the same few values again and again: the last good value of each name is kept.
      if (this.headersOk.get(k) === v) continue;
      if (!headerValueOk(v)) throw new GatewayError('BAD_INPUT', `header ${k}: must not contain CR, LF or NUL`, { field: k });
      if (this.headersOk.size >= 64) this.headersOk.clear();
      this.headersOk.set(k, v);
    }
    let body: string | undefined;
    if (spec.form) {
      body = new URLSearchParams(spec.form).toString();
      headers['content-type'] = 'application/x-www-form-urlencoded';
    } else if (spec.body !== undefined) {
      body = bodyText ?? stringifyJson(spec.body);
      headers['content-type'] = 'application/json';
    } else if (spec.method !== 'GET' && spec.method !== 'DELETE') {
      headers['content-type'] = 'application/json';
    }
    const target = this.target(spec.path, spec.query);
    // One handle aborts the call on timeout or when the caller's signal aborts; the timeout
    // is one timer per client (deadlines in order), the caller's signal one listener per signal.
    const call = new CallAbort(where);
    const caller = spec.signal;
    if (caller?.aborted) call.abort(caller.reason);
    else if (caller) this.follow(caller, call);
    this.watch(call);
    this.stats.requests++;
    try {
      const res = await new Promise<WholeReply>((resolve, reject) => {
        if (call.aborted) return reject(call.reason);
        this.dispatcher.dispatch(
          { origin: this.originUrl, path: target, method: spec.method, headers, body },
          new WholeReplyHandler(call, this.options.maxResponseBytes, where, resolve, reject) as unknown as Dispatcher.DispatchHandler,
        );
      });
      const text = res.text;
      const ct = res.headers['content-type'];
      const ctStr = Array.isArray(ct) ? ct[0] : ct;
      let parsed: unknown = undefined;
      const ok = res.statusCode >= 200 && res.statusCode < 300;
      if (text.length > 0 && text.trim().length > 0) {
        if (isJsonType(ctStr)) {
          try {
            parsed = parseJson(text);
          } catch (err) {
            if (ok && err instanceof JsonDepthError) {
              throw new GatewayError('BAD_RESPONSE', `${where}: the reply is ${err.message} (HTTP ${res.statusCode}, ${text.length} bytes); refused`, { statusCode: res.statusCode });
            }
            if (ok) throw new GatewayError('BAD_RESPONSE', `${where}: the reply is not valid JSON (HTTP ${res.statusCode}, ${text.length} bytes)`, { statusCode: res.statusCode });
            parsed = undefined;
          }
        } else if (ok) {
          throw new GatewayError('BAD_RESPONSE', `${where}: expected JSON, got ${String(ctStr).split(';')[0]} (HTTP ${res.statusCode})`, { statusCode: res.statusCode });
        }
      } else if (ok && !spec.allowEmpty && res.statusCode !== 204) {
        throw new GatewayError('BAD_RESPONSE', `${where}: empty reply (HTTP ${res.statusCode})`, { statusCode: res.statusCode });
      }
      if (parsed !== undefined && ok) {
        const secrets = this.replySecrets(authHeaders, spec);
        parsed = redactReply(parsed, text, secrets.secrets, secrets.escaped);
      }
      return { statusCode: res.statusCode, headers: res.headers as IncomingHttpHeaders, body: parsed };
    } catch (err) {
      if (err instanceof GatewayError) throw err;
      if (call.timedOut) throw call.reason as GatewayError;
      if (caller?.aborted) {
        const reason = caller.reason;
        throw reason instanceof GatewayError ? reason : new GatewayError('NETWORK', `${where}: aborted (${reason instanceof Error ? reason.message : 'node closed'})`);
      }
      const url = this.url(spec.path, spec.query);
      const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
      const code = e.code ?? e.cause?.code;
      const proxy = proxyFor(url);
      // Through a proxy, the error may be the proxy's: say so, and name it (no credentials).
      const via = proxy ? ` through the proxy ${proxy.host} (from ${proxy.variable}; check the proxy, or add ${url.hostname} to no_proxy)` : '';
      const rawText = `${e.message ?? ''} ${e.cause?.message ?? ''}`;
      if (url.protocol === 'https:' && PLAIN_HTTP_ON_TLS.test(`${code ?? ''} ${rawText}`)) {
        throw Object.assign(
          new GatewayError('NETWORK', `${where}: ${this.base.host} did not answer with TLS${via}: the base URL says https://, but the server there speaks plain HTTP (use its https port, or http:// for a loopback simulator)`, { cause: err }),
          { permanent: true },
        );
      }
      if (code && TLS_ERROR_CODES.test(code)) {
        // Not transient: retrying cannot help, and verification is never turned off for it.
        throw Object.assign(
          new GatewayError('NETWORK', `${where}: the TLS certificate of ${this.base.host} is not trusted (${code}); add its CA in a tls-config node selected in the config node`, { cause: err }),
          { permanent: true },
        );
      }
      const refused = refusedHint(code, this.base);
      const hint = proxy ? via : refused ? `; ${refused}` : ` (is ${this.base.host} reachable?)`;
      throw new GatewayError('NETWORK', `${where}: ${networkText(code, e.message)}${hint}`, { cause: err });
    } finally {
      this.unwatch(call);
      if (call.followed) call.followed.delete(call);
    }
  }

  /** Path and query of a request as sent (the last query-less path is kept: most calls repeat it). */
  private lastPath: string | undefined;
  private lastTarget = '';
  private target(path: string, query?: Query): string {
    let plain = true;
    if (query) for (const k in query) if (query[k] !== undefined && query[k] !== null) plain = false;
    if (plain && path === this.lastPath) return this.lastTarget;
    const url = this.url(path, query);
    const target = url.pathname + url.search;
    if (plain) {
      this.lastPath = path;
      this.lastTarget = target;
    }
    return target;
  }

  /** Starts a call's timeout: one timer for the client, armed for the earliest deadline. */
  private watch(call: CallAbort): void {
    call.deadline = Date.now() + this.options.timeoutMs;
    this.deadlines.add(call);
    this.deadlineTimer ??= setTimeout(this.sweep, this.options.timeoutMs);
  }

  private unwatch(call: CallAbort): void {
    this.deadlines.delete(call);
    if (this.deadlines.size === 0 && this.deadlineTimer) {
      clearTimeout(this.deadlineTimer);
      this.deadlineTimer = undefined;
    }
  }

  /** Times out every call past its deadline, then waits for the next one. */
  private readonly sweep = (): void => {
    this.deadlineTimer = undefined;
    const now = Date.now();
    for (const call of this.deadlines) {
      if (call.deadline > now) {
        this.deadlineTimer = setTimeout(this.sweep, call.deadline - now);
        return;
      }
      this.deadlines.delete(call);
      call.timedOut = true;
      call.abort(new GatewayError('TIMEOUT', `${call.where}: no complete reply within ${this.options.timeoutMs / 1000} s`));
    }
  };

  /** Makes `call` follow the caller's signal (one listener per signal, removed when it fires). */
  private follow(signal: AbortSignal, call: CallAbort): void {
    let calls = this.bySignal.get(signal);
    if (!calls) {
      const set = new Set<CallAbort>();
      calls = set;
      this.bySignal.set(signal, set);
      signal.addEventListener(
        'abort',
        () => {
          for (const c of set) c.abort(signal.reason);
          set.clear();
        },
        { once: true },
      );
    }
    calls.add(call);
    call.followed = calls;
  }

  /** The secrets a reply must not carry for these auth headers (kept while they stay the same). */
  private replySecrets(authHeaders: Record<string, string>, spec: RequestSpec): { secrets: string[]; escaped: string[] } {
    if (spec.form) {
      const secrets = replySecrets(authHeaders, spec);
      return { secrets, escaped: secrets.map((x) => JSON.stringify(x).slice(1, -1)) };
    }
    let key = '';
    for (const k in authHeaders) key += `${k}\n${authHeaders[k]}\n`;
    const c = this.secretCache;
    // The provider's own secrets() may change (a renewed token), so they are part of the key.
    const own = spec.auth?.secrets ? spec.auth.secrets() : [];
    for (const s of own) key += `\u0000${s}`;
    if (c && c.auth === spec.auth && c.key === key) return c;
    const secrets = replySecrets(authHeaders, spec);
    this.secretCache = { auth: spec.auth, key, secrets, escaped: secrets.map((x) => JSON.stringify(x).slice(1, -1)) };
    return this.secretCache;
  }

  private errorFor(res: ApiResponse, spec: RequestSpec, extra?: string, authHeaders: Record<string, string> = {}): GatewayError {
    const where = `${spec.method} ${spec.path}`;
    const server = serverErrorText(res.body, secretsOf(authHeaders, spec));
    const said = server ? `: ${server}` : '';
    const tail = extra ? ` (${extra})` : '';
    const s = res.statusCode;
    const opts = { statusCode: s };
    switch (s) {
      case 401:
        return new GatewayError('UNAUTHORIZED', `${where}: HTTP 401, authentication failed${said}. ${spec.auth?.hint ?? 'Check the credentials in the config node.'}`, opts);
      case 403:
        return new GatewayError('FORBIDDEN', `${where}: HTTP 403, the account is not allowed to do this${said}`, opts);
      case 404:
        return new GatewayError('NOT_FOUND', `${where}: HTTP 404, not found${said}`, opts);
      case 429:
      case 503:
        return new GatewayError('RATE_LIMITED', `${where}: HTTP ${s}, too many requests${said}${tail}; lower the rate or the rate-limit settings of the config node`, opts);
      default:
        return new GatewayError('HTTP_ERROR', `${where}: HTTP ${s}${said}${tail}`, opts);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    this.deadlineTimer = undefined;
    this.headersOk.clear();
    this.secretCache = undefined;
    this.concurrency.close();
    for (const l of this.limiters.values()) l.close();
    await this.dispatcher.destroy().catch(() => {});
  }

  get isClosed(): boolean {
    return this.closed;
  }
}

export { sleep };
