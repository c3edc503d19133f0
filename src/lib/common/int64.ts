/**
 * Exact int64 handling. The gateway's message IDs are int64; JavaScript numbers are
 * exact only up to 2^53 - 1. Replies are parsed with lossless-json so that no digit is
 * lost, then every integer is emitted as a JS number when it is safe and as a decimal
 * string when it is not (the public contract). Requests are serialised with BigInt so
 * that an ID goes out as an exact JSON integer.
 */
import type * as LosslessJson from 'lossless-json';

let lossless: typeof LosslessJson | undefined;
/** lossless-json, loaded with the first request or long-numbered reply: a flow's nodes start without it. */
function losslessJson(): typeof LosslessJson {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (lossless ??= require('lossless-json') as typeof LosslessJson);
}

export const INT64_MAX = 9223372036854775807n;
export const INT64_MIN = -9223372036854775808n;

const INTEGER_RE = /^-?\d+$/;

/** Number parser for lossless-json: unsafe integers become decimal strings. */
function parseNumber(text: string): number | string {
  if (INTEGER_RE.test(text)) {
    if (losslessJson().isSafeNumber(text)) return Number(text);
    // Normalise (strip a leading "-0..." or leading zeros) through BigInt.
    return BigInt(text).toString();
  }
  return Number(text);
}

/**
 * A JSON number token of 16 or more digits: the only way a value can be an unsafe integer.
 * A number token starts the text or follows `:`, `,` or `[` (and white space); a run of
 * digits inside a string (a hex key, a serial number) is never a number, so such text
 * takes the native parser. A string that happens to hold ":" and 16 digits only sends
 * the text to the exact parser, which gives the same result.
 */
const LONG_NUMBER = /(?:^|[:,[])[ \t\n\r]*-?\d{16}/;

/** Deepest nesting of arrays and objects a reply may have: no real reply comes near it. */
export const MAX_JSON_DEPTH = 64;

/** Thrown by parseJson for text nested deeper than the limit (valid JSON or not). */
export class JsonDepthError extends Error {
  constructor(readonly limit: number) {
    super(`nested deeper than ${limit} levels`);
    this.name = 'JsonDepthError';
  }
}

/** The index of the quote closing the string that opens at `start` (one not escaped by an odd run of backslashes), or -1. */
function stringEnd(text: string, start: number): number {
  for (let i = start; ; ) {
    i = text.indexOf('"', i + 1);
    if (i < 0) return -1;
    let b = i - 1;
    while (text.charCodeAt(b) === 92) b--;
    if ((i - 1 - b) % 2 === 0) return i;
  }
}

/**
 * True when the text opens more than `limit` arrays/objects inside one another. One pass
 * over the text, jumping over strings with indexOf (brackets inside strings do not
 * count). Text with no more than `limit` opening brackets at all cannot be too deep:
 * native indexOf searches tell that first, so most replies never enter the loop.
 */
export function jsonTooDeep(text: string, limit = MAX_JSON_DEPTH): boolean {
  let openers = 0;
  for (let i = text.indexOf('{'); i >= 0 && openers <= limit; i = text.indexOf('{', i + 1)) openers++;
  for (let i = text.indexOf('['); i >= 0 && openers <= limit; i = text.indexOf('[', i + 1)) openers++;
  if (openers <= limit) return false;
  let depth = 0;
  for (let i = 0, n = text.length; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 34) {
      i = stringEnd(text, i);
      if (i < 0) return false;
    } else if (c === 123 || c === 91) {
      if (++depth > limit) return true;
    } else if (c === 125 || c === 93) {
      depth--;
    }
  }
  return false;
}

/**
 * Parses JSON text; integers above 2^53 - 1 come back as exact decimal strings. Text
 * with no number token of 16 digits cannot hold an unsafe integer (every integer of up to
 * 15 digits is below 2^53; digits inside strings are not numbers), so it takes the native parser, which gives the same result
 * several times faster. Text nested deeper than `maxDepth` is refused before parsing
 * (JsonDepthError): such a value would overflow the stack of every recursive walk after
 * it (Node-RED's msg clone, the debug sidebar, JSON.stringify).
 */
export function parseJson(text: string, maxDepth = MAX_JSON_DEPTH): unknown {
  if (jsonTooDeep(text, maxDepth)) throw new JsonDepthError(maxDepth);
  if (!LONG_NUMBER.test(text)) return JSON.parse(text);
  const inPlace = parseExactInPlace(text);
  if (inPlace) return inPlace.value;
  const quoted = quoteUnsafeIntegers(text);
  return quoted === undefined ? losslessJson().parse(text, null, parseNumber) : JSON.parse(quoted);
}

const MAX_SAFE_TEXT = String(Number.MAX_SAFE_INTEGER);

/** Is the integer token text[from, to) (digits, an optional leading "-") beyond 2^53 - 1? */
function unsafeToken(text: string, from: number, to: number): boolean {
  const digits = to - from - (text.charCodeAt(from) === 45 ? 1 : 0);
  if (digits !== MAX_SAFE_TEXT.length) return digits > MAX_SAFE_TEXT.length;
  return text.slice(to - digits, to) > MAX_SAFE_TEXT;
}

/**
 * Walks the number tokens of JSON text outside strings: `each(from, digitsEnd, end, integer)`
 * for every one (digitsEnd: the end of its sign and digits; integer: no fraction or exponent
 * follows). False for text it cannot walk (an unterminated string, a leading zero).
 */
function walkNumbers(text: string, each: (from: number, digitsEnd: number, end: number, integer: boolean) => void): boolean {
  for (let i = 0, n = text.length; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 34) {
      i = stringEnd(text, i);
      if (i < 0) return false;
    } else if (c === 45 || (c >= 48 && c <= 57)) {
      let j = i + 1;
      while (j < n && text.charCodeAt(j) >= 48 && text.charCodeAt(j) <= 57) j++;
      const e = text.charCodeAt(j);
      // A leading zero before more digits is no JSON: the exact parser refuses it as before.
      const first = c === 45 ? i + 1 : i;
      if (text.charCodeAt(first) === 48 && j - first > 1) return false;
      let end = j;
      while (end < n && /[0-9.eE+-]/.test(text[end]!)) end++;
      each(i, j, end, e !== 46 && e !== 101 && e !== 69);
      i = end - 1;
    }
  }
  return true;
}

/**
 * The text with every integer token beyond 2^53 - 1 put in quotes (outside strings), so the
 * native parser gives the exact decimal string that lossless-json and parseNumber gave, with
 * a fraction of the garbage (a 1,000-terminal page made ten times its size in lossless-json's
 * objects). Undefined for text it cannot walk (an unterminated string): the exact parser decides.
 */
function quoteUnsafeIntegers(text: string): string | undefined {
  const parts: string[] = [];
  let last = 0;
  const walked = walkNumbers(text, (i, j, _end, integer) => {
    if (integer && unsafeToken(text, i, j)) {
      parts.push(text.slice(last, i), '"', text.slice(i, j), '"');
      last = j;
    }
  });
  if (!walked) return undefined;
  parts.push(text.slice(last));
  return parts.join('');
}

/**
 * The same result as quoting (every integer token beyond 2^53 - 1 as its exact decimal
 * string) without a second copy of the text (issue 35: a 1,000-terminal page is 430 kB, and
 * its copy was most of the inventory's peak over a bare parse): the native parser reads the
 * text as it is, and one walk of the result puts back each unsafe integer's digits, found by
 * the double it was rounded to (a reviver did the same at twice the parse's time). Undefined (the caller quotes instead) when that is ambiguous: two different
 * tokens rounding to one double, or a fraction or exponent form (1e16) landing on one.
 */
function parseExactInPlace(text: string): { value: unknown } | undefined {
  const exact = new Map<number, string>();
  const others: number[] = [];
  let ambiguous = false;
  const walked = walkNumbers(text, (i, j, end, integer) => {
    if (!integer) {
      const v = Number(text.slice(i, end));
      if (Number.isInteger(v) && !Number.isSafeInteger(v)) others.push(v);
    } else if (unsafeToken(text, i, j)) {
      const token = text.slice(i, j);
      const v = Number(token);
      const seen = exact.get(v);
      if (seen === undefined) exact.set(v, token);
      else if (seen !== token) ambiguous = true;
    }
  });
  if (!walked || ambiguous || others.some((v) => exact.has(v))) return undefined;
  const value: unknown = JSON.parse(text);
  return { value: exact.size === 0 ? value : putBack(value, exact) };
}

/** `v` with each number that is one of `exact`'s doubles replaced by its digits, in place (depth bounded by the caller's check). */
function putBack(v: unknown, exact: Map<number, string>): unknown {
  if (typeof v === 'number') return Number.isSafeInteger(v) ? v : exact.get(v) ?? v;
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const x: unknown = v[i];
      if (typeof x === 'object' || (typeof x === 'number' && !Number.isSafeInteger(x))) v[i] = putBack(x, exact);
    }
    return v;
  }
  const o = v as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    const x = o[k];
    if (!(typeof x === 'object' || (typeof x === 'number' && !Number.isSafeInteger(x)))) continue;
    const y = putBack(x, exact);
    // An own "__proto__" (JSON.parse makes one) is a data property, not the prototype.
    if (y !== x) Object.defineProperty(o, k, { value: y, writable: true, enumerable: true, configurable: true });
  }
  return o;
}

/**
 * Why a request body cannot be JSON, naming where: a cycle (".a.b refers back to .a") or
 * nesting deeper than 1000 levels. Undefined when neither is found. Only called after
 * serialising failed, so it costs nothing on the common path.
 */
export function bodyProblem(value: unknown, root = 'msg.payload', maxDepth = 1000): string | undefined {
  const ancestors: object[] = [];
  const paths: string[] = [];
  const visit = (v: unknown, path: string): string | undefined => {
    if (v === null || typeof v !== 'object') return undefined;
    const i = ancestors.indexOf(v);
    if (i >= 0) return `${path} refers back to ${paths[i]} (a cycle)`;
    if (ancestors.length >= maxDepth) return `${path} is nested deeper than ${maxDepth} levels`;
    ancestors.push(v);
    paths.push(path);
    try {
      const entries: Array<[string, unknown]> = Array.isArray(v) ? v.map((x, k) => [`[${k}]`, x]) : Object.entries(v).map(([k, x]) => [`.${k}`, x]);
      for (const [k, x] of entries) {
        const found = visit(x, path + k);
        if (found) return found;
      }
      return undefined;
    } finally {
      ancestors.pop();
      paths.pop();
    }
  };
  return visit(value, root);
}

/** Serialises a value; BigInt values are written as exact JSON integers. */
export function stringifyJson(value: unknown): string {
  const out = losslessJson().stringify(value);
  if (out === undefined) throw new TypeError('value cannot be serialised to JSON');
  return out;
}

/**
 * Accepts an int64 as a number, a decimal string or a BigInt and returns it as a BigInt.
 * Returns an error text instead when the value is not an exact int64.
 */
export function toInt64(value: unknown): bigint | string {
  if (typeof value === 'bigint') {
    return value >= INT64_MIN && value <= INT64_MAX ? value : 'is outside the int64 range';
  }
  if (typeof value === 'number') {
    if (!Number.isInteger(value)) return 'must be an integer';
    if (!Number.isSafeInteger(value)) {
      return 'is above 2^53 as a JS number and may have lost digits; pass it as a decimal string or a BigInt';
    }
    return BigInt(value);
  }
  if (typeof value === 'string') {
    const s = value.trim();
    if (!INTEGER_RE.test(s) || s.length > 20) return 'must be a decimal integer';
    const b = BigInt(s);
    return b >= INT64_MIN && b <= INT64_MAX ? b : 'is outside the int64 range';
  }
  return `must be an integer (number, decimal string or BigInt), not ${describeType(value)}`;
}

/** The contract's output form: a number when safe, else a decimal string. */
export function int64Out(value: bigint): number | string {
  return value <= BigInt(Number.MAX_SAFE_INTEGER) && value >= BigInt(Number.MIN_SAFE_INTEGER)
    ? Number(value)
    : value.toString();
}

/**
 * `String(value)`, for an ID: the same text, but an integer number is written with
 * `toFixed(0)`. V8 puts every number it turns into a string (String(n), template
 * literals, `'' + n`) in its number-string cache, allocated in the old generation: a
 * poller draining a million records with a fresh ID each filled the old generation with
 * them until the next full GC. `toFixed(0)` gives the same digits for every integer
 * below 1e21 (all int64 numbers) and allocates an ordinary young string.
 */
export function int64Text(value: unknown): string {
  return typeof value === 'number' && Number.isInteger(value) && Math.abs(value) < 1e21 ? value.toFixed(0) : String(value);
}

/** A key that identifies an int64 whatever its form (number, string, BigInt). */
export function int64Key(value: unknown): string | undefined {
  const v = toInt64(value);
  return typeof v === 'bigint' ? v.toString() : undefined;
}

export function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/**
 * A short, safe rendering of any value for an error message: never throws (BigInt,
 * functions, symbols and cycles are fine) and never echoes more than `max` characters.
 */
export function showValue(value: unknown, max = 40): string {
  let s: string | undefined;
  try {
    s = typeof value === 'bigint' ? `${value}n` : JSON.stringify(value);
  } catch {
    s = undefined;
  }
  if (s === undefined) s = describeType(value);
  return s.length > max ? `${s.slice(0, max)}...` : s;
}
