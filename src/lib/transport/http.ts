/**
 * The HTTP layer every node uses. One ApiClient per config node (per account): it owns
 * one undici dispatcher (keep-alive, proxy from the environment, TLS options from a
 * tls-config node), the account's auth, a rate limiter per throttle group and the
 * concurrency cap. It retries what is safe to retry and maps every failure to a
 * GatewayError with one of the contract's codes. No credential ever enters an error
 * message: messages name the method and the path, never the query or the headers.
 *
 * The parts of a call live beside it: types.ts (options, request, reply), urls.ts (base
 * URL, path segments, header values), retry.ts (Retry-After, backoff), deadlines.ts
 * (timeouts, the caller's signal), reply.ts (reading and parsing a reply), redact.ts
 * (secrets out of replies) and failures.ts (errors in words). Every name they export
 * that this file exported before is exported here too.
 */
import type { Dispatcher } from 'undici';
import { GatewayError } from '../common/errors';
import { MAX_JSON_DEPTH, bodyProblem, jsonTooDeep, stringifyJson } from '../common/int64';
import { BasePathWatch } from './network-cause';
import { CallAbort, CallDeadlines } from './deadlines';
import { asGatewayError, bodyNotJson, callFailure, clientClosed, errorFor, isTransient, throttledGiveUp } from './failures';
import { Semaphore, SlidingWindowLimiter } from './limiter';
import { GatewayDispatcher, isLoopbackHost } from './proxy';
import { ReplySecretCache, redactReply } from './redact';
import { WholeReplyHandler, parseReply, type WholeReply } from './reply';
import { backoff, parseRetryAfter, rateLimitWait, sleep } from './retry';
import type { ApiResponse, AuthProvider, ClientOptions, ClientStats, HeldCall, Query, RequestSpec } from './types';
import { HeaderCheck, checkBaseUrl } from './urls';
import { reportedAcquire } from './wait-status';

export { isLoopbackHost, sleep };
export type { ApiResponse, AuthProvider, ClientOptions, ClientStats, GroupLimit, HeldCall, Query, RequestClient, RequestSpec, TlsOptions } from './types';
export { checkBaseUrl, pathSegment } from './urls';
export { MAX_WAIT_WITHOUT_WINDOW_MS, parseRetryAfter, rateLimitWait } from './retry';
export { REDACTED, redactReply, redactText } from './redact';
export { networkText, serverErrorText } from './failures';

/** The connect options of a client's dispatcher from its TLS options. */
function connectOptions(tls: ClientOptions['tls']): Record<string, unknown> {
  const connect: Record<string, unknown> = {};
  if (!tls) return connect;
  for (const k of ['ca', 'cert', 'key', 'passphrase', 'servername'] as const) {
    if (tls[k] !== undefined) connect[k] = tls[k];
  }
  // Verification stays on unless a tls-config node explicitly turned it off
  // (the config node warns loudly about that).
  if (tls.rejectUnauthorized === false) connect.rejectUnauthorized = false;
  return connect;
}

/** Releases a rate slot, then a concurrency slot, once (a HeldCall's release). */
function releaseOnce(rate: (() => void) | undefined, conc: () => void): () => void {
  let released = false;
  return () => {
    if (released) return;
    released = true;
    rate?.();
    conc();
  };
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
  /** The timeouts and the callers' signals of the calls in flight. */
  private readonly deadlines: CallDeadlines;
  private readonly secretCache = new ReplySecretCache();
  /** The header values that passed the CR/LF/NUL check. */
  private readonly headersOk = new HeaderCheck();
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
    this.deadlines = new CallDeadlines(this.options.timeoutMs);
    const connect = connectOptions(opts.tls);
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
    if (lim?.enabled && typeof lim.tryAcquire !== 'function') return { headers, release: await this.acquireShared(group, lim, signal) };
    let conc: () => void;
    let rate: (() => void) | undefined;
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
    return { headers, release: releaseOnce(rate, conc) };
  }

  /**
   * A shared (Redis) gate counts the window across instances and cannot be peeked at: the
   * group's rate slot first, then a concurrency slot. Never the other way round: a
   * concurrency slot held while its call waits seconds for a window (its own group's or,
   * worse, another's: a status poller's GET) leaves the fleet's other calls without one
   * when their window opens (issue 35: bench:fleet lost 0.7 s a run to it). A rate slot
   * held while waiting for a concurrency slot waits one call's time at most, and it counts
   * from its call's completion anyway (never early).
   */
  private async acquireShared(group: string | undefined, lim: SlidingWindowLimiter, signal: AbortSignal | undefined): Promise<() => void> {
    const rate = await reportedAcquire(group ?? this.options.defaultGroup ?? '', lim, signal);
    let conc: () => void;
    try {
      conc = await this.concurrency.acquire(signal);
    } catch (err) {
      rate();
      throw err;
    }
    return releaseOnce(rate, conc);
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
   * Each attempt: take the slots, send, free the slots; then a 401 renews the token once,
   * a throttle and (when idempotent) a failure or 5xx wait and go again, anything else ends.
   */
  request(spec: RequestSpec, held?: HeldCall): Promise<ApiResponse> {
    const run = this.run(spec, held);
    const observer = this.options.observer;
    return observer
      ? run.catch((err: unknown) => {
          observer.failed(err);
          throw err;
        })
      : run;
  }

  private async run(spec: RequestSpec, held?: HeldCall): Promise<ApiResponse> {
    const where = `${spec.method} ${spec.path}`;
    const bodyText = this.serialise(spec, held);
    let attempt = 0;
    let renewedAuth = false;
    let slot = held;
    for (;;) {
      this.refuseIfClosed(where, slot);
      let call = slot;
      slot = undefined;
      let res: ApiResponse;
      try {
        call ??= await this.acquireCall(spec.group, spec.signal, spec.auth);
        res = await this.send(spec, call.headers, bodyText);
      } catch (err) {
        call?.release();
        const ge = asGatewayError(err, where);
        if (!this.mayRetryFailure(ge, spec, attempt)) throw ge;
        await this.pause(this.backoff(++attempt), spec.signal);
        continue;
      }
      call.release();
      const authHeaders = call.headers;
      if (!renewedAuth && this.renewsAuth(res, spec, authHeaders)) {
        renewedAuth = true;
        continue;
      }
      if (this.isThrottled(res, spec)) {
        const wait = this.throttleWait(res, spec, attempt);
        // A 503 may come from a proxy after the gateway did the work: a POST is not sent again.
        if (res.statusCode === 503 && !spec.idempotent) throw this.firstReplies.annotate(errorFor(res, spec, 'not sent again: a 503 can come after the gateway did the work; check before sending it again', authHeaders));
        if (attempt >= this.options.maxRetries) throw throttledGiveUp(res, spec, attempt + 1, authHeaders);
        attempt++;
        await this.pause(wait, spec.signal);
        continue;
      }
      if (res.statusCode >= 500 && spec.idempotent && attempt < this.options.maxRetries) {
        await this.pause(this.backoff(++attempt), spec.signal);
        continue;
      }
      if (res.statusCode < 200 || res.statusCode >= 300) throw this.firstReplies.annotate(errorFor(res, spec, undefined, authHeaders));
      this.firstReplies.ok();
      return res;
    }
  }

  /** The JSON body as text, once, before any slot, token or request: a body that cannot be JSON is bad input. */
  private serialise(spec: RequestSpec, held: HeldCall | undefined): string | undefined {
    if (spec.form || spec.body === undefined) return undefined;
    let text: string;
    try {
      text = stringifyJson(spec.body);
    } catch (err) {
      held?.release();
      throw bodyNotJson(spec.body, err);
    }
    // Nested deeper than any reply may be: no real body comes near it (one indexOf pass).
    if (jsonTooDeep(text, MAX_JSON_DEPTH)) {
      held?.release();
      throw new GatewayError('BAD_INPUT', `${bodyProblem(spec.body, 'msg.payload', MAX_JSON_DEPTH) ?? `msg.payload: nested deeper than ${MAX_JSON_DEPTH} levels`}; a request body must be plain JSON data`, { field: 'msg.payload' });
    }
    return text;
  }

  private refuseIfClosed(where: string, slot: HeldCall | undefined): void {
    if (!this.closed) return;
    slot?.release();
    throw clientClosed(where);
  }

  /** May an attempt that got no reply go again (transient, idempotent, retries left, not aborted)? */
  private mayRetryFailure(ge: GatewayError, spec: RequestSpec, attempt: number): boolean {
    return isTransient(ge) && Boolean(spec.idempotent) && attempt < this.options.maxRetries && !spec.signal?.aborted && !this.closed;
  }

  /** A 401 the auth provider can fix by renewing its token (asked once per request). */
  private renewsAuth(res: ApiResponse, spec: RequestSpec, authHeaders: Record<string, string>): boolean {
    return res.statusCode === 401 && spec.auth?.renew !== undefined && spec.auth.renew(authHeaders);
  }

  /** 429, 503 and a 2xx "rate exceeded" pace the group alike; only a 429 and the 2xx say nothing was done
   *  (real-services.md): a 503 may come after the work, so only an idempotent request goes again on it. */
  private isThrottled(res: ApiResponse, spec: RequestSpec): boolean {
    const status = res.statusCode;
    return status === 429 || status === 503 || (status >= 200 && status < 300 && (spec.throttled ?? this.options.throttled)?.(res) === true);
  }

  /**
   * Counts a throttle, tells the group's limiter and returns how long to wait before the next
   * attempt: 0 when our own pacing is on (the limiter holds the next call back), else
   * Retry-After when given, else the group's window (known even when our own pacing is off),
   * else exponential backoff; bounded by what the window justifies.
   */
  private throttleWait(res: ApiResponse, spec: RequestSpec, attempt: number): number {
    this.stats.rateLimited++;
    this.options.observer?.throttled(spec.group ?? this.options.defaultGroup ?? '');
    const lim = this.limiter(spec.group);
    const retryAfter = parseRetryAfter(res.headers['retry-after'], Date.now());
    const wait = rateLimitWait(retryAfter, lim?.window, this.backoff(attempt + 1), this.options.maxRetryWaitMs);
    // The group (every node of the account) waits at most one window, which frees every
    // slot; a longer Retry-After delays only this call and its retries.
    const groupWait = lim?.enabled && lim.window > 0 ? Math.min(wait, lim.window) : wait;
    lim?.penalize(groupWait);
    return lim?.enabled && wait <= groupWait ? 0 : wait;
  }

  /** Counts a retry and waits before it. */
  private pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
    this.stats.retries++;
    return sleep(ms, signal);
  }

  private backoff(attempt: number): number {
    return backoff(attempt, this.options.backoffBaseMs, this.options.maxRetryWaitMs);
  }

  /** One attempt (its slots held by the caller): timeout, size cap, JSON parse. */
  private async send(spec: RequestSpec, authHeaders: Record<string, string>, bodyText?: string): Promise<ApiResponse> {
    const where = `${spec.method} ${spec.path}`;
    const headers = this.headersFor(spec, authHeaders);
    const body = spec.form ? new URLSearchParams(spec.form).toString() : spec.body !== undefined ? (bodyText ?? stringifyJson(spec.body)) : undefined;
    const target = this.target(spec.path, spec.query);
    // One handle aborts the call on timeout or when the caller's signal aborts; the timeout
    // is one timer per client (deadlines in order), the caller's signal one listener per signal.
    const call = new CallAbort(where);
    this.deadlines.start(call, spec.signal);
    this.stats.requests++;
    try {
      const res = await this.dispatch(spec, target, headers, body, call);
      let parsed = parseReply(res, where, spec.allowEmpty);
      if (parsed !== undefined && res.statusCode >= 200 && res.statusCode < 300) {
        const secrets = this.secretCache.for(authHeaders, spec);
        parsed = redactReply(parsed, res.text, secrets.secrets, secrets.escaped);
      }
      return { statusCode: res.statusCode, headers: res.headers, body: parsed };
    } catch (err) {
      throw callFailure(err, call, spec.signal, where, this.url(spec.path, spec.query), this.base.host);
    } finally {
      this.deadlines.end(call);
    }
  }

  /** The headers of one attempt, checked (no CR, LF or NUL), with the content type of its body. */
  private headersFor(spec: RequestSpec, authHeaders: Record<string, string>): Record<string, string> {
    const headers: Record<string, string> = { accept: 'application/json', ...spec.headers, ...authHeaders };
    this.headersOk.check(headers);
    if (spec.form) headers['content-type'] = 'application/x-www-form-urlencoded';
    else if (spec.body !== undefined || (spec.method !== 'GET' && spec.method !== 'DELETE')) headers['content-type'] = 'application/json';
    return headers;
  }

  /** Hands one attempt to the dispatcher and reads its reply whole. */
  private dispatch(spec: RequestSpec, target: string, headers: Record<string, string>, body: string | undefined, call: CallAbort): Promise<WholeReply> {
    return new Promise<WholeReply>((resolve, reject) => {
      if (call.aborted) return reject(call.reason);
      this.dispatcher.dispatch(
        { origin: this.originUrl, path: target, method: spec.method, headers, body },
        new WholeReplyHandler(call, this.options.maxResponseBytes, call.where, resolve, reject) as unknown as Dispatcher.DispatchHandler,
      );
    });
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

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.deadlines.close();
    this.headersOk.clear();
    this.secretCache.clear();
    this.concurrency.close();
    for (const l of this.limiters.values()) l.close();
    await this.dispatcher.destroy().catch(() => {});
  }

  get isClosed(): boolean {
    return this.closed;
  }
}
