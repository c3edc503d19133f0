/**
 * `iotgw-gateway-call` (issue 35): any call under the account's `/api/v{version}/` with its
 * token, limits and retries: `method` GET or POST, `path` (msg.path overrides), `group`
 * SEND, GET or INFO (empty: by the path), msg.payload the JSON body of a POST. The path is
 * checked before anything is sent (nothing may leave the base: lib/api/gateway-call.ts); a
 * POST that may have arrived is never sent again. Output: the reply, int64 exact; a
 * top-level ErrorID > 0 is GATEWAY_ERROR.
 */
import type { Node, NodeAPI, NodeDef } from 'node-red';
import { GatewayError } from '../lib/common/errors';
import { handleInput, mergeQuery, useConfigNode, type Msg } from '../lib/node-red/node-kit';
import { checkCallBody, checkCallPath, checkGroup, checkMethod, gatewayCall } from '../lib/api/gateway-call';
import { isGateway } from '../lib/node-red/guards';

export interface GatewayCallConfig extends NodeDef {
  gateway: string;
  /** 'GET' (default) or 'POST'. */
  method?: string;
  /** Under /api/v{version}/, e.g. terminal/reset. */
  path?: string;
  /** 'SEND', 'GET', 'INFO', or '' (by the path). */
  group?: string;
}

function startGatewayCall(RED: NodeAPI, node: Node, config: GatewayCallConfig): void {
  const gw = useConfigNode(RED, node, config.gateway, isGateway, 'gateway', 'iotgw-gateway');
  handleInput(RED, node, async (msg: Msg, send, { signal }) => {
    if (gw instanceof GatewayError) throw gw;
    const method = checkMethod(config.method || 'GET');
    const fromMsg = msg.path !== undefined && msg.path !== null && msg.path !== '';
    if (fromMsg && config.path && String(config.path).trim() !== String(msg.path).trim()) node.warn(`msg.path "${String(msg.path).slice(0, 60)}" overrides the node's path "${config.path}"`);
    const path = checkCallPath(fromMsg ? msg.path : config.path, fromMsg ? 'msg.path' : 'path');
    const group = checkGroup(config.group, path);
    const body = method === 'POST' ? checkCallBody(msg.payload) : undefined;
    const query = mergeQuery({}, msg.query);
    const r = await gatewayCall(gw, { method, path, group, query, body, signal });
    send(Object.assign(msg, { payload: r.body, statusCode: r.statusCode }));
  });
}

export default function register(RED: NodeAPI): void {
  function IotgwGatewayCallNode(this: Node, config: GatewayCallConfig) {
    RED.nodes.createNode(this, config);
    startGatewayCall(RED, this, config);
  }

  RED.nodes.registerType('iotgw-gateway-call', IotgwGatewayCallNode as unknown as (this: Node, c: NodeDef) => void);
}
