/**
 * Any call under the account's `/api/v{version}/` (issue 35): the way to `terminal/reset`,
 * `terminal/mute` and every call without a node of its own, with the account's token,
 * limits and retries. The path is checked before anything is sent: plain segments only, so
 * nothing can leave the base (`..`, `.`, an encoded dot or slash, a scheme, a full URL,
 * `//host`, a backslash, a query or fragment: BAD_INPUT). A POST is never sent again once it
 * may have arrived (the client retries it only after a throttle reply: nothing was done).
 */
import { badInput } from '../common/errors';
import { MAX_JSON_DEPTH, bodyProblem, describeType, showValue } from '../common/int64';
import type { Query } from '../transport/http';
import { throwOnCallError } from './gateway-errors';
import { groupOfPath, type GatewayContext } from './gateway-context';

export type CallMethod = 'GET' | 'POST';
export type CallGroup = 'SEND' | 'GET' | 'INFO';

/** GET or POST (case aside); anything else is BAD_INPUT. */
export function checkMethod(v: unknown, where = 'method'): CallMethod {
  const s = typeof v === 'string' ? v.trim().toUpperCase() : v;
  if (s === 'GET' || s === 'POST') return s;
  throw badInput(where, `must be GET or POST, not ${showValue(v)}`);
}

/** SEND, GET or INFO; empty: the group of the path (info/* INFO, get/* GET, the rest SEND). */
export function checkGroup(v: unknown, path: string, where = 'group'): CallGroup {
  if (v === undefined || v === null || v === '') return groupOfPath(path);
  const s = typeof v === 'string' ? v.trim().toUpperCase() : v;
  if (s === 'SEND' || s === 'GET' || s === 'INFO') return s;
  throw badInput(where, `must be SEND, GET or INFO, not ${showValue(v)}`);
}

const SEGMENT = /^[A-Za-z0-9_~-][A-Za-z0-9_.~-]*$/;

/**
 * A path relative to `/api/v{version}/` (`terminal/reset`; one leading `/` is allowed):
 * segments of letters, digits, `_ - . ~`, none of them `.` or `..`, no `%`, `\`, `:`, `?`,
 * `#` or empty segment. Returns it without the leading `/`.
 */
export function checkCallPath(v: unknown, where = 'path'): string {
  if (typeof v !== 'string') throw badInput(where, `must be text such as "terminal/reset", not ${describeType(v)}`);
  const s = v.trim();
  const rest = s.startsWith('/') && !s.startsWith('//') ? s.slice(1) : s;
  const why =
    s === '' ? 'required, e.g. "terminal/reset"'
    : s.length > 200 ? 'at most 200 characters'
    : /^[A-Za-z][A-Za-z0-9+.-]*:/.test(s) || s.startsWith('//') ? 'a path under the account\'s /api/v{version}/, not a URL or another host'
    : /[\\%?#]/.test(s) ? 'no backslash, percent-encoding, query or fragment (use msg.query for parameters)'
    : rest.split('/').some((seg) => !SEGMENT.test(seg)) ? 'segments of letters, digits, _ - . ~ only, none of them empty, "." or ".." (the path must stay under the account\'s base)'
    : undefined;
  if (why) throw badInput(where, `${why}; got ${showValue(v, 60)}`);
  return rest;
}

export interface GatewayCallSpec {
  method: CallMethod;
  /** Checked by checkCallPath. */
  path: string;
  group: CallGroup;
  query?: Query;
  /** The JSON body of a POST (checked: plain JSON data). */
  body?: unknown;
  signal?: AbortSignal;
}

/** A POST body: plain JSON data (no cycle, at most 64 levels); undefined: no body. */
export function checkCallBody(v: unknown, where = 'msg.payload'): unknown {
  if (v === undefined || v === null) return undefined;
  const problem = bodyProblem(v, where, MAX_JSON_DEPTH);
  if (problem) throw badInput(where, `${problem}; the body must be plain JSON data`);
  return v;
}

/** The call; its reply body (int64 exact) and status. A top-level ErrorID > 0 is GATEWAY_ERROR. */
export async function gatewayCall(g: GatewayContext, spec: GatewayCallSpec): Promise<{ body: unknown; statusCode: number }> {
  const path = g.apiPath(spec.path);
  const res = await g.client().request({
    method: spec.method,
    path,
    query: spec.query,
    group: spec.group,
    auth: g.bearerAuth(),
    idempotent: spec.method === 'GET',
    signal: spec.signal,
    allowEmpty: true,
    ...(spec.method === 'POST' && spec.body !== undefined ? { body: spec.body } : {}),
  });
  const b = res.body;
  const errorId = b && typeof b === 'object' && !Array.isArray(b) ? (b as { ErrorID?: unknown }).ErrorID : undefined;
  if (typeof errorId === 'number') await throwOnCallError(g, errorId, `${spec.method} ${path}`, res.statusCode, spec.signal);
  return { body: b, statusCode: res.statusCode };
}
