/**
 * The outbox's reconciler over an account (issue 45): reconcile.ts (the gateway look-up)
 * turned into an `OutboxReconciler`. Per kind:
 * - `message`: the entry is one to-mobile message (its DestinationID, RawPayload or Payload);
 * - `mode`: one to-mobile message too, with the payload the gateway shows of it (modeEntryBody);
 * - `multiple`: one message per destination (keys `<entry>#<i>`): found when every destination
 *   was found (the gateway creates them in one call), absent when none was and the gateway's
 *   clock is past the settle time, unknown when settled and one could not be told (a crowded
 *   second, reconcile.ts), else not-yet;
 * - `cancel`: the message's State (reconcileCancels): CANCELLED ends it accepted (the first
 *   cancel took effect); anything else sends it again (a second cancel cancels nothing twice:
 *   the gateway answers "already closed", which ends the entry rejected).
 * An attempt without a gateway time (a crash before it was read cannot happen: the time is
 * read before the attempt is recorded) uses its local start time less the skew.
 */
import { formatUtcSeconds } from '../feed/time';
import { DEFAULT_RECONCILE, accountGet, modeEntryBody, reconcile, reconcileCancels, type Found, type LostAttempt, type ReconcileOptions, type SentEntry } from './reconcile';
import { encodeMultiple, fromJsonItem, type SenderContext } from './gateway-sender';
import type { JsonValue, OutboxEntry, OutboxReconciler, ReconcileContext, ReconcileOutcome, SendAttempt } from './types';

type Loaded = OutboxEntry & { item: JsonValue };
type Body = SentEntry['body'];

function bodyOf(it: Record<string, unknown>): Body {
  return it.RawPayload !== undefined ? { RawPayload: it.RawPayload as string } : { Payload: it.Payload };
}

/** The gateway messages one entry stands for (one, or one per destination). */
function sentOf(e: Loaded): SentEntry[] {
  const it = fromJsonItem(e.item) as Record<string, unknown>;
  if (e.kind === 'mode') return [{ key: e.id, destination: String(it.DestinationID), body: modeEntryBody(Number(it.Mode), Number(it.WakeupInterval)) }];
  if (e.kind === 'multiple') {
    const body = bodyOf((it.Message ?? {}) as Record<string, unknown>);
    return ((it.Destinations ?? []) as string[]).map((d, i) => ({ key: `${e.id}#${i}`, destination: d, body }));
  }
  return [{ key: e.id, destination: String(it.DestinationID), body: bodyOf(it) }];
}

function outcomeOf(found: Array<Found | undefined>, multiple: boolean): ReconcileOutcome {
  if (found.length && found.every((f) => f?.state === 'found')) {
    const ids = found.map((f) => String((f as { id: number | string }).id));
    return { result: 'found', gatewayId: multiple ? encodeMultiple(ids) : ids[0]! };
  }
  if (found.length && found.every((f) => f?.state === 'absent')) return { result: 'absent' };
  // Settled, and some could not be told (the rest found or absent): the entry cannot be told either.
  const unknown = found.find((f): f is Extract<Found, { state: 'unknown' }> => f?.state === 'unknown');
  if (unknown && found.every((f) => f && f.state !== 'not-yet')) return { result: 'unknown', why: unknown.why };
  return { result: 'not-yet' };
}

export interface GatewayReconcilerOptions {
  context: () => SenderContext | undefined;
  signal?: AbortSignal;
  reconcile?: Partial<ReconcileOptions>;
}

export class GatewayReconciler implements OutboxReconciler {
  constructor(private readonly o: GatewayReconcilerOptions) {}

  async reconcile(attempt: SendAttempt, entries: Loaded[], context: ReconcileContext = {}): Promise<ReconcileOutcome[]> {
    const g = this.o.context();
    if (!g) return entries.map(() => ({ result: 'not-yet' }));
    const get = accountGet(g, this.o.signal);
    if (entries.every((e) => e.kind === 'cancel')) return this.cancels(get, entries);
    const opts = { ...DEFAULT_RECONCILE, ...this.o.reconcile };
    const sentAfterUtc = attempt.gatewayTime ?? formatUtcSeconds(Math.floor(attempt.startedAt / 1000) - opts.skewSeconds);
    const sent = entries.map(sentOf);
    const lost: LostAttempt = { sentAfterUtc, startedAt: attempt.startedAt, endedAt: context.unknownSince, entries: sent.flat() };
    const found = await reconcile(get, lost, opts);
    // A `multiple` entry's gatewayId is its destinations' IDs, as the sender gives them.
    return entries.map((e, i) => outcomeOf(sent[i]!.map((s) => found.get(s.key)), e.kind === 'multiple'));
  }

  private async cancels(get: ReturnType<typeof accountGet>, entries: Loaded[]): Promise<ReconcileOutcome[]> {
    const ids = entries.map((e) => String(fromJsonItem(e.item)));
    const states = await reconcileCancels(get, ids);
    return ids.map((id) => (states.get(id)?.state === 'cancelled' ? { result: 'found', gatewayId: '' } : { result: 'absent' }));
  }
}
