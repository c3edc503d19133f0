/**
 * `iotgw-terminal-updates` (`info/terminal_updates`): the terminal changes feed, read through
 * the feed core of the two other pollers (src/lib/feed, src/lib/node-red/poller-node.ts):
 * FromUTC inclusive at one-second resolution, records de-duplicated on `PrimeID|UpdateUTC`,
 * the mark and the keys already emitted for its second written together after every reply,
 * before the next request. So each (PrimeID, UpdateUTC) goes out once across polls,
 * redeploys and restarts; after a SIGKILL none is skipped and at most the reply in flight
 * comes again. On a shared account (Redis) one poller of the feed is active (lease, shared
 * mark and de-duplication), the others stand by.
 *
 * One msg per changed terminal (`msg.topic` = PrimeID, `msg.payload` = its TerminalInfo,
 * LastRegistrationMessageID exact), or one per reply in batch mode. A record that breaks the
 * API's rules is a catchable BAD_RESPONSE with the record as received; the rest goes out.
 * Calls count in the account's INFO group. Control input as the status poller's.
 */
import type { Node, NodeAPI, NodeDef, NodeMessage } from 'node-red';
import { type FeedPage } from '../lib/feed';
import { delivered, pollerTexts, runPollerNode, type PollerSettings } from '../lib/node-red/poller-node';
import { useConfigNode } from '../lib/node-red/node-kit';
import type { Query } from '../lib/transport/http';
import { isGateway } from '../lib/node-red/guards';
import { MalformedRecord } from '../lib/api/records';
import { wellFormed } from '../lib/node-red/poller-records';
import { getTerminalUpdatesPage, terminalKey, terminalOut, terminalTime, type TerminalInfo } from '../lib/api/terminal-info';

export interface TerminalUpdatesConfig extends NodeDef, PollerSettings {
  gateway: string;
  output: 'record' | 'batch';
}

const WORDS = { where: 'GET info/terminal_updates', what: 'a terminal record', topic: 'terminalUpdates' };

export default function register(RED: NodeAPI): void {
  const tp = pollerTexts(RED, 'iotgw-terminal-updates', 'terminal updates');
  function IotgwTerminalUpdatesNode(this: Node, config: TerminalUpdatesConfig) {
    RED.nodes.createNode(this, config);
    const node = this;
    const gw = useConfigNode(RED, node, config.gateway, isGateway, 'gateway', 'iotgw-gateway');
    const batchMode = config.output === 'batch';
    runPollerNode<TerminalInfo | MalformedRecord>({
      RED,
      node,
      config,
      gw,
      feedKind: 'terminal-updates',
      tp,
      what: 'terminal updates polling',
      errorTopic: 'terminalUpdates',
      key: terminalKey,
      time: terminalTime,
      fetchPage: (g, fromUtc, query, signal): Promise<FeedPage<TerminalInfo | MalformedRecord>> => getTerminalUpdatesPage(g, fromUtc, { query: query as Query | undefined, signal }),
      emit: (all, info) => {
        const records = wellFormed(node, all, info.fromUtc, WORDS).map(terminalOut);
        if (!records.length) return undefined;
        if (batchMode) {
          node.send({ topic: 'terminalUpdates', payload: records, fromUTC: info.fromUtc, nextFromUTC: info.nextFromUtc, statusCode: 200 } as NodeMessage);
        } else {
          for (const rec of records) node.send({ topic: rec.PrimeID.trim(), payload: rec, statusCode: 200 } as NodeMessage);
        }
        return delivered();
      },
    });
  }

  RED.nodes.registerType('iotgw-terminal-updates', IotgwTerminalUpdatesNode as unknown as (this: Node, c: NodeDef) => void);
}
