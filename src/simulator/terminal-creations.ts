/**
 * Area (a), what the gateway created, counted (issue 45): each to-mobile message (mode,
 * submit/messages, submit/to_multiple, broadcast) by destination and payload, and each
 * cancellation asked by message ID, so a test can assert "each entry created exactly once"
 * and "no message cancelled twice" (`GET /_sim/creations`).
 *
 * A payload is its RawPayload's bytes or its Payload deep-equal (object keys in any order);
 * a mode message's is the simulator's guess of what get/fw_messages shows of it (`modePayload`).
 * Destinations compare without case or surrounding spaces, as the gateway's.
 */
import type { Message } from './terminal-model';

/** What get/fw_messages shows of a mode message (the simulator's guess: SIN 0, MIN 70, mode, wake-up code). */
export function modePayload(mode: number, wakeup: number): { RawPayload: string } {
  return { RawPayload: Buffer.from([0, 70, mode, wakeup]).toString('base64') };
}

/** JSON with object keys sorted (deep-equal values give equal text). */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v && typeof v === 'object') {
    const keys = Object.keys(v).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return typeof v === 'bigint' ? v.toString() : (JSON.stringify(v) ?? 'null');
}

/** The key of a (destination, payload) pair; RawPayload as base64 text or a byte array. */
export function creationKey(destination: string, payload: { RawPayload?: unknown; Payload?: unknown } | undefined): string {
  const dest = destination.trim().toLowerCase();
  const raw = payload?.RawPayload;
  if (typeof raw === 'string') return `${dest} R:${Buffer.from(raw, 'base64').toString('base64')}`;
  if (Array.isArray(raw)) return `${dest} R:${Buffer.from(raw as number[]).toString('base64')}`;
  return `${dest} P:${canonicalJson(payload?.Payload ?? null)}`;
}

export interface Creation {
  DestinationID: string;
  RawPayload?: string;
  Payload?: unknown;
  count: number;
  /** The IDs of the messages created (in order). */
  ids: string[];
}

export class Creations {
  private readonly byKey = new Map<string, Creation>();
  /** Cancellations asked, by message ID: how many times, and how many cancelled it. */
  readonly cancels = new Map<string, { asked: number; cancelled: number }>();
  total = 0;

  /** A message was created. */
  created(m: Message): void {
    const payload = m.payload ?? modePayload(m.mode, m.wakeup);
    const key = creationKey(m.terminal, payload);
    let c = this.byKey.get(key);
    if (!c) this.byKey.set(key, (c = { DestinationID: m.terminal, ...payload, count: 0, ids: [] }));
    c.count++;
    c.ids.push(m.id.toString());
    this.total++;
  }

  /** A cancellation of message `id` was asked; `cancelled`: it cancelled the message. */
  cancelAsked(id: string, cancelled: boolean): void {
    const c = this.cancels.get(id) ?? { asked: 0, cancelled: 0 };
    c.asked++;
    if (cancelled) c.cancelled++;
    this.cancels.set(id, c);
  }

  /** Messages created to `destination` with `payload` (RawPayload as base64 or bytes, or Payload). */
  count(destination: string, payload: { RawPayload?: unknown; Payload?: unknown }): number {
    return this.byKey.get(creationKey(destination, payload))?.count ?? 0;
  }

  list(): Creation[] {
    return [...this.byKey.values()];
  }

  /** Pairs created more than once. */
  duplicates(): Creation[] {
    return this.list().filter((c) => c.count > 1);
  }

  /** The control route's reply: totals, duplicates, and (with `all`) every pair and cancellation. */
  describe(all: boolean): Record<string, unknown> {
    const cancels = [...this.cancels].map(([ID, c]) => ({ ID, ...c }));
    return {
      total: this.total,
      distinct: this.byKey.size,
      duplicates: this.duplicates(),
      cancelledTwice: cancels.filter((c) => c.cancelled > 1),
      ...(all ? { creations: this.list(), cancellations: cancels } : {}),
    };
  }

  clear(): void {
    this.byKey.clear();
    this.cancels.clear();
    this.total = 0;
  }
}
