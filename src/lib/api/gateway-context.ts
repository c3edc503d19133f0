/**
 * What the calls of "More of the gateway" need of an account (issue 35): an `iotgw-gateway`
 * config node or a TerminalClient, seen structurally (the same shape as TerminalContext in
 * clients/terminal.ts, kept here so these files and that one do not import each other).
 */
import type { ApiClient, AuthProvider, Query } from '../transport/http';
import type { CatalogueHolder } from './gateway-errors';

export interface GatewayContext extends CatalogueHolder {
  client(): ApiClient;
  bearerAuth(): AuthProvider;
  /** `/api/v{version}/<rest>` */
  apiPath(rest: string): string;
}

/** Per call: extra query parameters (merged last; null removes one) and an abort signal. */
export interface LookupOptions {
  query?: Query;
  signal?: AbortSignal;
}

/** `base` with `extra` merged last; a null or undefined value in `extra` removes the parameter. */
export function withExtraQuery(base: Query, extra: Query | undefined): Query {
  if (!extra) return base;
  const out: Query = { ...base };
  for (const [k, v] of Object.entries(extra)) {
    if (v === undefined || v === null) delete out[k];
    else out[k] = v;
  }
  return out;
}

/** Throttle group of a path under /api/v{version}/ (real-services.md): info/* INFO, get/* GET, the rest SEND. */
export function groupOfPath(rest: string): 'INFO' | 'GET' | 'SEND' {
  const first = rest.replace(/^\/+/, '').split('/')[0]!.toLowerCase();
  return first === 'info' ? 'INFO' : first === 'get' ? 'GET' : 'SEND';
}

/** GET `rest` in its group, with the account's token; the reply's body and status. */
export async function gatewayGet(g: GatewayContext, rest: string, query: Query, o: LookupOptions = {}): Promise<{ path: string; body: unknown; statusCode: number }> {
  const path = g.apiPath(rest);
  const res = await g.client().request({ method: 'GET', path, query: withExtraQuery(query, o.query), group: groupOfPath(rest), auth: g.bearerAuth(), idempotent: true, signal: o.signal });
  return { path, body: res.body, statusCode: res.statusCode };
}
