/**
 * Typed errors. Every failure a node reports is a GatewayError whose `code` is one of
 * the codes fixed in the public contract (shared/spec/nodes.md). `code` is an own
 * property, so Node-RED copies it to `msg.error.code` for Catch nodes.
 */
export const ERROR_CODES = [
  'BAD_INPUT',
  'UNAUTHORIZED',
  'FORBIDDEN',
  'NOT_FOUND',
  'RATE_LIMITED',
  'GATEWAY_ERROR',
  'HTTP_ERROR',
  'TIMEOUT',
  'NETWORK',
  'BAD_RESPONSE',
  'SHARED_STATE',
  'STORAGE',
  'EXPIRED',
  'OUTBOX_FULL',
  'INTERNAL',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

/** Short status texts (i18n keys under `errors.` in the gateway catalogue). */
export const STATUS_KEYS: Record<ErrorCode, string> = {
  BAD_INPUT: 'bad-input',
  UNAUTHORIZED: 'unauthorized',
  FORBIDDEN: 'forbidden',
  NOT_FOUND: 'not-found',
  RATE_LIMITED: 'rate-limited',
  GATEWAY_ERROR: 'gateway-error',
  HTTP_ERROR: 'http-error',
  TIMEOUT: 'timeout',
  NETWORK: 'network',
  BAD_RESPONSE: 'bad-response',
  SHARED_STATE: 'shared-state',
  STORAGE: 'storage',
  EXPIRED: 'expired',
  OUTBOX_FULL: 'outbox-full',
  INTERNAL: 'internal',
};

export interface GatewayErrorOptions {
  statusCode?: number;
  /** The gateway's ErrorID, for GATEWAY_ERROR. */
  errorId?: number;
  /** The name of `errorId` from the gateway's catalogue, when known. */
  errorName?: string;
  /** The field of the input that was refused, for BAD_INPUT. */
  field?: string;
  cause?: unknown;
}

/** How much of a foreign text (a reply body, a peer's error) an error message quotes. */
export const QUOTE_MAX = 300;
/** The most any error message holds, whatever it quotes (a last guard behind `quote`). */
export const MESSAGE_MAX = 2000;

/**
 * Foreign text (a reply body, a peer's or a library's error message) as an error message
 * quotes it: at most `max` characters, then "..." and the original length, so a 10 MB
 * reply never becomes a 10 MB message, log line or msg.error.
 */
export function quote(text: unknown, max = QUOTE_MAX): string {
  const s = typeof text === 'string' ? text : String(text);
  if (s.length <= max) return s;
  // Never split a surrogate pair: the cut stays valid UTF-16.
  const end = /[\uD800-\uDBFF]/.test(s.charAt(max - 1)) ? max - 1 : max;
  return `${s.slice(0, end)}... (${s.length} chars)`;
}

/** C0 and C1 controls, DEL, the line and paragraph separators and the bidi overrides. */
const CONTROL_CHARS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const SHORT_ESCAPES: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/**
 * Foreign text shown as a value (an ErrorID's name or description from the gateway's
 * catalogue): bounded as `quote` bounds it, then every control character written as an
 * escape (`\n`, `\r`, `\t`, `\u001b`), so no ESC sequence or line break reaches a log,
 * a status or a msg; at most 6 x `max` characters and the length note.
 */
export function foreignText(text: unknown, max = QUOTE_MAX): string {
  return quote(text, max).replace(CONTROL_CHARS, (c) => SHORT_ESCAPES[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly statusCode?: number;
  readonly errorId?: number;
  readonly errorName?: string;
  readonly field?: string;

  constructor(code: ErrorCode, message: string, opts: GatewayErrorOptions = {}) {
    super(quote(message, MESSAGE_MAX));
    // Node-RED shows `${name}: ${message}` in msg.error.message: the code reads best there.
    this.name = code;
    // Own, enumerable properties: Node-RED copies `code` into msg.error.code.
    this.code = code;
    if (opts.statusCode !== undefined) this.statusCode = opts.statusCode;
    if (opts.errorId !== undefined) this.errorId = opts.errorId;
    if (opts.errorName !== undefined) this.errorName = opts.errorName;
    if (opts.field !== undefined) this.field = opts.field;
    if (opts.cause !== undefined) Object.defineProperty(this, 'cause', { value: opts.cause, enumerable: false });
  }

  get statusKey(): string {
    return STATUS_KEYS[this.code];
  }
}

export function badInput(field: string, message: string): GatewayError {
  return new GatewayError('BAD_INPUT', `${field}: ${message}`, { field });
}

/**
 * Turns anything thrown into a GatewayError. The one mapping of unknown failures: what is
 * not already a GatewayError (the HTTP layer, the stores and the checks make their own) is
 * a defect of ours, `INTERNAL`, never `NETWORK`. Its message names the kind of failure
 * only (a RangeError, a TypeError), never the thrown text, which may hold a path or data.
 */
export function toGatewayError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  // An abort without a reason of ours (a bare AbortController): the work was cut short.
  if (err instanceof Error && err.name === 'AbortError') return new GatewayError('NETWORK', 'aborted before the work finished', { cause: err });
  const kind = err instanceof Error ? err.name || 'Error' : typeof err;
  const short = err instanceof Error && /^[\w .,:'"()-]{1,120}$/.test(err.message) && !/[\\/]/.test(err.message) ? `: ${err.message}` : '';
  return new GatewayError('INTERNAL', `an unexpected ${kind}${short} (a defect of the node, please report it with the node type)`, { cause: err });
}
