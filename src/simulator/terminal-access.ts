/**
 * Area (a), who may call and how often: the token endpoint (client credentials), bearer
 * tokens (issued or static), the super-account check, the service-wide limit (503), the
 * per-account concurrency cap and each throttle group's sliding window (SEND, GET, INFO: 429,
 * or HTTP 200 with ErrorID 24579 for SEND, 24581 for GET and INFO, as an option).
 */
import type { SimReply, SimRequest } from './server';
import { SimWindow, json } from './server';
import { ERRORS, type TerminalContext } from './terminal-model';

export class TerminalAccess {
  private tokens = new Map<string, { account: string; expiresAt: number }>();
  private windows = new Map<string, SimWindow>();
  private service: SimWindow;
  private inFlight = new Map<string, number>();

  constructor(private readonly gw: TerminalContext) {
    this.service = new SimWindow(gw.options.serviceCalls, gw.options.serviceWindowMs);
  }

  /** New windows for new options (the gateway's configure()). */
  reset(): void {
    this.windows.clear();
    this.service = new SimWindow(this.gw.options.serviceCalls, this.gw.options.serviceWindowMs);
  }

  /** Invalidates every issued token (as if they expired). */
  expireTokens(): void {
    for (const v of this.tokens.values()) v.expiresAt = 0;
  }

  /** POST auth/token: a form with grant_type client_credentials, client_id and client_secret. */
  token(r: SimRequest): SimReply {
    const ct = String(r.headers['content-type'] ?? '');
    if (!ct.startsWith('application/x-www-form-urlencoded')) return json(400, { error: 'invalid_request', error_description: 'form-encoded body expected' });
    const form = new URLSearchParams(r.text);
    if (form.get('grant_type') !== 'client_credentials') return json(400, { error: 'unsupported_grant_type' });
    const acct = this.gw.accounts.get(form.get('client_id') ?? '');
    if (!acct || acct.clientSecret !== form.get('client_secret')) {
      this.gw.counters.unauthorized++;
      if (this.gw.options.tokenErrorAs === 'ok-with-error') return json(200, { error: 'invalid_client', error_description: 'The client credentials are invalid' });
      return json(401, { error: 'invalid_client' });
    }
    const asked = Number(form.get('expires_in') ?? NaN);
    const ttl = Number.isFinite(asked) && asked > 0 ? Math.min(asked, this.gw.options.tokenTtlSeconds) : this.gw.options.tokenTtlSeconds;
    const token = `tok_${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
    this.tokens.set(token, { account: acct.clientId, expiresAt: this.gw.now() + ttl * 1000 });
    return json(200, { access_token: token, token_type: 'bearer', expires_in: ttl });
  }

  private authenticate(r: SimRequest): string | undefined {
    const h = String(r.headers.authorization ?? '');
    const m = /^Bearer (.+)$/i.exec(h);
    if (!m) return undefined;
    const tok = m[1]!;
    const issued = this.tokens.get(tok);
    if (issued && issued.expiresAt > this.gw.now()) return issued.account;
    for (const a of this.gw.accounts.values()) if (a.staticTokens.includes(tok)) return a.clientId;
    return undefined;
  }

  /** Auth, service limit, concurrency cap and the throttle group's window, then `handle`. */
  async guard(r: SimRequest, group: 'SEND' | 'GET' | 'INFO' | undefined, handle: (account: string) => SimReply | Promise<SimReply>, superOnly = false): Promise<SimReply> {
    const account = this.authenticate(r);
    if (!account) {
      this.gw.counters.unauthorized++;
      return json(401, { Message: 'Authorization has been denied for this request.' });
    }
    if (superOnly && !this.gw.accounts.get(account)?.superAccount) {
      return json(403, { Message: 'The caller is not a super account user.' });
    }
    const refused = this.limits(account, group);
    if (refused) return refused;
    const busy = this.inFlight.get(account) ?? 0;
    this.inFlight.set(account, busy + 1);
    try {
      return await handle(account);
    } finally {
      this.inFlight.set(account, (this.inFlight.get(account) ?? 1) - 1);
    }
  }

  /** The reply of a call over a limit (service, concurrency, the group's window), or undefined. */
  private limits(account: string, group: 'SEND' | 'GET' | 'INFO' | undefined): SimReply | undefined {
    const options = this.gw.options;
    if (!this.service.take(this.gw.now())) {
      this.gw.counters.throttled++;
      return json(503, { Message: 'Service busy' }, this.retryHeader(this.service));
    }
    const busy = this.inFlight.get(account) ?? 0;
    if (options.maxConcurrent > 0 && busy >= options.maxConcurrent) {
      this.gw.counters.throttled++;
      return json(429, { Message: 'Too many concurrent requests' });
    }
    if (!group) return undefined;
    const key = `${account}:${group}`;
    let w = this.windows.get(key);
    if (!w) this.windows.set(key, (w = new SimWindow(options.rateLimitCalls, options.rateLimitWindowMs)));
    if (options.throttleNext > 0) {
      options.throttleNext--;
      return this.throttledReply(group);
    }
    if (!w.take(this.gw.now())) return this.throttledReply(group, w);
    return undefined;
  }

  /** A throttled reply in the configured form. */
  private throttledReply(group: 'SEND' | 'GET' | 'INFO', w?: SimWindow): SimReply {
    this.gw.counters.throttled++;
    const errorId = group === 'SEND' ? ERRORS.SUBMIT_RATE_EXCEEDED : ERRORS.STATUS_RATE_EXCEEDED;
    if (this.gw.options.throttleAs === 'errorId') {
      if (group === 'INFO') return json(200, { ErrorID: errorId });
      return json(200, group === 'SEND' ? { ErrorID: errorId, Submissions: null } : { ErrorID: errorId, NextFromUTC: null, Statuses: null });
    }
    return json(429, { ErrorID: errorId }, w ? this.retryHeader(w) : undefined);
  }

  private retryHeader(w: SimWindow): Record<string, string> | undefined {
    return this.gw.options.retryAfter ? { 'retry-after': String(Math.max(1, Math.ceil(w.retryAfterMs(this.gw.now()) / 1000))) } : undefined;
  }
}
