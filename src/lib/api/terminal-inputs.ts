/**
 * Area (a) input checks: the items of endpoint 1 (ModeMessage), endpoint 2 (message IDs)
 * and `submit/messages` (general to-mobile messages), checked before any request and
 * reporting every bad field. `where` names the input (`msg.payload[2]` in a node, `items[2]`
 * in a TerminalClient).
 */
import { GatewayError, badInput } from '../common/errors';
import { describeType, showValue, toInt64 } from '../common/int64';
import { isPlainObject, joinProblems } from '../common/checks';
import { encodeFields, type CmfField, type CmfSpecMap } from './cmf';

export interface ModeItem {
  DestinationID: string;
  Mode: number;
  WakeupInterval: number;
  UserMessageID?: bigint;
}

const ALLOWED_KEYS = new Set(['DestinationID', 'Mode', 'WakeupInterval', 'UserMessageID']);

/** Validates one item; pushes every problem to `problems`. */
export function checkModeItem(raw: unknown, where: string, defaults: { mode: number; wakeup: number }, family: string, problems: string[]): ModeItem | undefined {
  if (typeof raw === 'string') raw = { DestinationID: raw };
  if (!isPlainObject(raw)) {
    problems.push(`${where}: must be a ModeMessage object or a destination ID string, not ${describeType(raw)}`);
    return undefined;
  }
  const before = problems.length;
  for (const k of Object.keys(raw)) {
    if (!ALLOWED_KEYS.has(k)) {
      const hint = [...ALLOWED_KEYS].find((a) => a.toLowerCase() === k.toLowerCase());
      problems.push(`${where}.${k}: unknown field${hint ? ` (did you mean ${hint}?)` : `; allowed: ${[...ALLOWED_KEYS].join(', ')}`}`);
    }
  }
  const dest = raw.DestinationID;
  if (typeof dest !== 'string' || dest.trim() === '') problems.push(`${where}.DestinationID: required, a non-empty string (the terminal's prime ID)`);
  else if (dest.length > 64 || /[\u0000-\u001f\u007f]/.test(dest)) problems.push(`${where}.DestinationID: at most 64 printable characters`);
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

/** Checks one item; pushes every problem (with its field) to `problems`. */
export function checkGeneralItem(raw: unknown, where: string, d: ItemDefaults, problems: string[]): GeneralItem | undefined {
  if (!isPlainObject(raw)) {
    problems.push(`${where}: must be a message object {DestinationID, RawPayload or Payload}, not ${describeType(raw)}`);
    return undefined;
  }
  const before = problems.length;
  for (const k of Object.keys(raw)) {
    if (!ALLOWED_GENERAL.includes(k)) {
      const hint = ALLOWED_GENERAL.find((a) => a.toLowerCase() === k.toLowerCase());
      problems.push(`${where}.${k}: unknown field${hint ? ` (did you mean ${hint}?)` : `; allowed: ${ALLOWED_GENERAL.join(', ')}`}`);
    }
  }
  const dest = raw.DestinationID;
  if (typeof dest !== 'string' || dest.trim() === '') problems.push(`${where}.DestinationID: required, a non-empty string (the terminal's prime ID)`);
  else if (dest.length > 64 || /[\u0000-\u001f\u007f]/.test(dest)) problems.push(`${where}.DestinationID: at most 64 printable characters`);

  const item: Partial<GeneralItem> = {};
  const hasRaw = raw.RawPayload !== undefined && raw.RawPayload !== null;
  const hasPayload = raw.Payload !== undefined && raw.Payload !== null;
  if (hasRaw && hasPayload) problems.push(`${where}.RawPayload: give either RawPayload or Payload, not both`);
  else if (!hasRaw && !hasPayload) problems.push(`${where}.RawPayload: required: RawPayload (Buffer, byte array or base64) or Payload ({SIN, MIN, Fields})`);
  else if (hasRaw) {
    const b = rawBytes(raw.RawPayload);
    if (typeof b === 'string') problems.push(`${where}.RawPayload: ${b}`);
    else if (b.length < 2) problems.push(`${where}.RawPayload: at least 2 bytes (SIN and MIN), not ${b.length}`);
    else if (b.length > d.maxRawBytes) problems.push(`${where}.RawPayload: ${b.length} bytes is too long; at most ${d.maxRawBytes} (the node's "Max raw bytes")`);
    else item.RawPayload = b.toString('base64');
  } else {
    const p = raw.Payload;
    if (!isPlainObject(p)) problems.push(`${where}.Payload: must be an object {SIN, MIN, Fields}, not ${describeType(p)}`);
    else {
      if (!isByte(p.SIN)) problems.push(`${where}.Payload.SIN: must be an integer 0 to 255, not ${showValue(p.SIN)}`);
      if (!isByte(p.MIN)) problems.push(`${where}.Payload.MIN: must be an integer 0 to 255, not ${showValue(p.MIN)}`);
      if (p.Name !== undefined && typeof p.Name !== 'string') problems.push(`${where}.Payload.Name: must be a string`);
      let fields: CmfField[] | undefined;
      if (Array.isArray(p.Fields)) {
        // Already in the common message format: passed through as given.
        p.Fields.forEach((f, i) => {
          if (!isPlainObject(f) || typeof f.Name !== 'string' || f.Name === '') problems.push(`${where}.Payload.Fields[${i}]: must be {Name, Type, Value}`);
        });
        fields = p.Fields as CmfField[];
      } else if (isPlainObject(p.Fields)) fields = encodeFields(p.Fields, d.fieldTypes, `${where}.Payload.Fields`, problems);
      else if (p.Fields === undefined || p.Fields === null) fields = [];
      else problems.push(`${where}.Payload.Fields: must be an array of {Name, Type, Value} or an object {Name: value}, not ${describeType(p.Fields)}`);
      if (fields && isByte(p.SIN) && isByte(p.MIN)) {
        item.Payload = { SIN: p.SIN, MIN: p.MIN, IsForward: true, Fields: fields };
        if (typeof p.Name === 'string') item.Payload.Name = p.Name;
      }
    }
  }
  const num = (k: 'TransportType' | 'MessageLifetime' | 'MessageClass', ok: (n: number) => boolean, allowed: string) => {
    const v = raw[k] ?? d[k];
    if (v === undefined || v === null) return;
    if (typeof v !== 'number' || !Number.isInteger(v) || !ok(v)) problems.push(`${where}.${k}: must be ${allowed}, not ${showValue(v)}`);
    else item[k] = v;
  };
  num('TransportType', (n) => n >= 0 && n <= 2, '0 ANY, 1 SATELLITE or 2 CELLULAR');
  num('MessageLifetime', (n) => n >= 1 && n <= 24 * 30, 'a whole number of hours from 1 to 720');
  num('MessageClass', (n) => n >= 1 && n <= 3, '1 premium, 2 normal or 3 background');
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

