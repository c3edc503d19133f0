/**
 * What may go into a request's URL and headers: the base URL (https, or http on
 * loopback), one encoded path segment, and header values without CR, LF or NUL.
 */
import { GatewayError } from '../common/errors';
import { isLoopbackHost } from './proxy';
import { localhostTypo, localhostTypoText } from './network-cause';

/** Checks a base URL: https, or http on a loopback address; no user info, query or fragment. */
export function checkBaseUrl(raw: string, field = 'baseUrl'): URL {
  let url: URL;
  try {
    url = new URL(String(raw ?? '').trim());
  } catch {
    throw new GatewayError('BAD_INPUT', `${field}: "${String(raw ?? '').slice(0, 100)}" is not a URL; use https://host[:port][/path]`, { field });
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new GatewayError('BAD_INPUT', `${field}: only https:// (or http:// on a loopback address) is allowed`, { field });
  }
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
    if (localhostTypo(url.hostname)) throw new GatewayError('BAD_INPUT', localhostTypoText(field, url), { field });
    throw new GatewayError(
      'BAD_INPUT',
      `${field}: http:// is allowed only for loopback addresses (localhost, 127.0.0.0/8, ::1); use https:// for ${url.hostname}`,
      { field },
    );
  }
  if (url.username || url.password) {
    throw new GatewayError('BAD_INPUT', `${field}: must not contain a user name or password; put credentials in the node's credentials`, { field });
  }
  if (url.search || url.hash) {
    throw new GatewayError('BAD_INPUT', `${field}: must not contain a query string or fragment`, { field });
  }
  return url;
}

/** Encodes one path segment, refusing what could change the path. */
export function pathSegment(value: string, field: string): string {
  if (value === '.' || value === '..' || /[\u0000-\u001f\u007f]/.test(value)) {
    throw new GatewayError('BAD_INPUT', `${field}: "${value.slice(0, 40)}" is not allowed in a URL path`, { field });
  }
  return encodeURIComponent(value);
}

export function headerValueOk(v: string): boolean {
  return !/[\r\n\u0000]/.test(v);
}

/**
 * The header check of one client. A call sends the same few values again and again:
 * the last good value of each name is kept, so a repeated value is not checked again.
 */
export class HeaderCheck {
  private readonly ok = new Map<string, string>();

  /** Throws BAD_INPUT naming the first header whose value holds CR, LF or NUL. */
  check(headers: Record<string, string>): void {
    for (const k in headers) {
      const v = headers[k]!;
      if (this.ok.get(k) === v) continue;
      if (!headerValueOk(v)) throw new GatewayError('BAD_INPUT', `header ${k}: must not contain CR, LF or NUL`, { field: k });
      if (this.ok.size >= 64) this.ok.clear();
      this.ok.set(k, v);
    }
  }

  clear(): void {
    this.ok.clear();
  }
}
