/**
 * Secrets out of what comes back: the account's credentials are cut out of every parsed
 * reply and every server error text, so none reaches a msg, a log or an error.
 */
import type { AuthProvider, RequestSpec } from './types';

/** What a secret is replaced with, in error texts and in replies. */
export const REDACTED = '[credential]';

/** Cuts every secret (of 4 or more characters; pass them longest first) out of a text. */
export function redactText(text: string, secrets: string[]): string {
  let out = text;
  for (const s of secrets) if (s.length >= 4 && out.includes(s)) out = out.split(s).join(REDACTED);
  return out;
}

/**
 * A parsed reply with every secret cut out of its strings and keys. `raw` is the reply's
 * text: when no secret occurs in it (as is or JSON-escaped), which is the common case, the
 * value is returned as it is without a walk. The value is at most MAX_JSON_DEPTH deep
 * (parseJson refused deeper), so the recursion is bounded.
 */
export function redactReply(value: unknown, raw: string, secrets: string[], escaped?: string[]): unknown {
  let any = false;
  for (let i = 0; i < secrets.length && !any; i++) {
    const s = secrets[i]!;
    any = s.length >= 4 && (raw.includes(s) || raw.includes(escaped?.[i] ?? JSON.stringify(s).slice(1, -1)));
  }
  // The common case: no secret in the reply, the value is returned as it is.
  if (!any) return value;
  const present = secrets.filter((s) => s.length >= 4 && (raw.includes(s) || raw.includes(JSON.stringify(s).slice(1, -1))));
  if (!present.length) return value;
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return redactText(v, present);
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) out[redactText(k, present)] = walk(x);
      return out;
    }
    return v;
  };
  return walk(value);
}

/** The account's secrets a reply must never carry: the auth provider's, and a form's secret values. */
export function replySecrets(authHeaders: Record<string, string>, spec: RequestSpec): string[] {
  const out = spec.auth?.secrets ? [...spec.auth.secrets()] : [];
  for (const v of Object.values(authHeaders)) {
    const m = /^Bearer\s+(.+)$/i.exec(v);
    if (m) out.push(m[1]!);
  }
  for (const [k, v] of Object.entries(spec.form ?? {})) if (/secret|password|token/i.test(k)) out.push(v);
  return out.filter((s) => typeof s === 'string' && s.length >= 4).sort((a, b) => b.length - a.length);
}

/** The credential values a request carried (auth headers, and a form's values but its grant type). */
export function secretsOf(authHeaders: Record<string, string>, spec: RequestSpec): string[] {
  const out: string[] = [];
  for (const v of Object.values(authHeaders)) {
    out.push(v);
    const m = /^\S+\s+(.+)$/.exec(v); // "Bearer <token>"
    if (m) out.push(m[1]!);
  }
  for (const [k, v] of Object.entries(spec.form ?? {})) if (k !== 'grant_type') out.push(v);
  // Longest first, so that "Bearer X" goes before X.
  return out.sort((a, b) => b.length - a.length);
}

/** A reply's secrets with their JSON-escaped forms (how they appear inside a JSON string). */
export interface ReplySecretList {
  secrets: string[];
  escaped: string[];
}

/** The secrets of one auth provider and headers, kept while they stay the same (one per client). */
export class ReplySecretCache {
  private auth: AuthProvider | undefined;
  private key = '';
  private last: ReplySecretList | undefined;

  /** The secrets a reply must not carry for these auth headers. */
  for(authHeaders: Record<string, string>, spec: RequestSpec): ReplySecretList {
    if (spec.form) {
      const secrets = replySecrets(authHeaders, spec);
      return { secrets, escaped: secrets.map((x) => JSON.stringify(x).slice(1, -1)) };
    }
    let key = '';
    for (const k in authHeaders) key += `${k}\n${authHeaders[k]}\n`;
    // The provider's own secrets() may change (a renewed token), so they are part of the key.
    const own = spec.auth?.secrets ? spec.auth.secrets() : [];
    for (const s of own) key += `\u0000${s}`;
    if (this.last && this.auth === spec.auth && this.key === key) return this.last;
    const secrets = replySecrets(authHeaders, spec);
    this.auth = spec.auth;
    this.key = key;
    this.last = { secrets, escaped: secrets.map((x) => JSON.stringify(x).slice(1, -1)) };
    return this.last;
  }

  clear(): void {
    this.auth = undefined;
    this.key = '';
    this.last = undefined;
  }
}
