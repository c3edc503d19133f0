/**
 * Redis keys of an account: `<keyPrefix>{<accountHash>}:<kind>[:<name>]`. The hash is
 * derived from the base URL and the client ID, or from a SHA-256 of a static token: never
 * a secret in clear. Every key of one account carries the same hash tag, so the account's
 * Lua scripts (which touch several keys) also run on a Redis Cluster.
 */
import { createHash, scryptSync } from 'node:crypto';

const sha256 = (s: string): string => createHash('sha256').update(s, 'utf8').digest('hex');

/** Who the account is, as far as the key goes. */
export interface AccountIdentity {
  /** The service's base URL. */
  baseUrl: string;
  /** The OAuth client ID (not a secret), when the account uses client credentials. */
  clientId?: string;
  /** Otherwise a static token (or an app login e-mail): only its hash enters the key. */
  token?: string;
}

function normalizeBase(baseUrl: string): string {
  try {
    const u = new URL(baseUrl);
    return `${u.protocol}//${u.host.toLowerCase()}${u.pathname.replace(/\/+$/, '')}`;
  } catch {
    return baseUrl.trim().replace(/\/+$/, '');
  }
}

/** 24 hex digits (96 bits) of SHA-256 over the base URL and the account's identity. */
export function accountHash(id: AccountIdentity): string {
  const who = id.clientId ? `client:${id.clientId}` : id.token ? `token:${sha256(id.token)}` : 'anonymous';
  return sha256(`${normalizeBase(id.baseUrl)}\n${who}`).slice(0, 24);
}

/**
 * A one-way digest of secret credentials (a client secret, a login password), for a key
 * that must differ when they differ: scrypt (a costly hash: a reader of Redis cannot test
 * guesses quickly), salted with the public part, 16 hex digits.
 */
export function credentialDigest(publicPart: string, secret: string): string {
  return scryptSync(secret, `iotgw-token-binding\n${publicPart}`, 8, { N: 16384, r: 8, p: 1 }).toString('hex');
}

/** The secret-free identity of a static token or a login (its SHA-256). */
export function tokenIdentity(kind: 'token' | 'login', value: string): string {
  return `${kind}:${sha256(value)}`;
}

/** A name part of a key: no braces (they would move the hash tag), no control characters. */
function part(s: string): string {
  return s.replace(/[{}\s\u0000-\u001f]/g, '_');
}

export class AccountKeys {
  readonly tag: string;

  constructor(
    readonly prefix: string,
    readonly hash: string,
  ) {
    this.tag = `${prefix}{${hash}}`;
  }

  static of(prefix: string, id: AccountIdentity): AccountKeys {
    return new AccountKeys(prefix, accountHash(id));
  }

  key(...parts: string[]): string {
    return [this.tag, ...parts.map(part)].join(':');
  }
}
