/**
 * The codec's bounds (docs/security.md, "The codec's bounds"): every message it decodes or
 * encodes is at most the service's largest terminal message (6,400 bytes from-mobile and
 * 10,000 to-mobile on IDP by default: shared/spec/real-services.md, "Message sizes"), and a
 * message's layout is checked at load so that no message of that size can decode into
 * more than MAX_VALUES values, however its arrays nest. Work per message is then bounded
 * by bytes and values, whatever the definitions are.
 */
import { minBits, minFieldBits } from './definitions';
import type { Direction, FieldDef, MessageDef } from './model';

/** The largest message of each direction, in bytes (SIN and MIN included). */
export type MaxBytes = Record<Direction, number>;

/** IDP's largest from-mobile (return) and to-mobile (forward) messages. */
export const DEFAULT_MAX_BYTES: Readonly<MaxBytes> = { return: 6400, forward: 10000 };
/** The settings' range: a message holds at least SIN and MIN; 65,535 is far above any terminal's. */
export const MAX_BYTES_RANGE = [2, 65535] as const;

/**
 * The most values (each field's value, each array element, each bitmask item object) one
 * message may decode into. Measured (BENCHMARKS.md, figure 6): decoding the worst layout
 * of this many values and building its common message format stays well under 50 ms.
 */
export const MAX_VALUES = 20_000;

/** A definitions file (or pasted XML) larger than this is refused unread. */
export const MAX_DEFINITIONS_BYTES = 4 * 1024 * 1024;

/**
 * An upper bound of the values a field decodes into, as `c + d * bits` (bits: those the
 * field takes) and as `u` (from the Sizes alone). `path` is the chain of field names
 * whose density is the highest: the element to name when the layout is refused.
 */
interface Bound {
  c: number;
  d: number;
  u: number;
  path: FieldDef[];
}

/** A value takes at least its field's least bits; an array element or a bitmask item object adds one value. */
function fieldBound(f: FieldDef): Bound {
  if (f.kind === 'ArrayField' || f.kind === 'BitmaskListField') {
    const el = listBound(f.fields);
    const count = f.size;
    const u = 1 + count * (1 + el.u);
    if (f.kind === 'ArrayField') {
      // values <= 1 + k (1 + C) + D * bits, with k <= bits / m: d = D + (1 + C) / m.
      const m = Math.max(1, minBits(f.fields));
      return { c: 1, d: el.d + (1 + el.c) / m, u, path: [f, ...el.path] };
    }
    // A bitmask: k <= Size set bits, each taking its mask bit.
    return { c: 1, d: Math.max(1 + el.c, el.d), u, path: [f, ...el.path] };
  }
  // One value of at least minFieldBits bits (1 for a field of none: PropertyField, refused on use).
  return { c: 0, d: 1 / Math.max(1, minFieldBits(f)), u: 1, path: [f] };
}

/** The bound of a list of fields (a message, an element): constants add up, densities do not. */
function listBound(fields: FieldDef[]): Bound {
  let c = 0;
  let d = 0;
  let u = 0;
  let path: FieldDef[] = [];
  for (const f of fields) {
    const b = fieldBound(f);
    c += b.c;
    u += b.u;
    if (b.d > d) {
      d = b.d;
      path = b.path;
    }
  }
  return { c, d, u, path };
}

export interface WorstCase {
  /** The most values a message of `maxBytes` can decode into. */
  values: number;
  /** The fields down to the densest one (to name in an error). */
  path: FieldDef[];
}

/** The most values `m` decodes into from at most `maxBytes` bytes. */
export function worstCase(m: MessageDef, maxBytes: number): WorstCase {
  const b = listBound(m.fields);
  const bits = Math.max(0, maxBytes - 2) * 8;
  return { values: Math.ceil(1 + Math.min(b.u, b.c + b.d * bits)), path: b.path };
}
