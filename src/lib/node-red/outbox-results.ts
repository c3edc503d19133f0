/**
 * An outbox entry's outcome as the sending nodes' outputs give results without the outbox
 * (issue 45): `submit/messages` and `terminal/mode` results `{ID, DestinationID, ErrorID,
 * UserMessageID, ErrorName}`, one per destination for a message to many, cancellations
 * `{ID, CancelRequestID, ErrorID, ErrorName}`. Entries that were never sent (EXPIRED,
 * OUTBOX_FULL) or refused as a call say so in `Outbox`.
 */
import { int64Out } from '../common/int64';
import { decodeMultiple, fromJsonItem } from '../outbox/gateway-sender';
import type { EntryResult, JsonValue } from '../outbox/types';

type Row = Record<string, unknown>;

const id = (s: string): unknown => (/^-?\d{1,20}$/.test(s) ? int64Out(BigInt(s)) : s === '' ? null : s);
const userId = (v: unknown): Row => (typeof v === 'bigint' ? { UserMessageID: int64Out(v) } : {});

/** Never sent, or refused as a call: what err.entries says of each of its results. */
function notSent(r: EntryResult): Row {
  const o = r.outcome;
  return o.result === 'failed' ? { Outbox: 'failed', code: o.code, message: o.message } : { Outbox: o.result };
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
