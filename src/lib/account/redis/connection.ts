/**
 * One connection to a Redis server, shared by every account that names the same
 * `iotgw-redis` config node (closed with its last user), and the retry loop every Redis
 * call of the account layer goes through.
 *
 * ioredis is set up so that a command never runs late behind its caller's back: no
 * offline queue, and commands in flight when the connection drops are failed, not resent.
 * `run()` instead waits for the connection (reconnects are automatic, with back-off) up
 * to the caller's deadline, then fails with SHARED_STATE.
 */
import { EventEmitter } from 'node:events';
import type { ConnectionOptions } from 'node:tls';
import type Redis from 'ioredis';
import type { Duplex } from 'node:stream';
import { GatewayError } from '../../common/errors';
import { guardStream } from './reply-guard';

/**
 * ioredis, loaded on the first connection: a Node-RED whose flows use no iotgw-redis node
 * never loads it.
 */
let RedisClass: typeof Redis | undefined;
function loadRedis(): typeof Redis {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (RedisClass ??= (require('ioredis') as { default: typeof Redis }).default);
}

export type RedisMode = 'standalone' | 'sentinel' | 'cluster';

export interface HostPort {
  host: string;
  port: number;
}

export interface RedisConnectionOptions {
  /** `redis://[user@]host:port/db` or `rediss://...` (TLS). In sentinel mode its scheme and database apply; in cluster mode its scheme. */
  url: string;
  keyPrefix?: string;
  username?: string;
  password?: string;
  /** TLS options (from a tls-config node) for `rediss://`. */
  tls?: ConnectionOptions;
  /** Label for logs and errors (never holds a credential). */
  label?: string;
  /** Per-command timeout, ms (a half-open connection must not hang a caller). */
  commandTimeoutMs?: number;
  /** Default standalone (the url). */
  mode?: RedisMode;
  /** Sentinel mode: the sentinels. */
  sentinels?: HostPort[];
  /** Sentinel mode: the monitored master's name. */
  masterName?: string;
  sentinelPassword?: string;
  /** Cluster mode: some of the cluster's nodes. */
  nodes?: HostPort[];
  /** A reply larger than this closes the connection (default 8 MiB). */
  maxReplyBytes?: number;
  /** How long a write waits for a replica's acknowledgement (sentinel, cluster), ms. Default 2 s. */
  replicaAckMs?: number;
}

export interface RunOptions {
  /** How long to wait for Redis in all (ms). */
  timeoutMs: number;
  signal?: AbortSignal;
}

/** Our largest real reply is a few kB (a mark with its keys, a token): 8 MiB is far above it. */
export const MAX_REPLY_BYTES = 8 * 1024 * 1024;

/** Parses "host:port, host:port" (sentinels, cluster nodes); throws BAD_INPUT naming `field`. */
export function parseHostPorts(field: string, value: string): HostPort[] {
  const list = String(value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (!list.length) throw new GatewayError('BAD_INPUT', `${field}: give host:port of at least one, comma-separated (for example 10.0.0.1:26379, 10.0.0.2:26379)`, { field });
  return list.map((hp) => {
    const m = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9._-]+):(\d{1,5})$/.exec(hp);
    const port = m ? Number(m[2]) : 0;
    if (!m || port < 1 || port > 65535) throw new GatewayError('BAD_INPUT', `${field}: "${hp.slice(0, 60)}" is not host:port`, { field });
    return { host: m[1]!.replace(/^\[|\]$/g, ''), port };
  });
}

/** The CRC16 hash slot of a key (Redis Cluster), honouring a {hash tag}. */
export function keySlot(key: string): number {
  let k = key;
  const open = k.indexOf('{');
  if (open >= 0) {
    const close = k.indexOf('}', open + 1);
    if (close > open + 1) k = k.slice(open + 1, close);
  }
  let crc = 0;
  for (const b of Buffer.from(k, 'utf8')) {
    crc ^= b << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16384;
}

/** A refused login (wrong password or user): not a fault that reconnecting mends. */
export function isAuthError(err: unknown): boolean {
  return err instanceof Error && /^(WRONGPASS|NOAUTH)|invalid (username-)?password/i.test(err.message);
}

/** The address of a Redis URL without user or password, for messages. */
export function redisAddress(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname && u.pathname !== '/' ? u.pathname : ''}`;
  } catch {
    return 'redis (unparsable URL)';
  }
}

export function checkRedisUrl(url: string): void {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new GatewayError('BAD_INPUT', 'url: not a URL; use redis://host:6379/0 or rediss://host:6380/0', { field: 'url' });
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') {
    throw new GatewayError('BAD_INPUT', `url: "${u.protocol}" is not allowed; use redis:// or rediss:// (TLS)`, { field: 'url' });
  }
  if (u.password) {
    throw new GatewayError('BAD_INPUT', "url: holds a password, which would be stored in clear in the flow file; remove it from the URL and put it in the iotgw-redis node's Password field", { field: 'url' });
  }
  if (u.pathname && u.pathname !== '/' && !/^\/\d{1,2}$/.test(u.pathname)) {
    throw new GatewayError('BAD_INPUT', 'url: the path must be a database number such as /0', { field: 'url' });
  }
}

/** SHARED_STATE with a reason ('fenced', 'generation', 'unacknowledged'). */
export class SharedStateError extends GatewayError {
  readonly reason: string;
  constructor(message: string, reason: string) {
    super('SHARED_STATE', message);
    this.reason = reason;
  }
}

/** Errors of the connection (retry), as opposed to a script's own reply errors (do not). */
export function isConnectionError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
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

  constructor(opts: RedisConnectionOptions) {
    super();
    checkRedisUrl(opts.url);
    this.keyPrefix = opts.keyPrefix ?? 'iotgw:';
    this.mode = opts.mode ?? 'standalone';
    this.replicated = this.mode !== 'standalone';
    this.replicaAckMs = opts.replicaAckMs ?? 2000;
    const u = new URL(opts.url);
    this.address =
      this.mode === 'sentinel'
        ? `sentinel "${opts.masterName ?? 'mymaster'}" via ${(opts.sentinels ?? []).map((h) => `${h.host}:${h.port}`).join(', ')}`
        : this.mode === 'cluster'
          ? `cluster ${(opts.nodes ?? []).map((h) => `${h.host}:${h.port}`).join(', ')}`
          : redisAddress(opts.url);
    this.label = opts.label ?? `redis ${this.address}`;
    const tls = u.protocol === 'rediss:' ? { ...(opts.tls ?? {}), servername: opts.tls?.servername ?? u.hostname } : undefined;
    const db = /^\/(\d{1,2})$/.exec(u.pathname)?.[1];
    const common = {
      ...(opts.username ? { username: opts.username } : {}),
      ...(opts.password ? { password: opts.password } : {}),
      ...(tls ? { tls } : {}),
      enableOfflineQueue: false,
      autoResendUnfulfilledCommands: false,
      maxRetriesPerRequest: 0,
      connectTimeout: 5000,
      commandTimeout: opts.commandTimeoutMs ?? 5000,
      // A replica promoted meanwhile, or a master turned replica: reconnect (never resend).
      reconnectOnError: (err: Error) => /^READONLY|^MASTERDOWN/.test(err.message),
    };
    // Reconnect forever with back-off: 50 ms, 100 ms ... at most 1 s; a refused login
    // (wrong password) backs off to 30 s: no reconnect storm against the server.
    const retry = (times: number) => (this.closed ? null : this.refused ? Math.min(2000 * 2 ** Math.min(this.refusals, 4), 30_000) : Math.min(times * 50, 1000));
    const maxReply = opts.maxReplyBytes ?? MAX_REPLY_BYTES;
    let tripWarned = false;
    const guard = (r: Redis) =>
      r.on('connect', () => {
        const stream = (r as unknown as { stream?: Duplex }).stream;
        if (!stream) return;
        guardStream(stream, {
          maxBytes: maxReply,
          onTrip: (why) => {
            if (tripWarned) return;
            tripWarned = true;
            this.emit('oversize', new GatewayError('SHARED_STATE', `${this.label}: Redis sent ${why}; the connection was closed (a real reply of ours is a few kB: is this address really our Redis?)`));
          },
        });
      });
    const R = loadRedis();
    if (this.mode === 'cluster') {
      const Cluster = (R as unknown as { Cluster: new (nodes: HostPort[], o: object) => Redis }).Cluster;
      this.client = new Cluster(opts.nodes ?? [], {
        redisOptions: common,
        enableOfflineQueue: false,
        scaleReads: 'master',
        maxRedirections: 16,
        retryDelayOnFailover: 200,
        retryDelayOnClusterDown: 200,
        retryDelayOnTryAgain: 200,
        slotsRefreshTimeout: 2000,
        slotsRefreshInterval: 2000,
        clusterRetryStrategy: retry,
      });
      this.client.on('+node', (r: Redis) => guard(r));
      // One node failing is an outage of its slots: told once; a new slot owner ends it.
      this.client.on('node error', (err: Error) => {
        if (isAuthError(err)) {
          this.refused = err;
          this.refusals++;
        }
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
    } else {
      const where =
        this.mode === 'sentinel'
          ? {
              sentinels: opts.sentinels ?? [],
              name: opts.masterName ?? 'mymaster',
              role: 'master' as const,
              ...(opts.sentinelPassword ? { sentinelPassword: opts.sentinelPassword } : {}),
              ...(tls ? { enableTLSForSentinelMode: true } : {}),
              sentinelRetryStrategy: retry,
              failoverDetector: true,
              ...(db ? { db: Number(db) } : {}),
            }
          : undefined;
      this.client = where ? new R({ ...common, ...where, retryStrategy: retry, lazyConnect: false }) : new R(opts.url, { ...common, retryStrategy: retry, lazyConnect: false });
      guard(this.client);
    }
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
    // ioredis reports every failed attempt; the owner logs one warning per outage ('down').
    this.client.on('error', (err: Error) => {
      const e = (err as { lastNodeError?: Error }).lastNodeError ?? err;
      if (isAuthError(e)) {
        this.refused = e;
        this.refusals++;
      }
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
   * replica (WAIT 1), in sentinel and cluster mode; at once in standalone mode. Rejects
   * with SHARED_STATE (reason 'unacknowledged') when no replica acknowledged in time.
   * `read` (optional) runs in the same round trip, before the WAIT, and its reply is returned.
   */
  async acknowledged<T = unknown>(what: string, key: string, timeoutMs: number, read?: (p: ReturnType<Redis['pipeline']>) => void): Promise<T | undefined> {
    if (!this.replicated) return undefined;
    const r = await this.run(
      what,
      async (c) => {
        const p = c.pipeline();
        // A keyed command first: in cluster mode it sends the pipeline (and its WAIT) to the key's master.
        if (read) read(p);
        else p.exists(key);
        p.wait(1, this.replicaAckMs);
        const res = (await p.exec()) ?? [];
        for (const [err] of res) if (err) throw err;
        return res;
      },
      { timeoutMs },
    );
    const acks = Number(r[r.length - 1]?.[1] ?? 0);
    if (!(acks >= 1)) {
      throw new SharedStateError(`${this.label}: no replica acknowledged the write within ${this.replicaAckMs} ms while ${what}; nothing is emitted until one does (is a replica running?)`, 'unacknowledged');
    }
    return r[0]?.[1] as T;
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
      if (this.ready) {
        try {
          return await fn(this.client);
        } catch (err) {
          if (!isConnectionError(err)) throw err;
          if (isAuthError(err)) {
            this.refused = err as Error;
            throw this.refusedError(what);
          }
          lastErr = err;
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
