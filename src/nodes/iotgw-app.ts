/**
 * `iotgw-app`: one account on the application API (area d). It owns the account's
 * ApiClient (one undici dispatcher, a sliding-window limiter paced to the platform's
 * plan, the concurrency cap and the retries) and the bearer auth token. Every node of
 * the account shares them, like the MQTT broker node shares one connection.
 */
import type { Node, NodeAPI, NodeDef } from 'node-red';
import { ApiClient, checkBaseUrl, type Query } from '../lib/transport/http';
import { StaticBearer, TokenHeaders, appLogin, type CachedToken } from '../lib/account/auth';
import { tlsFromConfigNode } from '../lib/node-red/tls';
import { GatewayError } from '../lib/common/errors';
import { markSettingError } from '../lib/common/setting-error';
import { numberSetting, resolveCredential } from '../lib/node-red/node-kit';
import { APP_PATHS, loginPathSetting, refuseTokenInQuery, userRecord } from '../lib/api/app';
import { parseReply } from '../lib/api/terminal';
import { ConnectionTest, Dialog, type DialogValues, type TestConnectionResult } from '../lib/node-red/test-connection';
import type { AppNode, AppSettings } from '../lib/node-red/config-nodes';
import { createAccount } from '../lib/account/account';
import { credentialDigest, tokenIdentity } from '../lib/account/redis/keys';

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

/** The credentials an app node is using now (never in a request's query), and its login token. */
interface AppHeld {
  token: string;
  password: string;
  login?: CachedToken;
}

/** node.settings from the config; a bad setting is logged and kept for every call to throw. */
function readAppSettings(node: AppNode, config: AppConfig): GatewayError | undefined {
  try {
    node.settings = appSettings(config);
    return undefined;
  } catch (err) {
    const configError = markSettingError(err as GatewayError);
    node.settings = appSettings({ ...config, baseUrl: 'http://127.0.0.1' });
    node.error(`iotgw-app "${config.name || node.id}": ${configError.message}`);
    return configError;
  }
}

/** The credentials an app account authenticates with, `${ENV_VAR}` resolved. */
interface AppLogin {
  email: string;
  password: string;
  authToken: string;
}

/** The bearer auth: log in with email and password (token kept in `held`), else a static token. */
function bearerFrom(c: AppLogin, loginPath: string, client: () => ApiClient, held: AppHeld) {
  held.password = c.password;
  if (c.email && c.password) {
    // Log in at loginPath, keep the token, log in again after a 401.
    held.login = appLogin({ client, loginPath, email: c.email, password: c.password, group: GROUP });
    return new TokenHeaders(held.login, (t) => ({ authorization: `Bearer ${t}` }), (h) => /^Bearer (.+)$/.exec(h.authorization ?? '')?.[1], "Check the email and password in the iotgw-app config node's credentials.");
  }
  held.token = c.authToken;
  if (!held.token) {
    throw new GatewayError('BAD_INPUT', 'credentials: the iotgw-app config node has no auth token and no email/password; set one of them (${ENV_VAR} works)', { field: 'credentials' });
  }
  return new StaticBearer(held.token, 'auth token');
}

function appBearer(RED: NodeAPI, node: AppNode, held: AppHeld) {
  const c = node.credentials;
  const login = { email: resolveCredential(RED, node, c?.email).trim(), password: resolveCredential(RED, node, c?.password), authToken: resolveCredential(RED, node, c?.authToken).trim() };
  return bearerFrom(login, node.settings.loginPath, node.client, held);
}

/** What the dialog's "test connection" button sends (POST /iotgw-app/test-connection). */
export interface AppTestRequest extends DialogValues<keyof AppLogin> {
  baseUrl?: unknown;
  loginPath?: unknown;
  timeoutSeconds?: unknown;
}

/**
 * One harmless call with the dialog's values, through a throwaway client (not the account's
 * rate budget; no retries; at most 15 s) and the auth the nodes use: GET /auth/user, the
 * token's own user (after the login at the login path with an email and password). The
 * result names the user reached and never carries a credential. A stored secret (a field
 * left as it is) only of a deployed iotgw-app, to its deployed base URL (lib/node-red/test-connection.ts).
 */
export async function testAppConnection(RED: NodeAPI, req: AppTestRequest): Promise<TestConnectionResult> {
  const dialog = new Dialog(RED, req);
  const test = new ConnectionTest();
  const held: AppHeld = { token: '', password: '' };
  let client: ApiClient | undefined;
  try {
    const settingsOf = (v: (key: string) => string) => appSettings(migrateAppConfig({ baseUrl: v('baseUrl'), loginPath: v('loginPath'), timeoutSeconds: v('timeoutSeconds') || 30 }));
    const s = settingsOf((k) => dialog.value(k));
    const cred = dialog.credentials(s.baseUrl, (deployed) => settingsOf(deployed).baseUrl);
    const login: AppLogin = { email: cred('email'), password: cred('password'), authToken: cred('authToken') };
    test.hide(login.password, login.authToken, login.email);
    const tlsId = dialog.value('tls');
    const tlsNode = tlsId ? RED.nodes.getNode(tlsId) : null;
    const tls = tlsNode ? tlsFromConfigNode(RED, tlsNode, tlsId, 'iotgw-app (test connection)') : undefined;
    const c = new ApiClient({ label: `test ${new URL(s.baseUrl).host}`, baseUrl: s.baseUrl, timeoutMs: Math.min(s.timeoutMs, 15_000), maxConcurrent: 1, maxRetries: 0, tls });
    client = c;
    const auth = bearerFrom(login, s.loginPath, () => c, held);
    const res = await c.request({ method: 'GET', path: APP_PATHS.user, auth, group: GROUP, idempotent: true });
    const user = parseReply(userRecord, res.body, `GET ${APP_PATHS.user}`);
    const who = user.name || user.username || user.id;
    const how = held.login ? `logged in at POST ${s.loginPath}; the application API accepted the login token` : 'the application API accepted the auth token';
    return test.result(true, `GET ${APP_PATHS.user}: ${how}${who ? ` (user ${JSON.stringify(String(who).slice(0, 60))})` : ''}`);
  } catch (err) {
    return test.failed(err);
  } finally {
    await Promise.allSettled([held.login?.close(), client?.close()]);
  }
}

/** The account: its client, limiter and token, shared by every node that uses it. */
function openAppAccount(RED: NodeAPI, node: AppNode, rawConfig: AppConfig, configError: GatewayError | undefined, tls: ReturnType<typeof tlsFromConfigNode>, held: AppHeld) {
  const s = node.settings;
  return createAccount({
    kind: 'app',
    id: node.id,
    label: `application API ${new URL(s.baseUrl).host}`,
    name: rawConfig.name,
    baseUrl: s.baseUrl,
    timeoutMs: s.timeoutMs,
    maxConcurrent: MAX_CONCURRENT,
    maxRetries: s.maxRetries,
    groups: { [GROUP]: { calls: s.rateLimitCalls, windowMs: s.rateLimitWindowMs } },
    defaultGroup: GROUP,
    tls,
    configError,
    config: rawConfig as unknown as Record<string, unknown>,
    // Issue 25: keys follow the credentials (a hash of the login or token), the shared token the password that fetched it.
    identity: () => {
      const email = resolveCredential(RED, node, node.credentials?.email).trim().toLowerCase();
      const tok = resolveCredential(RED, node, node.credentials?.authToken).trim();
      return email ? tokenIdentity('login', email) : tok ? tokenIdentity('token', tok) : '';
    },
    binding: () => {
      const email = resolveCredential(RED, node, node.credentials?.email).trim().toLowerCase();
      const pw = resolveCredential(RED, node, node.credentials?.password);
      return email && pw ? credentialDigest(email, pw) : '';
    },
    auth: { bearer: () => appBearer(RED, node, held) },
  });
}

function startApp(RED: NodeAPI, node: AppNode, rawConfig: AppConfig): void {
  const config = migrateAppConfig(rawConfig);
  const configError = readAppSettings(node, config);
  const tls = tlsFromConfigNode(RED, node, config.tls, `iotgw-app "${config.name || node.id}"`);
  const users = new Set<string>();
  const held: AppHeld = { token: '', password: '' };
  node.account = openAppAccount(RED, node, rawConfig, configError, tls, held);
  node.client = () => node.account.client();
  node.get = (path: string, query: Query, signal: AbortSignal) => {
    const c = node.client();
    const a = node.account.auth('bearer');
    refuseTokenInQuery(query, held.token);
    refuseTokenInQuery(query, held.login?.peek(), 'login token');
    refuseTokenInQuery(query, held.login ? held.password : '', 'password', "the login request's body");
    return c.request({ method: 'GET', path, query, auth: a, group: GROUP, idempotent: true, signal });
  };
  node.register = (user: Node) => {
    users.add(user.id);
  };
  node.deregister = (user: Node) => {
    users.delete(user.id);
  };
  node.on('close', (_removed: boolean, done: () => void) => {
    held.token = '';
    held.password = '';
    const closing = [node.account.close(), held.login?.close()];
    held.login = undefined;
    void Promise.allSettled(closing).then(() => done());
  });
}

export default function register(RED: NodeAPI): void {
  function IotgwAppNode(this: AppNode, rawConfig: AppConfig) {
    RED.nodes.createNode(this, rawConfig);
    startApp(RED, this, rawConfig);
  }

  RED.nodes.registerType('iotgw-app', IotgwAppNode as unknown as (this: Node, config: NodeDef) => void, {
    credentials: { authToken: { type: 'password' }, email: { type: 'text' }, password: { type: 'password' } },
  });
}
