/**
 * Every failure of a call as a GatewayError with one of the contract's codes, in words a
 * user can act on: network errors (TLS, plain HTTP on an https URL, a proxy), a reply's
 * HTTP status with the server's own text (secrets cut out), a throttle given up on.
 * Messages name the method and the path, never the query or the headers.
 */
import { GatewayError, quote } from '../common/errors';
import { bodyProblem } from '../common/int64';
import type { CallAbort } from './deadlines';
import { proxyFor } from './proxy';
import { refusedHint } from './network-cause';
import { redactText, secretsOf } from './redact';
import type { ApiResponse, RequestSpec } from './types';

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
  const msg = quote((message ?? '').trim() || 'network error');
  const words = code ? NETWORK_WORDS[code] : undefined;
  if (!code) return msg;
  const detail = msg.includes(code) ? msg : `${code} ${msg}`;
  return words ? `${words} (${detail})` : detail;
}

/**
 * The server's own error text from the usual error bodies, never more than 300 chars.
 * `secrets` (the credentials the request carried) are cut out first: a server that quotes
 * the request in its error must not put a token into our error messages and logs.
 */
export function serverErrorText(body: unknown, secrets: string[] = []): string | undefined {
  const full = rawServerText(body);
  if (full === undefined) return undefined;
  // Cut out first, then bound: a secret cut in two would no longer be found.
  return quote(redactText(full, secrets));
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

/** The error for a reply that is not a success (ApiClient.errorFor before the split). */
export function errorFor(res: ApiResponse, spec: RequestSpec, extra?: string, authHeaders: Record<string, string> = {}): GatewayError {
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

/** The error when every attempt of a call was throttled (429, 503, or a 2xx "rate exceeded"). */
export function throttledGiveUp(res: ApiResponse, spec: RequestSpec, attempts: number, authHeaders: Record<string, string>): GatewayError {
  const status = res.statusCode;
  if (status >= 300) return errorFor(res, spec, `gave up after ${attempts} attempts`, authHeaders);
  const where = `${spec.method} ${spec.path}`;
  const errorId = (res.body as { ErrorID?: unknown } | null)?.ErrorID;
  return new GatewayError('RATE_LIMITED', `${where}: HTTP ${status} with a "rate exceeded" error${typeof errorId === 'number' ? ` (ErrorID ${errorId})` : ''}, gave up after ${attempts} attempts; lower the rate or the rate-limit settings of the config node`, {
    statusCode: status,
    errorId: typeof errorId === 'number' ? errorId : undefined,
  });
}

/** A request body that cannot be sent as JSON: bad input, before any slot, token or request. */
export function bodyNotJson(body: unknown, err: unknown): GatewayError {
  return new GatewayError('BAD_INPUT', `${bodyProblem(body) ?? `msg.payload: cannot be sent as JSON (${quote((err as Error)?.message ?? err)})`}; a request body must be plain JSON data`, { field: 'msg.payload' });
}

/** A call on a closed client. */
export function clientClosed(where: string): GatewayError {
  return new GatewayError('NETWORK', `${where}: not sent, the account's client was closed (redeploy or shutdown)`);
}

/** Any failure of an attempt as a GatewayError (what is not one yet is a NETWORK error). */
export function asGatewayError(err: unknown, where: string): GatewayError {
  return err instanceof GatewayError ? err : new GatewayError('NETWORK', `${where}: ${quote((err as Error)?.message ?? err)}`);
}

/** Was this a failure a retry may fix (a transient network error or timeout, not a permanent one)? */
export function isTransient(ge: GatewayError): boolean {
  return (ge.code === 'NETWORK' || ge.code === 'TIMEOUT') && !(ge as { permanent?: boolean }).permanent;
}

/**
 * What went wrong with one attempt that got no reply: its timeout, its caller's abort, or
 * a network error in words (TLS, plain HTTP on https, through a proxy). `url` is the call's
 * URL, `host` the base URL's host.
 */
export function callFailure(err: unknown, call: CallAbort, caller: AbortSignal | undefined, where: string, url: URL, host: string): GatewayError {
  if (err instanceof GatewayError) return err;
  if (call.timedOut) return call.reason as GatewayError;
  if (caller?.aborted) {
    const reason = caller.reason;
    return reason instanceof GatewayError ? reason : new GatewayError('NETWORK', `${where}: aborted (${reason instanceof Error ? quote(reason.message) : 'node closed'})`);
  }
  const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
  const code = e.code ?? e.cause?.code;
  const proxy = proxyFor(url);
  // Through a proxy, the error may be the proxy's: say so, and name it (no credentials).
  const via = proxy ? ` through the proxy ${proxy.host} (from ${proxy.variable}; check the proxy, or add ${url.hostname} to no_proxy)` : '';
  const rawText = `${e.message ?? ''} ${e.cause?.message ?? ''}`;
  if (url.protocol === 'https:' && PLAIN_HTTP_ON_TLS.test(`${code ?? ''} ${rawText}`)) {
    return Object.assign(
      new GatewayError('NETWORK', `${where}: ${host} did not answer with TLS${via}: the base URL says https://, but the server there speaks plain HTTP (use its https port, or http:// for a loopback simulator)`, { cause: err }),
      { permanent: true },
    );
  }
  if (code && TLS_ERROR_CODES.test(code)) {
    // Not transient: retrying cannot help, and verification is never turned off for it.
    return Object.assign(
      new GatewayError('NETWORK', `${where}: the TLS certificate of ${host} is not trusted (${code}); add its CA in a tls-config node selected in the config node`, { cause: err }),
      { permanent: true },
    );
  }
  const refused = refusedHint(code, url);
  const hint = proxy ? via : refused ? `; ${refused}` : ` (is ${host} reachable?)`;
  return new GatewayError('NETWORK', `${where}: ${networkText(code, e.message)}${hint}`, { cause: err });
}
