/**
 * `iotgw-terminal-mode` (endpoint 1): sends operating-mode / wake-up messages to
 * terminals. Every item is validated before anything is sent; items of all messages
 * that arrive while the node waits for a SEND slot are batched into calls of up to
 * `maxBatchSize`; each result goes back to its message and position. Output 1 gets the
 * accepted entries, output 2 the rejected ones (ErrorID > 0, with the error's name).
 */
import type { Node, NodeAPI, NodeDef } from 'node-red';
import { SendPool } from '../lib/node-red/send-pool';
import { submitToOutputs } from '../lib/node-red/submit-results';
import { GatewayError, badInput } from '../lib/common/errors';
import { showValue } from '../lib/common/int64';
import { handleInput, mergeQuery, numberSetting, useConfigNode, type Msg, nodeAbortController } from '../lib/node-red/node-kit';
import type { SubmitResult } from '../lib/api/terminal';
import { checkModeItem, type ModeItem } from '../lib/api/terminal-inputs';
import { postModes } from '../lib/api/clients/terminal';
import { isGateway, joinProblems } from '../lib/node-red/guards';
import { outboxSettings, runWithOutbox, submitSpec, type OutboxConfig } from '../lib/node-red/outbox-node';
import { toJsonItem } from '../lib/outbox/gateway-sender';

export interface TerminalModeConfig extends NodeDef, OutboxConfig {
  gateway: string;
  mode: string | number;
  wakeupInterval: string | number;
  family: 'any' | 'IDP' | 'OGx';
  lingerMs?: string | number;
}

export { isGateway, joinProblems } from '../lib/node-red/guards';
export { checkModeItem } from '../lib/api/terminal-inputs';

export default function register(RED: NodeAPI): void {
  function IotgwTerminalModeNode(this: Node, config: TerminalModeConfig) {
    RED.nodes.createNode(this, config);
    const node = this;
    const gw = useConfigNode(RED, node, config.gateway, isGateway, 'gateway', 'iotgw-gateway');
    const defaults = {
      mode: Math.round(numberSetting(config.mode, 0, -1, 99)),
      wakeup: Math.round(numberSetting(config.wakeupInterval, 0, -1, 99)),
    };
    const closing = nodeAbortController();
    node.on('close', (_r: boolean, done: () => void) => {
      closing.abort();
      done();
    });

    const pool = new SendPool<ModeItem, SubmitResult>(Math.round(numberSetting(config.lingerMs, 50, 0, 5000)), closing.signal, (g, items, query, slot, signal) =>
      postModes(g, items, { query, slot, signal }),
    );

    /** The msg's items, every one checked (BAD_INPUT naming each problem). */
    const checkMsg = (msg: Msg): ModeItem[] => {
      const familyRaw = msg.terminalFamily ?? config.family ?? 'any';
      if (familyRaw !== 'any' && familyRaw !== 'IDP' && familyRaw !== 'OGx') {
        throw badInput('msg.terminalFamily', `must be "IDP", "OGx" or "any", not ${showValue(familyRaw)}`);
      }
      const payload = msg.payload;
      const list = Array.isArray(payload) ? payload : [payload];
      if (list.length === 0) throw badInput('msg.payload', 'an empty array; send at least one ModeMessage');
      const problems: string[] = [];
      const items: ModeItem[] = [];
      list.forEach((raw, i) => {
        const it = checkModeItem(raw, Array.isArray(payload) ? `msg.payload[${i}]` : 'msg.payload', defaults, familyRaw, problems);
        if (it) items.push(it);
      });
      if (problems.length) throw new GatewayError('BAD_INPUT', joinProblems(problems), { field: problems[0]!.split(':')[0] });
      return items;
    };

    const ob = outboxSettings(config);
    if (ob) return runWithOutbox(RED, node, 'iotgw-terminal-mode', ob, gw, submitSpec(RED, (msg) => checkMsg(msg).map((it) => ({ kind: 'mode' as const, item: toJsonItem(it) }))));

    handleInput(RED, node, async (msg: Msg, send) => {
      if (gw instanceof GatewayError) throw gw;
      const items = checkMsg(msg);
      const query = mergeQuery({}, msg.query);
      send(await submitToOutputs(RED, msg, () => pool.submit(gw, items, query)));
    }, { waitSignals: [closing.signal] });
  }

  RED.nodes.registerType('iotgw-terminal-mode', IotgwTerminalModeNode as unknown as (this: Node, c: NodeDef) => void);
}

