/**
 * `iotgw-message-tracker`: follows to-mobile messages to their final state. Wire the
 * accepted output of iotgw-terminal-mode (or the output of iotgw-cancel) into it; for
 * each message ID it emits once, when the message closes, on the output of its outcome:
 *   1 delivered (RECEIVED), 2 failed (ERROR, DELIVERY_FAILED, TIMED_OUT by the gateway),
 *   3 cancelled (CANCELLED), 4 expired (not closed within our own time limit).
 * It spends no GET calls of its own: it reads the records the account's
 * iotgw-status-poller fetches. The watch list lives in node context (choose a
 * persistent store to survive restarts) and is bounded.
 */
import type { Node, NodeAPI, NodeDef, NodeMessage, NodeStatus } from 'node-red';
import { GatewayError, badInput } from '../lib/common/errors';
import { int64Key, int64Out } from '../lib/common/int64';
import { errorStatus, handleInput, isPlainObject, numberSetting, t, useConfigNode, type Msg } from '../lib/node-red/node-kit';
import { CLOSED_STATES, STATE_NAMES, type StatusRecord } from '../lib/api/terminal';
import { shownEntry } from '../lib/api/gateway-errors';
import { isGateway, joinProblems } from '../lib/node-red/guards';
import type { GatewayNode } from '../lib/node-red/config-nodes';

export interface TrackerConfig extends NodeDef {
  gateway: string;
  timeoutDays: string | number;
  maxWatched: string | number;
  contextStore: string;
}

interface Watch {
  /** When we started watching (ms). */
  since: number;
  /** Our own deadline (ms). */
  deadline: number;
  /** Key of the original msg's properties in `msgs`. */
  ref: string;
}

interface Saved {
  watches: Record<string, Watch>;
  /** Original msg properties (without payload and _msgid), shared by the IDs of one msg. */
  msgs: Record<string, Record<string, unknown>>;
}

const KEY = 'watchList';
const RECENT_MAX = 10_000;

export function outcomeOf(state: number): { output: number; outcome: string } {
  if (state === 1) return { output: 0, outcome: 'delivered' };
  if (state === 5) return { output: 2, outcome: 'cancelled' };
  return { output: 1, outcome: 'failed' };
}

function utcMs(s: unknown): number | undefined {
  if (typeof s !== 'string') return undefined;
  const t = Date.parse(`${s.replace(' ', 'T')}Z`);
  return Number.isNaN(t) ? undefined : t;
}

/**
 * One tracker node's watch list: the watched IDs (with the original msgs' properties),
 * kept in node context, resolved by the status poller's records, expired by a sweep.
 */
class WatchList {
  private saved: Saved = { watches: {}, msgs: {} };
  private loaded: Promise<void> | undefined;
  count = 0;
  private refSeq = 0;
  /** Closed records seen recently, for watches that start after the record arrived. */
  private readonly recent = new Map<string, StatusRecord>();
  private readonly ctx: ReturnType<Node['context']>;

  constructor(
    private readonly RED: NodeAPI,
    private readonly node: Node,
    private readonly gw: GatewayNode | GatewayError,
    private readonly store: string | undefined,
    readonly limitMs: number,
    private readonly maxWatched: number,
  ) {
    this.ctx = node.context();
  }

  persist(): Promise<void> {
    const ctx = this.ctx;
    return new Promise((resolve, reject) => {
      const cb = (err?: Error | null) => (err ? reject(err) : resolve());
      if (this.store) ctx.set(KEY, this.saved, this.store, cb);
      else ctx.set(KEY, this.saved, cb);
    });
  }

  load(): Promise<void> {
    const ctx = this.ctx;
    return (this.loaded ??= new Promise<void>((resolve, reject) => {
      const cb = (err: Error | null, v: unknown) => {
        if (err) return reject(err);
        if (isPlainObject(v) && isPlainObject(v.watches) && isPlainObject(v.msgs)) this.saved = v as unknown as Saved;
        this.count = Object.keys(this.saved.watches).length;
        this.refSeq = Object.keys(this.saved.msgs).length;
        resolve();
      };
      if (this.store) ctx.get(KEY, this.store, cb);
      else ctx.get(KEY, cb);
    }));
  }

  statusNow(): NodeStatus | undefined {
    const gw = this.gw;
    if (gw instanceof GatewayError) return undefined;
    const noPoller = gw.pollers.size === 0;
    const count = this.count;
    return {
      fill: noPoller ? 'yellow' : count ? 'blue' : 'grey',
      shape: 'ring',
      text: `${t(this.RED, 'status.watching', { count })}${noPoller ? ` · ${t(this.RED, 'status.noPoller')}` : ''}`,
    };
  }

  showStatus(): void {
    const s = this.statusNow();
    if (s) this.node.status(s);
  }

  private forget(key: string): void {
    const w = this.saved.watches[key];
    if (!w) return;
    delete this.saved.watches[key];
    this.count--;
    if (!Object.values(this.saved.watches).some((o) => o.ref === w.ref)) delete this.saved.msgs[w.ref];
  }

  private emit(key: string, w: Watch, output: number, payload: Record<string, unknown>): void {
    const original = this.saved.msgs[w.ref] ?? {};
    const msg = { ...this.RED.util.cloneMessage(original), payload, topic: key } as NodeMessage;
    const out: Array<NodeMessage | null> = [null, null, null, null];
    out[output] = msg;
    this.node.send(out);
  }

  /** A record with only ID and ErrorID > 0: the gateway does not know the message. Failed. */
  private resolveUnknown(key: string, w: Watch, rec: StatusRecord, errorId: number): void {
    const found = this.gw instanceof GatewayError ? undefined : this.gw.catalogue.lookup(errorId);
    const named = found && shownEntry(found);
    this.emit(key, w, 1, {
      ID: int64Out(BigInt(key)),
      outcome: 'failed',
      ErrorID: errorId,
      ErrorName: named?.name ?? `ERROR_${errorId}`,
      ...(named?.description ? { ErrorDescription: named.description } : {}),
      elapsedSeconds: Math.max(0, Math.round((Date.now() - w.since) / 1000)),
      record: rec,
    });
    this.forget(key);
  }

  /** A closed record: its watch (if any) emits on the output of its outcome. */
  resolveRecord(rec: StatusRecord): boolean {
    const key = int64Key(rec.ID);
    const unknownId = typeof rec.State !== 'number' && Number(rec.ErrorID ?? 0) > 0 ? Number(rec.ErrorID) : undefined;
    if (key && unknownId !== undefined && this.saved.watches[key]) {
      this.resolveUnknown(key, this.saved.watches[key]!, rec, unknownId);
      return true;
    }
    if (!key || typeof rec.State !== 'number' || !CLOSED_STATES.has(rec.State)) return false;
    const w = this.saved.watches[key];
    if (!w) {
      this.recent.set(key, rec);
      if (this.recent.size > RECENT_MAX) this.recent.delete(this.recent.keys().next().value as string);
      return false;
    }
    const { output, outcome } = outcomeOf(rec.State);
    const created = utcMs(rec.CreateUTC);
    const closedAt = utcMs(rec.StatusUTC);
    const elapsedMs = created !== undefined && closedAt !== undefined ? closedAt - created : Date.now() - w.since;
    this.emit(key, w, output, {
      ID: int64Out(BigInt(key)),
      outcome,
      State: rec.State,
      StateName: STATE_NAMES[rec.State] ?? `STATE_${rec.State}`,
      elapsedSeconds: Math.max(0, Math.round(elapsedMs / 1000)),
      CreateUTC: rec.CreateUTC,
      StatusUTC: rec.StatusUTC,
      record: rec,
    });
    this.forget(key);
    return true;
  }

  readonly onRecords = (records: StatusRecord[]): void => {
    // Names of ErrorIDs come from the gateway's catalogue (loaded once; never throws).
    const gw = this.gw;
    const names = records.some((r) => Number(r.ErrorID ?? 0) > 0) && !(gw instanceof GatewayError) ? gw.catalogue.load() : undefined;
    void Promise.all([this.load(), names]).then(() => {
      let changed = false;
      for (const r of records) changed = this.resolveRecord(r) || changed;
      if (changed) {
        this.showStatus();
        void this.persist().catch((e: Error) => this.node.warn(`could not store the watch list: ${e.message}`));
      }
    });
  };

  /** Watches past our own deadline emit on output 4 (expired). */
  readonly sweep = (): void => {
    void this.load().then(() => {
      const now = Date.now();
      let changed = false;
      for (const [key, w] of Object.entries(this.saved.watches)) {
        if (w.deadline > now) continue;
        this.emit(key, w, 3, {
          ID: int64Out(BigInt(key)),
          outcome: 'expired',
          StateName: 'NOT_CLOSED_IN_TIME',
          elapsedSeconds: Math.round((now - w.since) / 1000),
          limitDays: this.limitMs / 86_400_000,
        });
        this.forget(key);
        changed = true;
      }
      if (changed) {
        this.showStatus();
        void this.persist().catch(() => {});
      }
    });
  };

  /**
   * Starts watching `keys` for `msg` (not yet stored: persist() follows); a record that
   * closed before resolves at once. Throws at once when the list is full.
   */
  watch(keys: string[], msg: Msg): void {
    const saved = this.saved;
    const fresh = keys.filter((k) => !saved.watches[k]);
    if (this.count + fresh.length > this.maxWatched) {
      throw new GatewayError('RATE_LIMITED', `watch list full: ${this.count} messages watched, at most ${this.maxWatched}; raise "Watch at most" or wait for messages to close`);
    }
    const props: Record<string, unknown> = { ...msg };
    delete props.payload;
    delete props._msgid;
    const ref = `m${++this.refSeq}`;
    saved.msgs[ref] = props;
    const now = Date.now();
    for (const k of fresh) {
      saved.watches[k] = { since: now, deadline: now + this.limitMs, ref };
      this.count++;
    }
    // A record that closed before the watch began resolves at once.
    for (const k of fresh) {
      const r = this.recent.get(k);
      if (r) this.resolveRecord(r);
    }
    if (!Object.values(saved.watches).some((w) => w.ref === ref)) delete saved.msgs[ref];
  }
}

/** The message IDs of msg.payload (an ID, an array, or results carrying ID); rejected entries are skipped. */
function idsToTrack(msg: Msg): string[] {
  const list = Array.isArray(msg.payload) ? msg.payload : [msg.payload];
  const problems: string[] = [];
  const keys: string[] = [];
  list.forEach((raw, i) => {
    const where = Array.isArray(msg.payload) ? `msg.payload[${i}]` : 'msg.payload';
    const v = isPlainObject(raw) ? raw.ID : raw;
    if (isPlainObject(raw) && Number(raw.ErrorID ?? 0) > 0) return; // rejected entries have nothing to track
    const key = int64Key(v);
    if (!key || BigInt(key) <= 0n) problems.push(`${where}: needs a message ID (a positive int64, or an object with ID)`);
    else keys.push(key);
  });
  if (problems.length) throw new GatewayError('BAD_INPUT', joinProblems(problems), { field: problems[0]!.split(':')[0] });
  if (keys.length === 0) throw badInput('msg.payload', 'holds no accepted message to track (only rejected entries or an empty array)');
  return keys;
}

function startTracker(RED: NodeAPI, node: Node, config: TrackerConfig): void {
  const gw = useConfigNode(RED, node, config.gateway, isGateway, 'gateway', 'iotgw-gateway');
  const limitMs = numberSetting(config.timeoutDays, 14, 0.00001, 3650) * 86_400_000;
  const maxWatched = Math.round(numberSetting(config.maxWatched, 10000, 1, 1_000_000));
  const store = config.contextStore ? String(config.contextStore) : undefined;
  const list = new WatchList(RED, node, gw, store, limitMs, maxWatched);
  let closed = false;

  handleInput(RED, node, async (msg: Msg) => {
    if (gw instanceof GatewayError) throw gw;
    await list.load();
    list.watch(idsToTrack(msg), msg);
    await list.persist();
    list.showStatus();
  }, { idleStatus: () => list.statusNow() });

  if (gw instanceof GatewayError) {
    node.status(errorStatus(RED, gw));
    return;
  }
  const onPollers = () => list.showStatus();
  gw.statusFeed.on('records', list.onRecords);
  gw.statusFeed.on('pollers', onPollers);
  void list.load().then(() => {
    if (!closed) list.showStatus();
  }, (e: Error) => node.error(`could not read the watch list: ${e.message}`));
  const sweepTimer = setInterval(list.sweep, Math.max(200, Math.min(60_000, limitMs / 20)));

  node.on('close', (_removed: boolean, done: () => void) => {
    closed = true;
    clearInterval(sweepTimer);
    gw.statusFeed.off('records', list.onRecords);
    gw.statusFeed.off('pollers', onPollers);
    done();
  });
}

export default function register(RED: NodeAPI): void {
  function IotgwMessageTrackerNode(this: Node, config: TrackerConfig) {
    RED.nodes.createNode(this, config);
    startTracker(RED, this, config);
  }

  RED.nodes.registerType('iotgw-message-tracker', IotgwMessageTrackerNode as unknown as (this: Node, c: NodeDef) => void);
}
