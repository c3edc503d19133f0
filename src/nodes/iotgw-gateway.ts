/**
 * `iotgw-gateway`: one account on the gateway (areas a, b, c). It owns the account's
 * ApiClient (one undici dispatcher, the rate limiters of the throttle groups, the
 * concurrency cap), its bearer token and the broker headers. Every node of the account
 * shares them, like the MQTT broker node shares one connection.
 */
import type { Node, NodeAPI, NodeDef } from 'node-red';
import { ApiClient, checkBaseUrl } from '../lib/transport/http';
import { tlsFromConfigNode } from '../lib/node-red/tls';
import { ClientCredentialsBearer, StaticBearer, StaticHeaders, TokenHeaders, oauthClientCredentials, type CachedToken } from '../lib/account/auth';
import { resolveGatewayBase, trimBase } from '../lib/transport/endpoints';
import { TERMINAL_PATHS, isThrottleReply } from '../lib/api/terminal';
import { GatewayError } from '../lib/common/errors';
import { markSettingError } from '../lib/common/setting-error';
import { numberSetting, resolveCredential } from '../lib/node-red/node-kit';
import { ErrorCatalogue } from '../lib/api/catalogue';
import { credentialDigest, tokenIdentity } from '../lib/account/redis/keys';
import { createAccount } from '../lib/account/account';
import type { GatewayCredentials, GatewayNode, GatewaySettings } from '../lib/node-red/config-nodes';
import { ConnectionTest, dialogCredentials, envValue, type DialogValues, type TestConnectionResult } from '../lib/node-red/test-connection';

export interface GatewayConfig extends NodeDef {
  baseUrl: string;
  apiVersion: string;
  rateLimitCalls: number | string;
  /** Calls per window of the INFO group (info/*); absent or "": rateLimitCalls. */
  infoRateLimitCalls?: number | string;
  rateLimitWindowSeconds: number | string;
  maxConcurrent: number | string;
  maxBatchSize: number | string;
  timeoutSeconds: number | string;
  maxRetries?: number | string;
  maxQueue?: number | string;
  tls?: string;
  brokerBaseUrl?: string;
  brokerTokenUrl?: string;
}

export type { GatewayCredentials, GatewaySettings, GatewayNode } from '../lib/node-red/config-nodes';

type TlsOptions = ReturnType<typeof tlsFromConfigNode>;

/** Fills in properties that older saved flows may lack (tested in test/migrate.test.js). */
export function migrateGatewayConfig(config: Partial<GatewayConfig>): GatewayConfig {
  return {
    apiVersion: '1.0',
    rateLimitCalls: 5,
    rateLimitWindowSeconds: 60,
    maxConcurrent: 3,
    maxBatchSize: 100,
    timeoutSeconds: 65,
    maxRetries: 3,
    maxQueue: 10000,
    ...config,
  } as GatewayConfig;
}

const absentSetting = (v: unknown) => v === undefined || v === null || (typeof v === 'string' && v.trim() === '');

export function gatewaySettings(config: GatewayConfig): GatewaySettings {
  const apiVersion = String(config.apiVersion ?? '1.0').trim() || '1.0';
  if (!/^[0-9A-Za-z.]{1,16}$/.test(apiVersion)) {
    throw new GatewayError('BAD_INPUT', `apiVersion: "${apiVersion.slice(0, 20)}" is not a version like 1.0`, { field: 'apiVersion' });
  }
  const rawBase = String(config.baseUrl ?? '').trim();
  if (!rawBase) throw new GatewayError('BAD_INPUT', 'baseUrl: required; set the gateway address in the config node', { field: 'baseUrl' });
  // With or without /api/v{version} and a trailing slash: the same endpoints.
  const resolved = resolveGatewayBase(rawBase, apiVersion);
  const brokerRaw = String(config.brokerBaseUrl ?? '').trim();
  const tokenRaw = String(config.brokerTokenUrl ?? '').trim();
  return {
    baseUrl: resolved.baseUrl,
    apiVersion: resolved.apiVersion,
    brokerBaseUrl: brokerRaw ? trimBase(brokerRaw, 'brokerBaseUrl') : '',
    brokerTokenUrl: tokenRaw ? checkBaseUrl(tokenRaw, 'brokerTokenUrl').href : '',
    rateLimitCalls: Math.round(numberSetting(config.rateLimitCalls, 5, 0, 100000)),
    infoRateLimitCalls: Math.round(numberSetting(absentSetting(config.infoRateLimitCalls) ? config.rateLimitCalls : config.infoRateLimitCalls, 5, 0, 100000)),
    rateLimitWindowMs: Math.round(numberSetting(config.rateLimitWindowSeconds, 60, 0, 86400) * 1000),
    maxConcurrent: Math.round(numberSetting(config.maxConcurrent, 3, 1, 1000)),
    maxBatchSize: Math.round(numberSetting(config.maxBatchSize, 100, 1, 100000)),
    timeoutMs: Math.round(numberSetting(config.timeoutSeconds, 65, 0.05, 3600) * 1000),
    maxRetries: Math.round(numberSetting(config.maxRetries, 3, 0, 100)),
    maxQueue: Math.round(numberSetting(config.maxQueue, 10000, 1, 10_000_000)),
  };
}

/** What the dialog's "test connection" button sends (POST /iotgw/test-connection). */
export interface TestConnectionRequest extends DialogValues<'clientId' | 'clientSecret' | 'token'> {
  baseUrl?: string;
  apiVersion?: string;
  timeoutSeconds?: number | string;
}

export type { TestConnectionResult } from '../lib/node-red/test-connection';

/**
 * One harmless call with the dialog's values, through a throwaway client (its own, not the
 * account's rate budget; no retries; at most 15 s): with a client ID and secret, the token
 * endpoint (POST auth/token); with a bearer token, GET info/service. The result never
 * carries a credential: errors say what failed as the nodes' errors do, and every secret
 * used is cut out of the text once more.
 */
export async function testConnection(RED: NodeAPI, req: TestConnectionRequest): Promise<TestConnectionResult> {
  const cred = dialogCredentials(RED, req);
  const id = cred('clientId');
  const secret = cred('clientSecret');
  const token = cred('token');
  const test = new ConnectionTest([secret, token]);
  let client: ApiClient | undefined;
  try {
    const s = gatewaySettings(migrateGatewayConfig({ baseUrl: envValue(req.baseUrl), apiVersion: envValue(req.apiVersion) || '1.0', timeoutSeconds: envValue(req.timeoutSeconds) || 65 }));
    const tlsNode = req.tls ? RED.nodes.getNode(req.tls) : null;
    const tls = tlsNode ? tlsFromConfigNode(RED, tlsNode, req.tls, 'iotgw-gateway (test connection)') : undefined;
    const path = (rest: string) => `/api/v${s.apiVersion}/${rest}`;
    client = new ApiClient({ label: `test ${new URL(s.baseUrl).host}`, baseUrl: s.baseUrl, timeoutMs: Math.min(s.timeoutMs, 15_000), maxConcurrent: 1, maxRetries: 0, tls });
    if (id && secret) {
      await new ClientCredentialsBearer(id, secret, path('auth/token')).headers(client);
      return test.result(true, `POST ${path('auth/token')}: the gateway accepted the client ID and secret and issued a token`);
    }
    if (token) {
      const res = await client.request({ method: 'GET', path: path('info/service'), auth: new StaticBearer(token, 'bearer token'), idempotent: true });
      const version = (res.body as { Version?: unknown } | null)?.Version;
      return test.result(true, `GET ${path('info/service')}: the gateway accepted the bearer token${typeof version === 'string' ? ` (service version ${version.slice(0, 20)})` : ''}`);
    }
    return test.result(false, 'credentials: give a client ID and secret, or a bearer token, to test the connection', 'BAD_INPUT');
  } catch (err) {
    return test.failed(err);
  } finally {
    await client?.close();
  }
}

/** What a gateway node opens besides its account: closed with it. */
interface BrokerHeld {
  token?: CachedToken;
  client?: ApiClient;
}

/** node.settings from the config; a bad setting is logged and kept for every call to throw. */
function readSettings(node: GatewayNode, config: GatewayConfig): GatewayError | undefined {
  let configError: GatewayError | undefined;
  try {
    node.settings = gatewaySettings(config);
  } catch (err) {
    configError = markSettingError(err as GatewayError);
    node.settings = gatewaySettings({ ...config, baseUrl: 'http://127.0.0.1', apiVersion: '1.0', brokerBaseUrl: '', brokerTokenUrl: '' });
    node.error(`iotgw-gateway "${config.name || node.id}": ${configError.message}`);
  }
  const inUrl = configError ? undefined : resolveGatewayBase(String(config.baseUrl), String(config.apiVersion ?? '1.0')).versionInUrl;
  if (inUrl && inUrl !== String(config.apiVersion ?? '1.0').trim()) {
    node.warn(`iotgw-gateway "${config.name || node.id}": the base URL holds /api/v${inUrl}; it is used instead of the API version setting ${config.apiVersion}`);
  }
  return configError;
}

type Cred = (k: keyof GatewayCredentials) => string;

/** The bearer token of areas a and c: client credentials, else a static token. */
function bearerAuth(node: GatewayNode, cred: Cred) {
  const token = cred('token');
  const id = cred('clientId');
  const secret = cred('clientSecret');
  if (id && secret) return new ClientCredentialsBearer(id, secret, node.apiPath(TERMINAL_PATHS.token));
  if (token) return new StaticBearer(token, 'bearer token');
  throw new GatewayError(
    'BAD_INPUT',
    'credentials: the config node has no bearer token and no client ID/secret; set one of them (${ENV_VAR} works)',
    { field: 'credentials' },
  );
}

/** The broker headers of area b: a fetched access token (cached in `held`), else a static one. */
function brokerAuth(node: GatewayNode, cred: Cred, tls: TlsOptions, held: BrokerHeld) {
  const id = cred('brokerClientId');
  const secret = cred('brokerClientSecret');
  if (id && secret && node.settings.brokerTokenUrl) {
    // The access token is fetched (client_credentials), cached and renewed after a 401.
    held.token ??= oauthClientCredentials({ tokenUrl: node.settings.brokerTokenUrl, clientId: id, clientSecret: secret, timeoutMs: node.settings.timeoutMs, tls });
    return new TokenHeaders(held.token, (t) => ({ client_id: id, access_token: t }), (h) => h.access_token, "Check the broker client ID, client secret and token URL in the config node's credentials.");
  }
  const token = cred('brokerAccessToken');
  if (!id || !token) {
    throw new GatewayError('BAD_INPUT', 'credentials: the LoRaWAN/SMS endpoints need the broker client ID and access token in the config node', {
      field: 'credentials',
    });
  }
  return new StaticHeaders({ client_id: id, access_token: token }, 'Check the broker client ID and access token in the config node\'s credentials.');
}

/** The account: its client, limiters and token, shared by every node that uses it. */
function openAccount(node: GatewayNode, rawConfig: GatewayConfig, configError: GatewayError | undefined, cred: Cred, tls: TlsOptions, held: BrokerHeld) {
  const s = node.settings;
  const limit = { calls: s.rateLimitCalls, windowMs: s.rateLimitWindowMs };
  return createAccount({
    kind: 'gateway',
    id: node.id,
    label: `gateway ${new URL(s.baseUrl).host}`,
    name: rawConfig.name,
    baseUrl: s.baseUrl,
    timeoutMs: s.timeoutMs,
    maxConcurrent: s.maxConcurrent,
    maxRetries: s.maxRetries,
    maxQueue: s.maxQueue,
    groups: { SEND: limit, GET: limit, INFO: { calls: s.infoRateLimitCalls, windowMs: s.rateLimitWindowMs } },
    tls,
    configError,
    throttled: isThrottleReply,
    principal: cred('clientId'),
    // Issue 25: keys follow the credentials (a static token's hash), the shared token the secret that fetched it.
    identity: () => (cred('clientId') ? '' : cred('token') ? tokenIdentity('token', cred('token')) : ''),
    binding: (name) =>
      name === 'broker'
        ? cred('brokerClientSecret') ? credentialDigest(`${cred('brokerClientId')}\n${node.settings.brokerTokenUrl}`, cred('brokerClientSecret')) : ''
        : cred('clientId') && cred('clientSecret') ? credentialDigest(cred('clientId'), cred('clientSecret')) : '',
    config: rawConfig as unknown as Record<string, unknown>,
    auth: { bearer: () => bearerAuth(node, cred), broker: () => brokerAuth(node, cred, tls, held) },
  });
}

/** Thin delegates to the account (what the nodes of the account call). */
function attachDelegates(node: GatewayNode, configError: GatewayError | undefined, tls: TlsOptions, held: BrokerHeld): void {
  const s = node.settings;
  node.client = () => node.account.client();
  node.bearerAuth = () => node.account.auth('bearer');
  node.brokerAuth = () => node.account.auth('broker');
  // The LoRaWAN/SMS endpoints: the account's client unless brokerBaseUrl names another host.
  node.brokerClient = () => {
    if (!s.brokerBaseUrl) return node.client();
    if (configError) throw configError;
    held.client ??= new ApiClient({ label: `broker ${new URL(s.brokerBaseUrl).host}`, baseUrl: s.brokerBaseUrl, timeoutMs: s.timeoutMs, maxConcurrent: s.maxConcurrent, maxRetries: s.maxRetries, maxQueue: s.maxQueue, tls, observer: node.account.watch });
    return held.client;
  };
  node.catalogue = new ErrorCatalogue(() => ({ client: node.client(), auth: node.bearerAuth(), path: node.apiPath(TERMINAL_PATHS.errorCodes) }));
  node.statusFeed = node.account.statusFeed;
}

/** The nodes that use the account register and deregister; the status pollers are counted. */
function attachUsers(node: GatewayNode): void {
  const users = new Set<string>();
  node.pollers = new Set();
  node.register = (user: Node) => {
    users.add(user.id);
    if (user.type === 'iotgw-status-poller') node.pollers.add(user.id);
    node.statusFeed.emit('pollers', node.pollers.size);
  };
  node.deregister = (user: Node) => {
    users.delete(user.id);
    if (node.pollers.delete(user.id)) node.statusFeed.emit('pollers', node.pollers.size);
  };
}

function startGateway(RED: NodeAPI, node: GatewayNode, rawConfig: GatewayConfig): void {
  const config = migrateGatewayConfig(rawConfig);
  const configError = readSettings(node, config);
  const tls = tlsFromConfigNode(RED, node, config.tls, `iotgw-gateway "${config.name || node.id}"`);
  const cred: Cred = (k) => resolveCredential(RED, node, node.credentials?.[k]);
  node.apiPath = (rest: string) => `/api/v${node.settings.apiVersion}/${rest.replace(/^\/+/, '')}`;
  const held: BrokerHeld = {};
  node.account = openAccount(node, rawConfig, configError, cred, tls, held);
  attachDelegates(node, configError, tls, held);
  attachUsers(node);
  node.on('close', (_removed: boolean, done: () => void) => {
    const closing = [node.account.close(), held.client?.close(), held.token?.close()];
    held.client = undefined;
    held.token = undefined;
    void Promise.allSettled(closing).then(() => done());
  });
}

export default function register(RED: NodeAPI): void {
  function IotgwGatewayNode(this: GatewayNode, rawConfig: GatewayConfig) {
    RED.nodes.createNode(this, rawConfig);
    startGateway(RED, this, rawConfig);
  }

  RED.nodes.registerType('iotgw-gateway', IotgwGatewayNode as unknown as (this: Node, config: NodeDef) => void, {
    credentials: {
      token: { type: 'password' },
      clientId: { type: 'text' },
      clientSecret: { type: 'password' },
      brokerClientId: { type: 'text' },
      brokerAccessToken: { type: 'password' },
      brokerClientSecret: { type: 'password' },
    },
  });
}

/** Looks up the config node a node refers to, or explains what is missing. */
export function getGateway(RED: NodeAPI, id: string | undefined): GatewayNode {
  const gw = id ? (RED.nodes.getNode(id) as GatewayNode | null) : null;
  if (!gw || typeof gw.client !== 'function') {
    throw new GatewayError('BAD_INPUT', 'gateway: no iotgw-gateway config node is selected; open the node and choose an account', { field: 'gateway' });
  }
  return gw;
}
