/**
 * Base URLs as users paste them. The satellite gateway documents its base as
 * `https://host/api/v1.0/`; users also enter `https://host` or `https://host/api/v1.0`.
 * All of them reach the same endpoints: the `/api/v{version}` part is taken off the base
 * (and its version used), trailing slashes dropped, so a path is never doubled.
 * A base that merely ends in `/v1` (an API gateway's) is left as it is.
 */
import { checkBaseUrl } from './http';

export interface ResolvedBase {
  /** The base without `/api/v{version}` and without a trailing slash. */
  baseUrl: string;
  /** The version to use: the one in the pasted URL when it holds one, else `apiVersion`. */
  apiVersion: string;
  /** The version found in the pasted URL, if any (to warn when it differs from the setting). */
  versionInUrl?: string;
  /** What the dialog shows: `{base}/api/v{version}/`. */
  endpoint: string;
}

const API_SUFFIX = /\/api\/v([0-9A-Za-z.]{1,16})$/;

/** Drops trailing slashes of a URL's path (keeps `https://host`). */
export function trimBase(raw: string, field = 'baseUrl'): string {
  const url = checkBaseUrl(raw, field);
  return url.origin + url.pathname.replace(/\/+$/, '');
}

export function resolveGatewayBase(raw: string, apiVersion: string, field = 'baseUrl'): ResolvedBase {
  let base = trimBase(raw, field);
  let versionInUrl: string | undefined;
  const m = API_SUFFIX.exec(new URL(base).pathname);
  if (m) {
    versionInUrl = m[1]!;
    base = base.slice(0, base.length - m[0].length);
  }
  const version = versionInUrl ?? apiVersion;
  return { baseUrl: base, apiVersion: version, versionInUrl, endpoint: `${base}/api/v${version}/` };
}
