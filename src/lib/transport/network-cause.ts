/**
 * First contact (issue 26): what a new user meets before the first call succeeds, each
 * answered with what to do.
 * - `networkCause`: the cause of a network failure in a word or two (refused, DNS, TLS,
 *   timeout, reset), for the node status instead of "network error".
 * - `refusedHint`: a refused connection to a loopback address is almost always a simulator
 *   that is not running: say so, with the command that starts it.
 * - `localhostTypo`: `http://locahost:1911` is a typo of localhost, not a host that needs https.
 * - `BasePathWatch`: an account whose calls all answer 404 has a base URL without its path.
 * Only words here: ApiClient (http.ts) and the node status (node-kit.ts) call these.
 */
import { GatewayError } from '../common/errors';
import { isLoopbackHost } from './proxy';

/** Network causes the status names (keys `errors.network-<cause>` in the gateway catalogue). */
export type NetworkCause = 'refused' | 'refused-loopback' | 'dns' | 'tls' | 'timeout' | 'reset' | 'unreachable' | 'closed';

const CAUSE_BY_CODE: Record<string, NetworkCause> = {
  ECONNREFUSED: 'refused',
  ENOTFOUND: 'dns',
  EAI_AGAIN: 'dns',
  EAI_FAIL: 'dns',
  EAI_NONAME: 'dns',
  ETIMEDOUT: 'timeout',
  UND_ERR_CONNECT_TIMEOUT: 'timeout',
  UND_ERR_HEADERS_TIMEOUT: 'timeout',
  UND_ERR_BODY_TIMEOUT: 'timeout',
  ECONNRESET: 'reset',
  EPIPE: 'reset',
  EHOSTUNREACH: 'unreachable',
  ENETUNREACH: 'unreachable',
  EHOSTDOWN: 'unreachable',
  UND_ERR_SOCKET: 'closed',
  UND_ERR_CLOSED: 'closed',
};

const TLS_CODE = /CERT|SELF_SIGNED|UNABLE_TO_(VERIFY|GET)|ERR_TLS|DEPTH_ZERO|ERR_SSL|WRONG_VERSION_NUMBER|PACKET_LENGTH_TOO_LONG/;
const TLS_TEXT = /wrong version number|packet length too long|did not answer with TLS|TLS certificate|ssl3?_|tlsv1 alert/i;

interface Coded {
  code?: unknown;
  address?: unknown;
  message?: unknown;
  cause?: unknown;
}

/** The error codes along an error's cause chain (the GatewayError's own code excluded), nearest first. */
function codesOf(err: unknown): { codes: string[]; text: string; address?: string } {
  const codes: string[] = [];
  let text = '';
  let address: string | undefined;
  let e: unknown = err instanceof GatewayError ? (err as { cause?: unknown }).cause : err;
  for (let depth = 0; e && typeof e === 'object' && depth < 5; depth++) {
    const c = e as Coded;
    if (typeof c.code === 'string') codes.push(c.code);
    if (typeof c.message === 'string') text += ` ${c.message}`;
    if (address === undefined && typeof c.address === 'string') address = c.address;
    e = c.cause;
  }
  return { codes, text, ...(address !== undefined ? { address } : {}) };
}

/**
 * The cause of a NETWORK or TIMEOUT error in a word, or undefined for any other error (and
 * for a network error whose cause is not known: the status then says "network error").
 */
export function networkCause(err: GatewayError): NetworkCause | undefined {
  if (err.code === 'TIMEOUT') return 'timeout';
  if (err.code !== 'NETWORK') return undefined;
  const { codes, text, address } = codesOf(err);
  if (codes.some((c) => TLS_CODE.test(c)) || TLS_TEXT.test(`${err.message} ${text}`)) return 'tls';
  for (const c of codes) {
    const cause = CAUSE_BY_CODE[c];
    if (cause === 'refused') return address !== undefined && isLoopbackHost(address) ? 'refused-loopback' : 'refused';
    if (cause) return cause;
  }
  return undefined;
}

/** The error code of a failed connection, as ApiClient reads it (`code`, else the cause's). */
function isRefused(code: string | undefined): boolean {
  return code === 'ECONNREFUSED';
}

/**
 * What to say after a refused connection to `base`: for a loopback address, that nothing
 * listens there and how the simulator is started on that port; undefined otherwise.
 */
export function refusedHint(code: string | undefined, base: URL): string | undefined {
  if (!isRefused(code) || !isLoopbackHost(base.hostname.replace(/^\[|\]$/g, ''))) return undefined;
  const port = base.port || (base.protocol === 'https:' ? '443' : '80');
  const host = base.hostname.includes(':') && !base.hostname.startsWith('[') ? `[${base.hostname}]` : base.hostname;
  return `nothing listens at ${host}:${port}: is the simulator running? (\`npx iotgw-simulator --port ${port}\`)`;
}

/** Edit distance of two short strings (Levenshtein; transpositions count as two). */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return row[b.length]!;
}

/** Does `hostname` look like a typo of localhost (one or two edits away, and not localhost itself)? */
export function localhostTypo(hostname: string): boolean {
  const h = hostname.toLowerCase();
  if (h === 'localhost' || h.includes('.') || h.includes(':')) return false;
  const d = distance(h, 'localhost');
  return d >= 1 && d <= 2;
}

/** The refusal of `http://<typo of localhost>`: names the typo and the address it likely meant. */
export function localhostTypoText(field: string, url: URL): string {
  const meant = new URL(url.href);
  meant.hostname = 'localhost';
  return `${field}: "${url.hostname}" looks like a typo of localhost; did you mean ${meant.href.replace(/\/$/, '')}? (http:// is allowed only for loopback addresses; any other host needs https://)`;
}

/**
 * Watches an account's first replies: while no call has succeeded, a 404 says "check the
 * path of the base URL" too (an application API base URL pasted without its path answers
 * 404 on every endpoint). One success ends the watch for the client's lifetime.
 */
export class BasePathWatch {
  private succeeded = false;
  private notFound = 0;
  constructor(private readonly base: URL) {}

  /** A 2xx reply: the base URL is right. */
  ok(): void {
    this.succeeded = true;
  }

  /** Adds the hint to a NOT_FOUND error while nothing has succeeded yet; other errors pass as they are. */
  annotate(err: GatewayError): GatewayError {
    if (this.succeeded || err.code !== 'NOT_FOUND') return err;
    this.notFound++;
    const path = this.base.pathname.replace(/\/+$/, '') || '/';
    const hint =
      this.notFound === 1
        ? `; no call of this account has succeeded yet: if every call answers 404, the base URL ${this.base.origin}${path === '/' ? '' : path} may lack its path (the API's prefix, such as /api)`
        : `; the first ${this.notFound} calls of this account all answered 404: check the path of the base URL ${this.base.origin}${path === '/' ? '' : path} (the API's prefix, such as /api)`;
    return new GatewayError(err.code, `${err.message}${hint}`, { ...(err.statusCode !== undefined ? { statusCode: err.statusCode } : {}) });
  }
}
