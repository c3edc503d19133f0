/**
 * `iotgw-redis`: a Redis server shared by several Node-RED instances (issue 19). One
 * connection per config node, opened when the first account registers and closed with its
 * last user, like the MQTT broker node shares one connection. The accounts that name it
 * (`iotgw-gateway`, `iotgw-app` with `redis` set) keep their rate budget, token, feed leases
 * and marks in it.
 */
import type { Node, NodeAPI, NodeDef } from 'node-red';
import { GatewayError, quote } from '../lib/common/errors';
import { markSettingError } from '../lib/common/setting-error';
import { resolveCredential } from '../lib/node-red/node-kit';
import { tlsFromConfigNode } from '../lib/node-red/tls';
import { RedisConnection, SharedRedis, checkRedisUrl, parseHostPorts, redisAddress, type HostPort, type RedisMode } from '../lib/account/redis/connection';
import { redisSharedState, type RedisAccountSettings } from '../lib/account/redis/shared-state';
import { provideSharedState } from '../lib/account/shared';
import type { AccountKey } from '../lib/account/types';

/** The limits of an account as its config node read them (gateway: SEND, GET and INFO; app: APP). */
function accountSettings(RED: NodeAPI, account: AccountKey): RedisAccountSettings {
  const n = RED.nodes.getNode(account.id) as (Node & { settings?: Record<string, unknown> }) | null;
  const s = n?.settings ?? {};
  const num = (k: string, d: number) => (typeof s[k] === 'number' && Number.isFinite(s[k]) ? (s[k] as number) : d);
  const limit = { calls: num('rateLimitCalls', 5), windowMs: num('rateLimitWindowMs', 60_000) };
  return {
    groups: account.kind === 'app' ? { APP: limit } : { SEND: limit, GET: limit, INFO: { calls: num('infoRateLimitCalls', limit.calls), windowMs: limit.windowMs } },
    maxConcurrent: num('maxConcurrent', 3),
    timeoutMs: num('timeoutMs', 30_000),
    ...leaseSetting(RED),
  };
}

/**
 * settings.js `iotgwRedisLeaseSeconds` (1 to 600): the lifetime of every lease the Redis shared
 * state takes (a feed's active poller, an outbox's drainer, a concurrency slot), which is also how
 * long a holder that found its feed's mark gone waits for the others'. Absent or out of range: the
 * defaults (10 s, a concurrency slot 15 s).
 */
function leaseSetting(RED: NodeAPI): { leaseMs?: number } {
  const v = (RED.settings as unknown as { iotgwRedisLeaseSeconds?: unknown }).iotgwRedisLeaseSeconds;
  return typeof v === 'number' && Number.isFinite(v) && v >= 1 && v <= 600 ? { leaseMs: Math.round(v * 1000) } : {};
}

export interface RedisConfig extends NodeDef {
  url?: string;
  keyPrefix?: string;
  tls?: string;
  /** Added by issue 28; absent in older flows (then standalone). */
  mode?: string;
  sentinels?: string;
  masterName?: string;
  nodes?: string;
}

export interface RedisCredentials {
  username?: string;
  password?: string;
  sentinelPassword?: string;
}

export interface RedisSettings {
  url: string;
  keyPrefix: string;
  /** Absent: standalone (the settings of a standalone node are url and keyPrefix only). */
  mode?: RedisMode;
  sentinels?: HostPort[];
  masterName?: string;
  nodes?: HostPort[];
}

export interface RedisConfigNode extends Node<RedisCredentials> {
  settings: RedisSettings;
  /** Registers `user` and returns the shared connection (opened with its first user). */
  register(user: Node | { id: string }): RedisConnection;
  /** Deregisters `user`; the connection closes with its last user. */
  deregister(user: Node | { id: string }): Promise<void>;
  /** The number of registered users (tests). */
  userCount(): number;
  /** Which node is master now (host:port; in cluster mode every master, or the one holding `key`), undefined while unknown. */
  master(key?: string): string | undefined;
}

export const REDIS_DEFAULTS: RedisSettings = { url: 'redis://127.0.0.1:6379/0', keyPrefix: 'iotgw:' };

/** Resolves `${ENV}` and defaults, and checks the URL and the prefix. */
export function redisSettings(config: RedisConfig, resolve: (v: string) => string = (v) => v): RedisSettings {
  const url = resolve(String(config.url ?? '').trim()).trim() || REDIS_DEFAULTS.url;
  checkRedisUrl(url);
  const rawPrefix = config.keyPrefix === undefined || config.keyPrefix === null ? REDIS_DEFAULTS.keyPrefix : String(config.keyPrefix);
  const keyPrefix = resolve(rawPrefix.trim());
  if (keyPrefix.length > 64 || /[{}\s]/.test(keyPrefix)) {
    throw new GatewayError('BAD_INPUT', 'keyPrefix: at most 64 characters, no braces and no spaces (for example iotgw:)', { field: 'keyPrefix' });
  }
  const mode = String(config.mode ?? '').trim() || 'standalone';
  if (mode !== 'standalone' && mode !== 'sentinel' && mode !== 'cluster') {
    throw new GatewayError('BAD_INPUT', `mode: "${mode.slice(0, 20)}" is not allowed; use standalone, sentinel or cluster`, { field: 'mode' });
  }
  const masterName = resolve(String(config.masterName ?? '').trim()).trim() || 'mymaster';
  if (mode === 'sentinel' && !/^[A-Za-z0-9._-]{1,64}$/.test(masterName)) {
    throw new GatewayError('BAD_INPUT', 'masterName: letters, digits, ".", "_" and "-" only (for example mymaster)', { field: 'masterName' });
  }
  const sentinels = mode === 'sentinel' ? parseHostPorts('sentinels', resolve(String(config.sentinels ?? '').trim())) : [];
  const nodes = mode === 'cluster' ? parseHostPorts('nodes', resolve(String(config.nodes ?? '').trim())) : [];
  if (mode === 'cluster' && !/^\/?(0)?$/.test(new URL(url).pathname)) {
    throw new GatewayError('BAD_INPUT', 'url: a cluster has database 0 only; end the URL with /0 or nothing', { field: 'url' });
  }
  if (mode === 'sentinel') return { url, keyPrefix, mode, sentinels, masterName };
  if (mode === 'cluster') return { url, keyPrefix, mode, nodes };
  return { url, keyPrefix };
}

type Env = (v: string) => string;

/** node.settings from the config; a bad setting is logged and kept for every use to throw. */
function readRedisSettings(node: RedisConfigNode, config: RedisConfig, label: string, env: Env): GatewayError | undefined {
  try {
    node.settings = redisSettings(config, env);
    return undefined;
  } catch (err) {
    const configError = markSettingError(err as GatewayError);
    node.settings = { ...REDIS_DEFAULTS };
    node.error(`${label}: ${configError.message}`);
    return configError;
  }
}

/** Says an outage once (not once per reconnect attempt; never the URL's credentials), and its end. */
function watchConnection(node: RedisConfigNode, label: string, conn: RedisConnection): void {
  let warned = false;
  conn.on('failure', (err: Error) => {
    if (warned) return;
    warned = true;
    node.warn(`${label}: Redis at ${conn.address} cannot be reached (${quote(err.message)}); reconnecting`);
  });
  conn.on('up', () => {
    // After a failover: the one "reachable again", naming the new master.
    const master = conn.mode === 'standalone' ? '' : conn.master() ? `; master now ${conn.master()}` : '';
    if (warned) node.log(`${label}: Redis at ${conn.address} is reachable again${master}`);
    warned = false;
  });
  // A reply past the bound or of the wrong type (not our Redis, or a broken one): one warning per connection object.
  conn.on('oversize', (err: Error) => node.warn(`${label}: ${err.message}`));
  conn.on('misbehaved', (err: Error) => node.warn(`${label}: ${err.message}`));
  // After a failover that left no replica: writes are acknowledged by the master alone until one joins.
  conn.on('alone', (master: string) =>
    node.warn(`${label}: the Redis master ${master} has no replica online; writes are acknowledged by the master alone until one joins (a failover meanwhile may lose the last writes)`),
  );
  conn.on('replicated', (master: string) => node.log(`${label}: a replica of the Redis master ${master} acknowledges writes again`));
}

/** The connection, as the settings and credentials say (opened with the first user). */
function openConnection(node: RedisConfigNode, label: string, env: Env, tls: ReturnType<typeof tlsFromConfigNode>): RedisConnection {
  const conn = new RedisConnection({
    url: node.settings.url,
    keyPrefix: node.settings.keyPrefix,
    username: env(node.credentials?.username ?? ''),
    password: env(node.credentials?.password ?? ''),
    tls,
    mode: node.settings.mode ?? 'standalone',
    sentinels: node.settings.sentinels ?? [],
    masterName: node.settings.masterName ?? 'mymaster',
    sentinelPassword: env(node.credentials?.sentinelPassword ?? ''),
    nodes: node.settings.nodes ?? [],
    ...(node.settings.mode ? {} : { label: `redis ${redisAddress(node.settings.url)}` }),
  });
  watchConnection(node, label, conn);
  return conn;
}

/** The account factory asks this resolver for every account; it answers for those naming this node. Returns the undo. */
function provideRedisState(RED: NodeAPI, node: RedisConfigNode, shared: SharedRedis, configError: GatewayError | undefined): () => void {
  const instanceId = `${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  return provideSharedState((account, cfg) => {
    if (cfg.redis !== node.id) return undefined;
    // A broken Redis node never means "in-process" for its accounts (the fleet would go
    // over the limits): their requests fail with its error (BAD_INPUT naming the field).
    if (configError) {
      const err = configError;
      return {
        rateBudget: () => {
          throw err;
        },
      };
    }
    const conn = shared.register(`${account.kind}:${account.id}`);
    return redisSharedState(conn, (a) => accountSettings(RED, a), instanceId);
  });
}

function startRedis(RED: NodeAPI, node: RedisConfigNode, config: RedisConfig): void {
  const label = `iotgw-redis "${config.name || node.id}"`;
  const env: Env = (v) => resolveCredential(RED, node, v);
  const configError = readRedisSettings(node, config, label, env);
  const tls = tlsFromConfigNode(RED, node, config.tls, label);
  const shared = new SharedRedis(() => openConnection(node, label, env, tls));
  const unprovide = provideRedisState(RED, node, shared, configError);

  node.register = (user) => {
    if (configError) throw configError;
    return shared.register(user.id);
  };
  node.deregister = (user) => shared.deregister(user.id);
  node.userCount = () => shared.userCount;
  node.master = (key) => shared.current?.master(key);

  node.on('close', (_removed: boolean, done: () => void) => {
    unprovide();
    void shared.close().then(
      () => done(),
      () => done(),
    );
  });
}

export default function register(RED: NodeAPI): void {
  function IotgwRedisNode(this: RedisConfigNode, config: RedisConfig) {
    RED.nodes.createNode(this, config);
    startRedis(RED, this, config);
  }

  RED.nodes.registerType('iotgw-redis', IotgwRedisNode as unknown as (this: Node, config: NodeDef) => void, {
    credentials: {
      username: { type: 'text' },
      password: { type: 'password' },
      sentinelPassword: { type: 'password' },
    },
  });
}

/** Looks up an `iotgw-redis` node by id (an account's optional `redis` property); undefined when unset. */
export function getRedis(RED: NodeAPI, id: string | undefined): RedisConfigNode | undefined {
  if (!id) return undefined;
  const n = RED.nodes.getNode(id) as RedisConfigNode | null;
  if (!n || typeof n.register !== 'function') {
    throw new GatewayError('BAD_INPUT', 'redis: the selected iotgw-redis config node does not exist; choose one or clear the field', { field: 'redis' });
  }
  return n;
}
