/**
 * A strict check of the RESP2/RESP3 framing a Redis peer sends (issue 43), byte by byte and
 * across chunks, before ioredis's decoder sees a byte (reply-guard.ts puts it in front).
 *
 * ioredis 6's decoder trusts its input: it reads any byte of a length as a digit (`$*` is
 * -6, which moves its cursor back: an endless loop; `$0x999999999` is 72,999,999,999, held
 * for ever), skips CRLFs without looking, and throws on types it does not know. So nothing
 * passes here but what that decoder reads as meant:
 * - the types it decodes: `+ - : $ * _ # , ( ! = % ~ >` (`>` push at the top only; `|`
 *   attributes, which it cannot read, refused);
 * - lengths and counts of decimal digits only (no sign, no leading zero), `-1` only for the
 *   RESP2 nulls `$-1` and `*-1`; integers `-?digits` (at most 19), big numbers at most 100
 *   digits, doubles `nan`, `inf`, `-inf` or `-?digits[.digits][e[+-]digits]`, booleans `t`
 *   or `f`, null `_` empty; a verbatim string of at least 4 bytes with `:` as its 4th;
 * - every line ended by CRLF, no CR or LF inside a simple string or error, every bulk
 *   string followed by CRLF;
 * - each whole reply (its aggregates, their counts at 3 bytes a value at least, and every
 *   bulk length announced) within `maxBytes`, and nested at most MAX_DEPTH deep.
 *
 * O(bytes), with bounded state: a short header line (at most MAX_LINE bytes) and one count
 * per open aggregate; bulk contents and simple strings are skipped, not kept.
 */

/** Aggregates may nest at most this deep (ours: 2; HELLO's reply: 3). */
export const MAX_DEPTH = 32;
/** The longest header line kept to be read (a length, a count, a number, a double). */
const MAX_LINE = 128;
/** The smallest value takes 3 bytes (`_\r\n`): a count is bounded by the bytes it needs. */
const MIN_VALUE = 3;

const enum S {
  Type,
  Line,
  Lf,
  Bulk,
  BulkCr,
  BulkLf,
}

const CR = 0x0d;
const LF = 0x0a;
const LENGTH = /^(0|[1-9][0-9]{0,9})$/;
/**
 * What a header line of each type may begin with, checked at every byte that comes (the
 * decoder acts on a line before its CR: after `$-` it skips `1\r\n` unread, after `,n` the
 * rest of `nan\r\n`): only a beginning of a well-formed line reaches it.
 */
const LENGTH_START = /^(0|[1-9][0-9]{0,9})?$/;
const BEGINNINGS: Record<string, RegExp> = {
  $: /^(-1?|0|[1-9][0-9]{0,9})?$/,
  '*': /^(-1?|0|[1-9][0-9]{0,9})?$/,
  ':': /^(-|0|-?[1-9][0-9]{0,18})?$/,
  '(': /^(-|0|-?[1-9][0-9]{0,99})?$/,
  ',': /^(n|na|nan|-|-?i|-?in|-?inf|-?[0-9]{1,40}(\.[0-9]{0,40}([eE][+-]?[0-9]{0,4})?|[eE][+-]?[0-9]{0,4})?)?$/,
  '#': /^[tf]?$/,
  _: /^$/,
};
const FORMS: Record<string, { re: RegExp; what: string }> = {
  ':': { re: /^(0|-?[1-9][0-9]{0,18})$/, what: 'an integer that is not decimal digits' },
  '(': { re: /^(0|-?[1-9][0-9]{0,99})$/, what: 'a big number that is not decimal digits' },
  ',': { re: /^(nan|-?inf|-?[0-9]{1,40}(\.[0-9]{1,40})?([eE][+-]?[0-9]{1,4})?)$/, what: 'a double that is not a number' },
  '#': { re: /^[tf]$/, what: 'a boolean other than t or f' },
  _: { re: /^$/, what: 'a null with content' },
};

/** What refused a stream: its size (the bound, the depth) or its form. */
export interface RespFault {
  kind: 'size' | 'form';
  /** Holds no reply content. */
  why: string;
}

export class RespCheck {
  /** Bytes of the reply being received so far (0 between replies). */
  bytes = 0;
  fault: RespFault | undefined;
  private state = S.Type;
  private type = '';
  private line = '';
  private bulkLeft = 0;
  /** Verbatim string: bytes of its content read so far (its 4th must be ':'), or -1. */
  private verbatimAt = -1;
  /** Values still due per open aggregate (innermost last). */
  private readonly stack: number[] = [];
  /** Values announced by the open aggregates and not begun yet. */
  private unstarted = 0;
  /** The last value of a reply is in: `bytes` starts again after this step. */
  private whole = false;

  constructor(private readonly maxBytes: number) {}

  /** Checks one chunk; returns the fault when the stream broke the framing (then and later). */
  push(chunk: Uint8Array): RespFault | undefined {
    let i = 0;
    while (i < chunk.length && !this.fault) {
      const from = i;
      i = this.step(chunk, i);
      this.bytes += i - from;
      if (this.bytes > this.maxBytes) this.refuseSize();
      if (this.whole) this.bytes = 0;
      this.whole = false;
    }
    return this.fault;
  }

  /** Consumes what it can of `chunk` from `i` in the current state; returns where it stopped. */
  private step(chunk: Uint8Array, i: number): number {
    switch (this.state) {
      case S.Type:
        this.begin(String.fromCharCode(chunk[i]!));
        return i + 1;
      case S.Line:
        return this.type === '+' || this.type === '-' ? this.simpleLine(chunk, i) : this.shortLine(chunk, i);
      case S.Lf:
        if (chunk[i] !== LF) return this.refuse('a line not ended by CRLF', i);
        this.state = S.Type;
        this.lineDone();
        return i + 1;
      case S.Bulk:
        return this.bulk(chunk, i);
      case S.BulkCr:
      case S.BulkLf:
        if (chunk[i] !== (this.state === S.BulkCr ? CR : LF)) return this.refuse('a bulk string not followed by CRLF', i);
        if (this.state === S.BulkLf) {
          this.state = S.Type;
          this.valueDone();
        } else this.state = S.BulkLf;
        return i + 1;
    }
  }

  private begin(type: string): void {
    if (!'+-:$*_#,(!=%~>'.includes(type)) {
      const code = type.charCodeAt(0).toString(16).padStart(2, '0');
      this.refuse(type === '|' ? 'an attribute (RESP3 |), which ioredis cannot read' : `an unknown type byte 0x${code}`);
      return;
    }
    if (type === '>' && this.stack.length) {
      this.refuse('a push inside another reply');
      return;
    }
    if (this.stack.length) this.unstarted--;
    this.type = type;
    this.line = '';
    this.state = S.Line;
  }

  /** A simple string or error: any bytes but CR and LF, up to CR. */
  private simpleLine(chunk: Uint8Array, i: number): number {
    const cr = chunk.indexOf(CR, i);
    const end = cr < 0 ? chunk.length : cr;
    const lf = chunk.indexOf(LF, i);
    if (lf >= 0 && lf < end) return this.refuse('a line feed inside a simple string', lf);
    if (cr >= 0) this.state = S.Lf;
    return cr < 0 ? end : cr + 1;
  }

  /** A header line (length, count, number): kept, at most MAX_LINE bytes, each byte one its type may hold. */
  private shortLine(chunk: Uint8Array, i: number): number {
    const stop = Math.min(chunk.length, i + MAX_LINE + 1 - this.line.length);
    let j = i;
    while (j < stop && chunk[j] !== CR) j++;
    this.line += Buffer.from(chunk.buffer, chunk.byteOffset + i, j - i).toString('latin1');
    if (this.line.length > MAX_LINE) return this.refuse(`a header line longer than ${MAX_LINE} bytes`, j);
    if (!(BEGINNINGS[this.type] ?? LENGTH_START).test(this.line)) return this.refuse(FORMS[this.type]?.what ?? 'a length or count that is not decimal digits', i);
    if (j < chunk.length && chunk[j] === CR) {
      const bad = this.lineFault();
      if (bad) return this.refuse(bad, j);
      this.state = S.Lf;
      return j + 1;
    }
    return j;
  }

  /** What is wrong with a whole header line, checked at its CR: the decoder reads the line at its CR. */
  private lineFault(): string | undefined {
    const { type, line } = this;
    const form = FORMS[type];
    if (form) return form.re.test(line) ? undefined : form.what;
    if (line === '-1' && (type === '$' || type === '*')) return undefined;
    return LENGTH.test(line) ? undefined : 'a length or count that is not decimal digits';
  }

  private bulk(chunk: Uint8Array, i: number): number {
    const n = Math.min(this.bulkLeft, chunk.length - i);
    if (this.verbatimAt >= 0 && this.verbatimAt < 4) {
      const at = 3 - this.verbatimAt;
      if (at < n && chunk[i + at] !== 0x3a) return this.refuse('a verbatim string without its format', i);
      this.verbatimAt += n;
    }
    this.bulkLeft -= n;
    if (this.bulkLeft === 0) this.state = S.BulkCr;
    return i + n;
  }

  /** A header line is in (its CRLF too, its form checked at its CR): a value, or the start of a bulk string or aggregate. */
  private lineDone(): void {
    const { type, line } = this;
    if (FORMS[type] || type === '+' || type === '-' || line === '-1') this.valueDone();
    else this.startValue(type, Number(line));
  }

  private startValue(type: string, n: number): void {
    if ('$!='.includes(type)) return this.startBulk(n);
    this.open(type === '%' ? n * 2 : n);
  }

  private startBulk(n: number): void {
    if (this.bytes + n + 2 + MIN_VALUE * this.unstarted > this.maxBytes) return this.refuseSize();
    if (this.type === '=' && n < 4) {
      this.refuse('a verbatim string without its format');
      return;
    }
    this.verbatimAt = this.type === '=' ? 0 : -1;
    this.bulkLeft = n;
    this.state = n > 0 ? S.Bulk : S.BulkCr;
  }

  private open(n: number): void {
    if (n === 0) return this.valueDone();
    if (this.stack.length >= MAX_DEPTH) {
      this.fault = { kind: 'size', why: `a reply nested deeper than ${MAX_DEPTH} levels` };
      return;
    }
    this.unstarted += n;
    if (this.bytes + MIN_VALUE * this.unstarted > this.maxBytes) return this.refuseSize();
    this.stack.push(n);
  }

  private valueDone(): void {
    while (this.stack.length) {
      const left = this.stack[this.stack.length - 1]! - 1;
      if (left > 0) {
        this.stack[this.stack.length - 1] = left;
        return;
      }
      this.stack.pop();
    }
    this.whole = true;
  }

  /** Refuses the stream for its form; returns `at` (for the step that found it). */
  private refuse(what: string, at = 0): number {
    this.fault ??= { kind: 'form', why: `a malformed reply (${what})` };
    return at;
  }

  private refuseSize(): void {
    this.fault ??= { kind: 'size', why: `a reply larger than ${this.maxBytes} bytes` };
  }
}
