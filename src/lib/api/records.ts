/**
 * The records of a feed reply, each checked on its own (issue 34): one record that breaks
 * the API's rules (`ID: 1.5`, a string `State`...) never blocks the feed. It becomes a
 * `MalformedRecord` that takes its place in the feed (its second moves the mark, its key is
 * de-duplicated like any other), so it is reported once, with the raw record, and the rest
 * of the reply goes out.
 */
import { createHash } from 'node:crypto';
import { built, schema, type SchemaOf } from '../common/schema';
import { isUtcTime } from '../feed/time';

/**
 * The form of a terminal's ID as the gateway writes it (issue 43): a PrimeID or MobileID
 * such as `01000005SKYCD96` (8 digits, 3 letters, 4 letters or digits), a DestinationID, or
 * a broadcast ID such as `12345678GRPAB12` (8 digits, `GRP`, 4 characters). Tolerant of
 * other real IDs: letters and digits, 1 to 32 of them. Nothing else (no space, no `<`, no
 * `&`, no quote), so an ID is safe as text anywhere, even where a widget writes it as HTML.
 */
export const TERMINAL_ID_RE = /^[A-Za-z0-9]{1,32}$/;
export const isTerminalId = (v: unknown): v is string => typeof v === 'string' && TERMINAL_ID_RE.test(v);
/** A gateway time field: `yyyy-MM-dd HH:mm:ss` in UTC (a real second), or empty where there is none (real-services.md). */
export const isUtcField = (v: unknown): boolean => v === '' || isUtcTime(v);

/** A terminal ID field of a record (see TERMINAL_ID_RE). */
export const terminalIdText = schema((z) => z.string().refine(isTerminalId, { message: 'expected a terminal ID: 1 to 32 letters and digits (e.g. 01000005SKYCD96)' }));
/** A UTC time field of a record (see isUtcField). */
export const utcText = schema((z) => z.string().refine(isUtcField, { message: 'expected a UTC time as yyyy-MM-dd HH:mm:ss' }));

export class MalformedRecord {
  readonly key: string;
  constructor(
    readonly raw: unknown,
    readonly why: string,
    /** The fields that hold the record's second, in order of preference. */
    private readonly timeFields: readonly string[] = [],
  ) {
    let text: string;
    try {
      text = JSON.stringify(raw) ?? String(raw);
    } catch {
      text = String(raw);
    }
    this.key = `malformed:${createHash('sha256').update(text).digest('hex').slice(0, 32)}`;
  }

  /** The record's second as received (undefined: none readable; the reader counts it at the mark). */
  get time(): unknown {
    const r = this.raw as Record<string, unknown> | null;
    if (!r || typeof r !== 'object') return undefined;
    for (const f of this.timeFields) if (r[f] !== undefined && r[f] !== null) return r[f];
    return undefined;
  }
}

/**
 * One record of a reply checked with `check` (a schema whose output is not kept: the record
 * itself is returned, not a copy), or a MalformedRecord naming the first bad field.
 */
export function readRecord<T>(check: SchemaOf<unknown>, raw: unknown, timeFields: readonly string[]): T | MalformedRecord {
  const r = built(check).safeParse(raw);
  if (r.success) return raw as T;
  const issue = r.error.issues[0];
  return new MalformedRecord(raw, `${issue?.path.length ? issue.path.join('.') : '(record)'}: ${issue?.message ?? 'invalid'}`, timeFields);
}

/** The records of a reply (`list`: the reply's array, or null/undefined for none), each checked. */
export function readRecords<T>(check: SchemaOf<unknown>, list: unknown, timeFields: readonly string[]): Array<T | MalformedRecord> {
  return Array.isArray(list) ? list.map((raw) => readRecord<T>(check, raw, timeFields)) : [];
}
