/**
 * `iotgw-status-poller` (endpoint 3): reads the status-updates feed of to-mobile messages
 * through the shared feed-reading core (src/lib/feed): FromUTC inclusive at one-second
 * resolution, records de-duplicated on `ID|State|StatusUTC`, the mark and the keys already
 * emitted for its second written together after every reply, before the next request.
 *
 * Where the mark lives (`contextStore`):
 * - "" (the default, and every saved flow that named no store): a small JSON file per
 *   poller under Node-RED's user directory (`<userDir>/iotgw-feeds/`), written durably
 *   (temporary file, fsync, rename) with every reply: it survives a restart and a SIGKILL
 *   with Node-RED's default settings, whose default context store is memory. A mark that
 *   an older version kept in the default context store is picked up once. Without a user
 *   directory (an embedded runtime) the default context store is used.
 * - a named context store: node context there (as durable as that store; a file store
 *   writes every `flushInterval`). A store this Node-RED does not have: yellow status and
 *   one warning at deploy, and the file above is used instead.
 *
 * Each record is checked on its own: a malformed one is a catchable BAD_RESPONSE with the record
 * as received (once), and the rest of the reply goes out.
 *
 * Control input: "poll" polls now; "stop" / "start" pause and resume the timer;
 * {fromUTC: "yyyy-MM-dd HH:mm:ss"} moves the mark (wins over a poll in flight).
 */
import type { Node, NodeAPI, NodeDef, NodeMessage } from 'node-red';
import { GatewayError } from '../lib/common/errors';
import { type FeedPage } from '../lib/feed';
import { delivered, pollerTexts, runPollerNode, type PollerSettings } from '../lib/node-red/poller-node';
import { int64Out, int64Text } from '../lib/common/int64';
import { useConfigNode } from '../lib/node-red/node-kit';
import type { Query } from '../lib/transport/http';
import { getStatusPage } from '../lib/api/clients/terminal';
import { STATE_NAMES, TRANSPORT_NAMES, type StatusRecord } from '../lib/api/terminal';
import { isGateway } from '../lib/node-red/guards';
import { MalformedRecord } from '../lib/api/records';
import { wellFormed } from '../lib/node-red/poller-records';

export { LEGACY_MARK_KEY, MARK_KEY, FEED_DIR, behindText } from '../lib/node-red/poller-node';

export interface StatusPollerConfig extends NodeDef, PollerSettings {
  gateway: string;
  output: 'record' | 'batch';
  addNames: boolean;
}

/** A status record's identity: the same record when ID, State and StatusUTC are. */
export const statusKey = (r: StatusRecord): string => `${int64Text(r.ID)}|${String(r.State)}|${String(r.StatusUTC)}`;

export default function register(RED: NodeAPI): void {
  const tp = pollerTexts(RED, 'iotgw-status-poller', 'records');
  function IotgwStatusPollerNode(this: Node, config: StatusPollerConfig) {
    RED.nodes.createNode(this, config);
    const node = this;
    const gw = useConfigNode(RED, node, config.gateway, isGateway, 'gateway', 'iotgw-gateway');
    const addNames = config.addNames !== false;
    const batchMode = config.output === 'batch';
    // In place: the records are this poll's own reply (checkReply returns it, no copy), read
    // by nothing else before emit; a copy per record was most of the drain's garbage.
    const decorate = (rec: StatusRecord): void => {
      if (typeof rec.ID === 'string') rec.ID = int64Out(BigInt(rec.ID));
      if (addNames) {
        if (typeof rec.State === 'number') rec.StateName = STATE_NAMES[rec.State] ?? `STATE_${rec.State}`;
        if (typeof rec.Transport === 'number') rec.TransportName = TRANSPORT_NAMES[rec.Transport] ?? `TRANSPORT_${rec.Transport}`;
      }
    };
    runPollerNode<StatusRecord | MalformedRecord>({
      RED,
      node,
      config,
      gw,
      feedKind: 'status-poller',
      tp,
      what: 'status polling',
      errorTopic: 'statusUpdates',
      key: (r) => (r instanceof MalformedRecord ? r.key : statusKey(r)),
      time: (r) => (r instanceof MalformedRecord ? r.time : r.StatusUTC),
      fetchPage: (g, fromUtc, query, signal): Promise<FeedPage<StatusRecord | MalformedRecord>> => getStatusPage(g, fromUtc, { query: query as Query | undefined, signal }),
      emit: (all, info) => {
        // Each record checked on its own: a malformed one is one Catch message, the rest goes out.
        const records = wellFormed(node, all, info.fromUtc, { where: `GET get/subaccounts/fw_status_updates`, what: 'a status record', topic: 'statusUpdates' });
        if (!records.length) return undefined;
        for (const rec of records) decorate(rec);
        // Other nodes of the account (the message tracker) see the records too.
        if (!(gw instanceof GatewayError)) gw.statusFeed.emit('records', records);
        if (batchMode) {
          node.send({ topic: 'statusUpdates', payload: records, fromUTC: info.fromUtc, nextFromUTC: info.nextFromUtc, statusCode: 200 } as NodeMessage);
        } else {
          for (const rec of records) node.send({ topic: int64Text(rec.ID), payload: rec, statusCode: 200 } as NodeMessage);
        }
        return delivered();
      },
    });
  }

  RED.nodes.registerType('iotgw-status-poller', IotgwStatusPollerNode as unknown as (this: Node, c: NodeDef) => void);
}
