/**
 * The simulator's HTTP core: routing, JSON replies (exact int64 through lossless-json),
 * a call log that tests read to prove what was or was not sent, and fault injection.
 * Areas (terminal, broker/SMS, application API) mount their routes on it.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseJson, stringifyJson } from '../lib/common/int64';
import { alterReply, faultReply, takeFaults, type Fault, type FaultActions, type FaultKind, type Hit } from './faults';
import type { Handler, SimReply, SimRequest } from './replies';
import { Link } from './link';

export { FAULT_KINDS, INT64_EDGE_IDS, applyPatch, extraFields, faultFromJson, mapKey, wrongTypes } from './faults';
export type { Fault, FaultKind } from './faults';
export { json } from './replies';
export { SimWindow } from './window';
export type { Handler, SimReply, SimRequest } from './replies';
export { LINK_STATES, type LinkChaos, type LinkState } from './link';

export interface Route {
  method: string;
  pattern: RegExp;
  handler: Handler;
  /** Name used in the call log and for fault matching (e.g. "terminal/mode"). */
  name: string;
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
  /** The seeded random source of each fault that needs one (chaos, probability). */
  readonly rngs = new WeakMap<Fault, () => number>();
  /** Faults injected so far, by kind (for tests and reports). */
  readonly injected: Partial<Record<FaultKind, number>> = {};
  /** Hooks the areas provide for faults that act on their state (token-expiry). */
  readonly actions: FaultActions = {};
  port = 0;
  host = '127.0.0.1';
  /** The link (issue 45): `refuse(ms)`, `blackHole(ms)`, `up()`, `chaos({...})` (link.ts). */
  readonly link: Link;
  /** Replies held by a `hold` fault, until released (or their delay ends, or the client leaves). */
  private heldReplies = new Set<() => void>();

  constructor() {
    this.server = http.createServer((req, res) => void this.dispatch(req, res));
    this.server.keepAliveTimeout = 60_000;
    this.server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    this.link = new Link({
      stopListening: () => this.server.close(() => {}),
      listenAgain: () => this.listenAgain(),
      dropConnections: () => {
        for (const s of this.sockets) s.destroy();
      },
    });
  }

  /** Replies held by `hold` faults now. */
  get held(): number {
    return this.heldReplies.size;
  }

  /** Lets every held reply go: how many there were. */
  releaseHeld(): number {
    const n = this.heldReplies.size;
    for (const go of [...this.heldReplies]) go();
    return n;
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

  /** Listens again on the same port and host after a `refused` window (the port may be busy a moment). */
  private async listenAgain(): Promise<void> {
    for (let i = 0; ; i++) {
      try {
        await new Promise<void>((resolve, reject) => {
          this.server.once('error', reject);
          this.server.listen(this.port, this.host, () => {
            this.server.off('error', reject);
            resolve();
          });
        });
        return;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE' || i >= 100) throw err;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  close(): Promise<void> {
    this.link.close();
    this.releaseHeld();
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    for (const s of this.sockets) s.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  /** Holds a reply until released, `ms` passes (when given) or the client leaves. */
  private hold(res: http.ServerResponse, ms: number | undefined): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.heldReplies.delete(done);
        if (timer) clearTimeout(timer);
        res.off('close', done);
        resolve();
      };
      const timer = ms === undefined ? undefined : setTimeout(done, ms);
      this.heldReplies.add(done);
      res.once('close', done);
    });
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

  /** One request: read it, find its route, log it, inject its faults, handle it, write the reply. */
  private async dispatch(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    res.on('error', () => {}); // a client that hangs up mid-reply is part of the game
    const text = await this.readBody(req, res);
    if (text === undefined) return;
    const url = new URL(req.url ?? '/', 'http://sim');
    const method = req.method ?? 'GET';
    const { route, params } = this.match(method, url.pathname);
    const name = route?.name ?? 'unknown';
    const record = this.log(req, url, method, name, text);
    const control = name.startsWith('_sim');
    if (this.link.swallows(req.socket, control)) return; // a black hole: read, never answered
    const { before, after } = control ? {} : takeFaults(this, name, method);
    if (before) markFault(record, before);
    if (before?.kind === 'token-expiry') this.actions.expireTokens?.();
    else if (before) {
      if (before.kind === 'lost-reply') return this.write(res, { status: 0 }, record, before);
      if (before.kind !== 'slow' && before.kind !== 'hold') return this.write(res, faultReply(before, record), record, before);
      await (before.kind === 'hold' ? this.hold(res, before.fault.delayMs) : this.wait(before.fault.delayMs ?? 120_000, res));
      if (res.destroyed || res.writableEnded) return;
    }
    let reply = await this.handle(route, params, req, url, method, text);
    if (after) {
      markFault(record, after);
      reply = alterReply(after, reply, this.actions);
    }
    await this.write(res, reply, record, after);
  }

  /** The request body as text; undefined when it was refused (over 16 MiB: 413) or the client went away. */
  private async readBody(req: http.IncomingMessage, res: http.ServerResponse): Promise<string | undefined> {
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const c of req) {
        size += (c as Buffer).length;
        if (size > 16 * 1024 * 1024) {
          res.writeHead(413).end();
          return undefined;
        }
        chunks.push(c as Buffer);
      }
    } catch {
      return undefined; // the client went away while sending
    }
    return Buffer.concat(chunks).toString('utf8');
  }

  /** The first route of `method` whose pattern matches `path`, with its captured params. */
  private match(method: string, path: string): { route?: Route; params: string[] } {
    for (const r of this.routes) {
      if (r.method !== method) continue;
      const m = r.pattern.exec(path);
      if (m) return { route: r, params: m.slice(1) };
    }
    return { params: [] };
  }

  /** The call's record, kept in the call log (bounded) unless it is a control call. */
  private log(req: http.IncomingMessage, url: URL, method: string, name: string, text: string): CallRecord {
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
    if (!name.startsWith('_sim')) {
      this.calls.push(record);
      if (this.calls.length > this.maxCallLog) this.calls.splice(0, this.calls.length - this.maxCallLog);
    }
    return record;
  }

  /** The route's reply (404 without a route, 500 when its handler throws). */
  private async handle(route: Route | undefined, params: string[], req: http.IncomingMessage, url: URL, method: string, text: string): Promise<SimReply> {
    if (!route) return { status: 404, body: { error: `no such endpoint: ${method} ${url.pathname}` } };
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
      return await route.handler(simReq);
    } catch (err) {
      return { status: 500, body: { errors: `simulator error: ${(err as Error).message}` } };
    }
  }

  private async write(res: http.ServerResponse, reply: SimReply, record: CallRecord, hit?: Hit): Promise<void> {
    record.status = reply.status;
    const fault = hit?.fault;
    // A 'slow' hit here is an 'after' one (the work is done, the reply comes too late);
    // a 'before' slow fault waited in dispatch() before handling.
    if (hit?.kind === 'lost-reply') {
      res.destroy(); // handled (phase 'after') or not ('before'): either way, not a byte of the reply
      return;
    }
    if (hit?.kind === 'hold') await this.hold(res, fault?.delayMs);
    const delay = (hit?.kind === 'hold' ? 0 : (fault?.delayMs ?? (hit?.kind === 'slow' ? 120_000 : 0))) + this.latencyMs;
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

/** Marks a call as hit by a fault in the call log. */
function markFault(record: CallRecord, h: Hit): void {
  record.fault = true;
  (record.faultKinds ??= []).push(h.kind);
}
