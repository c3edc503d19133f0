/**
 * The simulator's HTTP core: routing, JSON replies (exact int64 through lossless-json),
 * a call log that tests read to prove what was or was not sent, and fault injection.
 * Areas (terminal, broker/SMS, application API) mount their routes on it.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseJson, stringifyJson } from '../lib/int64';

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
    const fault = { times: 1, phase: 'before' as const, ...f };
    this.faults.push(fault);
    return fault;
  }

  clearFaults(): void {
    this.faults.length = 0;
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
    for (const s of this.sockets) s.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private takeFault(route: string, method: string, phase: 'before' | 'after'): Fault | undefined {
    const i = this.faults.findIndex(
      (f) => (f.phase ?? 'before') === phase && (!f.method || f.method === method) && (!f.route || f.route === route || route.includes(f.route)),
    );
    if (i < 0) return undefined;
    const f = this.faults[i]!;
    f.times = (f.times ?? 1) - 1;
    if (f.times <= 0) this.faults.splice(i, 1);
    return f;
  }

  private async dispatch(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const c of req) {
      size += (c as Buffer).length;
      if (size > 16 * 1024 * 1024) {
        res.writeHead(413).end();
        return;
      }
      chunks.push(c as Buffer);
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
    };
    if (!name.startsWith('_sim')) {
      this.calls.push(record);
      if (this.calls.length > this.maxCallLog) this.calls.splice(0, this.calls.length - this.maxCallLog);
    }

    const before = this.takeFault(name, method, 'before');
    let reply: SimReply;
    if (before) {
      record.fault = true;
      reply = { status: before.status ?? 500, headers: before.headers, text: before.text, body: before.body };
      await this.write(res, reply, record, before);
      return;
    }
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
    const after = this.takeFault(name, method, 'after');
    if (after) {
      record.fault = true;
      if (after.status !== undefined || after.text !== undefined || after.body !== undefined) {
        reply = { status: after.status ?? reply.status, headers: after.headers ?? reply.headers, text: after.text, body: after.body ?? (after.text === undefined ? reply.body : undefined) };
      }
    }
    await this.write(res, reply, record, after);
  }

  private async write(res: http.ServerResponse, reply: SimReply, record: CallRecord, fault?: Fault): Promise<void> {
    record.status = reply.status;
    const delay = (fault?.delayMs ?? 0) + this.latencyMs;
    if (delay > 0) await new Promise((r) => setTimeout(r, delay));
    if (res.destroyed) return;
    let payload = '';
    const headers: Record<string, string> = { ...(reply.headers ?? {}) };
    if (reply.text !== undefined) {
      payload = reply.text;
      headers['content-type'] ??= 'text/plain; charset=utf-8';
    } else if (reply.body !== undefined) {
      payload = stringifyJson(reply.body);
      headers['content-type'] ??= 'application/json; charset=utf-8';
    }
    if (fault?.reset) {
      headers['content-length'] = String(Buffer.byteLength(payload) + 100);
      res.writeHead(reply.status, headers);
      res.write(payload.slice(0, Math.max(1, Math.floor(payload.length / 2))));
      setTimeout(() => res.destroy(), 5);
      return;
    }
    headers['content-length'] = String(Buffer.byteLength(payload));
    res.writeHead(reply.status, headers);
    res.end(payload);
  }
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
