/**
 * Fault injection (issue 5): the kinds of fault, a fault as a test or the control route
 * describes it, which faults hit a request, and the reply a fault gives instead of the
 * handler's ('before') or makes of it ('after').
 */
import type http from 'node:http';
import { stringifyJson } from '../lib/common/int64';
import type { SimReply } from './replies';

/**
 * The kinds of fault the simulator can inject (issue 5). `status` is the plain form: reply
 * `status`/`headers`/`text`/`body` as given (the original behaviour, still the default).
 * Two leave the client not knowing whether its request was done (issue 45), both 'after' by
 * default: `lost-reply` handles the request, then destroys the socket before a byte of the
 * reply (as 'before': the request is dropped unhandled); `hold` handles it and holds the
 * reply `delayMs`, or without it until `releaseHeld()` (or the client leaves).
 */
export const FAULT_KINDS = [
  'status',
  'rate-limit',
  'unavailable',
  'server-error',
  'reset',
  'slow',
  'malformed-json',
  'truncated-json',
  'html',
  'content-type',
  'oversized',
  'wrong-types',
  'extra-fields',
  'int64-edges',
  'token-expiry',
  'echo',
  'lost-reply',
  'hold',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** Kinds that need the real reply first (they alter it), so they default to phase 'after'. */
const AFTER_KINDS = new Set<FaultKind>(['truncated-json', 'wrong-types', 'extra-fields', 'int64-edges', 'slow', 'lost-reply', 'hold']);

/** The IDs the `int64-edges` fault puts in every `ID` field, in turn. */
export const INT64_EDGE_IDS: bigint[] = [
  9223372036854775807n,
  9223372036854775806n,
  9007199254740991n,
  9007199254740992n,
  9007199254740993n,
  4294967296n,
  1n,
];

export interface Fault {
  /** Route name or path substring to match; undefined matches every route. */
  route?: string;
  method?: string;
  /** How many requests it applies to (default 1; Infinity for all). */
  times?: number;
  /** 'before' (default): reply instead of handling. 'after': handle, then misbehave. */
  phase?: 'before' | 'after';
  status?: number;
  headers?: Record<string, string>;
  /** Raw body text (HTML page, truncated JSON...). */
  text?: string;
  body?: unknown;
  /** Delay before the reply is written. */
  delayMs?: number;
  /** Destroy the socket after writing part of the reply. */
  reset?: boolean;
  /** What goes wrong (default 'status', or 'reset' when `reset` is set). */
  kind?: FaultKind;
  /** Pick one of these kinds at random for each request it hits (a "chaos" fault). */
  kinds?: FaultKind[];
  /** Retry-After header value (seconds or an HTTP date) for rate-limit / unavailable. */
  retryAfter?: number | string;
  /** Size of an `oversized` reply in bytes (default 40 MiB, streamed). (`echo`: a 400 whose error text quotes the request's credentials.) */
  sizeBytes?: number;
  /** Let this many matching requests pass before the fault starts. */
  skip?: number;
  /** Chance (0..1) that a matching request is hit; default 1. Seeded by `seed`. */
  probability?: number;
  seed?: number;
  /** For wrong-types: dotted paths (`*` = every array element) and the values to put there. */
  patch?: Record<string, unknown>;
  /** Requests this fault has hit so far (maintained by the server). */
  hits?: number;
}

/** A JSON description of a fault (the /_sim/faults control route): `times` may be "all", null or -1 for Infinity. */
export function faultFromJson(raw: unknown): Fault {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new Error('a fault is a JSON object');
  const f = { ...(raw as Record<string, unknown>) } as Fault & { times?: unknown };
  const t = f.times as unknown;
  if (t === 'all' || t === 'Infinity' || t === null || t === -1) f.times = Infinity;
  else if (t !== undefined && (typeof t !== 'number' || !(t >= 1))) throw new Error('times must be a positive number, "all" or -1');
  for (const k of [f.kind, ...(f.kinds ?? [])]) {
    if (k !== undefined && !(FAULT_KINDS as readonly string[]).includes(k)) throw new Error(`unknown fault kind "${String(k)}"; known: ${FAULT_KINDS.join(', ')}`);
  }
  if (f.kinds !== undefined && (!Array.isArray(f.kinds) || f.kinds.length === 0)) throw new Error('kinds must be a non-empty array');
  if (f.phase !== undefined && f.phase !== 'before' && f.phase !== 'after') throw new Error('phase must be "before" or "after"');
  return f;
}

/** A small seeded PRNG (mulberry32) so that a chaos run can be replayed. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface Hit {
  fault: Fault;
  kind: FaultKind;
}

/** The faults of one server, with the state their picking keeps (see SimServer). */
export interface FaultBook {
  faults: Fault[];
  rngs: WeakMap<Fault, () => number>;
  injected: Partial<Record<FaultKind, number>>;
}

/** Hooks the areas provide for faults that act on their state (token-expiry). */
export interface FaultActions {
  expireTokens?: () => void;
}

/** What the `echo` fault quotes of a request (a CallRecord fits). */
export interface QuotedRequest {
  headers: http.IncomingHttpHeaders;
  query: string;
  body: string;
}

/** Picks the faults for one request: at most one per phase, in the order they were added. */
export function takeFaults(book: FaultBook, route: string, method: string): { before?: Hit; after?: Hit } {
  const out: { before?: Hit; after?: Hit } = {};
  for (let i = 0; i < book.faults.length && !(out.before && out.after); i++) {
    const f = book.faults[i]!;
    if (f.method && f.method !== method) continue;
    if (f.route && !(f.route === route || route.includes(f.route))) continue;
    if ((f.skip ?? 0) > 0) {
      f.skip!--;
      continue;
    }
    let random = book.rngs.get(f);
    if (!random && (f.kinds || f.probability !== undefined)) book.rngs.set(f, (random = rng(f.seed ?? 1)));
    if (f.probability !== undefined && random!() >= f.probability) continue;
    const kind: FaultKind = f.kinds ? f.kinds[Math.floor(random!() * f.kinds.length)]! : (f.kind ?? 'status');
    const phase = f.kinds ? (AFTER_KINDS.has(kind) ? 'after' : 'before') : (f.phase ?? (AFTER_KINDS.has(kind) ? 'after' : 'before'));
    if (out[phase]) continue;
    out[phase] = { fault: f, kind };
    f.hits = (f.hits ?? 0) + 1;
    f.times = (f.times ?? 1) - 1;
    if (f.times <= 0) {
      book.faults.splice(i, 1);
      i--;
    }
    book.injected[kind] = (book.injected[kind] ?? 0) + 1;
  }
  return out;
}

/** The reply of a fault that replaces the handler ('before' phase). */
export function faultReply(h: Hit, record?: QuotedRequest): SimReply {
  const f = h.fault;
  const retry = f.retryAfter !== undefined ? { 'retry-after': String(f.retryAfter) } : undefined;
  const withHeaders = (headers?: Record<string, string>) => (headers || f.headers ? { ...headers, ...f.headers } : undefined);
  switch (h.kind) {
    case 'rate-limit':
      return { status: f.status ?? 429, headers: withHeaders(retry), body: f.body ?? { Message: 'Too many requests (simulated fault)' } };
    case 'unavailable':
      return { status: f.status ?? 503, headers: withHeaders(retry), body: f.body ?? { Message: 'Service unavailable (simulated fault)' } };
    case 'server-error':
      return { status: f.status ?? 500, headers: withHeaders(), body: f.body ?? { Message: 'An error has occurred. (simulated fault)' } };
    case 'reset':
      return { status: f.status ?? 200, headers: withHeaders(), text: f.text, body: f.body ?? { ErrorID: 0, Submissions: [], Cancellations: [], Statuses: [], NextFromUTC: null } };
    case 'malformed-json':
      return { status: f.status ?? 200, headers: withHeaders({ 'content-type': 'application/json; charset=utf-8' }), text: f.text ?? '{"ErrorID":0,"Submissions":[{"ID":12,,"Statuses":[}' };
    case 'truncated-json':
      return { status: f.status ?? 200, headers: withHeaders({ 'content-type': 'application/json; charset=utf-8' }), text: f.text ?? '{"ErrorID":0,"NextFromUTC":"2024-01-0' };
    case 'html':
      return {
        status: f.status ?? 200,
        headers: withHeaders({ 'content-type': 'text/html; charset=utf-8' }),
        text: f.text ?? '<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1><p>The proxy server received an invalid response.</p></body></html>',
      };
    case 'content-type':
      return {
        status: f.status ?? 200,
        headers: withHeaders({ 'content-type': 'application/xml; charset=utf-8' }),
        text: f.text ?? '<?xml version="1.0"?><Result><ErrorID>0</ErrorID></Result>',
      };
    case 'oversized':
      return { status: f.status ?? 200, headers: withHeaders({ 'content-type': 'application/json; charset=utf-8' }) };
    case 'echo': {
      // A careless server that quotes the request (credentials included) in its error text.
      const h = record?.headers ?? {};
      const quoted = { authorization: h.authorization, client_id: h.client_id, access_token: h.access_token, query: record?.query, body: record?.body };
      const text = `request refused: ${JSON.stringify(quoted)}`;
      return { status: f.status ?? 400, headers: withHeaders(), body: { error: text, message: text, errors: text } };
    }
    default:
      return { status: f.status ?? 500, headers: f.headers, text: f.text, body: f.body };
  }
}

/** Alters the handler's reply ('after' phase). */
export function alterReply(h: Hit, reply: SimReply, actions: FaultActions): SimReply {
  const f = h.fault;
  switch (h.kind) {
    case 'wrong-types':
      return { ...reply, body: f.patch ? applyPatch(reply.body, f.patch) : wrongTypes(reply.body) };
    case 'extra-fields':
      return { ...reply, body: extraFields(reply.body) };
    case 'int64-edges': {
      let i = 0;
      return { ...reply, body: mapKey(reply.body, 'ID', () => INT64_EDGE_IDS[i++ % INT64_EDGE_IDS.length]) };
    }
    case 'truncated-json': {
      const full = reply.text ?? (reply.body === undefined ? '' : stringifyJson(reply.body));
      return { status: reply.status, headers: { 'content-type': 'application/json; charset=utf-8', ...reply.headers }, text: full.slice(0, Math.max(1, Math.floor(full.length / 2))) };
    }
    case 'slow':
    case 'reset':
    case 'lost-reply':
    case 'hold':
      return reply; // the delay, the hold or the reset happen in write()
    case 'token-expiry':
      actions.expireTokens?.();
      return reply;
    default:
      if (f.status !== undefined || f.text !== undefined || f.body !== undefined) {
        return { status: f.status ?? reply.status, headers: f.headers ?? reply.headers, text: f.text, body: f.body ?? (f.text === undefined ? reply.body : undefined) };
      }
      return reply;
  }
}

/** Every number becomes a non-numeric string, every boolean a string, every string a number (fields of the wrong type). */
export function wrongTypes(v: unknown): unknown {
  if (typeof v === 'number' || typeof v === 'bigint') return 'not-a-number';
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  if (typeof v === 'string') return 12345;
  if (Array.isArray(v)) return v.map(wrongTypes);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, wrongTypes(x)]));
  return v;
}

/** Adds unknown fields to every object (a newer gateway version). */
export function extraFields(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(extraFields);
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = Object.fromEntries(Object.entries(v).map(([k, x]) => [k, extraFields(x)]));
    out.SimUnknownField = 'added by the simulator';
    out.SimUnknownObject = { nested: [1, 2, 3], flag: true };
    return out;
  }
  return v;
}

/** Replaces the value of every `key` property (at any depth) by `value()`. */
export function mapKey(v: unknown, key: string, value: () => unknown): unknown {
  if (Array.isArray(v)) return v.map((x) => mapKey(x, key, value));
  if (v && typeof v === 'object') {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, k === key && x !== null && x !== undefined ? value() : mapKey(x, key, value)]));
  }
  return v;
}

/** Sets dotted paths (`*` matches every array element or object property). */
export function applyPatch(v: unknown, patch: Record<string, unknown>): unknown {
  let out = structuredClone(v);
  for (const [path, value] of Object.entries(patch)) out = setPath(out, path.split('.'), value);
  return out;
}

function setPath(v: unknown, parts: string[], value: unknown): unknown {
  if (parts.length === 0) return value;
  if (!v || typeof v !== 'object') return v;
  const [head, ...rest] = parts;
  const obj = v as Record<string, unknown>;
  if (head === '*') {
    for (const k of Object.keys(obj)) obj[k] = setPath(obj[k], rest, value);
  } else if (rest.length === 0) obj[head!] = value;
  else obj[head!] = setPath(obj[head!], rest, value);
  return v;
}

