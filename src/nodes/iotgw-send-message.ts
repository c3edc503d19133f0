/**
 * `iotgw-send-message` (`submit/messages`): general to-mobile messages. Each item has a
 * `DestinationID` and either `RawPayload` (Buffer, byte array or base64; the first two
 * bytes are SIN and MIN; at most `maxRawBytes`, 1,023 for OGx) or `Payload` (common
 * message format: `SIN`, `MIN` and `Fields`, as a CMF array or a plain object encoded by
 * src/lib/api/cmf). Every item is checked before anything is sent. Items of all messages are
 * batched like `iotgw-terminal-mode` (the same SendPool over the account's SEND budget),
 * with the same two outputs: 1 accepted, 2 rejected, in input order.
 *
 * With `definitions` (an iotgw-definitions node), an item may instead be `{DestinationID,
 * message: <Name>, fields: {...}}` (a forward message of the file): it is encoded by
 * src/lib/codec into `RawPayload` and checked as any other; a bad field is BAD_INPUT
 * naming the item, the message and the field, and nothing is sent.
 */
import type { Node, NodeAPI, NodeDef } from 'node-red';
import { SendPool } from '../lib/node-red/send-pool';
import { submitToOutputs } from '../lib/node-red/submit-results';
import { nameErrors, throwOnCallError } from '../lib/api/gateway-errors';
import { GatewayError, badInput } from '../lib/common/errors';
import { describeType, showValue, toInt64 } from '../lib/common/int64';
import { handleInput, isPlainObject, mergeQuery, numberSetting, useConfigNode, type Msg, nodeAbortController } from '../lib/node-red/node-kit';
import { parseReply, submitReply, type SubmitResult } from '../lib/api/terminal';
import { checkSpec, encodeFields, type CmfField, type CmfSpecMap } from '../lib/api/cmf';
import { isDefinitions, isGateway, joinProblems } from '../lib/node-red/guards';
import type { Definitions } from '../lib/codec';

export interface SendMessageConfig extends NodeDef {
  gateway: string;
  /** "" = not sent (the gateway's default), else 0 ANY, 1 SATELLITE, 2 CELLULAR. */
  transportType: string | number;
  /** Hours; "" = not sent. */
  messageLifetime: string | number;
  /** "" = not sent, 1 premium, 2 normal, 3 background. */
  messageClass: string | number;
  maxRawBytes: string | number;
  lingerMs?: string | number;
  /** An iotgw-definitions node ("" = none): items may give `message` and `fields`. */
  definitions?: string;
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

const ALLOWED = ['DestinationID', 'UserMessageID', 'RawPayload', 'Payload', 'TransportType', 'MessageLifetime', 'MessageClass'];

export interface ItemDefaults {
  TransportType?: number;
  MessageLifetime?: number;
  MessageClass?: number;
  maxRawBytes: number;
  fieldTypes?: CmfSpecMap;
}

function optionalSetting(v: unknown): number | undefined {
  if (v === undefined || v === null || (typeof v === 'string' && v.trim() === '')) return undefined;
  const n = Number(v);
  return Number.isFinite(n) ? n : NaN;
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
    if (!ALLOWED.includes(k)) {
      const hint = ALLOWED.find((a) => a.toLowerCase() === k.toLowerCase());
      problems.push(`${where}.${k}: unknown field${hint ? ` (did you mean ${hint}?)` : `; allowed: ${ALLOWED.join(', ')}`}`);
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


/** An item `{..., message, fields}` -> the same item with `RawPayload` encoded by the definitions; problems pushed. */
export function encodeItem(defs: Definitions, raw: unknown, where: string, problems: string[]): unknown {
  if (!isPlainObject(raw) || (raw.message === undefined && raw.fields === undefined)) return raw;
  const { message, fields, ...rest } = raw;
  if (rest.RawPayload !== undefined || rest.Payload !== undefined) {
    problems.push(`${where}.message: give either message and fields, or RawPayload or Payload, not both`);
    return undefined;
  }
  try {
    return { ...rest, RawPayload: defs.encodeInput({ message, fields }, 'forward', where) };
  } catch (e) {
    const err = e as GatewayError;
    problems.push(err.message.startsWith(where) ? err.message : `${where}: ${err.message}`);
    return undefined;
  }
}

const sameDest = (a: string, b: string) => a.trim().toLowerCase() === b.trim().toLowerCase();

export default function register(RED: NodeAPI): void {
  function IotgwSendMessageNode(this: Node, config: SendMessageConfig) {
    RED.nodes.createNode(this, config);
    const node = this;
    const gw = useConfigNode(RED, node, config.gateway, isGateway, 'gateway', 'iotgw-gateway');
    const settings = {
      TransportType: optionalSetting(config.transportType),
      MessageLifetime: optionalSetting(config.messageLifetime),
      MessageClass: optionalSetting(config.messageClass),
      maxRawBytes: Math.round(numberSetting(config.maxRawBytes, 1023, 2, 1_000_000)),
    };
    const defsNode = config.definitions ? RED.nodes.getNode(config.definitions) : null;
    const closing = nodeAbortController();
    node.on('close', (_r: boolean, done: () => void) => {
      closing.abort();
      done();
    });

    const pool = new SendPool<GeneralItem, SubmitResult>(Math.round(numberSetting(config.lingerMs, 50, 0, 5000)), closing.signal, async (g, items, query, slot, signal) => {
      const client = g.client();
      const path = g.apiPath('submit/messages');
      const res = await client.request({ method: 'POST', path, body: items, group: 'SEND', auth: g.bearerAuth(), idempotent: false, signal, query }, slot);
      const reply = parseReply(submitReply, res.body, `POST ${path}`);
      await throwOnCallError(g, reply.ErrorID, `POST ${path}`, res.statusCode, signal);
      const subs = reply.Submissions ?? [];
      if (subs.length !== items.length) throw new GatewayError('BAD_RESPONSE', `POST ${path}: ${subs.length} results for ${items.length} messages`);
      subs.forEach((s, i) => {
        if (s.DestinationID && !sameDest(s.DestinationID, items[i]!.DestinationID)) {
          throw new GatewayError('BAD_RESPONSE', `POST ${path}: result ${i} is for ${s.DestinationID}, expected ${items[i]!.DestinationID}`);
        }
      });
      return nameErrors(g, subs, signal);
    });

    handleInput(RED, node, async (msg: Msg, send) => {
      if (gw instanceof GatewayError) throw gw;
      const problems: string[] = [];
      const d: ItemDefaults = { ...settings };
      // msg-level overrides of the node's settings (an item's own fields win over both).
      const ranges = { TransportType: [0, 2], MessageLifetime: [1, 720], MessageClass: [1, 3] } as const;
      for (const [k, m] of [['TransportType', 'transportType'], ['MessageLifetime', 'messageLifetime'], ['MessageClass', 'messageClass']] as const) {
        const v = msg[m];
        if (v === undefined || v === null) continue;
        const [lo, hi] = ranges[k];
        if (typeof v !== 'number' || !Number.isInteger(v) || v < lo || v > hi) throw badInput(`msg.${m}`, `must be a whole number from ${lo} to ${hi}, not ${showValue(v)}`);
        d[k] = v;
      }
      for (const k of ['TransportType', 'MessageLifetime', 'MessageClass'] as const) {
        if (Number.isNaN(d[k])) throw badInput(k, 'the node setting is not a number; open the node and fix it');
      }
      d.fieldTypes = checkSpec(msg.fieldTypes, 'msg.fieldTypes', problems);
      const payload = msg.payload;
      const list = Array.isArray(payload) ? payload : [payload];
      if (list.length === 0) throw badInput('msg.payload', 'an empty array; send at least one message');
      const items: GeneralItem[] = [];
      let defs: Definitions | undefined;
      if (config.definitions) {
        if (!isDefinitions(defsNode)) throw badInput('definitions', 'the iotgw-definitions config node is missing; open the node and choose one');
        defs = defsNode.definitions();
      }
      if (!problems.length) {
        list.forEach((raw, i) => {
          const where = Array.isArray(payload) ? `msg.payload[${i}]` : 'msg.payload';
          const item = defs ? encodeItem(defs, raw, where, problems) : raw;
          if (item === undefined) return;
          const it = checkGeneralItem(item, where, d, problems);
          if (it) items.push(it);
        });
      }
      if (problems.length) throw new GatewayError('BAD_INPUT', joinProblems(problems), { field: problems[0]!.split(':')[0] });
      const query = mergeQuery({}, msg.query);
      send(await submitToOutputs(RED, msg, () => pool.submit(gw, items, query)));
    });
  }

  RED.nodes.registerType('iotgw-send-message', IotgwSendMessageNode as unknown as (this: Node, c: NodeDef) => void);
}
