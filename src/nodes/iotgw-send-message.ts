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
import { GatewayError, badInput, toGatewayError } from '../lib/common/errors';
import { partialError, type PartialResults } from '../lib/api/partial';
import { MAX_JSON_DEPTH, bodyProblem, showValue } from '../lib/common/int64';
import { handleInput, isPlainObject, mergeQuery, numberSetting, useConfigNode, type Msg, nodeAbortController } from '../lib/node-red/node-kit';
import type { SubmitResult } from '../lib/api/terminal';
import { checkGeneralItem, type GeneralItem, type ItemDefaults } from '../lib/api/terminal-inputs';
import { postMessages } from '../lib/api/clients/terminal';
import { DEFAULT_MAX_DESTINATIONS, checkMultipleItem, isMultipleInput, postToMultiple, type MultipleItem } from '../lib/api/to-multiple';
import { checkSpec } from '../lib/api/cmf';
import { isDefinitions, isGateway, joinProblems } from '../lib/node-red/guards';
import type { Definitions } from '../lib/codec';
import { outboxSettings, runWithOutbox, submitSpec, type OutboxConfig } from '../lib/node-red/outbox-node';
import { toJsonItem } from '../lib/outbox/gateway-sender';

export interface SendMessageConfig extends NodeDef, OutboxConfig {
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
  /** Most `Destinations` of one message to many (submit/to_multiple); absent: 100. */
  maxDestinations?: string | number;
}

export { checkGeneralItem, type GeneralItem, type ItemDefaults } from '../lib/api/terminal-inputs';

function optionalSetting(v: unknown): number | undefined {
  if (v === undefined || v === null || (typeof v === 'string' && v.trim() === '')) return undefined;
  const n = Number(v);
  return Number.isFinite(n) ? n : NaN;
}


/** An item `{..., message, fields}` -> the same item with `RawPayload` encoded by the definitions; problems pushed. */
export function encodeItem(defs: Definitions, raw: unknown, where: string, problems: string[]): unknown {
  if (!isPlainObject(raw) || (raw.message === undefined && raw.fields === undefined)) return raw;
  const { message, fields, ...rest } = raw;
  if (rest.RawPayload !== undefined || rest.Payload !== undefined) {
    problems.push(`${where}.message: give either message and fields, or RawPayload or Payload, not both`);
    return undefined;
  }
  // Checked before the codec walks them: a cycle or a 3,000-deep object is bad input, named.
  const shape = bodyProblem(fields, `${where}.fields`, MAX_JSON_DEPTH);
  if (shape) {
    problems.push(`${shape}; fields must be plain JSON data`);
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

type Settings = Pick<ItemDefaults, 'TransportType' | 'MessageLifetime' | 'MessageClass' | 'maxRawBytes'>;

const MSG_SETTINGS = [['TransportType', 'transportType', 0, 2], ['MessageLifetime', 'messageLifetime', 1, 720], ['MessageClass', 'messageClass', 1, 3]] as const;

/** The node's settings with msg-level overrides (an item's own fields win over both). */
function itemDefaults(settings: Settings, msg: Msg): ItemDefaults {
  const d: ItemDefaults = { ...settings };
  for (const [k, m, lo, hi] of MSG_SETTINGS) {
    const v = msg[m];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < lo || v > hi) throw badInput(`msg.${m}`, `must be a whole number from ${lo} to ${hi}, not ${showValue(v)}`);
    d[k] = v;
  }
  for (const k of ['TransportType', 'MessageLifetime', 'MessageClass'] as const) {
    if (Number.isNaN(d[k])) throw badInput(k, 'the node setting is not a number; open the node and fix it');
  }
  return d;
}

/** The definitions when the node names them; throws when the config node is missing. */
function nodeDefinitions(config: SendMessageConfig, defsNode: unknown): Definitions | undefined {
  if (!config.definitions) return undefined;
  if (!isDefinitions(defsNode)) throw badInput('definitions', 'the iotgw-definitions config node is missing; open the node and choose one');
  return defsNode.definitions();
}

/** An item of msg.payload, checked: a message to one terminal, or (with `Destinations`) to many. */
type Checked = GeneralItem | MultipleItem;
const isMultiple = (it: Checked): it is MultipleItem => 'Destinations' in it;

/** Every item of msg.payload checked (encoded first with the definitions); every problem is pushed. */
function checkItems(payload: unknown, defs: Definitions | undefined, d: ItemDefaults, maxDestinations: number, problems: string[]): Checked[] {
  const list = Array.isArray(payload) ? payload : [payload];
  const items: Checked[] = [];
  list.forEach((raw, i) => {
    const where = Array.isArray(payload) ? `msg.payload[${i}]` : 'msg.payload';
    const item = defs ? encodeItem(defs, raw, where, problems) : raw;
    if (item === undefined) return;
    const it = isMultipleInput(item) ? checkMultipleItem(item, where, d, maxDestinations, problems) : checkGeneralItem(item, where, d, problems);
    if (it) items.push(it);
  });
  return items;
}

/** What a call of the msg gave: its results, or its error and (from the batcher) the results it has. */
type Outcome = PromiseSettledResult<Array<SubmitResult | undefined>>;

/** Each item's entries (one, or one per destination), or undefined where its call failed; the first failure in input order. */
function byItem(items: Checked[], one: Outcome, many: Outcome[]): { entries: Array<Array<SubmitResult | undefined> | undefined>; failure?: unknown } {
  const singles = one.status === 'fulfilled' ? one.value : ((one.reason as { partial?: PartialResults<SubmitResult> }).partial?.results ?? []);
  let failure: unknown;
  let s = 0;
  let m = 0;
  const entries = items.map((it) => {
    if (isMultiple(it)) {
      const o = many[m++]!;
      if (o.status === 'fulfilled') return o.value;
      failure ??= o.reason;
      return undefined;
    }
    const r = singles[s++];
    if (r !== undefined) return [r];
    if (one.status === 'rejected') failure ??= one.reason;
    return undefined;
  });
  return { entries, failure };
}

/**
 * The results in input order: the messages to one terminal through the pool (batched), each
 * message to many in a call of its own (one result per destination, in the order given).
 * Every call runs to its end; when one failed, the msg ends with its error carrying what the
 * others gave (`err.partial`: `results` by output entry, undefined where unknown, and
 * `failed`: the positions of the messages without results), so a retry never sends the rest again.
 */
async function submitAll(items: Checked[], single: (list: GeneralItem[]) => Promise<SubmitResult[]>, multiple: (it: MultipleItem) => Promise<SubmitResult[]>): Promise<SubmitResult[]> {
  const singles = items.filter((it): it is GeneralItem => !isMultiple(it));
  const [one, ...many] = await Promise.allSettled([singles.length ? single(singles) : Promise.resolve([]), ...items.filter(isMultiple).map(multiple)]);
  const { entries, failure } = byItem(items, one!, many);
  if (failure === undefined) return entries.flat() as SubmitResult[];
  const results = entries.flatMap((e, i) => e ?? new Array<undefined>(isMultiple(items[i]!) ? (items[i] as MultipleItem).Destinations.length : 1).fill(undefined));
  const failed = entries.flatMap((e, i) => (e === undefined ? [i] : []));
  const some = results.some((r) => r !== undefined);
  throw partialError(toGatewayError(failure), some ? { results, failed } : undefined);
}

function startSendMessage(RED: NodeAPI, node: Node, config: SendMessageConfig): void {
  const gw = useConfigNode(RED, node, config.gateway, isGateway, 'gateway', 'iotgw-gateway');
  const settings: Settings = {
    TransportType: optionalSetting(config.transportType),
    MessageLifetime: optionalSetting(config.messageLifetime),
    MessageClass: optionalSetting(config.messageClass),
    maxRawBytes: Math.round(numberSetting(config.maxRawBytes, 1023, 2, 1_000_000)),
  };
  const maxDestinations = Math.round(numberSetting(config.maxDestinations, DEFAULT_MAX_DESTINATIONS, 1, 100_000));
  const defsNode = config.definitions ? RED.nodes.getNode(config.definitions) : null;
  const closing = nodeAbortController();
  node.on('close', (_r: boolean, done: () => void) => {
    closing.abort();
    done();
  });

  const pool = new SendPool<GeneralItem, SubmitResult>(Math.round(numberSetting(config.lingerMs, 50, 0, 5000)), closing.signal, (g, items, query, slot, signal) =>
    postMessages(g, items, { query, slot, signal }),
  );

  /** The msg's items, every one checked (BAD_INPUT naming each problem). */
  const checkMsg = (msg: Msg): Checked[] => {
    if (gw instanceof GatewayError) throw gw;
    const problems: string[] = [];
    const d = itemDefaults(settings, msg);
    d.fieldTypes = checkSpec(msg.fieldTypes, 'msg.fieldTypes', problems);
    const payload = msg.payload;
    if (Array.isArray(payload) && payload.length === 0) throw badInput('msg.payload', 'an empty array; send at least one message');
    const defs = nodeDefinitions(config, defsNode);
    const items = problems.length ? [] : checkItems(payload, defs, d, maxDestinations, problems);
    if (problems.length) throw new GatewayError('BAD_INPUT', joinProblems(problems), { field: problems[0]!.split(':')[0] });
    return items;
  };

  const ob = outboxSettings(config);
  if (ob) {
    const entries = (msg: Msg) => checkMsg(msg).map((it) => ({ kind: isMultiple(it) ? ('multiple' as const) : ('message' as const), item: toJsonItem(it) }));
    return runWithOutbox(RED, node, 'iotgw-send-message', ob, gw, submitSpec(RED, entries));
  }

  handleInput(RED, node, async (msg: Msg, send) => {
    if (gw instanceof GatewayError) throw gw;
    const items = checkMsg(msg);
    const query = mergeQuery({}, msg.query);
    const submit = () => submitAll(items, (list) => pool.submit(gw, list, query), (it) => postToMultiple(gw, it, { query, signal: closing.signal }));
    send(await submitToOutputs(RED, msg, submit));
  });
}

export default function register(RED: NodeAPI): void {
  function IotgwSendMessageNode(this: Node, config: SendMessageConfig) {
    RED.nodes.createNode(this, config);
    startSendMessage(RED, this, config);
  }

  RED.nodes.registerType('iotgw-send-message', IotgwSendMessageNode as unknown as (this: Node, c: NodeDef) => void);
}
