/**
 * The HTTP layer every node uses. One ApiClient per config node (per account): it owns
 * one undici dispatcher (keep-alive, proxy from the environment, TLS options from a
 * tls-config node), the account's auth, a rate limiter per throttle group and the
 * concurrency cap. It retries what is safe to retry and maps every failure to a
 * GatewayError with one of the contract's codes. No credential ever enters an error
 * message: messages name the method and the path, never the query or the headers.
 */
import { EnvHttpProxyAgent, type Dispatcher } from 'undici';
import type { IncomingHttpHeaders } from 'node:http';
import { GatewayError } from './errors';
import { Semaphore, SlidingWindowLimiter } from './limiter';
import { parseJson, stringifyJson } from './int64';

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

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '::1', '[::1]']);

export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.toLowerCase();
  return LOOPBACK_HOSTS.has(h) || /^127(\.\d{1,3}){3}$/.test(h) || h.endsWith('.localhost');
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

function parseRetryAfter(value: string | string[] | undefined, now: number): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (!v) return undefined;
  if (/^\d+(\.\d+)?$/.test(v.trim())) return Math.round(Number(v) * 1000);
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : Math.max(0, t - now);
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
  let text = full;
  for (const s of secrets) if (s.length >= 4) text = text.split(s).join('[credential]');
  return text.length > 300 ? `${text.slice(0, 297)}...` : text;
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

function isJsonType(ct: string | undefined): boolean {
  if (!ct) return true; // no content type: try to parse
  const t = ct.split(';')[0]!.trim().toLowerCase();
  return t === 'application/json' || t === 'text/json' || t.endsWith('+json');
}

export class ApiClient {
  readonly options: Required<Omit<ClientOptions, 'tls' | 'groups' | 'defaultGroup'>> &
    Pick<ClientOptions, 'tls' | 'groups' | 'defaultGroup'>;
  readonly base: URL;
  readonly stats: ClientStats = { requests: 0, retries: 0, rateLimited: 0, tokenFetches: 0 };
  private readonly dispatcher: Dispatcher;
  private readonly limiters = new Map<string, SlidingWindowLimiter>();
  private readonly concurrency: Semaphore;
  private closed = false;

  constructor(opts: ClientOptions) {
    this.base = checkBaseUrl(opts.baseUrl);
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
    this.dispatcher = new EnvHttpProxyAgent({
      keepAliveTimeout: 30_000,
      keepAliveMaxTimeout: 600_000,
      connections: Math.max(1, opts.maxConcurrent || 8),
      connect,
      requestTls: connect,
    } as ConstructorParameters<typeof EnvHttpProxyAgent>[0]);
    this.concurrency = new Semaphore(opts.maxConcurrent, this.options.maxQueue, `${opts.label}: concurrency`);
    for (const [name, g] of Object.entries(opts.groups ?? {})) {
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
    return lim ? lim.acquire(signal) : Promise.resolve(() => {});
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
    for (;;) {
      if (lim?.enabled) await lim.ready(signal);
      conc = await this.concurrency.acquire(signal);
      if (!lim?.enabled) break;
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
    const basePath = this.base.pathname.replace(/\/+$/, '');
    const url = new URL(this.base.origin + basePath + (path.startsWith('/') ? path : `/${path}`));
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
  async request(spec: RequestSpec, held?: HeldCall): Promise<ApiResponse> {
    const where = `${spec.method} ${spec.path}`;
    const maxRetries = this.options.maxRetries;
    let attempt = 0;
    let renewedAuth = false;
    let slot = held;
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
        res = await this.send(spec, authHeaders);
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
      if (status === 429 || status === 503) {
        this.stats.rateLimited++;
        const retryAfter = parseRetryAfter(res.headers['retry-after'], Date.now());
        // Retry-After when given, else wait out the group's window (known even when our own
        // pacing is off), else back off exponentially.
        const wait = Math.min(this.options.maxRetryWaitMs, retryAfter ?? (lim && lim.window > 0 ? lim.window : this.backoff(attempt + 1)));
        lim?.penalize(wait);
        if (attempt < maxRetries) {
          attempt++;
          this.stats.retries++;
          await sleep(lim?.enabled ? 0 : wait, spec.signal);
          continue;
        }
        throw this.errorFor(res, spec, `gave up after ${attempt + 1} attempts`, authHeaders);
      }
      if (status >= 500 && spec.idempotent && attempt < maxRetries) {
        attempt++;
        this.stats.retries++;
        await sleep(this.backoff(attempt), spec.signal);
        continue;
      }
      if (status < 200 || status >= 300) throw this.errorFor(res, spec, undefined, authHeaders);
      return res;
    }
  }

  private backoff(attempt: number): number {
    const base = this.options.backoffBaseMs * 2 ** (attempt - 1);
    return Math.min(this.options.maxRetryWaitMs, Math.round(base * (0.75 + Math.random() * 0.5)));
  }

  /** One attempt (its slots held by the caller): timeout, size cap, JSON parse. */
  private async send(spec: RequestSpec, authHeaders: Record<string, string>): Promise<ApiResponse> {
    const where = `${spec.method} ${spec.path}`;
    const headers: Record<string, string> = { accept: 'application/json', ...spec.headers, ...authHeaders };
    for (const [k, v] of Object.entries(headers)) {
      if (!headerValueOk(v)) throw new GatewayError('BAD_INPUT', `header ${k}: must not contain CR, LF or NUL`, { field: k });
    }
    let body: string | undefined;
    if (spec.form) {
      body = new URLSearchParams(spec.form).toString();
      headers['content-type'] = 'application/x-www-form-urlencoded';
    } else if (spec.body !== undefined) {
      body = stringifyJson(spec.body);
      headers['content-type'] = 'application/json';
    } else if (spec.method !== 'GET' && spec.method !== 'DELETE') {
      headers['content-type'] = 'application/json';
    }
    const url = this.url(spec.path, spec.query);
    // One controller aborts the call on timeout or when the caller's signal aborts
    // (cheaper than AbortSignal.any per call, and it leaves no listener behind).
    const timeout = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      timeout.abort(new GatewayError('TIMEOUT', `${where}: no complete reply within ${this.options.timeoutMs / 1000} s`));
    }, this.options.timeoutMs);
    const onCallerAbort = () => timeout.abort(spec.signal!.reason);
    if (spec.signal?.aborted) timeout.abort(spec.signal.reason);
    else spec.signal?.addEventListener('abort', onCallerAbort, { once: true });
    const signal = timeout.signal;
    this.stats.requests++;
    try {
      const res = await this.dispatcher.request({
        origin: url.origin,
        path: url.pathname + url.search,
        method: spec.method,
        headers,
        body,
        signal,
      });
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of res.body) {
        size += (chunk as Buffer).length;
        if (size > this.options.maxResponseBytes) {
          res.body.destroy();
          throw new GatewayError('BAD_RESPONSE', `${where}: reply larger than ${this.options.maxResponseBytes} bytes; refused`, { statusCode: res.statusCode });
        }
        chunks.push(chunk as Buffer);
      }
      const text = Buffer.concat(chunks).toString('utf8');
      const ct = res.headers['content-type'];
      const ctStr = Array.isArray(ct) ? ct[0] : ct;
      let parsed: unknown = undefined;
      const ok = res.statusCode >= 200 && res.statusCode < 300;
      if (text.trim().length > 0) {
        if (isJsonType(ctStr)) {
          try {
            parsed = parseJson(text);
          } catch {
            if (ok) throw new GatewayError('BAD_RESPONSE', `${where}: the reply is not valid JSON (HTTP ${res.statusCode}, ${text.length} bytes)`, { statusCode: res.statusCode });
            parsed = undefined;
          }
        } else if (ok) {
          throw new GatewayError('BAD_RESPONSE', `${where}: expected JSON, got ${String(ctStr).split(';')[0]} (HTTP ${res.statusCode})`, { statusCode: res.statusCode });
        }
      } else if (ok && !spec.allowEmpty && res.statusCode !== 204) {
        throw new GatewayError('BAD_RESPONSE', `${where}: empty reply (HTTP ${res.statusCode})`, { statusCode: res.statusCode });
      }
      return { statusCode: res.statusCode, headers: res.headers as IncomingHttpHeaders, body: parsed };
    } catch (err) {
      if (err instanceof GatewayError) throw err;
      if (timedOut) throw timeout.signal.reason as GatewayError;
      if (spec.signal?.aborted) {
        const reason = spec.signal.reason;
        throw reason instanceof GatewayError ? reason : new GatewayError('NETWORK', `${where}: aborted (${reason instanceof Error ? reason.message : 'node closed'})`);
      }
      const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
      const code = e.code ?? e.cause?.code;
      if (code && TLS_ERROR_CODES.test(code)) {
        // Not transient: retrying cannot help, and verification is never turned off for it.
        throw Object.assign(
          new GatewayError('NETWORK', `${where}: the TLS certificate of ${this.base.host} is not trusted (${code}); add its CA in a tls-config node selected in the config node`, { cause: err }),
          { permanent: true },
        );
      }
      throw new GatewayError('NETWORK', `${where}: ${code ? `${code} ` : ''}${e.message ?? 'network error'} (is ${this.base.host} reachable?)`, { cause: err });
    } finally {
      clearTimeout(timer);
      spec.signal?.removeEventListener('abort', onCallerAbort);
    }
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
    this.concurrency.close();
    for (const l of this.limiters.values()) l.close();
    await this.dispatcher.destroy().catch(() => {});
  }

  get isClosed(): boolean {
    return this.closed;
  }
}

export { sleep };
