/**
 * The settings of a Redis connection and the ioredis client they make, per mode
 * (standalone, sentinel, cluster): the URL and host:port checks, the address shown in
 * messages, the client options, and the cluster's key slots.
 *
 * ioredis is set up so that a command never runs late behind its caller's back: no offline
 * queue, and commands in flight when the connection drops are failed, not resent.
 */
import type { ConnectionOptions } from 'node:tls';
import { isIP } from 'node:net';
import type Redis from 'ioredis';
import { GatewayError } from '../../common/errors';
import { checkSlotsOfDuplicates, guardedConnectors, type ConnectorHooks } from './connectors';

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

/** The address of a Redis URL without user or password, for messages. */
export function redisAddress(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname && u.pathname !== '/' ? u.pathname : ''}`;
  } catch {
    return 'redis (unparsable URL)';
  }
}

/** What a connection talks to, for messages (never a credential). */
export function connectionAddress(opts: RedisConnectionOptions): string {
  const list = (hosts: HostPort[] | undefined) => (hosts ?? []).map((h) => `${h.host}:${h.port}`).join(', ');
  if (opts.mode === 'sentinel') return `sentinel "${opts.masterName ?? 'mymaster'}" via ${list(opts.sentinels)}`;
  if (opts.mode === 'cluster') return `cluster ${list(opts.nodes)}`;
  return redisAddress(opts.url);
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

/** How long to wait before reconnect attempt `times`; null: no more attempts. */
export type RetryStrategy = (times: number) => number | null;

/**
 * A new ioredis client for the mode of `opts` (a cluster client in cluster mode), reconnecting
 * with `retry`; every socket it opens (sentinels and slot refreshes included) goes through
 * `hooks` (connectors.ts).
 */
export function createClient(opts: RedisConnectionOptions, retry: RetryStrategy, hooks: ConnectorHooks): Redis {
  const u = new URL(opts.url);
  // SNI names a host, never an address (RFC 6066: Node warns and will ignore it).
  const sni = opts.tls?.servername ?? (isIP(u.hostname.replace(/^\[|\]$/g, '')) ? undefined : u.hostname);
  const tls = u.protocol === 'rediss:' ? { ...(opts.tls ?? {}), ...(sni ? { servername: sni } : {}) } : undefined;
  const connectors = guardedConnectors(hooks);
  const common = {
    Connector: connectors.standalone,
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
  const R = loadRedis();
  if (opts.mode === 'cluster') {
    const client = clusterClient(R, opts.nodes ?? [], common, retry);
    client.on('+node', (r: Redis) => checkSlotsOfDuplicates(r, hooks.wrongReply));
    return client;
  }
  let client: Redis;
  if (opts.mode === 'sentinel') {
    const db = /^\/(\d{1,2})$/.exec(u.pathname)?.[1];
    const where = {
      sentinels: opts.sentinels ?? [],
      name: opts.masterName ?? 'mymaster',
      role: 'master' as const,
      ...(opts.sentinelPassword ? { sentinelPassword: opts.sentinelPassword } : {}),
      ...(tls ? { enableTLSForSentinelMode: true } : {}),
      sentinelRetryStrategy: retry,
      failoverDetector: true,
      ...(db ? { db: Number(db) } : {}),
    };
    client = new R({ ...common, ...where, Connector: connectors.sentinel, retryStrategy: retry, lazyConnect: false });
  } else {
    client = new R(opts.url, { ...common, retryStrategy: retry, lazyConnect: false });
  }
  return client;
}

/** A cluster client: masters only, following redirections and failovers. */
function clusterClient(R: typeof Redis, nodes: HostPort[], redisOptions: object, retry: RetryStrategy): Redis {
  const Cluster = (R as unknown as { Cluster: new (nodes: HostPort[], o: object) => Redis }).Cluster;
  return new Cluster(nodes, {
    redisOptions,
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
}
