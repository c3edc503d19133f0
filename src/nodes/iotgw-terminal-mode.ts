/**
 * `iotgw-terminal-mode` (endpoint 1): sends operating-mode / wake-up messages to
 * terminals. Every item is validated before anything is sent; items of all messages
 * that arrive while the node waits for a SEND slot are batched into calls of up to
 * `maxBatchSize`; each result goes back to its message and position. Output 1 gets the
 * accepted entries, output 2 the rejected ones (ErrorID > 0, with the error's name).
 */
import type { Node, NodeAPI, NodeDef } from 'node-red';
import { SendPool, type SendCall } from '../lib/node-red/send-pool';
import { submitToOutputs } from '../lib/node-red/submit-results';
import { nameErrors, throwOnCallError } from '../lib/api/gateway-errors';
import { GatewayError, badInput } from '../lib/common/errors';
import { describeType, int64Key, showValue, toInt64 } from '../lib/common/int64';
import { handleInput, isPlainObject, mergeQuery, numberSetting, useConfigNode, type Msg, nodeAbortController } from '../lib/node-red/node-kit';
import { matchByKey, parseReply, sameDestination, submitReply, type SubmitResult } from '../lib/api/terminal';
import { isGateway, joinProblems } from '../lib/node-red/guards';

export interface TerminalModeConfig extends NodeDef {
  gateway: string;
  mode: string | number;
  wakeupInterval: string | number;
  family: 'any' | 'IDP' | 'OGx';
  lingerMs?: string | number;
}

interface ModeItem {
  DestinationID: string;
  Mode: number;
  WakeupInterval: number;
  UserMessageID?: bigint;
}

const ALLOWED_KEYS = new Set(['DestinationID', 'Mode', 'WakeupInterval', 'UserMessageID']);

export { isGateway, joinProblems } from '../lib/node-red/guards';

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

/** One call of the pool: submits `items`, its results matched to them (by UserMessageID, else by position). */
const submitBatch: SendCall<ModeItem, SubmitResult> = async (g, items, query, slot, signal) => {
  const client = g.client();
  const path = g.apiPath('terminal/mode');
  const res = await client.request({ method: 'POST', path, body: items, group: 'SEND', auth: g.bearerAuth(), idempotent: false, signal, query }, slot);
  const reply = parseReply(submitReply, res.body, `POST ${path}`);
  if (reply.ErrorID) await throwOnCallError(g, reply.ErrorID, `POST ${path}`, res.statusCode, signal);
  const subs = reply.Submissions ?? [];
  if (subs.length !== items.length) throw new GatewayError('BAD_RESPONSE', `POST ${path}: ${subs.length} results for ${items.length} messages`);
  // By UserMessageID where one was given, else by position; destinations without case or spaces.
  const order = matchByKey(
    items.map((it) => it.UserMessageID?.toString()),
    subs.map((s) => (s.UserMessageID === null || s.UserMessageID === undefined ? undefined : int64Key(s.UserMessageID))),
  );
  const matched = order.map((j, i) => {
    const s = subs[j]!;
    if (s.DestinationID && !sameDestination(s.DestinationID, items[i]!.DestinationID)) {
      throw new GatewayError('BAD_RESPONSE', `POST ${path}: result ${j} is for ${s.DestinationID.trim()}, expected ${items[i]!.DestinationID}`);
    }
    return s;
  });
  return nameErrors(g, matched, signal);
};

export default function register(RED: NodeAPI): void {
  function IotgwTerminalModeNode(this: Node, config: TerminalModeConfig) {
    RED.nodes.createNode(this, config);
    const node = this;
    const gw = useConfigNode(RED, node, config.gateway, isGateway, 'gateway', 'iotgw-gateway');
    const defaults = {
      mode: Math.round(numberSetting(config.mode, 0, -1, 99)),
      wakeup: Math.round(numberSetting(config.wakeupInterval, 0, -1, 99)),
    };
    const closing = nodeAbortController();
    node.on('close', (_r: boolean, done: () => void) => {
      closing.abort();
      done();
    });

    const pool = new SendPool<ModeItem, SubmitResult>(Math.round(numberSetting(config.lingerMs, 50, 0, 5000)), closing.signal, submitBatch);

    handleInput(RED, node, async (msg: Msg, send) => {
      if (gw instanceof GatewayError) throw gw;
      const familyRaw = msg.terminalFamily ?? config.family ?? 'any';
      if (familyRaw !== 'any' && familyRaw !== 'IDP' && familyRaw !== 'OGx') {
        throw badInput('msg.terminalFamily', `must be "IDP", "OGx" or "any", not ${showValue(familyRaw)}`);
      }
      const payload = msg.payload;
      const list = Array.isArray(payload) ? payload : [payload];
      if (list.length === 0) throw badInput('msg.payload', 'an empty array; send at least one ModeMessage');
      const problems: string[] = [];
      const items: ModeItem[] = [];
      list.forEach((raw, i) => {
        const it = checkModeItem(raw, Array.isArray(payload) ? `msg.payload[${i}]` : 'msg.payload', defaults, familyRaw, problems);
        if (it) items.push(it);
      });
      if (problems.length) throw new GatewayError('BAD_INPUT', joinProblems(problems), { field: problems[0]!.split(':')[0] });
      const query = mergeQuery({}, msg.query);
      send(await submitToOutputs(RED, msg, () => pool.submit(gw, items, query)));
    }, { waitSignals: [closing.signal] });
  }

  RED.nodes.registerType('iotgw-terminal-mode', IotgwTerminalModeNode as unknown as (this: Node, c: NodeDef) => void);
}

