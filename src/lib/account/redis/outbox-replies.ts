/**
 * The replies of the outbox scripts (outbox-lua.ts), checked before use as every Redis
 * reply is (replies.ts): a reply of the wrong type is WrongReplyError (SHARED_STATE, the
 * connection dropped). A record that does not parse (written by hand, or by a later
 * version) costs that entry alone: counted as corrupt.
 */
import type { EntryState, OutboxEntry, OutboxKind, SendAttempt, StoredMsg } from '../../outbox/types';
import { OUTBOX_KINDS } from '../../outbox/types';
import { GatewayError } from '../../common/errors';
import { SharedStateError } from './errors';
import { WrongReplyError } from './replies';

/** An array of `n` safe integers (figures: entries, bytes; the accept's first seq before them). */
export function figuresOf(v: unknown, n: number, what: string): number[] {
  if (!Array.isArray(v) || v.length !== n || !v.every((x) => Number.isSafeInteger(x))) throw new WrongReplyError(what, `an array of ${n} integers`, v);
  return v as number[];
}

/** The end script's reply: figures (entries, bytes), then the ids another writer ended first. */
export function endReply(v: unknown): { figures: { entries: number; bytes: number }; taken: string[] } {
  if (!Array.isArray(v) || v.length < 2 || !Number.isSafeInteger(v[0]) || !Number.isSafeInteger(v[1]) || !v.slice(2).every((x) => typeof x === 'string')) throw new WrongReplyError('the end script', 'figures and ids', v);
  return { figures: { entries: v[0] as number, bytes: v[1] as number }, taken: v.slice(2) as string[] };
}

/** The values script's reply: [length (-1 absent), value] per field read. */
export function pairs(v: unknown, what: string): Array<[number, string]> {
  if (!Array.isArray(v) || v.length % 2 !== 0) throw new WrongReplyError(what, 'an array of lengths and values', v);
  const out: Array<[number, string]> = [];
  for (let i = 0; i < v.length; i += 2) {
    if (!Number.isSafeInteger(v[i]) || typeof v[i + 1] !== 'string') throw new WrongReplyError(what, 'a length and a value', v[i]);
    out.push([v[i] as number, v[i + 1] as string]);
  }
  return out;
}

export interface Page {
  figures: { entries: number; bytes: number };
  nextSeq: number;
  entries: OutboxEntry[];
  msgs: StoredMsg[];
  corrupt: number;
  /** The seq of the page's last entry (undefined: the page was empty, the end). */
  last?: number;
}

const text = (x: unknown): boolean => x === null || typeof x === 'string';

/** The page script's reply: figures, next seq, then 7 values per entry. */
export function parsePage(v: unknown): Page {
  const what = 'the outbox page';
  if (!Array.isArray(v) || v.length < 3 || (v.length - 3) % 7 !== 0 || !v.slice(0, 3).every((x) => Number.isSafeInteger(x))) throw new WrongReplyError(what, 'figures and entries', v);
  const page: Page = { figures: { entries: v[0] as number, bytes: v[1] as number }, nextSeq: v[2] as number, entries: [], msgs: [], corrupt: 0 };
  for (let i = 3; i < v.length; i += 7) {
    const [id, seq, head, st, attempts, sa, mh] = v.slice(i, i + 7) as unknown[];
    if (typeof id !== 'string' || !Number.isSafeInteger(seq) || ![head, st, attempts, sa, mh].every(text)) throw new WrongReplyError(what, 'an entry', id);
    page.last = seq as number;
    const entry = parseEntry(id, head as string | null, st as string | null, attempts as string | null, sa as string | null);
    if (!entry) {
      page.corrupt++;
      continue;
    }
    page.entries.push(entry);
    if (mh !== null) {
      const msg = parseMsg(entry.msgKey, mh as string);
      if (msg) page.msgs.push(msg);
      else page.corrupt++;
    }
  }
  return page;
}

function parseEntry(id: string, head: string | null, st: string | null, attempts: string | null, sa: string | null): OutboxEntry | undefined {
  try {
    const h = JSON.parse(head ?? 'null') as { s: number; p: number; k: OutboxKind; at: number; x: number };
    if (!h || !Number.isSafeInteger(h.s) || !OUTBOX_KINDS.includes(h.k)) return undefined;
    const slash = id.lastIndexOf('/');
    if (slash < 1) return undefined;
    const entry: OutboxEntry = {
      id, msgKey: id.slice(0, slash), kind: h.k, priority: h.p, seq: h.s, acceptedAt: h.at, expiresAt: h.x, attempts: Number(attempts ?? 0) || 0, state: stateOf(st),
    };
    if (sa !== null) entry.sentAt = (JSON.parse(sa) as SendAttempt).startedAt;
    return entry;
  } catch {
    return undefined;
  }
}

function stateOf(st: string | null): EntryState {
  if (st === null || st === 'w') return { phase: 'waiting' };
  if (st[0] === 's') return { phase: 'sending', attempt: JSON.parse(st.slice(1)) as SendAttempt };
  if (st[0] === 'e') return { phase: 'ended', outcome: JSON.parse(st.slice(1)) };
  throw new Error('an unknown state');
}

function parseMsg(key: string, mh: string): StoredMsg | undefined {
  try {
    const h = JSON.parse(mh) as { n: number; b: number; m: string; at: number };
    if (!Number.isSafeInteger(h.n) || h.n < 1) return undefined;
    return { key, msgId: String(h.m), acceptedAt: h.at, bytes: h.b, entryIds: Array.from({ length: h.n }, (_, i) => `${key}/${i}`) };
  } catch {
    return undefined;
  }
}

/** A script's refusal as the outbox's error (FULL, FENCED, STALE, UNSEEN); anything else SHARED_STATE. */
export function outboxError(err: unknown, what: string, name: string): GatewayError {
  const m = err instanceof Error ? err.message : String(err);
  if (m.startsWith('FULL ')) return new GatewayError('OUTBOX_FULL', `the outbox "${name}" is full (${m.slice(5)}, fleet-wide); nothing of this msg was kept`);
  if (m.startsWith('FENCED ')) return new SharedStateError(`the outbox "${name}": ${m.slice(7)} (another instance drains it)`, 'fenced');
  if (m.startsWith('STALE ')) return new SharedStateError(`the outbox "${name}": ${m.slice(6)} (another instance changed it)`, 'stale');
  if (m.startsWith('UNSEEN ')) return new SharedStateError(`the outbox "${name}": ${m.slice(7)} (it goes first)`, 'unseen');
  if (err instanceof GatewayError) return err;
  return new GatewayError('SHARED_STATE', `the outbox "${name}": Redis refused ${what} (${m.split('\n')[0]!.slice(0, 200)})`, { cause: err });
}
