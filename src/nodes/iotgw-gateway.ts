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
import { numberSetting, resolveCredential } from '../lib/node-red/node-kit';
import { ErrorCatalogue } from '../lib/api/catalogue';
import { createAccount } from '../lib/account/account';
import type { GatewayCredentials, GatewayNode, GatewaySettings } from '../lib/node-red/config-nodes';

export interface GatewayConfig extends NodeDef {
  baseUrl: string;
  apiVersion: string;
  rateLimitCalls: number | string;
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
    rateLimitWindowMs: Math.round(numberSetting(config.rateLimitWindowSeconds, 60, 0, 86400) * 1000),
    maxConcurrent: Math.round(numberSetting(config.maxConcurrent, 3, 1, 1000)),
    maxBatchSize: Math.round(numberSetting(config.maxBatchSize, 100, 1, 100000)),
    timeoutMs: Math.round(numberSetting(config.timeoutSeconds, 65, 0.05, 3600) * 1000),
    maxRetries: Math.round(numberSetting(config.maxRetries, 3, 0, 100)),
    maxQueue: Math.round(numberSetting(config.maxQueue, 10000, 1, 10_000_000)),
  };
}

export default function register(RED: NodeAPI): void {
  function IotgwGatewayNode(this: GatewayNode, rawConfig: GatewayConfig) {
    RED.nodes.createNode(this, rawConfig);
    const node = this;
    const config = migrateGatewayConfig(rawConfig);
    let configError: GatewayError | undefined;
    try {
      node.settings = gatewaySettings(config);
    } catch (err) {
      configError = err as GatewayError;
      node.settings = gatewaySettings({ ...config, baseUrl: 'http://127.0.0.1', apiVersion: '1.0', brokerBaseUrl: '', brokerTokenUrl: '' });
      node.error(`iotgw-gateway "${config.name || node.id}": ${configError.message}`);
    }

    const inUrl = configError ? undefined : resolveGatewayBase(String(config.baseUrl), String(config.apiVersion ?? '1.0')).versionInUrl;
    if (inUrl && inUrl !== String(config.apiVersion ?? '1.0').trim()) {
      node.warn(`iotgw-gateway "${config.name || node.id}": the base URL holds /api/v${inUrl}; it is used instead of the API version setting ${config.apiVersion}`);
    }

    const tls = tlsFromConfigNode(RED, node, config.tls, `iotgw-gateway "${config.name || node.id}"`);

    const cred = (k: keyof GatewayCredentials) => resolveCredential(RED, node, node.credentials?.[k]);
    node.apiPath = (rest: string) => `/api/v${node.settings.apiVersion}/${rest.replace(/^\/+/, '')}`;
    let brokerToken: CachedToken | undefined;
    let brokerClient: ApiClient | undefined;
    const s = node.settings;
    const limit = { calls: s.rateLimitCalls, windowMs: s.rateLimitWindowMs };
    node.account = createAccount({
      kind: 'gateway',
      id: node.id,
      label: `gateway ${new URL(s.baseUrl).host}`,
      baseUrl: s.baseUrl,
      timeoutMs: s.timeoutMs,
      maxConcurrent: s.maxConcurrent,
      maxRetries: s.maxRetries,
      maxQueue: s.maxQueue,
      groups: { SEND: limit, GET: limit },
      tls,
      configError,
      throttled: isThrottleReply,
      principal: cred('clientId'),
      config: rawConfig as unknown as Record<string, unknown>,
      auth: {
        bearer: () => {
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
        },
        broker: () => {
          const id = cred('brokerClientId');
          const secret = cred('brokerClientSecret');
          if (id && secret && node.settings.brokerTokenUrl) {
            // The access token is fetched (client_credentials), cached and renewed after a 401.
            brokerToken ??= oauthClientCredentials({ tokenUrl: node.settings.brokerTokenUrl, clientId: id, clientSecret: secret, timeoutMs: node.settings.timeoutMs, tls });
            return new TokenHeaders(brokerToken, (t) => ({ client_id: id, access_token: t }), (h) => h.access_token, "Check the broker client ID, client secret and token URL in the config node's credentials.");
          }
          const token = cred('brokerAccessToken');
          if (!id || !token) {
            throw new GatewayError('BAD_INPUT', 'credentials: the LoRaWAN/SMS endpoints need the broker client ID and access token in the config node', {
              field: 'credentials',
            });
          }
          return new StaticHeaders({ client_id: id, access_token: token }, 'Check the broker client ID and access token in the config node\'s credentials.');
        },
      },
    });

    // Thin delegates to the account (what the nodes of the account call).
    node.client = () => node.account.client();
    node.bearerAuth = () => node.account.auth('bearer');
    node.brokerAuth = () => node.account.auth('broker');
    // The LoRaWAN/SMS endpoints: the account's client unless brokerBaseUrl names another host.
    node.brokerClient = () => {
      if (!s.brokerBaseUrl) return node.client();
      if (configError) throw configError;
      brokerClient ??= new ApiClient({ label: `broker ${new URL(s.brokerBaseUrl).host}`, baseUrl: s.brokerBaseUrl, timeoutMs: s.timeoutMs, maxConcurrent: s.maxConcurrent, maxRetries: s.maxRetries, maxQueue: s.maxQueue, tls });
      return brokerClient;
    };
    node.catalogue = new ErrorCatalogue(() => ({ client: node.client(), auth: node.bearerAuth(), path: node.apiPath(TERMINAL_PATHS.errorCodes) }));
    node.statusFeed = node.account.statusFeed;

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

    node.on('close', (_removed: boolean, done: () => void) => {
      const closing = [node.account.close(), brokerClient?.close(), brokerToken?.close()];
      brokerClient = undefined;
      brokerToken = undefined;
      void Promise.allSettled(closing).then(() => done());
    });
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
