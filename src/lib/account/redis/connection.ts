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
import { GatewayError } from '../../common/errors';

/**
 * ioredis, loaded on the first connection: a Node-RED whose flows use no iotgw-redis node
 * never loads it.
 */
let RedisClass: typeof Redis | undefined;
function loadRedis(): typeof Redis {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (RedisClass ??= (require('ioredis') as { default: typeof Redis }).default);
}

export interface RedisConnectionOptions {
  /** `redis://[user@]host:port/db` or `rediss://...` (TLS). */
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
}

export interface RunOptions {
  /** How long to wait for Redis in all (ms). */
  timeoutMs: number;
  signal?: AbortSignal;
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
  if (u.pathname && u.pathname !== '/' && !/^\/\d{1,2}$/.test(u.pathname)) {
    throw new GatewayError('BAD_INPUT', 'url: the path must be a database number such as /0', { field: 'url' });
  }
}

/** Errors of the connection (retry), as opposed to a script's own reply errors (do not). */
export function isConnectionError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err.name === 'ReplyError') return /^(LOADING|BUSY|TRYAGAIN|CLUSTERDOWN|MASTERDOWN|READONLY)/.test(err.message);
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
  private closed = false;
  private wasReady = false;

  constructor(opts: RedisConnectionOptions) {
    super();
    checkRedisUrl(opts.url);
    this.keyPrefix = opts.keyPrefix ?? 'iotgw:';
    this.address = redisAddress(opts.url);
    this.label = opts.label ?? `redis ${this.address}`;
    const u = new URL(opts.url);
    const tls = u.protocol === 'rediss:' ? { ...(opts.tls ?? {}), servername: opts.tls?.servername ?? u.hostname } : undefined;
    this.client = new (loadRedis())(opts.url, {
      ...(opts.username ? { username: opts.username } : {}),
      ...(opts.password ? { password: opts.password } : {}),
      ...(tls ? { tls } : {}),
      enableOfflineQueue: false,
      autoResendUnfulfilledCommands: false,
      maxRetriesPerRequest: 0,
      connectTimeout: 5000,
      commandTimeout: opts.commandTimeoutMs ?? 5000,
      // Reconnect forever with back-off: 50 ms, 100 ms ... at most 1 s.
      retryStrategy: (times: number) => (this.closed ? null : Math.min(times * 50, 1000)),
      lazyConnect: false,
    });
    this.client.on('ready', () => {
      this.wasReady = true;
      this.emit('up');
    });
    this.client.on('close', () => {
      if (this.wasReady) this.emit('down');
      this.wasReady = false;
    });
    // ioredis reports every failed attempt; the owner logs one warning per outage ('down').
    this.client.on('error', (err: Error) => this.emit('failure', err));
  }

  get ready(): boolean {
    return this.client.status === 'ready';
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

  /**
   * Runs `fn` on the client; on a connection error waits for the connection and runs it
   * again, until `timeoutMs` has passed: then SHARED_STATE. `fn` must be safe to run twice
   * (its reply may have been lost after it ran).
   */
  async run<T>(what: string, fn: (r: Redis) => Promise<T>, opts: RunOptions): Promise<T> {
    const deadline = Date.now() + Math.max(0, opts.timeoutMs);
    let lastErr: unknown;
    for (;;) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      if (this.closed) throw new GatewayError('SHARED_STATE', `${this.label}: the Redis connection was closed (${what})`);
      if (this.ready) {
        try {
          return await fn(this.client);
        } catch (err) {
          if (!isConnectionError(err)) throw err;
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
      `${this.label}: the shared state in Redis could not be reached within ${Math.round(opts.timeoutMs / 100) / 10} s${why} while ${what}; check that Redis is running and the iotgw-redis node's URL`,
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
