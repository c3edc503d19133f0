/**
 * What a feed poller shows: its texts, its status (the mark, how far behind, how many new;
 * a failure and what comes next) and its figures for the account's status node and the
 * editor's sidebar.
 */
import type { Node, NodeAPI, NodeStatus } from 'node-red';
import type { FeedMark } from '../account/types';
import type { FeedFigures } from '../account/figures';
import type { GatewayError } from '../common/errors';
import { needsReset } from '../feed/stores';
import { parseUtcSeconds } from '../feed/time';
import { errorStatus, t } from './node-kit';

/** A poller node's translator. */
export type PollerTexts = (key: string, vars?: Record<string, string | number>) => string;

/** English texts both pollers share (each node adds its own warn.crowded). */
export const POLLER_TEXTS: Record<string, string> = {
  'status.mark': 'at __mark__ UTC · __behind__ behind · __count__ new',
  'status.missingStore': 'no context store "__store__"',
  'status.standby': 'standby (another instance polls)',
  'status.sharedDown': 'shared state (Redis) unreachable: not polling',
  'status.sendFromUtc': 'send {fromUTC}',
  'warn.missingStore': 'context store "__store__" is not configured in settings.js (contextStorage): the mark is kept in __used__ instead',
  'warn.overfull': "the second __second__ kept bringing new records while the gateway's NextFromUTC stayed there (__keys__ sent, more than the __bound__ a mark tells apart): any more records of that second cannot be told apart from those sent; polling goes on from the next second",
  'warn.keysDropped': 'the stored mark at __second__ could not be read with its keys (__why__): polling goes on from that second without them, so nothing is lost and at most one reply of that second comes again',
};

/**
 * A poller node's translator: its catalogue (`<type>.` keys), with the shared English texts and
 * its crowded-second warning (naming what it polls, `noun`) when no catalogue is loaded.
 */
export function pollerTexts(RED: NodeAPI, type: string, noun: string) {
  return nodeTexts(RED, `@iotgateway/node-red-gateway/${type}:${type}.`, {
    ...POLLER_TEXTS,
    'warn.crowded': `the second __second__ filled a whole reply (__fetched__ of its ${noun} fetched): any more ${noun} of that second cannot be fetched; polling goes on from the next second`,
  });
}

/** A node's translator with English fallbacks (for an embedded runtime without its catalogue). */
export function nodeTexts(RED: NodeAPI, ns: string, en: Record<string, string>) {
  return (key: string, vars: Record<string, string | number> = {}): string => {
    const out = RED._(ns + key, vars);
    if (out !== ns + key && out !== key && !out.endsWith(key)) return out;
    return (en[key] ?? key).replace(/__(\w+)__/g, (m, k: string) => (k in vars ? String(vars[k]) : m));
  };
}

/** "12 s", "3 min", "5 h", "2 d". */
export function behindText(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  if (s < 172800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} d`;
}

/** The last successful poll: when, and how many new records it emitted. */
export interface PollOk {
  at: number;
  count: number;
}

/** What the status and the figures read of a poller. */
export interface PollerView {
  /** The reader's mark; undefined before the first poll or when the reader could not be built. */
  readonly mark: FeedMark | undefined;
  readonly lastOk: PollOk | undefined;
  readonly running: boolean;
  /** The named context store this Node-RED does not have, if any. */
  readonly storeWarning: string | undefined;
  /** The reader could not be built, or the last poll failed. */
  readonly failing: boolean;
  /** Another instance holds the feed's lease. */
  readonly standby: boolean;
}

/** The status after a successful poll (and at start): the mark, how far behind, how many new. */
export function markStatus(RED: NodeAPI, tp: PollerTexts, v: PollerView): NodeStatus {
  const m = v.mark;
  const sec = m ? parseUtcSeconds(m.fromUtc) : undefined;
  // A missing store stays in sight (yellow) for as long as the node runs.
  const missing = v.storeWarning ? `${tp('status.missingStore', { store: v.storeWarning })} · ` : '';
  const fill = v.storeWarning ? ('yellow' as const) : undefined;
  if (!v.lastOk || sec === undefined) {
    const text = missing + (v.running ? t(RED, 'status.waiting') : t(RED, 'status.stopped'));
    return { fill: fill ?? 'grey', shape: 'ring', text };
  }
  const text = missing + tp('status.mark', { mark: m!.fromUtc, behind: behindText(Date.now() - sec * 1000), count: v.lastOk.count });
  return { fill: fill ?? 'green', shape: fill ? 'ring' : 'dot', text };
}

/**
 * The status of a failed poll, with what comes next: after a settings error of the config
 * node (`settingError`) a redeploy, for a mark that cannot be read {fromUTC}, else a retry.
 */
export function failureStatus(RED: NodeAPI, tp: PollerTexts, err: GatewayError, settingError: boolean): NodeStatus {
  const next = settingError ? t(RED, 'status.redeploy') : needsReset(err) ? tp('status.sendFromUtc') : t(RED, 'status.retrying');
  return { ...errorStatus(RED, err), text: `${errorStatus(RED, err).text} · ${next}`.slice(0, 60) };
}

/** The records emitted in the last minute (for the figures). */
export class LastMinute {
  private readonly emitted: PollOk[] = [];

  add(ok: PollOk): void {
    if (ok.count === 0) return;
    this.emitted.push(ok);
    this.trim(ok.at);
  }

  total(now: number): number {
    this.trim(now);
    return this.emitted.reduce((n, e) => n + e.count, 0);
  }

  private trim(now: number): void {
    while (this.emitted.length && this.emitted[0]!.at <= now - 60_000) this.emitted.shift();
  }
}

/** A poller's figures for the account's status node and the editor's sidebar. */
export function pollerFigures(node: Node, v: PollerView, lastMinute: LastMinute, now: number): FeedFigures {
  const m = v.mark;
  const sec = m ? parseUtcSeconds(m.fromUtc) : undefined;
  return {
    type: node.type === 'iotgw-message-poller' ? 'messages' : node.type === 'iotgw-terminal-updates' ? 'terminals' : 'status',
    node: (node as Node & { name?: string }).name || node.id,
    state: v.failing ? 'error' : !v.running ? 'stopped' : v.standby ? 'standby' : 'active',
    mark: m?.fromUtc ?? null,
    behindSeconds: sec === undefined ? null : Math.max(0, Math.round(now / 1000 - sec)),
    emittedLastMinute: lastMinute.total(now),
  };
}
