/**
 * One connection to a Redis server, shared by every account that names the same
 * `iotgw-redis` config node (closed with its last user), and the retry loop every Redis
 * call of the account layer goes through.
 *
 * The client (client.ts) never queues nor resends a command. `run()` instead waits for the
 * connection (reconnects are automatic, with back-off) up to the caller's deadline, then
 * fails with SHARED_STATE.
 */
import { EventEmitter } from 'node:events';
import type Redis from 'ioredis';
import type { Duplex } from 'node:stream';
import type { Socket } from 'node:net';
import { GatewayError } from '../../common/errors';
import { guardSocket } from './reply-guard';
import { checkRedisUrl, connectionAddress, createClient, keySlot, type RedisConnectionOptions, type RedisMode } from './client';
import { SharedStateError } from './errors';
import { ReplicaAcks } from './replicas';
import { WrongReplyError } from './replies';

export { checkRedisUrl, keySlot, parseHostPorts, redisAddress, type HostPort, type RedisConnectionOptions, type RedisMode } from './client';

export interface RunOptions {
  /** How long to wait for Redis in all (ms). */
  timeoutMs: number;
  signal?: AbortSignal;
}

/** Our largest real reply is a few kB (a mark with its keys, a token): 8 MiB is far above it. */
export const MAX_REPLY_BYTES = 8 * 1024 * 1024;

/** Waits `ms` on a timer (a macrotask: I/O runs meanwhile). */
function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A refused login (wrong password or user): not a fault that reconnecting mends. */
export function isAuthError(err: unknown): boolean {
  return err instanceof Error && /^(WRONGPASS|NOAUTH)|invalid (username-)?password/i.test(err.message);
}

export { SharedStateError };

/** Errors of the connection (retry), as opposed to a script's own reply errors and replies of the wrong type (do not). */
export function isConnectionError(err: unknown): boolean {
  if (!(err instanceof Error) || err instanceof GatewayError || err instanceof WrongReplyError) return false;
  if (err.name === 'ReplyError') return /^(LOADING|BUSY|TRYAGAIN|CLUSTERDOWN|MASTERDOWN|READONLY|WRONGPASS|NOAUTH)/.test(err.message);
  return true;
}

const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(done, ms);
    function done() {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }
    function onAbort() {
      clearTimeout(t);
      reject(signal!.reason);
    }
    signal?.addEventListener('abort', onAbort, { once: true });
  });
export { sleep as abortableSleep };

export class RedisConnection extends EventEmitter {
  readonly client: Redis;
  readonly keyPrefix: string;
  readonly address: string;
  readonly label: string;
  readonly mode: RedisMode;
  /** Writes that must survive a failover wait for a replica (sentinel, cluster). */
  readonly replicated: boolean;
  readonly replicaAckMs: number;
  private closed = false;
  private wasReady = false;
  /** The login refused at the last attempt (cleared when ready). */
  private refused: Error | undefined;
  private refusals = 0;
  /** The master this connection talks to (sentinel, standalone), as host:port. */
  private masterAddr: string | undefined;
  /** A reply the guard refused (oversized, malformed) was told about ('oversize' is emitted once per connection object). */
  private tripWarned = false;
  /** ioredis's connect was cut short (see watchClient): its 'end' is followed by a new connect. */
  private connectCut = false;
  /**
   * The peer's last fault (a reply past the bound or of the wrong type: not our Redis, or a
   * broken one): until `until`, run() fails at once and no reconnect is tried; the pause
   * doubles with each fault (1 s to 30 s), and starts again after 5 quiet minutes.
   */
  private fault: { err: SharedStateError; until: number; count: number; at: number } | undefined;
  /** A wrong reply was told about ('misbehaved' is emitted once per connection object). */
  private wrongWarned = false;
  private readonly acks = new ReplicaAcks(this);

  constructor(opts: RedisConnectionOptions) {
    super();
    checkRedisUrl(opts.url);
    this.keyPrefix = opts.keyPrefix ?? 'iotgw:';
    this.mode = opts.mode ?? 'standalone';
    this.replicated = this.mode !== 'standalone';
    this.replicaAckMs = opts.replicaAckMs ?? 2000;
    this.address = connectionAddress(opts);
    this.label = opts.label ?? `redis ${this.address}`;
    const maxReply = opts.maxReplyBytes ?? MAX_REPLY_BYTES;
    this.client = createClient(opts, (times) => this.retryDelay(times), {
      guard: (socket) => this.guardReplies(socket, maxReply),
      wrongReply: (err) => this.noteWrongReply(err),
      // 'sentinel-error' (err, host:port): for diagnosis; a warning is the data connection's to give.
      sentinelError: (err, sentinel) => this.emit('sentinel-error', err, sentinel),
    });
    if (this.mode === 'cluster') this.watchCluster();
    this.watchClient();
  }

  /**
   * Reconnect forever with back-off: 50 ms, 100 ms ... at most 1 s; a refused login
   * (wrong password) backs off to 30 s: no reconnect storm against the server.
   */
  private retryDelay(times: number): number | null {
    if (this.closed) return null;
    const faultLeft = this.fault ? this.fault.until - Date.now() : 0;
    if (faultLeft > 0) return Math.max(50, faultLeft);
    return this.refused ? Math.min(2000 * 2 ** Math.min(this.refusals, 4), 30_000) : Math.min(times * 50, 1000);
  }

  /**
   * The stream the client reads each socket it opens through: a reply over the bound or
   * malformed closes it (told once per connection object, 'oversize', for either).
   */
  private guardReplies(socket: Socket, maxBytes: number): Duplex {
    return guardSocket(socket, {
      maxBytes,
      onTrip: ({ kind, why }) => {
        this.noteFault(kind === 'size' ? 'a reply over the size bound' : 'a malformed reply');
        if (this.tripWarned) return;
        this.tripWarned = true;
        const real = kind === 'size' ? 'a real reply of ours is a few kB' : 'Redis frames its replies exactly';
        this.emit('oversize', new GatewayError('SHARED_STATE', `${this.label}: Redis sent ${why}; the connection was closed (${real}: is this address really our Redis?)`));
      },
    });
  }

  /** A peer fault: run() fails at once, and reconnects wait, for a pause that doubles with each fault. */
  private noteFault(why: string): SharedStateError {
    const now = Date.now();
    // The replies of commands sent together are one fault.
    if (this.fault && now < this.fault.until) return this.fault.err;
    const count = this.fault && now - this.fault.at < 300_000 ? this.fault.count + 1 : 1;
    const pauseMs = Math.min(1000 * 2 ** (count - 1), 30_000);
    const err = new SharedStateError(`${this.label}: Redis sent ${why}; nothing is sent to it for ${pauseMs / 1000} s (is this address really our Redis?)`, 'wrong-reply');
    this.fault = { err, until: now + pauseMs, count, at: now };
    return err;
  }

  /** A reply of the wrong type: told once, the connection dropped (its replies may be out of step) and paused. */
  private noteWrongReply(e: WrongReplyError): SharedStateError {
    const err = this.noteFault(`a reply of the wrong type (${e.message})`);
    if (!this.wrongWarned) {
      this.wrongWarned = true;
      this.emit('misbehaved', err);
    }
    return err;
  }

  /** A refused login: reconnecting backs off, and run() fails at once until a login works. */
  private noteRefusal(err: Error): void {
    if (!isAuthError(err)) return;
    this.refused = err;
    this.refusals++;
  }

  /** Cluster mode: a node's failure and a new master of the slots. */
  private watchCluster(): void {
    // One node failing is an outage of its slots: told once; a new slot owner ends it.
    this.client.on('node error', (err: Error) => {
      this.noteRefusal(err);
      this.emit('failure', err);
    });
    this.client.on('refresh', () => {
      const now = this.master();
      const prev = this.masterAddr;
      this.masterAddr = now;
      if (prev && now && prev !== now) {
        this.emit('failover', prev, now);
        this.emit('up');
      }
    });
  }

  /** The client's life: 'up' (and 'failover' to a new master), 'down' once per outage, 'failure' per attempt. */
  private watchClient(): void {
    this.client.on('ready', () => {
      this.wasReady = true;
      this.refused = undefined;
      this.refusals = 0;
      const prev = this.masterAddr;
      const stream = (this.client as unknown as { stream?: { remoteAddress?: string; remotePort?: number } }).stream;
      if (this.mode !== 'cluster' && stream?.remoteAddress) this.masterAddr = `${stream.remoteAddress}:${stream.remotePort}`;
      if (prev && this.masterAddr && prev !== this.masterAddr) this.emit('failover', prev, this.masterAddr);
      this.emit('up');
    });
    this.client.on('close', () => {
      if (this.wasReady) this.emit('down');
      this.wasReady = false;
    });
    // ioredis gives up for good ('end') when a reconnect is cut short: in sentinel mode, a
    // failover notice (+switch-master) that comes while the client asks a sentinel for the
    // master ends that connect with "Connection is closed" (told as an 'error' just before):
    // start again. Any other end (close(), or a test's client.disconnect()) stays ended.
    this.client.on('end', () => {
      const cut = this.connectCut;
      this.connectCut = false;
      if (this.closed || !cut) return;
      setTimeout(() => {
        if (!this.closed && this.client.status === 'end') this.client.connect().catch(() => {});
      }, this.retryDelay(1) ?? 50).unref();
    });
    // ioredis reports every failed attempt; the owner logs one warning per outage ('down').
    this.client.on('error', (err: Error) => {
      if (this.client.status === 'connecting' && err.message === 'Connection is closed.') this.connectCut = true;
      this.noteRefusal((err as { lastNodeError?: Error }).lastNodeError ?? err);
      this.emit('failure', err);
    });
  }

  get ready(): boolean {
    return this.client.status === 'ready';
  }

  /**
   * The master that holds `key` now (host:port), or of the connection when no key is
   * given; undefined while unknown. For the dialog and the account-status figures.
   */
  master(key?: string): string | undefined {
    if (this.mode !== 'cluster') return this.ready ? this.masterAddr : undefined;
    const cluster = this.client as unknown as { slots: string[][]; nodes(role: string): Redis[] };
    if (key !== undefined) return cluster.slots[keySlot(key)]?.[0];
    const masters = new Set<string>();
    for (const owners of cluster.slots) if (owners?.[0]) masters.add(owners[0]);
    return masters.size ? [...masters].sort().join(', ') : undefined;
  }

  /**
   * Waits until the writes made so far on the connection that holds `key` are on a
   * replica (WAIT 1), or on the master alone when it has no replica online (one 'alone'
   * event per master until one joins: 'replicated'), in sentinel and cluster mode; at once
   * in standalone mode. Rejects with SHARED_STATE (reason 'unacknowledged') when the master
   * has a replica and none acknowledged in time. `read` (optional) runs in the same round
   * trip, before the WAIT, and its reply is returned.
   */
  async acknowledged<T = unknown>(what: string, key: string, timeoutMs: number, read?: (p: ReturnType<Redis['pipeline']>) => void): Promise<T | undefined> {
    if (!this.replicated) return undefined;
    return this.acks.acknowledged<T>(what, key, timeoutMs, read);
  }

  /** Resolves when the connection is ready, or false at the deadline. */
  private waitReady(untilMs: number, signal?: AbortSignal): Promise<boolean> {
    if (this.ready) return Promise.resolve(true);
    return new Promise((resolve, reject) => {
      const left = untilMs - Date.now();
      if (left <= 0) return resolve(false);
      const onReady = () => finish(true);
      const t = setTimeout(() => finish(false), left);
      const onAbort = () => {
        cleanup();
        reject(signal!.reason);
      };
      const cleanup = () => {
        clearTimeout(t);
        this.client.off('ready', onReady);
        signal?.removeEventListener('abort', onAbort);
      };
      const finish = (ok: boolean) => {
        cleanup();
        resolve(ok);
      };
      this.client.on('ready', onReady);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** SHARED_STATE for a login Redis refused (wrong password or user), naming what it said. */
  private refusedError(what: string): GatewayError {
    const said = (this.refused?.message ?? '').split('\n')[0]!.slice(0, 120);
    return new GatewayError('SHARED_STATE', `${this.label}: Redis refused the login (${said}) while ${what}; check the username and password of the iotgw-redis node`, { cause: this.refused });
  }

  /**
   * Runs `fn` on the client; on a connection error waits for the connection and runs it
   * again, until `timeoutMs` has passed: then SHARED_STATE. `fn` must be safe to run twice
   * (its reply may have been lost after it ran). A refused login fails at once.
   */
  async run<T>(what: string, fn: (r: Redis) => Promise<T>, opts: RunOptions): Promise<T> {
    const deadline = Date.now() + Math.max(0, opts.timeoutMs);
    let lastErr: unknown;
    for (;;) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      if (this.closed) throw new GatewayError('SHARED_STATE', `${this.label}: the Redis connection was closed (${what})`);
      if (this.refused && !this.ready) throw this.refusedError(what);
      if (this.fault && Date.now() < this.fault.until) throw this.fault.err;
      if (this.ready) {
        try {
          return await fn(this.client);
        } catch (err) {
          if (err instanceof WrongReplyError) throw this.dropAfterWrongReply(err);
          if (!isConnectionError(err)) throw err;
          if (isAuthError(err)) {
            this.refused = err as Error;
            throw this.refusedError(what);
          }
          lastErr = err;
          // The client may still say "ready" for a moment after its socket died: wait a
          // timer's turn, so that ioredis sees the close (a loop of resolved promises alone
          // would hold the event loop, and every other node, until the deadline).
          await pause(Math.min(50, Math.max(0, deadline - Date.now())));
        }
      }
      if (Date.now() >= deadline) break;
      const ok = await this.waitReady(Math.min(deadline, Date.now() + 250), opts.signal);
      if (!ok && Date.now() >= deadline) break;
      if (!ok) continue;
    }
    const why = lastErr instanceof Error ? ` (${lastErr.message})` : '';
    throw new GatewayError(
      'SHARED_STATE',
      `${this.label}: the shared state in Redis could not be reached within ${Math.round(opts.timeoutMs / 100) / 10} s${why} while ${what}; check that Redis is running and the iotgw-redis node's settings`,
      { cause: lastErr },
    );
  }

  /** Runs `check` on a reply taken outside run() (a pipeline's first reply): a wrong type is SHARED_STATE, as in run(). */
  checkReply<T>(check: () => T): T {
    try {
      return check();
    } catch (err) {
      if (err instanceof WrongReplyError) throw this.dropAfterWrongReply(err);
      throw err;
    }
  }

  /** The connection's replies may be out of step: it is dropped, and made again after the pause. */
  private dropAfterWrongReply(e: WrongReplyError): SharedStateError {
    const err = this.noteWrongReply(e);
    if (this.client.status === 'ready') this.client.disconnect(true);
    return err;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      await this.client.quit();
    } catch {
      this.client.disconnect();
    }
  }
}

/**
 * The connection of one `iotgw-redis` node: opened with its first user, closed with its
 * last (as the MQTT broker node shares one connection).
 */
export class SharedRedis {
  private conn: RedisConnection | undefined;
  private readonly users = new Set<string>();

  constructor(private readonly make: () => RedisConnection) {}

  get userCount(): number {
    return this.users.size;
  }

  get current(): RedisConnection | undefined {
    return this.conn;
  }

  register(userId: string): RedisConnection {
    this.users.add(userId);
    if (!this.conn) this.conn = this.make();
    return this.conn;
  }

  async deregister(userId: string): Promise<void> {
    this.users.delete(userId);
    if (this.users.size === 0 && this.conn) {
      const c = this.conn;
      this.conn = undefined;
      await c.close();
    }
  }

  async close(): Promise<void> {
    this.users.clear();
    const c = this.conn;
    this.conn = undefined;
    if (c) await c.close();
  }
}
