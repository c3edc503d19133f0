/**
 * The records of a feed reply, each checked on its own (issue 34): one record that breaks
 * the API's rules (`ID: 1.5`, a string `State`...) never blocks the feed. It becomes a
 * `MalformedRecord` that takes its place in the feed (its second moves the mark, its key is
 * de-duplicated like any other), so it is reported once, with the raw record, and the rest
 * of the reply goes out.
 */
import { createHash } from 'node:crypto';
import { built, type SchemaOf } from '../common/schema';

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
