/**
 * `iotgw-message-poller` (`get/re_messages`): reads the terminals' from-mobile messages
 * through the same feed-reading core as the status poller (src/lib/feed, unchanged):
 * FromUTC inclusive at one-second resolution, messages de-duplicated on `ID`, the mark and
 * the IDs already emitted for its second written together after every reply, before the
 * next request; the account's GET budget shared with the status poller.
 *
 * `accounts`: "own" (default) reads `get/re_messages`; "all" reads every subaccount's messages
 * (`get/subaccounts/re_messages`, a super account's call: each message carries AccountID; 403
 * for another account is a catchable FORBIDDEN that says so).
 *
 * One msg per message: `msg.topic` = MobileID, `msg.payload` = the message (int64 `ID`
 * exact), `msg.raw` = RawPayload as a Buffer when present, `msg.fields` = the Payload
 * fields as `{Name: value}` (src/lib/api/cmf). Or one msg per reply in batch mode. Optional
 * filters by SIN and MobileID are applied after the fetch (the gateway has none): a
 * filtered-out message still spends its share of the GET budget and moves the mark.
 *
 * Where the mark lives (`contextStore`), the control input and the lease (one active poller
 * per feed on a shared account, the others on standby) are as for the status poller
 * (src/lib/node-red/poller-node.ts).
 *
 * With `definitions` (an iotgw-definitions node), a message that came with RawPayload and no
 * Payload is decoded (return messages): `msg.payload.Payload` and `msg.fields` as the
 * gateway would have given them. One the definitions do not hold is emitted as before, with
 * one warning per SIN/MIN; one whose bytes do not decode is emitted undecoded, with a
 * warning. Decoding never drops or repeats a message: it only adds to what is emitted.
 */
import type { Node, NodeAPI, NodeDef, NodeMessage } from 'node-red';
import { type FeedPage } from '../lib/feed';
import { delivered, pollerTexts, runPollerNode, type PollerSettings } from '../lib/node-red/poller-node';
import { int64Out } from '../lib/common/int64';
import { useConfigNode } from '../lib/node-red/node-kit';
import type { Query } from '../lib/transport/http';
import { getMessagePage } from '../lib/api/clients/terminal';
import { MalformedMessage, isBase64, type FromMobileMessage, type FeedMessage } from '../lib/api/terminal';
import { decodeFields } from '../lib/api/cmf';
import { isDefinitions, isGateway } from '../lib/node-red/guards';
import { toCmf, type Definitions } from '../lib/codec';
import { badInput, toGatewayError } from '../lib/common/errors';
import { markSettingError } from '../lib/common/setting-error';
import { wellFormed } from '../lib/node-red/poller-records';

export interface MessagePollerConfig extends NodeDef, PollerSettings {
  gateway: string;
  output: 'record' | 'batch';
  /** Comma-separated SINs to keep ("" = all). */
  sinFilter: string;
  /** Comma-separated MobileIDs to keep ("" = all). */
  mobileFilter: string;
  /** Ask for RawPayload too (IncludeRawPayload=true). */
  includeRaw: boolean;
  /** An iotgw-definitions node ("" = none): decodes messages that came as RawPayload only. */
  definitions?: string;
  /** "own" (default, and older flows): get/re_messages; "all": get/subaccounts/re_messages (a super account). */
  accounts?: 'own' | 'all';
}

export { fromMobileMessage, reMessagesReply, MalformedMessage, readMessage, isBase64, type FromMobileMessage, type FeedMessage } from '../lib/api/terminal';

/** A comma-separated filter setting -> the set of values, or undefined for "all". */
export function listSetting(v: unknown): Set<string> | undefined {
  const items = String(v ?? '')
    .split(',')
    .map((x) => x.trim().toLowerCase())
    .filter(Boolean);
  return items.length ? new Set(items) : undefined;
}

/** A from-mobile message's identity: its ID (exact, whatever its JSON form). */
export const messageKey = (m: FeedMessage): string => (m instanceof MalformedMessage ? m.key : BigInt(m.ID).toString());

interface Decorated {
  payload: FromMobileMessage;
  raw?: Buffer;
  fields?: Record<string, unknown>;
}

/** What one message becomes in a msg: payload (ID exact), raw (Buffer), fields (decoded). */
class Decorator {
  private readonly defsNode: unknown;
  private readonly warned = new Set<string>();

  constructor(
    RED: NodeAPI,
    private readonly node: Node,
    private readonly definitionsId: string | undefined,
  ) {
    this.defsNode = definitionsId ? RED.nodes.getNode(definitionsId) : null;
  }

  private warnOnce(key: string, text: string): void {
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.node.warn(text);
  }

  /** The definitions, or undefined (none set, or refused: said once). */
  private definitions(): Definitions | undefined {
    if (!this.definitionsId) return undefined;
    const defsNode = this.defsNode;
    if (!isDefinitions(defsNode)) return void this.warnOnce('defs', 'definitions: the iotgw-definitions config node is missing; messages are emitted undecoded');
    try {
      return defsNode.definitions();
    } catch (e) {
      return void this.warnOnce('defs', `definitions refused, messages are emitted undecoded: ${toGatewayError(e).message}`);
    }
  }

  /** Decodes a RawPayload-only message with the definitions, into `payload.Payload` and `out.fields`. */
  private decodeRaw(raw: Buffer, payload: FromMobileMessage, out: { fields?: Record<string, unknown> }): void {
    const defs = this.definitions();
    if (!defs || raw.length < 2) return;
    // Larger than any from-mobile message: not a terminal's message; refused before decoding.
    const big = defs.sizeProblem(raw.length, 'return');
    if (big) return void this.node.warn(`BAD_RESPONSE: from-mobile message ${String(payload.ID)}: emitted undecoded: RawPayload is ${big}`);
    if (!defs.find(raw[0]!, raw[1]!, 'return')) {
      this.warnOnce(`${raw[0]}/${raw[1]}`, `SIN ${raw[0]} MIN ${raw[1]}: not in the message definitions; such messages are emitted undecoded`);
      return;
    }
    try {
      const d = defs.decode(raw, 'return');
      payload.Payload = toCmf(d.message, d.fields) as FromMobileMessage['Payload'];
      out.fields = d.fields;
    } catch (e) {
      this.node.warn(`message ${String(payload.ID)}: emitted undecoded: ${toGatewayError(e).message}`);
    }
  }

  readonly decorate = (m: FromMobileMessage): Decorated => {
    const payload: FromMobileMessage = { ...m, ID: int64Out(BigInt(m.ID)) };
    const out: Decorated = { payload };
    if (typeof m.RawPayload === 'string') {
      // Buffer.from skips what is not base64: that would be garbage bytes, silently.
      if (isBase64(m.RawPayload)) out.raw = Buffer.from(m.RawPayload, 'base64');
      else this.node.warn(`from-mobile message ${String(payload.ID)}: RawPayload is not base64 (${m.RawPayload.length} characters); msg.raw is left out, msg.payload.RawPayload is as received`);
    }
    if (m.Payload && Array.isArray(m.Payload.Fields)) out.fields = decodeFields(m.Payload.Fields);
    else if (!m.Payload && out.raw && this.definitionsId) this.decodeRaw(out.raw, payload, out);
    return out;
  };
}

/** One msg per message, or one per reply in batch mode. */
function sendMessages(node: Node, out: Decorated[], batchMode: boolean, info: { fromUtc: string; nextFromUtc: string }): void {
  if (batchMode) {
    node.send({
      topic: 'fromMobileMessages',
      payload: out.map((o) => o.payload),
      raw: out.map((o) => o.raw ?? null),
      fields: out.map((o) => o.fields ?? null),
      fromUTC: info.fromUtc,
      nextFromUTC: info.nextFromUtc,
      statusCode: 200,
    } as NodeMessage);
    return;
  }
  for (const o of out) {
    const msg: Record<string, unknown> = { topic: String(o.payload.MobileID ?? ''), payload: o.payload, statusCode: 200 };
    if (o.raw) msg.raw = o.raw;
    if (o.fields) msg.fields = o.fields;
    node.send(msg as NodeMessage);
  }
}

function startMessagePoller(RED: NodeAPI, node: Node, config: MessagePollerConfig, tp: ReturnType<typeof pollerTexts>): void {
  const accounts = config.accounts ?? 'own';
  // A setting the node does not know stops it at deploy (red status, one error), as a broken config node does.
  const gw =
    accounts === 'own' || accounts === 'all' || (accounts as string) === ''
      ? useConfigNode(RED, node, config.gateway, isGateway, 'gateway', 'iotgw-gateway')
      : markSettingError(badInput('accounts', `must be "own" or "all", not ${JSON.stringify(String(accounts)).slice(0, 40)}`));
  const sins = listSetting(config.sinFilter);
  const mobiles = listSetting(config.mobileFilter);
  const includeRaw = config.includeRaw !== false;
  const batchMode = config.output === 'batch';
  const keep = (m: FromMobileMessage): boolean =>
    (!sins || sins.has(String(m.SIN ?? m.Payload?.SIN ?? ''))) && (!mobiles || mobiles.has(String(m.MobileID ?? '').trim().toLowerCase()));
  const { decorate } = new Decorator(RED, node, config.definitions);
  const allAccounts = accounts === 'all';
  const words = { where: `GET ${allAccounts ? 'get/subaccounts/re_messages' : 'get/re_messages'}`, what: 'a from-mobile message', topic: 'fromMobileMessages' };
  runPollerNode<FeedMessage>({
    RED,
    node,
    config,
    gw,
    feedKind: 'message-poller',
    tp,
    what: 'from-mobile polling',
    errorTopic: 'fromMobileMessages',
    key: messageKey,
    // The feed's seconds are those FromUTC selects on: ReceiveUTC (MessageUTC when absent).
    time: (m) => (m instanceof MalformedMessage ? m.time : (m.ReceiveUTC ?? m.MessageUTC)),
    fetchPage: (g, fromUtc, query, signal): Promise<FeedPage<FeedMessage>> => getMessagePage(g, fromUtc, includeRaw, { query: query as Query | undefined, signal, allAccounts }),
    emit: (records, info) => {
      const out = wellFormed<FromMobileMessage>(node, records, info.fromUtc, words).filter(keep).map(decorate);
      if (!out.length) return undefined;
      sendMessages(node, out, batchMode, info);
      return delivered();
    },
  });
}

export default function register(RED: NodeAPI): void {
  const tp = pollerTexts(RED, 'iotgw-message-poller', 'messages');
  function IotgwMessagePollerNode(this: Node, config: MessagePollerConfig) {
    RED.nodes.createNode(this, config);
    startMessagePoller(RED, this, config, tp);
  }

  RED.nodes.registerType('iotgw-message-poller', IotgwMessagePollerNode as unknown as (this: Node, c: NodeDef) => void);
}
