/**
 * The plain options every client takes (no Node-RED): checked once, at construction, as
 * BAD_INPUT naming the option; and the in-process account a client builds on.
 */
import { createAccount, type Account, type AccountOptions } from '../../account/account';
import { GatewayError, badInput } from '../../common/errors';
import { showValue } from '../../common/int64';
import { isPlainObject } from '../../common/checks';
import type { TlsOptions } from '../../transport/http';

/** What every client takes besides its credentials. */
export interface CommonClientOptions {
  /** The service's base URL. */
  baseUrl: string;
  /** Per-request timeout in ms. */
  timeoutMs?: number;
  /** Calls per window of each throttle group (0: no limit). */
  rateLimitCalls?: number;
  rateLimitWindowMs?: number;
  /** Requests in flight at once. */
  maxConcurrent?: number;
  /** Retries of 429/503 (every method) and of network errors and 5xx (reads only). */
  maxRetries?: number;
  /** Requests that may wait for a slot before new ones are refused. */
  maxQueue?: number;
  /** A custom CA, a client certificate, ... */
  tls?: TlsOptions;
}

/** The options object itself, or BAD_INPUT. */
export function optionsObject(opts: unknown, what: string): Record<string, unknown> {
  if (!isPlainObject(opts)) throw badInput('options', `${what} takes an options object ({baseUrl, ...}), not ${showValue(opts)}`);
  return opts;
}

/** An optional integer option in [min, max]; `def` when absent. */
export function intOption(opts: Record<string, unknown>, name: string, def: number, min: number, max: number): number {
  const v = opts[name];
  if (v === undefined || v === null) return def;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) throw badInput(name, `must be an integer from ${min} to ${max}, not ${showValue(v)}`);
  return v;
}

/** An optional string option (trimmed); undefined when absent or empty. */
export function textOption(opts: Record<string, unknown>, name: string): string | undefined {
  const v = opts[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw badInput(name, `must be a string, not ${showValue(v)}`);
  return v.trim() || undefined;
}

/** A required string option. */
export function requiredText(opts: Record<string, unknown>, name: string, what: string): string {
  const v = textOption(opts, name);
  if (v === undefined) throw badInput(name, `required, ${what}`);
  return v;
}

/** The limits shared by every client, with the service's defaults. */
export function commonLimits(opts: Record<string, unknown>, d: { timeoutMs: number; rateLimitCalls: number; rateLimitWindowMs: number; maxConcurrent: number }) {
  if (opts.tls !== undefined && !isPlainObject(opts.tls)) throw badInput('tls', `must be an object of TLS options ({ca, cert, key, ...}), not ${showValue(opts.tls)}`);
  return {
    timeoutMs: intOption(opts, 'timeoutMs', d.timeoutMs, 50, 3_600_000),
    rateLimitCalls: intOption(opts, 'rateLimitCalls', d.rateLimitCalls, 0, 100_000),
    rateLimitWindowMs: intOption(opts, 'rateLimitWindowMs', d.rateLimitWindowMs, 0, 86_400_000),
    maxConcurrent: intOption(opts, 'maxConcurrent', d.maxConcurrent, 1, 1000),
    maxRetries: intOption(opts, 'maxRetries', 3, 0, 100),
    maxQueue: intOption(opts, 'maxQueue', 10000, 1, 10_000_000),
    tls: opts.tls as TlsOptions | undefined,
  };
}

let count = 0;

/** An in-process account of its own (no shared state: every client instance its own budget and token). */
export function clientAccount(opts: Omit<AccountOptions, 'id' | 'shared'>): Account {
  return createAccount({ ...opts, id: `client-${++count}`, shared: () => undefined });
}

/** The error a closed client gives. */
export function closedError(label: string): GatewayError {
  return new GatewayError('BAD_INPUT', `${label}: the client is closed; make a new one`, { field: 'client' });
}
