/**
 * The gateway's "common message format" (CMF): a message's `Payload` as
 * `{Name, SIN, MIN, IsForward, Fields: [{Name, Type, Value, Elements?, Message?}]}`.
 *
 * - `decodeFields` turns `Fields` into a plain object `{Name: value}` with each value
 *   converted by its `Type`: unsignedint / signedint -> number (a decimal string above
 *   2^53, like the int64 IDs), enum and string -> string, boolean -> true/false, data
 *   (base64; text that is not base64 is kept as it came) -> Buffer, array -> an array of objects (one per element, by `Index`),
 *   message -> a nested object. A field of unknown or missing Type keeps its Value.
 * - `encodeFields` builds `Fields` from a plain object, each Type from a spec (or, where
 *   the spec says nothing, from the JS value), for a to-mobile `Payload`.
 */
import { describeType, showValue } from '../common/int64';

export interface CmfField {
  Name: string;
  Type?: string;
  Value?: unknown;
  Elements?: CmfElement[] | null;
  Message?: CmfMessage | null;
}
export interface CmfElement {
  Index?: number;
  Fields?: CmfField[] | null;
}
export interface CmfMessage {
  Name?: string;
  SIN?: number;
  MIN?: number;
  IsForward?: boolean;
  Fields?: CmfField[] | null;
}

/**
 * The size the gateway's binary encoding of a Payload cannot be below, by this rule: 2
 * bytes (SIN, MIN), plus the bytes of every string value (UTF-8) and data value (decoded
 * base64), plus 1 byte for every other value (integer, enum, boolean), with array elements
 * and nested messages counted the same way. The send-message node bounds it like a
 * RawPayload (1,023 bytes by default): what is refused could never fit.
 */
export function cmfPayloadBytes(fields: readonly CmfField[] | null | undefined): number {
  let n = 2;
  const walk = (list: readonly CmfField[] | null | undefined): void => {
    for (const f of list ?? []) {
      if (!f || typeof f !== 'object') continue;
      const type = String(f.Type ?? '').toLowerCase();
      if (Array.isArray(f.Elements)) for (const e of f.Elements) walk(e?.Fields);
      if (f.Message && typeof f.Message === 'object') walk(f.Message.Fields);
      if (f.Value === undefined || f.Value === null) continue;
      const v = typeof f.Value === 'string' ? f.Value : String(f.Value);
      if (type === 'data') n += Math.floor((v.replace(/=+$/, '').length * 3) / 4);
      else if (type === 'string' || type === '') n += Buffer.byteLength(v, 'utf8');
      else n += 1;
    }
  };
  walk(fields);
  return n;
}

export const CMF_TYPES = ['unsignedint', 'signedint', 'enum', 'boolean', 'string', 'data', 'array', 'message'] as const;
export type CmfType = (typeof CMF_TYPES)[number];

/** A field's type for encoding: a type name, or the element / nested fields' own spec. */
export type CmfSpec = CmfType | { Type: 'array'; Fields?: CmfSpecMap } | { Type: 'message'; Fields?: CmfSpecMap; Name?: string; SIN?: number; MIN?: number };
export type CmfSpecMap = Record<string, CmfSpec>;

const INT_RE = /^[+-]?\d+$/;

/** Standard base64 with its padding (what the gateway writes). */
export const isBase64Text = (v: string): boolean => v.length % 4 === 0 && /^[A-Za-z0-9+/]*={0,2}$/.test(v);

function toInt(v: unknown): number | string | unknown {
  const s = typeof v === 'number' ? (Number.isInteger(v) ? String(v) : '') : typeof v === 'string' ? v.trim() : '';
  if (!INT_RE.test(s)) return v;
  const b = BigInt(s);
  return b <= BigInt(Number.MAX_SAFE_INTEGER) && b >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(b) : b.toString();
}

function toBool(v: unknown): boolean | unknown {
  if (typeof v === 'boolean') return v;
  if (typeof v === 'number') return v !== 0;
  if (typeof v === 'string') {
    const s = v.trim().toLowerCase();
    if (s === 'true' || s === '1') return true;
    if (s === 'false' || s === '0') return false;
  }
  return v;
}

/** The value of one field, converted by its Type. */
export function decodeValue(f: CmfField): unknown {
  const type = String(f.Type ?? '').toLowerCase();
  switch (type) {
    case 'unsignedint':
    case 'signedint':
      return toInt(f.Value);
    case 'boolean':
      return toBool(f.Value);
    case 'enum':
    case 'string':
      return f.Value === undefined || f.Value === null ? f.Value : String(f.Value);
    case 'data':
      // Text that is not base64 is kept as it came: Buffer.from would skip what it cannot read
      // ("%%%" -> an empty Buffer), changing the data silently; encoding it is then refused.
      return typeof f.Value === 'string' && isBase64Text(f.Value) ? Buffer.from(f.Value, 'base64') : f.Value;
    case 'array': {
      const els = Array.isArray(f.Elements) ? [...f.Elements] : [];
      els.sort((a, b) => (a?.Index ?? 0) - (b?.Index ?? 0));
      return els.map((e) => decodeFields(e?.Fields));
    }
    case 'message':
      return f.Message && typeof f.Message === 'object' ? decodeFields(f.Message.Fields) : f.Value;
    default:
      return f.Value;
  }
}

/** `Fields` -> `{Name: value}`. Not an array (or missing) -> `{}`. */
export function decodeFields(fields: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!Array.isArray(fields)) return out;
  for (const f of fields as CmfField[]) {
    if (!f || typeof f !== 'object' || typeof f.Name !== 'string') continue;
    const v = decodeValue(f);
    // A field named "__proto__" is a field, not the object's prototype.
    if (f.Name === '__proto__') Object.defineProperty(out, f.Name, { value: v, enumerable: true, writable: true, configurable: true });
    else out[f.Name] = v;
  }
  return out;
}

function isObj(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === 'object' && !Array.isArray(v) && !Buffer.isBuffer(v) && !(v instanceof Uint8Array);
}

/** The Type a JS value gets when the spec does not name one. */
export function inferType(v: unknown): CmfType | undefined {
  if (typeof v === 'boolean') return 'boolean';
  if (typeof v === 'bigint') return v < 0n ? 'signedint' : 'unsignedint';
  if (typeof v === 'number') return Number.isInteger(v) ? (v < 0 ? 'signedint' : 'unsignedint') : undefined;
  if (typeof v === 'string') return 'string';
  if (Buffer.isBuffer(v) || v instanceof Uint8Array) return 'data';
  if (Array.isArray(v)) return 'array';
  if (isObj(v)) return 'message';
  return undefined;
}

function specType(s: CmfSpec | undefined): CmfType | undefined {
  if (s === undefined) return undefined;
  return typeof s === 'string' ? s : s.Type;
}

/**
 * `{Name: value}` -> `Fields`. Every problem (a value that does not fit its Type, an
 * unknown Type) is pushed to `problems` with its path, so the caller can refuse the
 * input before anything is sent.
 */
export function encodeFields(obj: Record<string, unknown>, spec: CmfSpecMap | undefined, where: string, problems: string[]): CmfField[] {
  const out: CmfField[] = [];
  for (const [name, value] of Object.entries(obj)) {
    const s = spec?.[name];
    const at = `${where}.${name}`;
    const type = specType(s) ?? inferType(value);
    if (type === undefined || !(CMF_TYPES as readonly string[]).includes(type)) {
      problems.push(
        type === undefined
          ? `${at}: cannot tell the CMF type of ${describeType(value)} ${showValue(value, 20)}; give a field type (${CMF_TYPES.join(', ')})`
          : `${at}: unknown field type "${String(type)}"; allowed: ${CMF_TYPES.join(', ')}`,
      );
      continue;
    }
    const f = encodeValue(name, type, value, typeof s === 'object' ? s : undefined, at, problems);
    if (f) out.push(f);
  }
  return out;
}

function encodeValue(name: string, type: CmfType, v: unknown, s: Exclude<CmfSpec, string> | undefined, at: string, problems: string[]): CmfField | undefined {
  const bad = (what: string) => {
    problems.push(`${at}: a ${type} field needs ${what}, not ${showValue(v, 30)}`);
    return undefined;
  };
  switch (type) {
    case 'unsignedint':
    case 'signedint': {
      const str = typeof v === 'bigint' ? v.toString() : typeof v === 'number' && Number.isSafeInteger(v) ? String(v) : typeof v === 'string' && INT_RE.test(v.trim()) ? v.trim().replace(/^\+/, '') : undefined;
      if (str === undefined) return bad('an integer (number, decimal string or BigInt)');
      if (type === 'unsignedint' && str.startsWith('-')) return bad('an integer of at least 0');
      return { Name: name, Type: type, Value: str };
    }
    case 'boolean': {
      const b = toBool(v);
      if (typeof b !== 'boolean') return bad('true or false');
      return { Name: name, Type: type, Value: b ? 'True' : 'False' };
    }
    case 'enum':
    case 'string':
      if (typeof v !== 'string' && typeof v !== 'number') return bad('a string');
      return { Name: name, Type: type, Value: String(v) };
    case 'data':
      if (Buffer.isBuffer(v) || v instanceof Uint8Array) return { Name: name, Type: type, Value: Buffer.from(v).toString('base64') };
      if (typeof v === 'string' && isBase64Text(v)) return { Name: name, Type: type, Value: v };
      if (Array.isArray(v) && v.every((x) => Number.isInteger(x) && x >= 0 && x <= 255)) return { Name: name, Type: type, Value: Buffer.from(v as number[]).toString('base64') };
      return bad('a Buffer, a byte array or base64 text');
    case 'array': {
      if (!Array.isArray(v)) return bad('an array of objects');
      const elements: CmfElement[] = [];
      v.forEach((el, i) => {
        if (!isObj(el)) {
          problems.push(`${at}[${i}]: an array element must be an object of fields, not ${describeType(el)}`);
          return;
        }
        elements.push({ Index: i, Fields: encodeFields(el, s?.Fields, `${at}[${i}]`, problems) });
      });
      return { Name: name, Type: type, Elements: elements };
    }
    case 'message': {
      if (!isObj(v)) return bad('an object of fields');
      const m: CmfMessage = { Fields: encodeFields(v, s?.Fields, at, problems) };
      if (s && s.Type === 'message') {
        if (s.Name !== undefined) m.Name = s.Name;
        if (s.SIN !== undefined) m.SIN = s.SIN;
        if (s.MIN !== undefined) m.MIN = s.MIN;
      }
      return { Name: name, Type: type, Message: m };
    }
  }
}

/** Checks a field spec given by a user (msg.fieldTypes); pushes problems. */
export function checkSpec(spec: unknown, where: string, problems: string[]): CmfSpecMap | undefined {
  if (spec === undefined || spec === null) return undefined;
  if (!isObj(spec)) {
    problems.push(`${where}: must be an object {FieldName: type}, not ${describeType(spec)}`);
    return undefined;
  }
  const before = problems.length;
  for (const [k, s] of Object.entries(spec)) {
    const type = typeof s === 'string' ? s : isObj(s) ? s.Type : undefined;
    if (typeof type !== 'string' || !(CMF_TYPES as readonly string[]).includes(type)) {
      problems.push(`${where}.${k}: must be one of ${CMF_TYPES.join(', ')} (or {Type: "array" | "message", Fields: {...}}), not ${showValue(s, 30)}`);
    } else if (isObj(s) && s.Fields !== undefined) checkSpec(s.Fields, `${where}.${k}.Fields`, problems);
  }
  return problems.length > before ? undefined : (spec as CmfSpecMap);
}
