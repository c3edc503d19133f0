/**
 * Area (d), who calls and how often: the platform's login (`POST /app/auth/login`
 * {email, password} -> {authToken}), bearer tokens (seeded or from the login), the free
 * plan's rate limit per token (429, no Retry-After), injected 500s, the refusals handlers
 * throw turned into error replies, and the user endpoint (`GET /app/auth/user`).
 */
import type { SimReply, SimRequest } from './server';
import { SimWindow, json } from './server';
import { parseJson } from '../lib/common/int64';
import { AppFail, PARAMS, UUID_RE, errorReply, param, type AppAccount, type AppContext, type AppUser } from './app-model';

export class AppAuth {
  private windows = new Map<string, SimWindow>();
  /** Tokens from the login endpoint: token -> user ID and the time it ends. */
  private loginTokens = new Map<string, { userId: string; endsAt: number }>();
  readonly loginCounters = { logins: 0, refused: 0 };
  /** Authenticated requests still to fail with 500 ERROR_FATAL. */
  fatal = 0;

  constructor(private readonly ctx: AppContext) {}

  /** New rate-limit windows (the area's configure()). */
  resetWindows(): void {
    this.windows.clear();
  }

  private error(status: Parameters<typeof errorReply>[1], detail?: string, p?: string): SimReply {
    return errorReply(this.ctx.options.errorShape, status, detail, p);
  }

  /** The platform's default login: JSON {email, password} -> {authToken}. */
  login(r: SimRequest): SimReply {
    let b: unknown;
    try {
      b = r.text.trim() ? parseJson(r.text) : undefined;
    } catch {
      return this.error(400, 'the body is not JSON');
    }
    const o = (b && typeof b === 'object' ? b : {}) as Record<string, unknown>;
    if (typeof o.email !== 'string' || typeof o.password !== 'string') return this.error(400, 'email and password are required', 'email');
    const user = this.ctx.accounts.flatMap((a) => a.users).find((u) => u.email === o.email);
    if (!user || o.password !== this.ctx.options.loginPassword) {
      this.loginCounters.refused++;
      return this.error(403, 'Invalid Credentials.');
    }
    const token = `app_${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
    const life = this.ctx.options.loginTokenLifetimeMs > 0 ? this.ctx.options.loginTokenLifetimeMs : 86_400_000;
    this.loginTokens.set(token, { userId: user.id, endsAt: this.ctx.now() + life });
    this.loginCounters.logins++;
    return json(200, { authToken: token });
  }

  /** The user and account a bearer token stands for: a seeded token, else a live one from the login. */
  private whoIs(token: string | undefined): { user: AppUser; account: AppAccount } | undefined {
    let found: { user: AppUser; account: AppAccount } | undefined;
    for (const a of this.ctx.accounts) {
      for (const [uid, t] of Object.entries(a.tokens)) {
        if (token !== undefined && t === token) found = { user: a.users.find((u) => u.id === uid)!, account: a };
      }
    }
    const fromLogin = token === undefined ? undefined : this.loginTokens.get(token);
    if (!found && fromLogin && fromLogin.endsAt > this.ctx.now()) {
      const a = this.ctx.accounts.find((x) => x.users.some((u) => u.id === fromLogin.userId));
      if (a) found = { user: a.users.find((u) => u.id === fromLogin.userId)!, account: a };
    }
    return found;
  }

  /** The rate limit, the token, an injected 500, then the handler (its AppFail as an error reply). */
  async guard(r: SimRequest, handle: (user: AppUser, account: AppAccount) => SimReply | Promise<SimReply>): Promise<SimReply> {
    const counters = this.ctx.counters;
    const m = /^Bearer\s+(\S+)$/i.exec(String(r.headers.authorization ?? ''));
    const token = m?.[1];
    const key = token ?? `ip:${r.headers.host ?? ''}`;
    let w = this.windows.get(key);
    if (!w) this.windows.set(key, (w = new SimWindow(this.ctx.options.rateLimitCalls, this.ctx.options.rateLimitWindowMs)));
    if (!w.take(this.ctx.now())) {
      counters.throttled++;
      return this.error(429);
    }
    const found = this.whoIs(token);
    if (!found) {
      counters.unauthorized++;
      return this.error(401, token ? 'the token is invalid or expired' : undefined);
    }
    if (this.fatal > 0) {
      this.fatal--;
      counters.failed++;
      return this.error(500);
    }
    try {
      const reply = await handle(found.user, found.account);
      counters.served++;
      return reply;
    } catch (err) {
      if (err instanceof AppFail) return this.error(err.status, err.detail, err.param);
      counters.failed++;
      return this.error(500);
    }
  }

  /** GET /app/auth/user: the caller, or another user of the caller's account by ID. */
  user(r: SimRequest, me: AppUser, account: AppAccount): SimReply {
    const p = param(r, PARAMS.user);
    if (!p || p.value === '' || p.value === me.id) return json(200, me);
    if (!UUID_RE.test(p.value)) throw new AppFail(400, `${p.name} must be a user ID (UUID)`, p.name);
    const mine = account.users.find((u) => u.id === p.value);
    if (mine) return json(200, mine);
    if (this.ctx.accounts.some((a) => a.users.some((u) => u.id === p.value))) throw new AppFail(403, 'the user belongs to another account', p.name);
    throw new AppFail(404, 'no user with this ID', p.name);
  }
}
