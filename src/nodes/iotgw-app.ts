/**
 * `iotgw-app`: one account on the application API (area d). It owns the account's
 * ApiClient (one undici dispatcher, a sliding-window limiter paced to the platform's
 * plan, the concurrency cap and the retries) and the bearer auth token. Every node of
 * the account shares them, like the MQTT broker node shares one connection.
 */
import type { Node, NodeAPI, NodeDef } from 'node-red';
import { checkBaseUrl, type Query } from '../lib/transport/http';
import { StaticBearer, TokenHeaders, appLogin, type CachedToken } from '../lib/account/auth';
import { tlsFromConfigNode } from '../lib/node-red/tls';
import { GatewayError } from '../lib/common/errors';
import { numberSetting, resolveCredential } from '../lib/node-red/node-kit';
import { loginPathSetting, refuseTokenInQuery } from '../lib/api/app';
import type { AppNode, AppSettings } from '../lib/node-red/config-nodes';
import { createAccount } from '../lib/account/account';

export interface AppConfig extends NodeDef {
  baseUrl: string;
  timeoutSeconds: number | string;
  rateLimitCalls?: number | string;
  rateLimitWindowSeconds?: number | string;
  maxRetries?: number | string;
  /** Optional tls-config node (custom CA, client certificate). */
  tls?: string;
  /** Where to log in with email and password (default `/auth/login`). */
  loginPath?: string;
}

export type { AppCredentials, AppSettings, AppNode } from '../lib/node-red/config-nodes';

/** Requests in flight at once for one account. */
const MAX_CONCURRENT = 3;
/** The one throttle group of the application API. */
const GROUP = 'APP';

/** Fills in properties that older saved flows may lack. */
export function migrateAppConfig(config: Partial<AppConfig>): AppConfig {
  return { timeoutSeconds: 30, rateLimitCalls: 10, rateLimitWindowSeconds: 20, maxRetries: 3, loginPath: '/auth/login', ...config } as AppConfig;
}

export function appSettings(config: AppConfig): AppSettings {
  const baseUrl = String(config.baseUrl ?? '').trim();
  if (!baseUrl) throw new GatewayError('BAD_INPUT', 'baseUrl: required; set the application API address in the iotgw-app config node', { field: 'baseUrl' });
  checkBaseUrl(baseUrl);
  return {
    baseUrl,
    timeoutMs: Math.round(numberSetting(config.timeoutSeconds, 30, 0.05, 3600) * 1000),
    rateLimitCalls: Math.round(numberSetting(config.rateLimitCalls, 10, 0, 100000)),
    rateLimitWindowMs: Math.round(numberSetting(config.rateLimitWindowSeconds, 20, 0, 86400) * 1000),
    maxRetries: Math.round(numberSetting(config.maxRetries, 3, 0, 100)),
    loginPath: loginPathSetting(config.loginPath),
  };
}

export { loginPathSetting } from '../lib/api/app';

export { isApp } from '../lib/node-red/guards';

export default function register(RED: NodeAPI): void {
  function IotgwAppNode(this: AppNode, rawConfig: AppConfig) {
    RED.nodes.createNode(this, rawConfig);
    const node = this;
    const config = migrateAppConfig(rawConfig);
    let configError: GatewayError | undefined;
    try {
      node.settings = appSettings(config);
    } catch (err) {
      configError = err as GatewayError;
      node.settings = appSettings({ ...config, baseUrl: 'http://127.0.0.1' });
      node.error(`iotgw-app "${config.name || node.id}": ${configError.message}`);
    }

    const tls = tlsFromConfigNode(RED, node, config.tls, `iotgw-app "${config.name || node.id}"`);
    const users = new Set<string>();
    let token = '';
    let password = '';
    let login: CachedToken | undefined;
    const s = node.settings;
    node.account = createAccount({
      kind: 'app',
      id: node.id,
      label: `application API ${new URL(s.baseUrl).host}`,
      baseUrl: s.baseUrl,
      timeoutMs: s.timeoutMs,
      maxConcurrent: MAX_CONCURRENT,
      maxRetries: s.maxRetries,
      groups: { [GROUP]: { calls: s.rateLimitCalls, windowMs: s.rateLimitWindowMs } },
      defaultGroup: GROUP,
      tls,
      configError,
      config: rawConfig as unknown as Record<string, unknown>,
      auth: {
        bearer: () => {
          const email = resolveCredential(RED, node, node.credentials?.email).trim();
          password = resolveCredential(RED, node, node.credentials?.password);
          if (email && password) {
            // Log in at loginPath, keep the token, log in again after a 401.
            login = appLogin({ client: node.client, loginPath: node.settings.loginPath, email, password, group: GROUP });
            return new TokenHeaders(login, (t) => ({ authorization: `Bearer ${t}` }), (h) => /^Bearer (.+)$/.exec(h.authorization ?? '')?.[1], "Check the email and password in the iotgw-app config node's credentials.");
          }
          token = resolveCredential(RED, node, node.credentials?.authToken).trim();
          if (!token) {
            throw new GatewayError('BAD_INPUT', 'credentials: the iotgw-app config node has no auth token and no email/password; set one of them (${ENV_VAR} works)', { field: 'credentials' });
          }
          return new StaticBearer(token, 'auth token');
        },
      },
    });

    node.client = () => node.account.client();

    node.get = (path: string, query: Query, signal: AbortSignal) => {
      const c = node.client();
      const a = node.account.auth('bearer');
      refuseTokenInQuery(query, token);
      refuseTokenInQuery(query, login?.peek(), 'login token');
      refuseTokenInQuery(query, login ? password : '', 'password', "the login request's body");
      return c.request({ method: 'GET', path, query, auth: a, group: GROUP, idempotent: true, signal });
    };

    node.register = (user: Node) => {
      users.add(user.id);
    };
    node.deregister = (user: Node) => {
      users.delete(user.id);
    };

    node.on('close', (_removed: boolean, done: () => void) => {
      token = '';
      password = '';
      const closing = [node.account.close(), login?.close()];
      login = undefined;
      void Promise.allSettled(closing).then(() => done());
    });
  }

  RED.nodes.registerType('iotgw-app', IotgwAppNode as unknown as (this: Node, config: NodeDef) => void, {
    credentials: { authToken: { type: 'password' }, email: { type: 'text' }, password: { type: 'password' } },
  });
}
