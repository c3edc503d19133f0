/**
 * `iotgw-lorawan-contract` (endpoints 4 and 5): creates a LoRaWAN broker contract or
 * lists contracts. `create` checks the body with zod before sending and reports every
 * bad field at once; `list` takes its filters and paging from the settings, overridden
 * per msg by the same names in `msg.payload`.
 */
import type { Node, NodeAPI, NodeDef } from 'node-red';
import { GatewayError, badInput } from '../lib/common/errors';
import { handleInput, mergeQuery, useConfigNode, type Msg } from '../lib/node-red/node-kit';
import { PATHS, brokerRequest, checkContractBody, contractList, contractListQuery, defined, messageReply } from '../lib/api/broker';
import { parseReply } from '../lib/api/terminal';
import { showValue } from '../lib/common/int64';
import { isGateway } from '../lib/node-red/guards';

export interface ContractConfig extends NodeDef {
  gateway: string;
  operation: 'create' | 'list';
  planDesc?: string;
  customerId?: string | number;
  externalId?: string;
  page?: string | number;
  pageSize?: string | number;
}

/** The list query: settings, overridden by the same names in msg.payload (src/lib/api/broker.ts). */
export { contractListQuery as listQuery } from '../lib/api/broker';

export default function register(RED: NodeAPI): void {
  function IotgwLorawanContractNode(this: Node, config: ContractConfig) {
    RED.nodes.createNode(this, config);
    const node = this;
    const gw = useConfigNode(RED, node, config.gateway, isGateway, 'gateway', 'iotgw-gateway');

    handleInput(RED, node, async (msg: Msg, send, { signal }) => {
      if (gw instanceof GatewayError) throw gw;
      const operation = msg.operation ?? config.operation ?? 'list';
      if (operation === 'create') {
        const body = checkContractBody(msg.payload);
        const query = mergeQuery({}, msg.query);
        const res = await brokerRequest(gw, { method: 'POST', path: PATHS.contract, body, query, idempotent: false, signal });
        msg.payload = parseReply(messageReply, res.body, `POST ${PATHS.contract}`);
        msg.statusCode = res.statusCode;
      } else if (operation === 'list') {
        const query = mergeQuery(defined(contractListQuery(config, msg.payload)), msg.query);
        const res = await brokerRequest(gw, { method: 'GET', path: PATHS.contract, query, idempotent: true, signal });
        msg.payload = parseReply(contractList, res.body, `GET ${PATHS.contract}`);
        msg.statusCode = res.statusCode;
      } else {
        throw badInput(msg.operation !== undefined ? 'msg.operation' : 'operation', `must be "create" or "list", not ${showValue(operation, 30)}`);
      }
      send(msg);
    });
  }

  RED.nodes.registerType('iotgw-lorawan-contract', IotgwLorawanContractNode as unknown as (this: Node, c: NodeDef) => void);
}
