/**
 * The types of the Redis replies we take (issue 34): each command's reply is checked before
 * it is used. A reply of another type (a peer that answers `+OK` to everything, a proxy, a
 * server that is not Redis) throws WrongReplyError; RedisConnection.run() turns it into
 * SHARED_STATE at once and backs off, where a NaN taken as "busy" or "held by another" made
 * the callers poll for ever (about 1,400 commands a second) and never answer a msg.
 *
 * Messages name the type only, never the reply's content.
 */

/** A reply that is not of the type its command gives. */
export class WrongReplyError extends Error {
  constructor(what: string, expected: string, got: unknown) {
    super(`${what}: Redis answered with ${typeName(got)} where ${expected} belongs`);
    this.name = 'WrongReplyError';
  }
}

/** The RESP type of a reply as ioredis hands it over (no content). */
export function typeName(v: unknown): string {
  if (v === null || v === undefined) return 'nil';
  if (Array.isArray(v)) return `an array of ${v.length}`;
  if (Buffer.isBuffer(v)) return 'a binary string';
  if (typeof v === 'string') return v === 'OK' ? 'a simple string (OK)' : 'a string';
  if (typeof v === 'number') return Number.isInteger(v) ? 'an integer' : 'a number';
  return `a ${typeof v}`;
}

/** An integer reply. */
export function int(v: unknown, what: string): number {
  if (typeof v === 'number' && Number.isSafeInteger(v)) return v;
  throw new WrongReplyError(what, 'an integer', v);
}

/** `OK`, or nil when `nilOk` (SET NX that did not set). */
export function ok(v: unknown, what: string, nilOk = false): 'OK' | null {
  if (v === 'OK') return v;
  if (nilOk && v === null) return null;
  throw new WrongReplyError(what, nilOk ? 'OK or nil' : 'OK', v);
}

/** The mark-read script's reply (mark-store.ts) as a hash of the mark's fields (`seenBytes`: the keys' length, `seen` absent beyond the bound). */
export function markFields(v: unknown, what: string): Record<string, string> {
  const text = (x: unknown) => x === null || typeof x === 'string';
  if (!Array.isArray(v) || v.length !== 5 || !v.slice(0, 4).every(text) || !Number.isSafeInteger(v[4])) throw new WrongReplyError(what, 'the mark fields and a length', v);
  const out: Record<string, string> = {};
  ['fromUtc', 'generation', 'fence', 'seen'].forEach((k, i) => {
    if (v[i] !== null) out[k] = v[i] as string;
  });
  out.seenBytes = String(v[4]);
  return out;
}

/** Nil, or an array of a string and an integer (the token script). */
export function stringAndInt(v: unknown, what: string): [string, number] | null {
  if (v === null) return null;
  if (Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && typeof v[1] === 'number' && Number.isSafeInteger(v[1])) return [v[0], v[1]];
  throw new WrongReplyError(what, 'nil or a string and an integer', v);
}

/**
 * The replicas of a master that are online, from its ROLE reply (`master`, offset, a list
 * of [ip, port, offset]). Another role (a replica, a sentinel) is `undefined`: the
 * connection talks to a node that is no master (any more).
 */
export function onlineReplicas(v: unknown, what: string): number | undefined {
  if (!Array.isArray(v) || typeof v[0] !== 'string') throw new WrongReplyError(what, 'a ROLE array', v);
  if (v[0] !== 'master') return undefined;
  if (!Array.isArray(v[2]) || !v[2].every((r) => Array.isArray(r))) throw new WrongReplyError(what, "a master's ROLE (its replicas)", v);
  return v[2].length;
}

/** A master's address as Sentinel gives it (nil: the name is unknown to that sentinel). */
export function masterAddress(v: unknown, what: string): { host: string; port: number } | null {
  if (v === null) return null;
  if (Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && v[0].length > 0 && v[0].length <= 255 && /^\d{1,5}$/.test(String(v[1]))) {
    const port = Number(v[1]);
    if (port >= 1 && port <= 65535) return { host: v[0], port };
  }
  throw new WrongReplyError(what, 'nil or a host and a port', v);
}
