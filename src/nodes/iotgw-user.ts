/**
 * `iotgw-user` (endpoint 9): the user record. `msg.payload` is the query value (a user
 * ID); an empty payload asks for the user the auth token belongs to.
 */
import type { Node, NodeAPI, NodeDef } from 'node-red';
import { GatewayError } from '../lib/common/errors';
import { handleInput, mergeQuery, useConfigNode, type Msg } from '../lib/node-red/node-kit';
import { parseReply } from '../lib/api/terminal';
import { APP_PARAMS, APP_PATHS, queryValue, userRecord } from '../lib/api/app';
import { isApp } from '../lib/node-red/guards';

export interface UserConfig extends NodeDef {
  app: string;
  /** Query-parameter name of the user ID (the real one is not public). */
  param?: string;
}

export default function register(RED: NodeAPI): void {
  function IotgwUserNode(this: Node, config: UserConfig) {
    RED.nodes.createNode(this, config);
    const node = this;
    const app = useConfigNode(RED, node, config.app, isApp, 'app', 'iotgw-app');
    const param = String(config.param ?? '').trim() || APP_PARAMS.user;

    handleInput(RED, node, async (msg: Msg, send, ctx) => {
      if (app instanceof GatewayError) throw app;
      if (typeof msg.payload !== 'string' && msg.payload !== undefined && msg.payload !== null) {
        throw new GatewayError(
          'BAD_INPUT',
          'msg.payload: must be the user ID as a string, or empty for the user of the auth token (an inject node\'s timestamp is not a user ID)',
          { field: 'msg.payload' },
        );
      }
      const value = queryValue(msg.payload, 'msg.payload');
      const query = mergeQuery(value === undefined ? {} : { [param]: value }, msg.query);
      const res = await app.get(APP_PATHS.user, query, ctx.signal);
      msg.payload = parseReply(userRecord, res.body, `GET ${APP_PATHS.user}`);
      msg.statusCode = res.statusCode;
      send(msg);
    });
  }

  RED.nodes.registerType('iotgw-user', IotgwUserNode as unknown as (this: Node, c: NodeDef) => void);
}
