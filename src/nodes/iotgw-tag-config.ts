/**
 * `iotgw-tag-config` (endpoint 11): the configuration of a tag of the chipset-vendor
 * type. Its five query parameters come from TypedInput settings (a string, msg, flow,
 * global, env or JSONata each); `msg.query` is merged last to add or rename parameters.
 */
import type { Node, NodeAPI, NodeDef } from 'node-red';
import { GatewayError } from '../lib/common/errors';
import { evalProperty, handleInput, mergeQuery, useConfigNode, type Msg } from '../lib/node-red/node-kit';
import { parseReply } from '../lib/api/terminal';
import { APP_PATHS, TAG_CONFIG_PARAMS, queryValue, tagConfig } from '../lib/api/app';
import type { Query } from '../lib/transport/http';
import { isApp } from '../lib/node-red/guards';

export type TagConfigConfig = NodeDef & { app: string } & Partial<Record<(typeof TAG_CONFIG_PARAMS)[number][0] | `${(typeof TAG_CONFIG_PARAMS)[number][0]}Type`, string>>;

export default function register(RED: NodeAPI): void {
  function IotgwTagConfigNode(this: Node, config: TagConfigConfig) {
    RED.nodes.createNode(this, config);
    const node = this;
    const app = useConfigNode(RED, node, config.app, isApp, 'app', 'iotgw-app');

    handleInput(RED, node, async (msg: Msg, send, ctx) => {
      if (app instanceof GatewayError) throw app;
      const base: Query = {};
      for (const [prop, name] of TAG_CONFIG_PARAMS) {
        const raw = await evalProperty(RED, node, config[prop], config[`${prop}Type`], msg);
        base[name] = queryValue(raw, prop);
      }
      const query = mergeQuery(base, msg.query);
      const res = await app.get(APP_PATHS.tagConfig, query, ctx.signal);
      msg.payload = parseReply(tagConfig, res.body, `GET ${APP_PATHS.tagConfig}`);
      msg.statusCode = res.statusCode;
      send(msg);
    });
  }

  RED.nodes.registerType('iotgw-tag-config', IotgwTagConfigNode as unknown as (this: Node, c: NodeDef) => void);
}
