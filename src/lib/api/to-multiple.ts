/**
 * One message to many terminals (issue 35): `POST submit/to_multiple` with one object
 * `{Message, Destinations}`; `Message` has the fields of a `submit/messages` item without
 * `DestinationID`. The reply has one submission per destination, in order (group SEND).
 * Destinations: terminal PrimeIDs or broadcast IDs, at most `maxDestinations` (not public;
 * guess 100, a setting).
 */
import { GatewayError } from '../common/errors';
import { describeType, showValue } from '../common/int64';
import { isPlainObject } from '../common/checks';
import { parseReply, sameDestination, submitReply, type SubmitResult } from './terminal';
import { checkGeneralItem, type GeneralItem, type ItemDefaults } from './terminal-inputs';
import { nameErrors, throwOnCallError } from './gateway-errors';
import type { GatewayContext } from './gateway-context';
import type { Query } from '../transport/http';

export const TO_MULTIPLE_PATH = 'submit/to_multiple';
export const DEFAULT_MAX_DESTINATIONS = 100;

export interface MultipleItem {
  Message: Omit<GeneralItem, 'DestinationID'>;
  Destinations: string[];
}

/** Is this input a message to many (it names `Destinations`)? */
export const isMultipleInput = (raw: unknown): raw is Record<string, unknown> => isPlainObject(raw) && 'Destinations' in raw;

function checkDestinations(v: unknown, where: string, max: number, problems: string[]): string[] | undefined {
  if (!Array.isArray(v)) {
    problems.push(`${where}.Destinations: must be an array of terminal or broadcast IDs, not ${describeType(v)}`);
    return undefined;
  }
  if (v.length === 0) problems.push(`${where}.Destinations: an empty array; give 1 to ${max} terminal or broadcast IDs`);
  else if (v.length > max) problems.push(`${where}.Destinations: ${v.length} destinations; at most ${max} in one message (the node's "Most destinations")`);
  const bad = v.findIndex((d) => typeof d !== 'string' || d.trim() === '' || d.length > 64 || /[\u0000-\u001f\u007f]/.test(d));
  if (bad >= 0) problems.push(`${where}.Destinations[${bad}]: must be a terminal or broadcast ID (text of 1 to 64 printable characters), not ${showValue(v[bad])}`);
  return problems.length ? undefined : v.map((d: string) => d.trim());
}

/** Checks a message to many; pushes every problem (with its field). */
export function checkMultipleItem(raw: Record<string, unknown>, where: string, d: ItemDefaults, maxDestinations: number, problems: string[]): MultipleItem | undefined {
  const before = problems.length;
  const { Destinations, ...rest } = raw;
  if (rest.DestinationID !== undefined) problems.push(`${where}.DestinationID: give either DestinationID or Destinations, not both`);
  const mine: string[] = [];
  const dests = checkDestinations(Destinations, where, maxDestinations, mine);
  problems.push(...mine);
  // The message's own fields are those of a submit/messages item; the destination is a stand-in.
  const item = checkGeneralItem({ ...rest, DestinationID: 'x' }, where, d, problems);
  if (problems.length > before || !item || !dests) return undefined;
  const message: Partial<GeneralItem> = { ...item };
  delete message.DestinationID;
  return { Message: message as MultipleItem['Message'], Destinations: dests };
}

/** POST submit/to_multiple: one result per destination, in the order given (each checked against its destination). */
export async function postToMultiple(g: GatewayContext, item: MultipleItem, o: { query?: Query; signal?: AbortSignal } = {}): Promise<Array<SubmitResult & { ErrorName?: string; ErrorDescription?: string }>> {
  const path = g.apiPath(TO_MULTIPLE_PATH);
  const res = await g.client().request({ method: 'POST', path, body: item, group: 'SEND', auth: g.bearerAuth(), idempotent: false, signal: o.signal, query: o.query });
  const reply = parseReply(submitReply, res.body, `POST ${path}`);
  await throwOnCallError(g, reply.ErrorID, `POST ${path}`, res.statusCode, o.signal);
  const subs = reply.Submissions ?? [];
  if (subs.length !== item.Destinations.length) throw new GatewayError('BAD_RESPONSE', `POST ${path}: ${subs.length} results for ${item.Destinations.length} destinations`);
  const out = subs.map((s, i) => {
    const dest = item.Destinations[i]!;
    if (s.DestinationID && !sameDestination(s.DestinationID, dest)) throw new GatewayError('BAD_RESPONSE', `POST ${path}: result ${i} is for ${s.DestinationID}, expected ${dest}`);
    return s.DestinationID ? s : { ...s, DestinationID: dest };
  });
  return nameErrors(g, out, o.signal);
}
