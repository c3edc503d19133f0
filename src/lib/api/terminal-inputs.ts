/**
 * Area (a) input checks: the items of endpoint 1 (ModeMessage), endpoint 2 (message IDs)
 * and `submit/messages` (general to-mobile messages), checked before any request and
 * reporting every bad field. `where` names the input (`msg.payload[2]` in a node, `items[2]`
 * in a TerminalClient).
 */
import { GatewayError, badInput } from '../common/errors';
import { MAX_JSON_DEPTH, bodyProblem, describeType, showValue, toInt64 } from '../common/int64';
import { isPlainObject, joinProblems } from '../common/checks';
import { cmfPayloadBytes, encodeFields, type CmfField, type CmfSpecMap } from './cmf';

export interface ModeItem {
  DestinationID: string;
  Mode: number;
  WakeupInterval: number;
  UserMessageID?: bigint;
}

const ALLOWED_KEYS = ['DestinationID', 'Mode', 'WakeupInterval', 'UserMessageID'];

/** Each key not in `allowed`: a problem, with the right spelling when only its case is wrong. */
function checkKeys(raw: Record<string, unknown>, allowed: readonly string[], where: string, problems: string[]): void {
  for (const k of Object.keys(raw)) {
    if (!allowed.includes(k)) {
      const hint = allowed.find((a) => a.toLowerCase() === k.toLowerCase());
      problems.push(`${where}.${k}: unknown field${hint ? ` (did you mean ${hint}?)` : `; allowed: ${allowed.join(', ')}`}`);
    }
  }
}

/** DestinationID: a non-empty string of at most 64 printable characters. */
function checkDestination(dest: unknown, where: string, problems: string[]): void {
  if (typeof dest !== 'string' || dest.trim() === '') problems.push(`${where}.DestinationID: required, a non-empty string (the terminal's prime ID)`);
  else if (dest.length > 64 || /[\u0000-\u001f\u007f]/.test(dest)) problems.push(`${where}.DestinationID: at most 64 printable characters`);
}

/** Validates one item; pushes every problem to `problems`. */
export function checkModeItem(raw: unknown, where: string, defaults: { mode: number; wakeup: number }, family: string, problems: string[]): ModeItem | undefined {
  if (typeof raw === 'string') raw = { DestinationID: raw };
  if (!isPlainObject(raw)) {
    problems.push(`${where}: must be a ModeMessage object or a destination ID string, not ${describeType(raw)}`);
    return undefined;
  }
  const before = problems.length;
  checkKeys(raw, ALLOWED_KEYS, where, problems);
  const dest = raw.DestinationID;
  checkDestination(dest, where, problems);
  const mode = raw.Mode === undefined ? defaults.mode : raw.Mode; // null is refused, not defaulted
  if (typeof mode !== 'number' || !Number.isInteger(mode) || mode < 0 || mode > 3) {
    problems.push(`${where}.Mode: must be an integer 0 to 3 (0 ALWAYS_ON, 1 WAKE_UP, 2 RECEIVE_ON_SEND, 3 HYBRID), not ${showValue(mode)}`);
  }
  const wakeup = raw.WakeupInterval === undefined ? defaults.wakeup : raw.WakeupInterval;
  if (typeof wakeup !== 'number' || !Number.isInteger(wakeup) || wakeup < 0 || wakeup > 15) {
    problems.push(`${where}.WakeupInterval: must be an integer 0 to 15, not ${showValue(wakeup)}`);
  }
  if (family === 'IDP') {
    if (mode === 2 || mode === 3) problems.push(`${where}.Mode: ${mode === 2 ? 'RECEIVE_ON_SEND' : 'HYBRID'} is OGx only; the terminal family is IDP (allowed: 0 or 1)`);
    if (mode === 1 && typeof wakeup === 'number' && wakeup > 10) problems.push(`${where}.WakeupInterval: ${wakeup} is OGx only; IDP allows 0 to 10`);
  }
  let userId: bigint | undefined;
  if (raw.UserMessageID !== undefined && raw.UserMessageID !== null) {
    const v = toInt64(raw.UserMessageID);
    if (typeof v === 'string') problems.push(`${where}.UserMessageID: ${v}`);
    else userId = v;
  }
  if (problems.length > before) return undefined;
  const item: ModeItem = { DestinationID: (dest as string).trim(), Mode: mode as number, WakeupInterval: wakeup as number };
  if (userId !== undefined) item.UserMessageID = userId;
  return item;
}

export interface GeneralItem {
  DestinationID: string;
  UserMessageID?: bigint;
  RawPayload?: string;
  Payload?: { Name?: string; SIN: number; MIN: number; IsForward: true; Fields: CmfField[] };
  TransportType?: number;
  MessageLifetime?: number;
  MessageClass?: number;
}

const ALLOWED_GENERAL = ['DestinationID', 'UserMessageID', 'RawPayload', 'Payload', 'TransportType', 'MessageLifetime', 'MessageClass'];

export interface ItemDefaults {
  TransportType?: number;
  MessageLifetime?: number;
  MessageClass?: number;
  maxRawBytes: number;
  fieldTypes?: CmfSpecMap;
}

const isByte = (x: unknown): x is number => typeof x === 'number' && Number.isInteger(x) && x >= 0 && x <= 255;

/** RawPayload as bytes, or an error text. */
function rawBytes(v: unknown): Buffer | string {
  if (Buffer.isBuffer(v) || v instanceof Uint8Array) return Buffer.from(v);
  // A Buffer that went through JSON (a file or a function node): {type: 'Buffer', data: [...]}.
  if (isPlainObject(v) && v.type === 'Buffer' && Array.isArray(v.data)) v = v.data;
  if (Array.isArray(v)) {
    const bad = v.findIndex((x) => !isByte(x));
    if (bad >= 0) return `byte ${bad} is ${showValue(v[bad])}; every byte must be an integer 0 to 255`;
    return Buffer.from(v as number[]);
  }
  if (typeof v === 'string') {
    const s = v.trim();
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.length % 4 !== 0) return 'a string must be base64 (A-Z, a-z, 0-9, +, /, = padding)';
    return Buffer.from(s, 'base64');
  }
  return `must be a Buffer, a byte array or base64 text, not ${describeType(v)}`;
}

/** RawPayload checked into base64 text; undefined (and a problem pushed) when bad. */
function checkRawPayload(v: unknown, where: string, d: ItemDefaults, problems: string[]): string | undefined {
  const b = rawBytes(v);
  if (typeof b === 'string') problems.push(`${where}.RawPayload: ${b}`);
  else if (b.length < 2) problems.push(`${where}.RawPayload: at least 2 bytes (SIN and MIN), not ${b.length}`);
  else if (b.length > d.maxRawBytes) problems.push(`${where}.RawPayload: ${b.length} bytes is too long; at most ${d.maxRawBytes} (the node's "Max raw bytes")`);
  else return b.toString('base64');
  return undefined;
}

/** Payload.Fields in the common message format: given as such, or encoded from {Name: value}. */
function payloadFields(p: Record<string, unknown>, where: string, d: ItemDefaults, problems: string[]): CmfField[] | undefined {
  if (Array.isArray(p.Fields)) {
    // Already in the common message format: passed through as given.
    p.Fields.forEach((f, i) => {
      if (!isPlainObject(f) || typeof f.Name !== 'string' || f.Name === '') problems.push(`${where}.Payload.Fields[${i}]: must be {Name, Type, Value}`);
    });
    return p.Fields as CmfField[];
  }
  if (isPlainObject(p.Fields)) return encodeFields(p.Fields, d.fieldTypes, `${where}.Payload.Fields`, problems);
  if (p.Fields === undefined || p.Fields === null) return [];
  problems.push(`${where}.Payload.Fields: must be an array of {Name, Type, Value} or an object {Name: value}, not ${describeType(p.Fields)}`);
  return undefined;
}

/** Payload ({SIN, MIN, Name?, Fields}) checked; undefined (and problems pushed) when bad. */
function checkPayload(p: unknown, where: string, d: ItemDefaults, problems: string[]): GeneralItem['Payload'] {
  // Checked before any walk of it: a cycle or a 3,000-deep object is bad input, named.
  const shape = isPlainObject(p) ? bodyProblem(p, `${where}.Payload`, MAX_JSON_DEPTH) : undefined;
  if (!isPlainObject(p)) {
    problems.push(`${where}.Payload: must be an object {SIN, MIN, Fields}, not ${describeType(p)}`);
    return undefined;
  }
  if (shape) {
    problems.push(`${shape}; a Payload must be plain JSON data`);
    return undefined;
  }
  if (!isByte(p.SIN)) problems.push(`${where}.Payload.SIN: must be an integer 0 to 255, not ${showValue(p.SIN)}`);
  if (!isByte(p.MIN)) problems.push(`${where}.Payload.MIN: must be an integer 0 to 255, not ${showValue(p.MIN)}`);
  if (p.Name !== undefined && typeof p.Name !== 'string') problems.push(`${where}.Payload.Name: must be a string`);
  const fields = payloadFields(p, where, d, problems);
  const size = fields ? cmfPayloadBytes(fields) : 0;
  if (size > d.maxRawBytes) {
    problems.push(`${where}.Payload: its values come to ${size} bytes or more encoded; at most ${d.maxRawBytes} (the node's "Max raw bytes", as for RawPayload)`);
    return undefined;
  }
  if (!fields || !isByte(p.SIN) || !isByte(p.MIN)) return undefined;
  const payload: NonNullable<GeneralItem['Payload']> = { SIN: p.SIN, MIN: p.MIN, IsForward: true, Fields: fields };
  if (typeof p.Name === 'string') payload.Name = p.Name;
  return payload;
}

const NUMBERS = [
  ['TransportType', (n: number) => n >= 0 && n <= 2, '0 ANY, 1 SATELLITE or 2 CELLULAR'],
  ['MessageLifetime', (n: number) => n >= 1 && n <= 24 * 30, 'a whole number of hours from 1 to 720'],
  ['MessageClass', (n: number) => n >= 1 && n <= 3, '1 premium, 2 normal or 3 background'],
] as const;

/** TransportType, MessageLifetime and MessageClass (the item's, else the node's) into `item`. */
function checkNumbers(raw: Record<string, unknown>, where: string, d: ItemDefaults, item: Partial<GeneralItem>, problems: string[]): void {
  for (const [k, ok, allowed] of NUMBERS) {
    const v = raw[k] ?? d[k];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'number' || !Number.isInteger(v) || !ok(v)) problems.push(`${where}.${k}: must be ${allowed}, not ${showValue(v)}`);
    else item[k] = v;
  }
}

/** The payload of one item: RawPayload or Payload, exactly one. */
function checkEitherPayload(raw: Record<string, unknown>, where: string, d: ItemDefaults, item: Partial<GeneralItem>, problems: string[]): void {
  const hasRaw = raw.RawPayload !== undefined && raw.RawPayload !== null;
  const hasPayload = raw.Payload !== undefined && raw.Payload !== null;
  if (hasRaw && hasPayload) problems.push(`${where}.RawPayload: give either RawPayload or Payload, not both`);
  else if (!hasRaw && !hasPayload) problems.push(`${where}.RawPayload: required: RawPayload (Buffer, byte array or base64) or Payload ({SIN, MIN, Fields})`);
  else if (hasRaw) {
    const b64 = checkRawPayload(raw.RawPayload, where, d, problems);
    if (b64 !== undefined) item.RawPayload = b64;
  } else {
    const payload = checkPayload(raw.Payload, where, d, problems);
    if (payload) item.Payload = payload;
  }
}

/** Checks one item; pushes every problem (with its field) to `problems`. */
export function checkGeneralItem(raw: unknown, where: string, d: ItemDefaults, problems: string[]): GeneralItem | undefined {
  if (!isPlainObject(raw)) {
    problems.push(`${where}: must be a message object {DestinationID, RawPayload or Payload}, not ${describeType(raw)}`);
    return undefined;
  }
  const before = problems.length;
  checkKeys(raw, ALLOWED_GENERAL, where, problems);
  const dest = raw.DestinationID;
  checkDestination(dest, where, problems);
  const item: Partial<GeneralItem> = {};
  checkEitherPayload(raw, where, d, item, problems);
  checkNumbers(raw, where, d, item, problems);
  if (raw.UserMessageID !== undefined && raw.UserMessageID !== null) {
    const v = toInt64(raw.UserMessageID);
    if (typeof v === 'string') problems.push(`${where}.UserMessageID: ${v}`);
    else item.UserMessageID = v;
  }
  if (problems.length > before) return undefined;
  // Key order as the gateway documents it.
  const out: GeneralItem = { DestinationID: (dest as string).trim() };
  if (item.UserMessageID !== undefined) out.UserMessageID = item.UserMessageID;
  if (item.RawPayload !== undefined) out.RawPayload = item.RawPayload;
  if (item.Payload !== undefined) out.Payload = item.Payload;
  for (const k of ['TransportType', 'MessageLifetime', 'MessageClass'] as const) if (item[k] !== undefined) out[k] = item[k];
  return out;
}

/** Reads message IDs out of `payload` (named `name`): an ID, an array of IDs, or result objects carrying ID. */
export function readIds(payload: unknown, name = 'msg.payload'): bigint[] {
  const list = Array.isArray(payload) ? payload : [payload];
  if (list.length === 0) throw badInput(name, 'an empty array; give at least one message ID');
  const problems: string[] = [];
  const ids: bigint[] = [];
  list.forEach((raw, i) => {
    const where = Array.isArray(payload) ? `${name}[${i}]` : name;
    let v: unknown = raw;
    if (isPlainObject(raw)) {
      if (!('ID' in raw) || raw.ID === null || raw.ID === undefined) {
        problems.push(`${where}.ID: missing; a result object must carry the message ID (rejected submissions have none)`);
        return;
      }
      v = raw.ID;
    } else if (raw !== null && typeof raw === 'object') {
      problems.push(`${where}: must be a message ID or an object with ID, not ${describeType(raw)}`);
      return;
    }
    const id = toInt64(v);
    if (typeof id === 'string') problems.push(`${where}: the message ID ${id}`);
    else if (id <= 0n) problems.push(`${where}: the message ID must be positive, not ${id}`);
    else ids.push(id);
  });
  if (problems.length) throw new GatewayError('BAD_INPUT', joinProblems(problems), { field: problems[0]!.split(':')[0] });
  return ids;
}

