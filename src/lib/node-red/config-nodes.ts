/**
 * The shape of the two config nodes (`iotgw-gateway`, `iotgw-app`) as the nodes that use
 * them see it. Types only; they live in lib so that lib code (broker-api, send-pool,
 * gateway-errors) can name them without importing a node file. The node files
 * (src/nodes/iotgw-gateway.ts, iotgw-app.ts) re-export them.
 */
import type { EventEmitter } from 'node:events';
import type { Node } from 'node-red';
import type { ApiClient, ApiResponse, AuthProvider, Query } from '../transport/http';
import type { ErrorCatalogue } from '../api/catalogue';
import type { Account } from '../account/account';

export interface GatewayCredentials {
  token?: string;
  clientId?: string;
  clientSecret?: string;
  brokerClientId?: string;
  brokerAccessToken?: string;
  brokerClientSecret?: string;
}

export interface GatewaySettings {
  baseUrl: string;
  apiVersion: string;
  rateLimitCalls: number;
  /** The INFO group's calls per window (info/*). */
  infoRateLimitCalls: number;
  rateLimitWindowMs: number;
  maxConcurrent: number;
  maxBatchSize: number;
  timeoutMs: number;
  maxRetries: number;
  maxQueue: number;
  /** Base of the LoRaWAN/SMS endpoints ('' = baseUrl). */
  brokerBaseUrl: string;
  /** The API gateway's OAuth token URL ('' = the access token is pasted). */
  brokerTokenUrl: string;
}

export interface GatewayNode extends Node<GatewayCredentials> {
  settings: GatewaySettings;
  /** The account behind this config node (client, tokens, rate budget, feeds). */
  account: Account;
  /** The account's shared client; throws BAD_INPUT when the config is invalid. */
  client(): ApiClient;
  /** Bearer auth for endpoints 1 to 3 (static token or client credentials). */
  bearerAuth(): AuthProvider;
  /** `client_id` / `access_token` headers for the LoRaWAN and SMS endpoints. */
  brokerAuth(): AuthProvider;
  /** The client of the LoRaWAN/SMS endpoints (the account's client unless brokerBaseUrl differs). */
  brokerClient(): ApiClient;
  /** `/api/v{version}/<rest>` */
  apiPath(rest: string): string;
  catalogue: ErrorCatalogue;
  /**
   * Status records of the account, as its status pollers fetch them ('records', records)
   * so that other nodes (the message tracker) use them without spending GET calls.
   * `pollers` counts the status pollers feeding it.
   */
  statusFeed: EventEmitter;
  pollers: Set<string>;
  register(user: Node): void;
  deregister(user: Node): void;
}

export interface AppCredentials {
  authToken?: string;
  email?: string;
  password?: string;
}

export interface AppSettings {
  baseUrl: string;
  timeoutMs: number;
  rateLimitCalls: number;
  rateLimitWindowMs: number;
  maxRetries: number;
  loginPath: string;
}

export interface AppNode extends Node<AppCredentials> {
  settings: AppSettings;
  /** The account behind this config node (client, token, rate budget). */
  account: Account;
  /** The account's shared client; throws BAD_INPUT when the config is invalid. */
  client(): ApiClient;
  /** GET `path` with the account's auth, limits and retries. */
  get(path: string, query: Query, signal: AbortSignal): Promise<ApiResponse>;
  register(user: Node): void;
  deregister(user: Node): void;
}
