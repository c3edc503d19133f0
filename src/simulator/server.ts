/**
 * The simulator's HTTP core: routing, JSON replies (exact int64 through lossless-json),
 * a call log that tests read to prove what was or was not sent, and fault injection.
 * Areas (terminal, broker/SMS, application API) mount their routes on it.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseJson, stringifyJson } from '../lib/common/int64';

export interface SimRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: http.IncomingHttpHeaders;
  /** Raw body text. */
  text: string;
  params: string[];
  /** Parses the body as JSON (exact int64: unsafe integers become strings). */
  json(): unknown;
}

export interface SimReply {
  status: number;
  body?: unknown;
  /** Raw text instead of JSON. */
  text?: string;
  headers?: Record<string, string>;
}

export type Handler = (req: SimRequest) => SimReply | Promise<SimReply>;

export interface Route {
  method: string;
  pattern: RegExp;
  handler: Handler;
  /** Name used in the call log and for fault matching (e.g. "terminal/mode"). */
  name: string;
}

/**
 * The kinds of fault the simulator can inject (issue 5). `status` is the plain form: reply
 * `status`/`headers`/`text`/`body` as given (the original behaviour, still the default).
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
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** Kinds that need the real reply first (they alter it), so they default to phase 'after'. */
const AFTER_KINDS = new Set<FaultKind>(['truncated-json', 'wrong-types', 'extra-fields', 'int64-edges', 'slow']);

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
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Hit {
  fault: Fault;
  kind: FaultKind;
}

export interface CallRecord {
  at: number;
  method: string;
  path: string;
  route: string;
  status: number;
  query: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  fault?: boolean;
  /** The kinds of the faults injected into this call. */
  faultKinds?: FaultKind[];
  /** The request target exactly as it came on the wire (path and query, not normalised). */
  rawUrl: string;
  /** Header names and values exactly as received. */
  rawHeaders: string[];
}

export class SimServer {
  readonly routes: Route[] = [];
  readonly calls: CallRecord[] = [];
  readonly faults: Fault[] = [];
  maxCallLog = 20000;
  /** Extra delay for every reply (ms). */
  latencyMs = 0;
  private server: http.Server;
  private sockets = new Set<import('node:net').Socket>();
  private timers = new Set<NodeJS.Timeout>();
  private rngs = new WeakMap<Fault, () => number>();
  /** Faults injected so far, by kind (for tests and reports). */
  readonly injected: Partial<Record<FaultKind, number>> = {};
  /** Hooks the areas provide for faults that act on their state (token-expiry). */
  readonly actions: { expireTokens?: () => void } = {};
  port = 0;
  host = '127.0.0.1';

  constructor() {
    this.server = http.createServer((req, res) => void this.dispatch(req, res));
    this.server.keepAliveTimeout = 60_000;
    this.server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
  }

  get url(): string {
    return `http://${this.host}:${this.port}`;
  }

  route(method: string, pattern: RegExp, name: string, handler: Handler): void {
    this.routes.push({ method, pattern, name, handler });
  }

  /** Adds a fault; returns it so a test can inspect or remove it. */
  inject(f: Fault): Fault {
    const fault: Fault = { times: 1, ...f, hits: 0 };
    if (!fault.kind && !fault.kinds) fault.kind = fault.reset ? 'reset' : 'status';
    this.faults.push(fault);
    return fault;
  }

  /** Removes one fault (returned by inject) or, without an argument, every fault. */
  clearFaults(f?: Fault): void {
    if (f) {
      const i = this.faults.indexOf(f);
      if (i >= 0) this.faults.splice(i, 1);
    } else this.faults.length = 0;
  }

  /** Total faults injected so far. */
  get injectedTotal(): number {
    return Object.values(this.injected).reduce((a, b) => a + (b ?? 0), 0);
  }

  /** Open client connections (a closed client must leave none). */
  get openSockets(): number {
    return this.sockets.size;
  }

  /** Calls to a route (by name) or all calls. */
  callsTo(route?: string): CallRecord[] {
    return route ? this.calls.filter((c) => c.route === route) : this.calls.slice();
  }

  clearCalls(): void {
    this.calls.length = 0;
  }

  listen(port = 0, host = '127.0.0.1'): Promise<void> {
    this.host = host;
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.port = (this.server.address() as AddressInfo).port;
        resolve();
      });
    });
  }

  close(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    for (const s of this.sockets) s.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  /** Picks the faults for one request: at most one per phase, in the order they were added. */
  private takeFaults(route: string, method: string): { before?: Hit; after?: Hit } {
    const out: { before?: Hit; after?: Hit } = {};
    for (let i = 0; i < this.faults.length && !(out.before && out.after); i++) {
      const f = this.faults[i]!;
      if (f.method && f.method !== method) continue;
      if (f.route && !(f.route === route || route.includes(f.route))) continue;
      if ((f.skip ?? 0) > 0) {
        f.skip!--;
        continue;
      }
      let random = this.rngs.get(f);
      if (!random && (f.kinds || f.probability !== undefined)) this.rngs.set(f, (random = rng(f.seed ?? 1)));
      if (f.probability !== undefined && random!() >= f.probability) continue;
      const kind: FaultKind = f.kinds ? f.kinds[Math.floor(random!() * f.kinds.length)]! : (f.kind ?? 'status');
      const phase = f.kinds ? (AFTER_KINDS.has(kind) ? 'after' : 'before') : (f.phase ?? (AFTER_KINDS.has(kind) ? 'after' : 'before'));
      if (out[phase]) continue;
      out[phase] = { fault: f, kind };
      f.hits = (f.hits ?? 0) + 1;
      f.times = (f.times ?? 1) - 1;
      if (f.times <= 0) {
        this.faults.splice(i, 1);
        i--;
      }
      this.injected[kind] = (this.injected[kind] ?? 0) + 1;
    }
    return out;
  }

  /** Waits `ms`, or less when the client goes away; the timer is cleared on close(). */
  private wait(ms: number, res: http.ServerResponse): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.timers.delete(timer);
        res.off('close', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.timers.add(timer);
      res.once('close', done);
    });
  }

  private async dispatch(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    res.on('error', () => {}); // a client that hangs up mid-reply is part of the game
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const c of req) {
        size += (c as Buffer).length;
        if (size > 16 * 1024 * 1024) {
          res.writeHead(413).end();
          return;
        }
        chunks.push(c as Buffer);
      }
    } catch {
      return; // the client went away while sending
    }
    const text = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', 'http://sim');
    const method = req.method ?? 'GET';
    let route: Route | undefined;
    let params: string[] = [];
    for (const r of this.routes) {
      if (r.method !== method) continue;
      const m = r.pattern.exec(url.pathname);
      if (m) {
        route = r;
        params = m.slice(1);
        break;
      }
    }
    const name = route?.name ?? 'unknown';
    const record: CallRecord = {
      at: Date.now(),
      method,
      path: url.pathname,
      route: name,
      status: 0,
      query: url.search,
      headers: req.headers,
      body: text.length > 65536 ? text.slice(0, 65536) : text,
      rawUrl: req.url ?? '',
      rawHeaders: req.rawHeaders.slice(),
    };
    const control = name.startsWith('_sim');
    if (!control) {
      this.calls.push(record);
      if (this.calls.length > this.maxCallLog) this.calls.splice(0, this.calls.length - this.maxCallLog);
    }

    const { before, after } = control ? {} : this.takeFaults(name, method);
    const mark = (h: Hit) => {
      record.fault = true;
      (record.faultKinds ??= []).push(h.kind);
    };
    if (before) mark(before);
    if (before?.kind === 'token-expiry') this.actions.expireTokens?.();
    else if (before) {
      if (before.kind === 'slow') {
        await this.wait(before.fault.delayMs ?? 120_000, res);
        if (res.destroyed || res.writableEnded) return;
      } else {
        await this.write(res, this.faultReply(before, record), record, before);
        return;
      }
    }
    let reply: SimReply;
    if (!route) {
      reply = { status: 404, body: { error: `no such endpoint: ${method} ${url.pathname}` } };
    } else {
      const simReq: SimRequest = {
        method,
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        text,
        params,
        json: () => parseJson(text),
      };
      try {
        reply = await route.handler(simReq);
      } catch (err) {
        reply = { status: 500, body: { errors: `simulator error: ${(err as Error).message}` } };
      }
    }
    if (after) {
      mark(after);
      reply = this.alterReply(after, reply);
    }
    await this.write(res, reply, record, after);
  }

  /** The reply of a fault that replaces the handler ('before' phase). */
  private faultReply(h: Hit, record?: CallRecord): SimReply {
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
  private alterReply(h: Hit, reply: SimReply): SimReply {
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
        return reply; // the delay or the reset happen in write()
      case 'token-expiry':
        this.actions.expireTokens?.();
        return reply;
      default:
        if (f.status !== undefined || f.text !== undefined || f.body !== undefined) {
          return { status: f.status ?? reply.status, headers: f.headers ?? reply.headers, text: f.text, body: f.body ?? (f.text === undefined ? reply.body : undefined) };
        }
        return reply;
    }
  }

  private async write(res: http.ServerResponse, reply: SimReply, record: CallRecord, hit?: Hit): Promise<void> {
    record.status = reply.status;
    const fault = hit?.fault;
    // A 'slow' hit here is an 'after' one (the work is done, the reply comes too late);
    // a 'before' slow fault waited in dispatch() before handling.
    const delay = (fault?.delayMs ?? (hit?.kind === 'slow' ? 120_000 : 0)) + this.latencyMs;
    if (delay > 0) await this.wait(delay, res);
    if (res.destroyed) return;
    if (hit?.kind === 'oversized') {
      await this.writeOversized(res, reply, fault?.sizeBytes ?? 40 * 1024 * 1024);
      return;
    }
    let payload = '';
    const headers: Record<string, string> = { ...(reply.headers ?? {}) };
    if (reply.text !== undefined) {
      payload = reply.text;
      headers['content-type'] ??= 'text/plain; charset=utf-8';
    } else if (reply.body !== undefined) {
      payload = stringifyJson(reply.body);
      headers['content-type'] ??= 'application/json; charset=utf-8';
    }
    if (hit?.kind === 'reset' || fault?.reset) {
      headers['content-length'] = String(Buffer.byteLength(payload) + 100);
      res.writeHead(reply.status, headers);
      res.write(payload.slice(0, Math.max(1, Math.floor(payload.length / 2))));
      const t = setTimeout(() => {
        this.timers.delete(t);
        res.destroy();
      }, 5);
      this.timers.add(t);
      return;
    }
    headers['content-length'] = String(Buffer.byteLength(payload));
    res.writeHead(reply.status, headers);
    res.end(payload);
  }

  /** Streams a valid JSON reply of `size` bytes without holding it in memory. */
  private async writeOversized(res: http.ServerResponse, reply: SimReply, size: number): Promise<void> {
    const head = '{"ErrorID":0,"Padding":"';
    const tail = '"}';
    const chunk = 'x'.repeat(64 * 1024);
    res.writeHead(reply.status, { ...reply.headers, 'content-length': String(size) });
    let left = size - head.length - tail.length;
    if (!res.write(head)) await new Promise((r) => res.once('drain', r));
    while (left > 0 && !res.destroyed) {
      const part = left >= chunk.length ? chunk : chunk.slice(0, left);
      left -= part.length;
      if (!res.write(part)) {
        await new Promise<void>((r) => {
          const go = () => {
            res.off('drain', go);
            res.off('close', go);
            r();
          };
          res.once('drain', go);
          res.once('close', go);
        });
      }
    }
    if (!res.destroyed) res.end(tail);
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

/** Sliding-window counter of arrival times (the simulator's throttle). */
export class SimWindow {
  private stamps: number[] = [];
  constructor(
    public limit: number,
    public windowMs: number,
  ) {}
  /** Records a call if under the limit; false when over. */
  take(now = Date.now()): boolean {
    if (this.limit <= 0 || this.windowMs <= 0) return true;
    const cutoff = now - this.windowMs;
    while (this.stamps.length && this.stamps[0]! <= cutoff) this.stamps.shift();
    if (this.stamps.length >= this.limit) return false;
    this.stamps.push(now);
    return true;
  }
  /** Milliseconds until a slot frees. */
  retryAfterMs(now = Date.now()): number {
    return this.stamps.length ? Math.max(0, this.stamps[0]! + this.windowMs - now) : 0;
  }
}

export function json(status: number, body: unknown, headers?: Record<string, string>): SimReply {
  return { status, body, headers };
}
