/**
 * The outbox's sender over an account of the terminals' API (issue 45): one batch, one call,
 * through the same request functions the nodes use without an outbox (postMessages,
 * postToMultiple, postModes, postCancellations), so the account's SEND budget paces every
 * call (the limiter holds a call back: never a 429 on purpose) and its token is renewed as
 * usual. The transport never sends a POST again by itself (`idempotent: false`: a network
 * failure or a 503 ends the request), so each send is exactly one attempt of the outbox's.
 *
 * What a failure means for the entries (`outcomeOfError`):
 * - refused before anything left (connection refused, DNS, unreachable, TLS): `retry`;
 * - the request may have left (reset, socket closed, timeout, an unreadable reply, a 5xx
 *   other than 503): `unknown`, reconciled with the gateway's records before any resend;
 * - 429 and 503 (the gateway's own throttles: real-services.md, "over a limit"), a
 *   throttling ErrorID, 401 and 403: `retry` (401/403 also call `onAuth`: status red, one warning);
 * - a call refused as such (other 4xx, a top-level ErrorID, BAD_INPUT): `failed`;
 * - a per-entry ErrorID: `rejected`, with the catalogue's name.
 *
 * `gatewayTime()`: the gateway's clock just before a send, for the reconciliation's feed
 * read. `ServerUTC` of info/service (one INFO call) gives the offset of the gateway's clock
 * from ours, taken against our clock when the reply came: the gateway read its clock at some
 * moment of the call, never after the reply, so the offset errs early however long the call
 * took (taken against the call's start, a call held 8 s by a 429's retries or a busy link made
 * the gateway's clock look 8 s ahead, and the feed read after a lost reply began after the
 * message's creation: it was sent again, issue 45's chaos run). The offset is kept ten minutes
 * when the call took at most 2 s; one from a slower call (it errs early by up to the call's
 * time) a minute, so a busy moment's estimate is soon replaced, at one INFO call a minute on a
 * link that is always slow. The time given is ours plus that offset, less one second (ServerUTC has one-second resolution).
 * When info/service answers without a usable ServerUTC the local clock is used (the
 * reconciliation allows a few seconds of skew); when the link is down the call fails and the
 * batch waits, nothing recorded.
 *
 * Items are kept JSON-safe: a bigint (UserMessageID, a cancel's message ID, an int64
 * field value) is stored as `{"$int64": "<decimal>"}` and revived before the request.
 */
import { GatewayError, toGatewayError } from '../common/errors';
import { formatUtcSeconds, parseUtcSeconds } from '../feed/time';
import { networkCause } from '../transport/network-cause';
import { gatewayGet, type GatewayContext } from '../api/gateway-context';
import { postCancellations, postMessages, postModes, type TerminalContext } from '../api/clients/terminal';
import { postToMultiple, type MultipleItem } from '../api/to-multiple';
import type { Cancellation, SubmitResult } from '../api/terminal';
import type { GeneralItem, ModeItem } from '../api/terminal-inputs';
import type { JsonValue, OutboxSender, SendBatch, SendOutcome } from './types';

/** The account a sender uses: an `iotgw-gateway` config node, or a TerminalClient's context. */
export type SenderContext = TerminalContext & GatewayContext;

const TAG = '$int64';

/** A value with bigints as `{"$int64": "..."}`: JSON-safe, as a store keeps it. */
export function toJsonItem(v: unknown): JsonValue {
  if (typeof v === 'bigint') return { [TAG]: v.toString() };
  if (Array.isArray(v)) return v.map(toJsonItem);
  if (v && typeof v === 'object') {
    const out: Record<string, JsonValue> = {};
    for (const [k, x] of Object.entries(v)) if (x !== undefined) out[k] = toJsonItem(x);
    return out;
  }
  return v as JsonValue;
}

/** The item as the request sends it (bigints revived). */
export function fromJsonItem(v: JsonValue): unknown {
  if (Array.isArray(v)) return v.map(fromJsonItem);
  if (v && typeof v === 'object') {
    const keys = Object.keys(v);
    if (keys.length === 1 && keys[0] === TAG && typeof v[TAG] === 'string') return BigInt(v[TAG]);
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = fromJsonItem(x);
    return out;
  }
  return v;
}

/** One destination of a `multiple` entry: its message ID, or its ErrorID and name. */
export type MultipleResult = string | [number, string];

/** A `multiple` entry's gatewayId: its destinations' results as JSON (in the order given). */
export function encodeMultiple(results: MultipleResult[]): string {
  return JSON.stringify(results);
}

export function decodeMultiple(id: string): MultipleResult[] {
  try {
    const v = JSON.parse(id) as unknown;
    return Array.isArray(v) ? (v as MultipleResult[]) : [id];
  } catch {
    return [id];
  }
}

const idText = (v: unknown): string => (v === null || v === undefined ? '' : String(v));

type Named<T> = T & { ErrorName?: string };

function ofResult(r: Named<SubmitResult>): SendOutcome {
  const errorId = Number(r.ErrorID ?? 0);
  if (errorId > 0) return { result: 'rejected', errorId, errorName: r.ErrorName ?? '' };
  return { result: 'accepted', gatewayId: idText(r.ID) };
}

function ofCancel(c: Named<Cancellation>): SendOutcome {
  const errorId = Number(c.ErrorID ?? 0);
  if (errorId > 0) return { result: 'rejected', errorId, errorName: c.ErrorName ?? '' };
  return { result: 'accepted', gatewayId: idText(c.CancelRequestID) };
}

function ofMultiple(list: Array<Named<SubmitResult>>): SendOutcome {
  const each: MultipleResult[] = list.map((r) => (Number(r.ErrorID ?? 0) > 0 ? [Number(r.ErrorID), r.ErrorName ?? ''] : idText(r.ID)));
  // Every destination refused: the entry is rejected (as the first refusal); else accepted with each result.
  const first = list[0];
  if (first && each.every((x) => Array.isArray(x))) return { result: 'rejected', errorId: Number(first.ErrorID), errorName: first.ErrorName ?? '' };
  return { result: 'accepted', gatewayId: encodeMultiple(each) };
}

/** The offset of an info/service call slower than SLOW_CLOCK_CALL_MS is kept SLOW_CLOCK_TTL_MS only (see the file's comment). */
const SLOW_CLOCK_CALL_MS = 2000;
const SLOW_CLOCK_TTL_MS = 60_000;

const NEVER_LEFT = new Set(['refused', 'refused-loopback', 'dns', 'unreachable', 'tls']);

/** What a failed send means for its entries (see the file's comment). */
export function outcomeOfError(e: unknown): SendOutcome & { auth?: boolean } {
  const err = toGatewayError(e);
  const reason = `${err.code}: ${err.message}`.slice(0, 200);
  const status = err.statusCode;
  switch (err.code) {
    case 'NETWORK': {
      const cause = networkCause(err);
      return cause && NEVER_LEFT.has(cause) ? { result: 'retry', reason } : { result: 'unknown', reason };
    }
    case 'TIMEOUT':
      return { result: 'unknown', reason, code: 'TIMEOUT' };
    case 'BAD_RESPONSE':
    case 'INTERNAL':
      return { result: 'unknown', reason };
    case 'RATE_LIMITED':
      return { result: 'retry', reason };
    case 'UNAUTHORIZED':
    case 'FORBIDDEN':
      return { result: 'retry', reason, auth: true };
    default:
      if (status === 429 || status === 503) return { result: 'retry', reason };
      if (status !== undefined && status >= 500) return { result: 'unknown', reason };
      return { result: 'failed', code: err.code, message: err.message.slice(0, 500) };
  }
}

export interface GatewaySenderOptions {
  /** The account now (the node's config node; undefined while it is missing: the batch waits). */
  context: () => SenderContext | undefined;
  /** 401/403 (problem set) and the next success (undefined). */
  onAuth?: (problem: string | undefined) => void;
  /** Aborts calls in flight when the outbox closes. */
  signal?: AbortSignal;
  /** How long ServerUTC's offset is trusted (ms). Default 10 min (at most a minute when info/service took over 2 s). */
  clockTtlMs?: number;
}

export class GatewaySender implements OutboxSender {
  private clock?: { offsetMs: number; at: number; ttlMs: number };
  private authProblem = false;

  constructor(private readonly o: GatewaySenderOptions) {}

  private ctx(): SenderContext {
    const g = this.o.context();
    if (!g) throw new GatewayError('NETWORK', 'the node has no account (its iotgw-gateway config node is missing)');
    return g;
  }

  async gatewayTime(): Promise<string | undefined> {
    const started = Date.now();
    let clock = this.clock;
    if (!clock || started - clock.at > clock.ttlMs) {
      let offsetMs = 0;
      let tookMs = 0;
      try {
        const res = await gatewayGet(this.ctx(), 'info/service', {}, { signal: this.o.signal });
        const replied = Date.now();
        tookMs = replied - started;
        const sec = parseUtcSeconds((res.body as { ServerUTC?: unknown } | null)?.ServerUTC);
        // Against the reply's moment, never the call's start: the estimate errs early (see the file's comment).
        if (sec !== undefined) offsetMs = sec * 1000 - replied;
      } catch (e) {
        const err = toGatewayError(e);
        // The link is down: nothing is recorded, the batch waits. Any other answer: the local clock.
        if (err.code === 'NETWORK' || err.code === 'TIMEOUT' || err.code === 'RATE_LIMITED') throw err;
      }
      const ttlMs = this.o.clockTtlMs ?? 600_000;
      clock = { offsetMs, at: started, ttlMs: tookMs <= SLOW_CLOCK_CALL_MS ? ttlMs : Math.min(ttlMs, SLOW_CLOCK_TTL_MS) };
      this.clock = clock;
    }
    return formatUtcSeconds(Math.floor((Date.now() + clock.offsetMs) / 1000) - 1);
  }

  async send(batch: SendBatch): Promise<SendOutcome[]> {
    const n = batch.entries.length;
    let out: SendOutcome[];
    try {
      out = await this.call(batch);
    } catch (e) {
      const o = outcomeOfError(e);
      if (o.auth) {
        this.authProblem = true;
        this.o.onAuth?.(o.result === 'retry' ? o.reason : 'UNAUTHORIZED');
      }
      delete o.auth;
      return new Array<SendOutcome>(n).fill(o);
    }
    if (this.authProblem) {
      this.authProblem = false;
      this.o.onAuth?.(undefined);
    }
    return out;
  }

  private async call(batch: SendBatch): Promise<SendOutcome[]> {
    const g = this.ctx();
    const items = batch.entries.map((e) => fromJsonItem(e.item));
    const signal = this.o.signal;
    switch (batch.kind) {
      case 'message':
        return (await postMessages(g, items as GeneralItem[], { signal })).map(ofResult);
      case 'mode':
        return (await postModes(g, items as ModeItem[], { signal })).map(ofResult);
      case 'cancel':
        return (await postCancellations(g, items as bigint[], { signal })).map(ofCancel);
      case 'multiple': {
        const out: SendOutcome[] = [];
        for (const it of items) out.push(ofMultiple(await postToMultiple(g, it as MultipleItem, { signal })));
        return out;
      }
    }
  }
}
