/**
 * `iotgw-lorawan-referral` (endpoint 7): removes one LoRaWAN forwarding action
 * (referral). The ID is checked before any request: a missing or non-integer ID never
 * reaches the service. The name of the ID's query parameter is not public, so it is a
 * setting (`idParam`, default `id`), and `msg.query` can rename or add parameters.
 */
import type { Node, NodeAPI, NodeDef } from 'node-red';
import { GatewayError } from '../lib/common/errors';
import { handleInput, mergeQuery, useConfigNode, type Msg } from '../lib/node-red/node-kit';
import { PATHS, brokerRequest, messageReply, paramName, positiveId } from '../lib/api/broker';
import { parseReply } from '../lib/api/terminal';
import { isGateway } from '../lib/node-red/guards';

export interface ReferralConfig extends NodeDef {
  gateway: string;
  idParam?: string;
}

export default function register(RED: NodeAPI): void {
  function IotgwLorawanReferralNode(this: Node, config: ReferralConfig) {
    RED.nodes.createNode(this, config);
    const node = this;
    const gw = useConfigNode(RED, node, config.gateway, isGateway, 'gateway', 'iotgw-gateway');

    handleInput(RED, node, async (msg: Msg, send, { signal }) => {
      if (gw instanceof GatewayError) throw gw;
      const idParam = paramName(config.idParam, 'id', 'idParam');
      const id = positiveId(msg.payload, 'msg.payload', 'the referral ID');
      const query = mergeQuery({ [idParam]: id }, msg.query);
      const res = await brokerRequest(gw, { method: 'DELETE', path: PATHS.referrals, query, idempotent: false, signal });
      msg.payload = parseReply(messageReply, res.body, `DELETE ${PATHS.referrals}`);
      msg.statusCode = res.statusCode;
      send(msg);
    });
  }

  RED.nodes.registerType('iotgw-lorawan-referral', IotgwLorawanReferralNode as unknown as (this: Node, c: NodeDef) => void);
}
