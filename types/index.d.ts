/**
 * Types of the package's JavaScript API (`require('@iotgateway/node-red-gateway')`): the
 * bundled gateway simulator, for testing your own flows against it, and the error codes
 * the nodes use. Written by hand (the build emits JavaScript only); test/types.test.js
 * compiles a use of every declaration here and runs it against the real simulator.
 */
/// <reference types="node" />
import type { IncomingHttpHeaders } from 'node:http';

export interface TerminalOptions {
  /** Calls per throttle group (SEND, GET) per window; 0 turns the limit off. Default 5. */
  rateLimitCalls: number;
  /** Sliding window of the rate limit, ms. Default 60000. */
  rateLimitWindowMs: number;
  /** Calls in flight per account; 0 turns the cap off. Default 3. */
  maxConcurrent: number;
  /** Most entries per submission. Default 100. */
  maxBatch: number;
  /** Include Retry-After on 429 replies (the real gateway does not send one). */
  retryAfter: boolean;
  /** Unknown destinations shaped like a prime ID become online IDP terminals. */
  acceptUnknownTerminals: boolean;
  /** Token lifetime, seconds. */
  tokenTtlSeconds: number;
}

export interface SimulatorOptions {
  /** Port to listen on; 0 (default) picks a free one. */
  port?: number;
  /** Address to bind; default 127.0.0.1. */
  host?: string;
  terminal?: Partial<TerminalOptions>;
  /** Extra reply latency in ms for every call. */
  latencyMs?: number;
}

/** One request the simulator received. */
export interface CallRecord {
  at: number;
  method: string;
  path: string;
  route: string;
  status: number;
  query: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A fault to inject: the next `times` requests matching `route` get this reply. */
export interface Fault {
  route?: string;
  method?: string;
  times?: number;
  phase?: 'before' | 'after';
  status?: number;
  headers?: Record<string, string>;
  text?: string;
  body?: unknown;
  delayMs?: number;
  [more: string]: unknown;
}

export interface SimServer {
  readonly port: number;
  readonly url: string;
  readonly calls: CallRecord[];
  callsTo(route?: string): CallRecord[];
}

export interface TerminalGateway {
  configure(options: Partial<TerminalOptions>): void;
  setNextId(id: bigint | string | number): void;
  seedBacklog(count: number, opts?: { perSecond?: number; account?: string; baseId?: bigint }): void;
}

export declare class Simulator {
  constructor(options?: SimulatorOptions);
  readonly server: SimServer;
  readonly terminal: TerminalGateway;
  /** Gateway base URL (terminal messaging, LoRaWAN broker, SMS). */
  readonly url: string;
  /** Application API base URL. */
  readonly appUrl: string;
  inject(fault: Fault): Fault;
  start(port?: number, host?: string): Promise<this>;
  close(): Promise<void>;
}

/** Starts a simulator; default: a free port on 127.0.0.1, the real services' limits. */
export declare function startSimulator(options?: SimulatorOptions): Promise<Simulator>;

export declare const ERROR_CODES: readonly [
  'BAD_INPUT',
  'UNAUTHORIZED',
  'FORBIDDEN',
  'NOT_FOUND',
  'RATE_LIMITED',
  'GATEWAY_ERROR',
  'HTTP_ERROR',
  'TIMEOUT',
  'NETWORK',
  'BAD_RESPONSE',
];
export type ErrorCode = (typeof ERROR_CODES)[number];

export interface GatewayErrorOptions {
  statusCode?: number;
  errorId?: number;
  errorName?: string;
  field?: string;
  cause?: unknown;
}

export declare class GatewayError extends Error {
  constructor(code: ErrorCode, message: string, opts?: GatewayErrorOptions);
  readonly code: ErrorCode;
  readonly statusCode?: number;
  readonly errorId?: number;
  readonly errorName?: string;
  readonly field?: string;
}
