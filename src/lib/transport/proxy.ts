/**
 * Proxy routing for the ApiClient's dispatcher (issue 15).
 *
 * - Requests to loopback addresses (localhost, 127.0.0.0/8, ::1) never go through a proxy,
 *   as in Go's standard library: the bundled simulator and local test servers keep working
 *   on a machine whose environment names a company proxy.
 * - Other hosts follow http_proxy / https_proxy / no_proxy (lower case first, then upper
 *   case), as Node-RED's core HTTP nodes do, through undici's EnvHttpProxyAgent.
 * - `proxyFor(url)` tells which proxy a request to `url` goes through, so that a network
 *   error can say so and name the proxy host (never its credentials).
 */
import type { Agent, Dispatcher, EnvHttpProxyAgent } from 'undici';

type Undici = typeof import('undici');
/**
 * undici, loaded on the first request: a flow's nodes start without it.
 */
let undici: Undici | undefined;
function loadUndici(): Undici {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (undici ??= require('undici') as Undici);
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '::1', '[::1]']);

export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.toLowerCase();
  return LOOPBACK_HOSTS.has(h) || /^127(\.\d{1,3}){3}$/.test(h) || h.endsWith('.localhost');
}

type Env = Record<string, string | undefined>;

/** The proxy settings of an environment, read as undici's EnvHttpProxyAgent reads them. */
function settings(env: Env): { http?: [string, string]; https?: [string, string]; noProxy: string } {
  const pick = (...names: string[]): [string, string] | undefined => {
    for (const n of names) if (env[n]) return [env[n]!, n];
    return undefined;
  };
  const http = pick('http_proxy', 'HTTP_PROXY');
  const https = pick('https_proxy', 'HTTPS_PROXY') ?? http;
  return { http, https, noProxy: env.no_proxy ?? env.NO_PROXY ?? '' };
}

function excluded(hostname: string, port: number, noProxy: string): boolean {
  if (noProxy.trim() === '*') return true;
  for (const raw of noProxy.split(/[,\s]/)) {
    if (!raw) continue;
    const m = /^(.+):(\d+)$/.exec(raw);
    const host = (m ? m[1]! : raw).replace(/^\*?\./, '').toLowerCase();
    if (m && Number(m[2]) !== port) continue;
    if (hostname === host || hostname.endsWith(`.${host}`)) return true;
  }
  return false;
}

export interface ProxyUse {
  /** host[:port] of the proxy, without user name or password. */
  host: string;
  /** The environment variable it came from (https_proxy, HTTP_PROXY, ...). */
  variable: string;
}

/** The proxy a request to `url` goes through, or undefined for a direct connection. */
export function proxyFor(url: URL, env: Env = process.env): ProxyUse | undefined {
  if (isLoopbackHost(url.hostname)) return undefined;
  const s = settings(env);
  const use = url.protocol === 'https:' ? s.https : s.http;
  if (!use) return undefined;
  const hostname = url.host.replace(/:\d*$/, '').toLowerCase();
  const port = Number(url.port) || (url.protocol === 'https:' ? 443 : 80);
  if (excluded(hostname, port, s.noProxy)) return undefined;
  return { host: proxyHost(use[0]), variable: use[1] };
}

/** host[:port] of a proxy URL, credentials removed. */
export function proxyHost(uri: string): string {
  try {
    return new URL(uri.includes('://') ? uri : `http://${uri}`).host || '(unparsable proxy URL)';
  } catch {
    return '(unparsable proxy URL)';
  }
}

type AgentOptions = ConstructorParameters<typeof EnvHttpProxyAgent>[0];

/**
 * One dispatcher per config node: loopback origins to a plain keep-alive Agent, all others
 * to an EnvHttpProxyAgent (which itself goes direct when no proxy applies). Each agent is
 * made on the first request it carries, so an account that never calls opens nothing and
 * loads no HTTP client.
 */
export class GatewayDispatcher {
  private direct?: Agent;
  private env?: EnvHttpProxyAgent;
  private closed = false;

  constructor(private readonly options: AgentOptions & Record<string, unknown>) {}

  /** The dispatcher that handles `origin` (for tests). */
  routeOf(origin: string | URL): 'direct' | 'environment' {
    const url = typeof origin === 'string' ? new URL(origin) : origin;
    return isLoopbackHost(url.hostname) ? 'direct' : 'environment';
  }

  private agentFor(origin: string | URL): Dispatcher {
    if (this.closed) throw new Error('the HTTP client of this account is closed');
    if (this.routeOf(origin) === 'direct') {
      if (!this.direct) {
        const plain: Record<string, unknown> = { ...this.options };
        delete plain.requestTls;
        delete plain.proxyTls;
        this.direct = new (loadUndici().Agent)(plain as ConstructorParameters<Undici['Agent']>[0]);
      }
      return this.direct;
    }
    return (this.env ??= new (loadUndici().EnvHttpProxyAgent)(this.options));
  }

  /** undici's `dispatch()` on the agent for `opts.origin` (the handler interface). */
  dispatch(opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    return this.agentFor(opts.origin as string | URL).dispatch(opts, handler);
  }

  /** undici's `request()` on the agent for `opts.origin`. */
  request(opts: Dispatcher.RequestOptions): Promise<Dispatcher.ResponseData> {
    return this.agentFor(opts.origin as string | URL).request(opts);
  }

  close(): Promise<void> {
    this.closed = true;
    return Promise.all([this.direct?.close(), this.env?.close()]).then(() => undefined);
  }

  destroy(err: Error | null = null): Promise<void> {
    this.closed = true;
    return Promise.all([this.direct?.destroy(err), this.env?.destroy(err)]).then(() => undefined);
  }
}
