/**
 * `iotgw-codec`: decodes a terminal message's bytes into typed fields and the gateway's
 * common message format, and encodes fields into bytes, with the definitions of an
 * `iotgw-definitions` node (nodes.md, "Message definitions"; the codec is src/lib/codec).
 *
 * Synchronous and per msg: no status while working (a codec in a large drain would
 * otherwise update its status twice per message); red on a refused msg, cleared by the
 * next success.
 */
import type { Node, NodeAPI, NodeDef } from 'node-red';
import { GatewayError, badInput, toGatewayError } from '../lib/common/errors';
import { describeType } from '../lib/common/int64';
import { errorStatus, isPlainObject, useConfigNode, type Msg, type SendFn } from '../lib/node-red/node-kit';
import { isDefinitions } from '../lib/node-red/guards';
import { asBytes, toCmf, type Definitions, type Direction } from '../lib/codec';

export interface CodecConfig extends NodeDef {
  definitions: string;
  action: 'auto' | 'decode' | 'encode';
  messages: Direction;
}

/** How many bytes `raw` holds (base64 text: the bytes it reads as), without converting it; 0 when not bytes. */
function byteCount(raw: unknown): number {
  if (raw instanceof Uint8Array || Array.isArray(raw)) return raw.length;
  if (typeof raw === 'string') {
    const s = raw.trim();
    let n = s.length;
    while (n > 0 && s.length - n < 2 && s[n - 1] === '=') n--;
    return Math.floor((n * 3) / 4);
  }
  const data = isPlainObject(raw) ? raw.data : undefined;
  return Array.isArray(data) ? data.length : 0;
}

/** Decodes `msg.payload` (bytes, or a message object with RawPayload) into msg.fields and msg.payload. */
export function decodeMsg(defs: Definitions, msg: Msg, direction: Direction): void {
  const p = msg.payload;
  const isMessage = isPlainObject(p) && !Buffer.isBuffer(p) && (p as { type?: unknown }).type !== 'Buffer';
  const raw = isMessage ? p.RawPayload : p;
  const field = isMessage ? 'msg.payload.RawPayload' : 'msg.payload';
  // Refused before its bytes are even converted: larger than any message of the service.
  const big = defs.sizeProblem(byteCount(raw), direction);
  if (big) throw badInput(field, big);
  const bytes = asBytes(raw);
  if (!bytes) {
    throw badInput(field, `needs the message's bytes (a Buffer, a byte array or base64 text), not ${describeType(raw)}`);
  }
  let d;
  try {
    d = defs.decode(bytes, direction);
  } catch (e) {
    const g = toGatewayError(e);
    throw g.field === 'payload' ? badInput(field, g.message.replace(/^payload: /, '')) : g;
  }
  const cmf = toCmf(d.message, d.fields);
  msg.fields = d.fields;
  msg.payload = isMessage ? { ...p, Payload: cmf } : cmf;
  msg.topic = d.message.def.name;
}

export default function register(RED: NodeAPI): void {
  function IotgwCodecNode(this: Node, config: CodecConfig) {
    RED.nodes.createNode(this, config);
    const node = this;
    const holder = useConfigNode(RED, node, config.definitions, isDefinitions, 'definitions', 'iotgw-definitions');
    const direction: Direction = config.messages === 'forward' ? 'forward' : 'return';
    const action = config.action === 'decode' || config.action === 'encode' ? config.action : 'auto';
    let red = false;

    node.on('input', (m: unknown, send: SendFn, done: (err?: Error) => void) => {
      const msg = m as Msg;
      try {
        if (holder instanceof GatewayError) throw holder;
        const defs = holder.definitions();
        const p = msg.payload;
        const encode = action === 'encode' || (action === 'auto' && isPlainObject(p) && p.type !== 'Buffer' && (p.fields !== undefined || Array.isArray(p.Fields) || p.message !== undefined));
        if (encode) {
          if (!isPlainObject(p)) throw badInput('msg.payload', `to encode, give {message: <Name>, fields: {...}}, {SIN, MIN, fields} or a common-message-format object, not ${describeType(p)}`);
          msg.payload = defs.encodeInput(p, direction);
        } else decodeMsg(defs, msg, direction);
        if (red) {
          red = false;
          node.status({});
        }
        send(msg);
        done();
      } catch (e) {
        const err = toGatewayError(e);
        red = true;
        node.status(errorStatus(RED, err));
        done(err);
      }
    });
  }

  RED.nodes.registerType('iotgw-codec', IotgwCodecNode as unknown as (this: Node, c: NodeDef) => void);
}
