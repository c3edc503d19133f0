/**
 * Reading a reply: whole, through undici's dispatch interface, under a size cap; its
 * headers as undici's request() gives them; and its body parsed as exact JSON when the
 * content type says JSON (a 2xx that is not JSON, or is empty, is a BAD_RESPONSE).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { GatewayError } from '../common/errors';
import { JsonDepthError, parseJson } from '../common/int64';
import type { CallAbort } from './deadlines';

/** A reply read whole: status, headers (as undici's request() gives them) and the body as text. */
export interface WholeReply {
  statusCode: number;
  headers: IncomingHttpHeaders;
  text: string;
}

/** Header values as undici's request() gives them: names lower-cased, repeated ones in an array. */
export function parseHeaders(raw: Array<Buffer | string>): IncomingHttpHeaders {
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

/** Content-Length as a number when it is one plain decimal value, else undefined. */
export function contentLength(v: string | string[] | undefined): number | undefined {
  if (typeof v !== 'string' || v.length === 0 || v.length > 15) return undefined;
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c < 48 || c > 57) return undefined;
  }
  return Number(v);
}

let lastCt: string | undefined;
let lastCtJson = false;
export function isJsonType(ct: string | undefined): boolean {
  if (!ct) return true; // no content type: try to parse
  // A server sends the same content type every time: the last answer is kept.
  if (ct === lastCt) return lastCtJson;
  const t = ct.split(';')[0]!.trim().toLowerCase();
  lastCtJson = t === 'application/json' || t === 'text/json' || t.endsWith('+json');
  lastCt = ct;
  return lastCtJson;
}

/**
 * The body of a reply read whole, parsed: undefined when it is empty or (for a non-2xx) not
 * JSON. A 2xx must be JSON (exact integers, bounded depth) and not empty unless allowed.
 */
export function parseReply(res: WholeReply, where: string, allowEmpty: boolean | undefined): unknown {
  const text = res.text;
  const ct = res.headers['content-type'];
  const ctStr = Array.isArray(ct) ? ct[0] : ct;
  const ok = res.statusCode >= 200 && res.statusCode < 300;
  if (!(text.length > 0 && text.trim().length > 0)) {
    if (ok && !allowEmpty && res.statusCode !== 204) {
      throw new GatewayError('BAD_RESPONSE', `${where}: empty reply (HTTP ${res.statusCode})`, { statusCode: res.statusCode });
    }
    return undefined;
  }
  if (!isJsonType(ctStr)) {
    if (ok) throw new GatewayError('BAD_RESPONSE', `${where}: expected JSON, got ${String(ctStr).split(';')[0]} (HTTP ${res.statusCode})`, { statusCode: res.statusCode });
    return undefined;
  }
  try {
    return parseJson(text);
  } catch (err) {
    if (ok && err instanceof JsonDepthError) {
      throw new GatewayError('BAD_RESPONSE', `${where}: the reply is ${err.message} (HTTP ${res.statusCode}, ${text.length} bytes); refused`, { statusCode: res.statusCode });
    }
    if (ok) throw new GatewayError('BAD_RESPONSE', `${where}: the reply is not valid JSON (HTTP ${res.statusCode}, ${text.length} bytes)`, { statusCode: res.statusCode });
    return undefined;
  }
}

/**
 * One call's reply, read whole through undici's dispatch interface: no response stream,
 * no async iterator, no AbortSignal. The size cap is checked on the declared length and
 * on every chunk; the call's abort handle (timeout, caller's signal) aborts the request.
 */
export class WholeReplyHandler {
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

  /** Refuses the reply as too large: fails the call and aborts the request. */
  private refuse(): false {
    const err = this.tooLarge();
    this.fail(err);
    this.abortRequest?.(err);
    return false;
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
    if (declared !== undefined && declared > this.max) return this.refuse();
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.settled) return false;
    this.size += chunk.length;
    if (this.size > this.max) return this.refuse();
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
