/**
 * `iotgw-cancel` (endpoint 2): requests cancellation of to-mobile messages. IDs are
 * exact to int64, batched across messages into calls of up to `maxBatchSize`, sharing
 * the account's SEND budget with iotgw-terminal-mode.
 */
import type { Node, NodeAPI, NodeDef } from 'node-red';
import { GatewayError } from '../lib/common/errors';
import { int64Out } from '../lib/common/int64';
import { handleInput, mergeQuery, numberSetting, useConfigNode, type Msg, nodeAbortController } from '../lib/node-red/node-kit';
import { SendPool } from '../lib/node-red/send-pool';
import { CANCELLATION_STATUS_NAMES, type Cancellation } from '../lib/api/terminal';
import { readIds } from '../lib/api/terminal-inputs';
import { postCancellations } from '../lib/api/clients/terminal';
import { isGateway } from '../lib/node-red/guards';
import { outboxSettings, runWithOutbox, type OutboxConfig } from '../lib/node-red/outbox-node';
import { entryResults } from '../lib/outbox/results';
import { toJsonItem } from '../lib/outbox/gateway-sender';

export interface CancelConfig extends NodeDef, OutboxConfig {
  gateway: string;
  lingerMs?: string | number;
}

export { CANCELLATION_STATUS_NAMES } from '../lib/api/terminal';

export { readIds } from '../lib/api/terminal-inputs';

/** The output: msg.payload the cancellations, IDs as the contract says, each status named. */
function cancelOutput(msg: Msg, results: Cancellation[]): Msg {
  msg.payload = results.map((c) => {
    const out: Cancellation & { CancellationStatusName?: string } = { ...c };
    for (const k of ['ID', 'CancelRequestID'] as const) {
      const v = out[k];
      if (typeof v === 'string') out[k] = int64Out(BigInt(v));
    }
    const name = CANCELLATION_STATUS_NAMES[Number(c.CancellationStatus)];
    if (name) out.CancellationStatusName = name;
    return out;
  });
  msg.statusCode = 200;
  return msg;
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
    const pool = new SendPool<bigint, Cancellation>(Math.round(numberSetting(config.lingerMs, 50, 0, 5000)), closing.signal, (g, ids, query, slot, signal) =>
      postCancellations(g, ids, { query, slot, signal }),
    );

    const ob = outboxSettings(config);
    if (ob) {
      const entries = (msg: Msg) => readIds(msg.payload).map((id) => ({ kind: 'cancel' as const, item: toJsonItem(id) }));
      return runWithOutbox(RED, node, 'iotgw-cancel', ob, gw, { entries, describe: entryResults, deliver: (msg, r) => cancelOutput(msg, r.flatMap(entryResults) as Cancellation[]) });
    }

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
      send(cancelOutput(msg, results));
    }, { waitSignals: [closing.signal] });
  }

  RED.nodes.registerType('iotgw-cancel', IotgwCancelNode as unknown as (this: Node, c: NodeDef) => void);
}
