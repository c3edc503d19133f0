/**
 * An outbox entry's outcome as the sending nodes' outputs give results without the outbox
 * (issue 45): `submit/messages` and `terminal/mode` results `{ID, DestinationID, ErrorID,
 * UserMessageID, ErrorName}`, one per destination for a message to many, cancellations
 * `{ID, CancelRequestID, ErrorID, ErrorName}`. Entries that were never sent (EXPIRED,
 * OUTBOX_FULL), refused as a call (`failed`) or whose outcome is unknown (`unknown`: sent, no
 * answer, the gateway's records cannot tell; never sent again) say so in `Outbox`.
 */
import { int64Out } from '../common/int64';
import { decodeMultiple, fromJsonItem } from './gateway-sender';
import { ERROR_CODES, GatewayError, type ErrorCode } from '../common/errors';
import type { EntryResult, JsonValue, MsgOutcome } from './types';

type Row = Record<string, unknown>;

const id = (s: string): unknown => (/^-?\d{1,20}$/.test(s) ? int64Out(BigInt(s)) : s === '' ? null : s);
const userId = (v: unknown): Row => (typeof v === 'bigint' ? { UserMessageID: int64Out(v) } : {});

/** Never sent, refused as a call, or its outcome unknown: what err.entries says of each of its results. */
function notSent(r: EntryResult): Row {
  const o = r.outcome;
  return o.result === 'failed' || o.result === 'unknown' ? { Outbox: o.result, code: o.code, message: o.message } : { Outbox: o.result };
}

function forDestination(r: EntryResult, dest: unknown, user: Row): Row {
  const o = r.outcome;
  if (o.result === 'accepted') return { ID: id(o.gatewayId), DestinationID: dest, ErrorID: 0, ...user };
  if (o.result === 'rejected') return { ID: null, DestinationID: dest, ErrorID: o.errorId, ...user, ...(o.errorName ? { ErrorName: o.errorName } : {}) };
  return { DestinationID: dest, ...user, ...notSent(r) };
}

function forMultiple(r: EntryResult, it: Row): Row[] {
  const dests = Array.isArray(it.Destinations) ? (it.Destinations as unknown[]) : [];
  const o = r.outcome;
  if (o.result !== 'accepted') return dests.map((d) => forDestination(r, d, {}));
  const each = decodeMultiple(o.gatewayId);
  return dests.map((d, i) => {
    const x = each[i];
    if (Array.isArray(x)) return { ID: null, DestinationID: d, ErrorID: x[0], ...(x[1] ? { ErrorName: x[1] } : {}) };
    return { ID: id(String(x ?? '')), DestinationID: d, ErrorID: 0 };
  });
}

function forCancel(r: EntryResult, msgId: unknown): Row {
  const o = r.outcome;
  const ID = typeof msgId === 'bigint' ? int64Out(msgId) : msgId;
  if (o.result === 'accepted') return { ID, CancelRequestID: id(o.gatewayId), ErrorID: 0 };
  if (o.result === 'rejected') return { ID, ErrorID: o.errorId, ...(o.errorName ? { ErrorName: o.errorName } : {}) };
  return { ID, ...notSent(r) };
}

/** The results an entry stands for, as the node's outputs give them. */
export function entryResults(r: EntryResult): Row[] {
  const it = (r.item === undefined ? {} : fromJsonItem(r.item as JsonValue)) as Row;
  switch (r.kind) {
    case 'multiple':
      return forMultiple(r, it);
    case 'cancel':
      return [forCancel(r, it)];
    default:
      return [forDestination(r, it.DestinationID, userId(it.UserMessageID))];
  }
}

const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());
export const BAD_END: ReadonlySet<string> = new Set(['EXPIRED', 'OUTBOX_FULL', 'failed', 'unknown']);

/** What a msg's error says after its count of entries, and its code. */
function errorOf(first: EntryResult['outcome']): { code: ErrorCode; why: string } {
  switch (first.result) {
    case 'EXPIRED':
      return { code: 'EXPIRED', why: 'its TTL ended before it could be sent; never sent' };
    case 'OUTBOX_FULL':
      return { code: 'OUTBOX_FULL', why: 'the outbox was full; dropped to make room, never sent' };
    case 'unknown':
      return {
        code: first.code === 'TIMEOUT' ? 'TIMEOUT' : 'NETWORK',
        why: `the outcome is UNKNOWN: sent, no answer came (${first.code}), and ${first.message}; it was NOT sent again (it may or may not exist at the gateway): look it up with iotgw-message-lookup or the status poller's records`,
      };
    case 'failed':
      return { code: (ERROR_CODES as readonly string[]).includes(first.code) ? (first.code as ErrorCode) : 'GATEWAY_ERROR', why: first.message };
    default:
      return { code: 'GATEWAY_ERROR', why: '' };
  }
}

/**
 * The error a msg ends with when some entries were never sent, refused as a call, or their
 * outcome is unknown. An unknown outcome comes first (the most a user must act on): its code is
 * the attempt's failure (NETWORK or TIMEOUT, as without the outbox) and `err.outcome` is 'unknown'.
 */
export function outcomeError(o: MsgOutcome): (GatewayError & { outcome?: 'unknown' }) | undefined {
  const bad = o.entries.filter((e) => BAD_END.has(e.outcome.result));
  if (!bad.length) return undefined;
  const unknown = bad.filter((e) => e.outcome.result === 'unknown');
  const shown = unknown.length ? unknown : bad;
  const { code, why } = errorOf(shown[0]!.outcome);
  const err: GatewayError & { outcome?: 'unknown' } = new GatewayError(code, `${shown.length} of ${o.entries.length} entr${o.entries.length === 1 ? 'y' : 'ies'} of the outbox "${o.outbox}": ${why}`);
  if (unknown.length) err.outcome = 'unknown';
  return err;
}

/**
 * msg.outbox: the accepted msg's key in its outbox (the same on an outcome sent again after a
 * kill: see docs/nodes.md), when it was accepted, when its last entry was sent, the most
 * attempts of an entry.
 */
export function outboxInfo(o: MsgOutcome): Record<string, unknown> {
  const sent = o.entries.map((e) => e.sentAt).filter((x): x is number => x !== undefined);
  return { key: o.key, acceptedAt: iso(o.acceptedAt), sentAt: sent.length ? iso(Math.max(...sent)) : null, attempts: Math.max(0, ...o.entries.map((e) => e.attempts)) };
}
