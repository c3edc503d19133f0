/**
 * `iotgw-cancel` (endpoint 2): requests cancellation of to-mobile messages. IDs are
 * exact to int64, batched across messages into calls of up to `maxBatchSize`, sharing
 * the account's SEND budget with iotgw-terminal-mode.
 */
import type { Node, NodeAPI, NodeDef } from 'node-red';
import { GatewayError, badInput } from '../lib/common/errors';
import { describeType, int64Out, int64Key, toInt64 } from '../lib/common/int64';
import { handleInput, isPlainObject, mergeQuery, numberSetting, useConfigNode, type Msg, nodeAbortController } from '../lib/node-red/node-kit';
import { SendPool, type SendCall } from '../lib/node-red/send-pool';
import { nameErrors, throwOnCallError } from '../lib/api/gateway-errors';
import { cancelReply, matchByKey, parseReply, type Cancellation } from '../lib/api/terminal';
import { isGateway, joinProblems } from '../lib/node-red/guards';

export interface CancelConfig extends NodeDef {
  gateway: string;
  lingerMs?: string | number;
}

export const CANCELLATION_STATUS_NAMES: Record<number, string> = { 1: 'CANCELLED' };

/** Reads the IDs out of msg.payload: an ID, an array of IDs, or result objects carrying ID. */
export function readIds(payload: unknown): bigint[] {
  const list = Array.isArray(payload) ? payload : [payload];
  if (list.length === 0) throw badInput('msg.payload', 'an empty array; give at least one message ID');
  const problems: string[] = [];
  const ids: bigint[] = [];
  list.forEach((raw, i) => {
    const where = Array.isArray(payload) ? `msg.payload[${i}]` : 'msg.payload';
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

/** One call of the pool: cancels `ids`, its results matched to them (by echoed ID, else by position). */
const cancelBatch: SendCall<bigint, Cancellation> = async (g, ids, query, slot, signal) => {
  const path = g.apiPath('submit/cancellations');
  const res = await g.client().request({ method: 'POST', path, body: ids, group: 'SEND', auth: g.bearerAuth(), idempotent: false, signal, query }, slot);
  const reply = parseReply(cancelReply, res.body, `POST ${path}`);
  await throwOnCallError(g, reply.ErrorID, `POST ${path}`, res.statusCode, signal);
  const list = reply.Cancellations ?? [];
  if (list.length !== ids.length) throw new GatewayError('BAD_RESPONSE', `POST ${path}: ${list.length} results for ${ids.length} IDs`);
  // By the echoed ID where there is one, else by position.
  const order = matchByKey(
    ids.map((id) => id.toString()),
    list.map((c) => (c.ID === null || c.ID === undefined ? undefined : int64Key(c.ID))),
  );
  const matched = order.map((j, i) => {
    const c = list[j]!;
    if (c.ID !== null && c.ID !== undefined && int64Key(c.ID) !== ids[i]!.toString()) {
      throw new GatewayError('BAD_RESPONSE', `POST ${path}: result ${j} is for ID ${c.ID}, expected ${ids[i]}`);
    }
    return c;
  });
  return nameErrors(g, matched, signal);
};

/** One result as the msg carries it: exact IDs, and the status's name. */
function cancellationOut(c: Cancellation): Cancellation & { CancellationStatusName?: string } {
  const out: Cancellation & { CancellationStatusName?: string } = { ...c };
  for (const k of ['ID', 'CancelRequestID'] as const) {
    const v = out[k];
    if (typeof v === 'string') out[k] = int64Out(BigInt(v));
  }
  const name = CANCELLATION_STATUS_NAMES[Number(c.CancellationStatus)];
  if (name) out.CancellationStatusName = name;
  return out;
}

export default function register(RED: NodeAPI): void {
  function IotgwCancelNode(this: Node, config: CancelConfig) {
    RED.nodes.createNode(this, config);
    const node = this;
    const gw = useConfigNode(RED, node, config.gateway, isGateway, 'gateway', 'iotgw-gateway');
    const closing = nodeAbortController();
    node.on('close', (_r: boolean, done: () => void) => {
      closing.abort();
      done();
    });
    const pool = new SendPool<bigint, Cancellation>(Math.round(numberSetting(config.lingerMs, 50, 0, 5000)), closing.signal, cancelBatch);

    handleInput(RED, node, async (msg: Msg, send) => {
      if (gw instanceof GatewayError) throw gw;
      const ids = readIds(msg.payload);
      const query = mergeQuery({}, msg.query);
      let results: Cancellation[];
      try {
        results = await pool.submit(gw, ids, query);
      } catch (err) {
        const partial = (err as { partial?: { results: Array<Cancellation | undefined> } }).partial;
        if (partial) msg.results = partial.results.map((r) => r ?? null);
        throw err;
      }
      msg.payload = results.map(cancellationOut);
      msg.statusCode = 200;
      send(msg);
    }, { waitSignals: [closing.signal] });
  }

  RED.nodes.registerType('iotgw-cancel', IotgwCancelNode as unknown as (this: Node, c: NodeDef) => void);
}
