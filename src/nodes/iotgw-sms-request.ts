/**
 * `iotgw-sms-request` (endpoint 6): looks up an SMS send request (batch) with its
 * success, error and pending counters. Optionally polls until nothing is pending, every
 * `intervalSeconds`, for at most `timeLimitSeconds`; the msg then carries the final
 * counters and `msg.waited` ({complete, polls, ms}). Past the time limit the msg ends
 * with a TIMEOUT error, and msg.payload holds the last counters seen.
 */
import type { Node, NodeAPI, NodeDef, NodeStatus } from 'node-red';
import { GatewayError, badInput } from '../lib/common/errors';
import { sleep } from '../lib/transport/http';
import { handleInput, mergeQuery, numberSetting, useConfigNode, type Msg } from '../lib/node-red/node-kit';
import { PATHS, brokerRequest, paramName, positiveId, say, smsEnvelope, type SmsEnvelope } from '../lib/api/broker';
import { parseReply } from '../lib/api/terminal';
import { isGateway } from '../lib/node-red/guards';

export interface SmsRequestConfig extends NodeDef {
  gateway: string;
  idParam?: string;
  wait?: boolean;
  intervalSeconds?: string | number;
  timeLimitSeconds?: string | number;
}

export default function register(RED: NodeAPI): void {
  function IotgwSmsRequestNode(this: Node, config: SmsRequestConfig) {
    RED.nodes.createNode(this, config);
    const node = this;
    const gw = useConfigNode(RED, node, config.gateway, isGateway, 'gateway', 'iotgw-gateway');
    const intervalMs = Math.round(numberSetting(config.intervalSeconds, 10, 0.1, 86400) * 1000);
    const limitMs = Math.round(numberSetting(config.timeLimitSeconds, 600, 0.1, 7 * 86400) * 1000);
    let summary: NodeStatus | undefined;
    const counters = (e: SmsEnvelope) => ({ success: e.successCount, failed: e.errorCount, pending: e.pendingCount });

    handleInput(
      RED,
      node,
      async (msg: Msg, send, { signal }) => {
        if (gw instanceof GatewayError) throw gw;
        const idParam = paramName(config.idParam, 'id', 'idParam');
        const id = positiveId(msg.payload, 'msg.payload', 'the SMS batch ID');
        if (msg.wait !== undefined && typeof msg.wait !== 'boolean') throw badInput('msg.wait', 'must be true or false');
        const wait = typeof msg.wait === 'boolean' ? msg.wait : config.wait === true;
        const query = mergeQuery({ [idParam]: id }, msg.query);
        const where = `GET ${PATHS.sms}`;
        const started = Date.now();
        for (let polls = 1; ; polls++) {
          const res = await brokerRequest(gw, { method: 'GET', path: PATHS.sms, query, idempotent: true, signal });
          const env = parseReply(smsEnvelope, res.body, where);
          msg.payload = env;
          msg.statusCode = res.statusCode;
          const waited = Date.now() - started;
          if (!wait || env.pendingCount === 0) {
            if (wait) msg.waited = { complete: true, polls, ms: waited };
            const c = counters(env);
            summary = env.pendingCount === 0
              ? { fill: 'green', shape: 'dot', text: say(RED, 'iotgw-sms-request.status.done', `${c.success} sent, ${c.failed} failed`, c) }
              : { fill: 'yellow', shape: 'ring', text: say(RED, 'iotgw-sms-request.status.pending', `${c.pending} pending, ${c.success} sent, ${c.failed} failed`, c) };
            send(msg);
            return;
          }
          if (waited >= limitMs) {
            msg.waited = { complete: false, polls, ms: waited };
            throw new GatewayError(
              'TIMEOUT',
              `SMS batch ${id}: ${env.pendingCount} still pending after ${(waited / 1000).toFixed(1)} s (time limit ${limitMs / 1000} s); msg.payload holds the last counters. Raise the time limit or look again later`,
            );
          }
          node.status({ fill: 'blue', shape: 'ring', text: say(RED, 'iotgw-sms-request.status.waiting', `waiting: ${env.pendingCount} pending`, counters(env)) });
          await sleep(Math.min(intervalMs, limitMs - waited), signal);
        }
      },
      { idleStatus: () => summary },
    );
  }

  RED.nodes.registerType('iotgw-sms-request', IotgwSmsRequestNode as unknown as (this: Node, c: NodeDef) => void);
}
