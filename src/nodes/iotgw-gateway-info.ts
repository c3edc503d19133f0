/**
 * `iotgw-gateway-info` (issue 35): `what` `service` (default: `{Version, ServerUTC,
 * ErrorCodes}`, the live error catalogue included), `broadcast` (the array of broadcast
 * IDs) or `subaccounts` (the array of subaccounts; FORBIDDEN for an account that is not a
 * super account). Any msg starts it; group INFO.
 */
import type { Node, NodeAPI, NodeDef } from 'node-red';
import { GatewayError } from '../lib/common/errors';
import { handleInput, mergeQuery, useConfigNode, type Msg } from '../lib/node-red/node-kit';
import { checkInfoWhat, getBroadcastIds, getServiceInfo, getSubaccounts } from '../lib/api/service-info';
import { isGateway } from '../lib/node-red/guards';

export interface GatewayInfoConfig extends NodeDef {
  gateway: string;
  /** 'service' (default), 'broadcast' or 'subaccounts'. */
  what?: string;
}

function startGatewayInfo(RED: NodeAPI, node: Node, config: GatewayInfoConfig): void {
  const gw = useConfigNode(RED, node, config.gateway, isGateway, 'gateway', 'iotgw-gateway');
  handleInput(RED, node, async (msg: Msg, send, { signal }) => {
    if (gw instanceof GatewayError) throw gw;
    const what = checkInfoWhat(config.what);
    const o = { query: mergeQuery({}, msg.query), signal };
    const r =
      what === 'service' ? await getServiceInfo(gw, o).then((x) => ({ payload: x.info, statusCode: x.statusCode }))
      : what === 'broadcast' ? await getBroadcastIds(gw, o).then((x) => ({ payload: x.broadcasts, statusCode: x.statusCode }))
      : await getSubaccounts(gw, o).then((x) => ({ payload: x.subaccounts, statusCode: x.statusCode }));
    send(Object.assign(msg, r));
  });
}

export default function register(RED: NodeAPI): void {
  function IotgwGatewayInfoNode(this: Node, config: GatewayInfoConfig) {
    RED.nodes.createNode(this, config);
    startGatewayInfo(RED, this, config);
  }

  RED.nodes.registerType('iotgw-gateway-info', IotgwGatewayInfoNode as unknown as (this: Node, c: NodeDef) => void);
}
