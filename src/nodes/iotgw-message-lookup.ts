/**
 * `iotgw-message-lookup` (issue 35): to-mobile messages by ID, `what` `statuses` (default,
 * `get/fw_statuses`) or `messages` (`get/fw_messages`). msg.payload as `iotgw-cancel` takes
 * it (an ID, an array of IDs, or result objects carrying `ID`); calls of at most 100 IDs,
 * joined back in input order; IDs the gateway does not know go to `msg.unknown`. When one
 * call fails the msg ends with its error, keeping what the other calls found (`msg.results`,
 * `msg.unknown`) and the IDs to look up again (`msg.failed`).
 */
import type { Node, NodeAPI, NodeDef } from 'node-red';
import { GatewayError } from '../lib/common/errors';
import { handleInput, mergeQuery, useConfigNode, type Msg } from '../lib/node-red/node-kit';
import { readIds } from '../lib/api/terminal-inputs';
import { checkLookupWhat, lookupMessages, type LookupPartial } from '../lib/api/terminal-lookup';
import { isGateway } from '../lib/node-red/guards';

export interface MessageLookupConfig extends NodeDef {
  gateway: string;
  /** 'statuses' (default) or 'messages'. */
  what?: string;
}

function startMessageLookup(RED: NodeAPI, node: Node, config: MessageLookupConfig): void {
  const gw = useConfigNode(RED, node, config.gateway, isGateway, 'gateway', 'iotgw-gateway');
  handleInput(RED, node, async (msg: Msg, send, { signal }) => {
    if (gw instanceof GatewayError) throw gw;
    const what = checkLookupWhat(config.what);
    const ids = readIds(msg.payload);
    const query = mergeQuery({}, msg.query);
    const r = await lookupMessages(gw, what, ids, { query, signal }).catch((err: unknown) => {
      // A call failed: what the others found stays with the msg (Catch: msg.results, msg.unknown; msg.failed to look up again).
      const partial = (err as { partial?: LookupPartial }).partial;
      if (partial) Object.assign(msg, { results: partial.records, unknown: partial.unknown, failed: partial.failed });
      throw err;
    });
    send(Object.assign(msg, { payload: r.records, unknown: r.unknown, statusCode: 200 }));
  });
}

export default function register(RED: NodeAPI): void {
  function IotgwMessageLookupNode(this: Node, config: MessageLookupConfig) {
    RED.nodes.createNode(this, config);
    startMessageLookup(RED, this, config);
  }

  RED.nodes.registerType('iotgw-message-lookup', IotgwMessageLookupNode as unknown as (this: Node, c: NodeDef) => void);
}
