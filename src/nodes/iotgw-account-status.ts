/**
 * `iotgw-account-status`: the account at work as msgs, for a dashboard gauge, a chart or an
 * alert (nodes.md, "Seeing an account at work"). It emits the figures of its account
 * (an `iotgw-gateway` or an `iotgw-app`) every `intervalSeconds` (0: never on its own), and
 * at once for any input msg, whose other properties are kept. Reading the figures costs the
 * account nothing beyond the read itself (src/lib/account/figures.ts).
 */
import type { Node, NodeAPI, NodeDef, NodeMessage } from 'node-red';
import { GatewayError, toGatewayError } from '../lib/common/errors';
import { handleInput, numberSetting, useConfigNode, type InputHandle, type Msg } from '../lib/node-red/node-kit';
import { isApp, isGateway } from '../lib/node-red/guards';
import type { AppNode, GatewayNode } from '../lib/node-red/config-nodes';
import type { AccountFigures } from '../lib/account/figures';

export interface AccountStatusConfig extends NodeDef {
  /** An iotgw-gateway or iotgw-app config node. */
  account: string;
  /** Seconds between msgs; 0: only when a msg comes in. Default 10. */
  intervalSeconds?: number | string;
}

const isAccount = (n: unknown): n is GatewayNode | AppNode => isGateway(n) || isApp(n);

/** "SEND 3/5 · GET 0/5": each group's used of limit, for the node's status. */
export function statusText(f: AccountFigures): string {
  const parts = Object.entries(f.groups).map(([g, v]) => `${g} ${v.used}/${v.limit || '∞'}${v.waiting ? ` +${v.waiting}` : ''}`);
  return parts.join(' · ').slice(0, 60) || f.account;
}

/**
 * Reads the figures every `intervalMs` (one read at a time) and sends them; a failing read is
 * reported once, until it succeeds again (no flood while Redis is down).
 */
function startReading(node: Node, intervalMs: number, read: () => Promise<AccountFigures>, input: InputHandle): NodeJS.Timeout {
  let reading = false;
  let failing: string | undefined;
  return setInterval(() => {
    if (reading) return;
    reading = true;
    read().then(
      (payload) => {
        reading = false;
        failing = undefined;
        node.send({ topic: payload.account, payload } as NodeMessage);
        if (input.pending === 0) input.idle();
      },
      (e: unknown) => {
        reading = false;
        const err = toGatewayError(e);
        input.fail(err);
        if (failing === err.message) return;
        failing = err.message;
        node.error(err, { topic: 'accountStatus', payload: null, error: { message: err.message, code: err.code } } as unknown as NodeMessage);
      },
    );
  }, intervalMs);
}

function startAccountStatus(RED: NodeAPI, node: Node, config: AccountStatusConfig): void {
  const cfg = useConfigNode(RED, node, config.account, isAccount, 'account', 'iotgw-gateway or iotgw-app');
  const raw = config.intervalSeconds;
  const intervalMs = Math.round(numberSetting(raw === undefined || raw === '' ? 10 : raw, 10, 0, 86400) * 1000);
  let last: AccountFigures | undefined;

  const read = async (): Promise<AccountFigures> => {
    if (cfg instanceof GatewayError) throw cfg;
    last = await cfg.account.figures();
    return last;
  };

  const input = handleInput(
    RED,
    node,
    async (msg: Msg, send) => {
      msg.payload = await read();
      send(msg);
    },
    { idleStatus: () => (last ? { fill: 'grey', shape: 'dot', text: statusText(last) } : undefined) },
  );

  let timer = intervalMs > 0 && !(cfg instanceof GatewayError) ? startReading(node, intervalMs, read, input) : undefined;
  if (cfg instanceof GatewayError) {
    input.fail(cfg);
    node.error(cfg.message);
  }

  node.on('close', () => {
    if (timer) clearInterval(timer);
    timer = undefined;
  });
}

export default function register(RED: NodeAPI): void {
  function IotgwAccountStatusNode(this: Node, config: AccountStatusConfig) {
    RED.nodes.createNode(this, config);
    startAccountStatus(RED, this, config);
  }

  RED.nodes.registerType('iotgw-account-status', IotgwAccountStatusNode as unknown as (this: Node, c: NodeDef) => void);
}
