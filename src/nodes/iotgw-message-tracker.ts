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
import { isGateway, joinProblems } from '../lib/node-red/guards';

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

export default function register(RED: NodeAPI): void {
  function IotgwMessageTrackerNode(this: Node, config: TrackerConfig) {
    RED.nodes.createNode(this, config);
    const node = this;
    const gw = useConfigNode(RED, node, config.gateway, isGateway, 'gateway', 'iotgw-gateway');
    const limitMs = numberSetting(config.timeoutDays, 14, 0.00001, 3650) * 86_400_000;
    const maxWatched = Math.round(numberSetting(config.maxWatched, 10000, 1, 1_000_000));
    const store = config.contextStore ? String(config.contextStore) : undefined;
    const ctx = node.context();

    let saved: Saved = { watches: {}, msgs: {} };
    let loaded: Promise<void> | undefined;
    let count = 0;
    let refSeq = 0;
    /** Closed records seen recently, for watches that start after the record arrived. */
    const recent = new Map<string, StatusRecord>();
    let closed = false;

    const persist = (): Promise<void> =>
      new Promise((resolve, reject) => {
        const cb = (err?: Error | null) => (err ? reject(err) : resolve());
        if (store) ctx.set(KEY, saved, store, cb);
        else ctx.set(KEY, saved, cb);
      });
    const load = (): Promise<void> =>
      (loaded ??= new Promise<void>((resolve, reject) => {
        const cb = (err: Error | null, v: unknown) => {
          if (err) return reject(err);
          if (isPlainObject(v) && isPlainObject(v.watches) && isPlainObject(v.msgs)) saved = v as unknown as Saved;
          count = Object.keys(saved.watches).length;
          refSeq = Object.keys(saved.msgs).length;
          resolve();
        };
        if (store) ctx.get(KEY, store, cb);
        else ctx.get(KEY, cb);
      }));

    const statusNow = (): NodeStatus | undefined => {
      if (gw instanceof GatewayError) return undefined;
      const noPoller = gw.pollers.size === 0;
      return {
        fill: noPoller ? 'yellow' : count ? 'blue' : 'grey',
        shape: 'ring',
        text: `${t(RED, 'status.watching', { count })}${noPoller ? ` · ${t(RED, 'status.noPoller')}` : ''}`,
      };
    };
    const showStatus = () => {
      const s = statusNow();
      if (s) node.status(s);
    };

    const forget = (key: string) => {
      const w = saved.watches[key];
      if (!w) return;
      delete saved.watches[key];
      count--;
      if (!Object.values(saved.watches).some((o) => o.ref === w.ref)) delete saved.msgs[w.ref];
    };

    const emit = (key: string, w: Watch, output: number, payload: Record<string, unknown>) => {
      const original = saved.msgs[w.ref] ?? {};
      const msg = { ...RED.util.cloneMessage(original), payload, topic: key } as NodeMessage;
      const out: Array<NodeMessage | null> = [null, null, null, null];
      out[output] = msg;
      node.send(out);
    };

    const resolveRecord = (rec: StatusRecord): boolean => {
      const key = int64Key(rec.ID);
      // A record with only ID and ErrorID > 0: the gateway does not know the message. Failed.
      const unknownId = typeof rec.State !== 'number' && Number(rec.ErrorID ?? 0) > 0 ? Number(rec.ErrorID) : undefined;
      if (key && unknownId !== undefined && saved.watches[key]) {
        const w = saved.watches[key]!;
        const named = gw instanceof GatewayError ? undefined : gw.catalogue.lookup(unknownId);
        emit(key, w, 1, {
          ID: int64Out(BigInt(key)),
          outcome: 'failed',
          ErrorID: unknownId,
          ErrorName: named?.name ?? `ERROR_${unknownId}`,
          ...(named?.description ? { ErrorDescription: named.description } : {}),
          elapsedSeconds: Math.max(0, Math.round((Date.now() - w.since) / 1000)),
          record: rec,
        });
        forget(key);
        return true;
      }
      if (!key || typeof rec.State !== 'number' || !CLOSED_STATES.has(rec.State)) return false;
      const w = saved.watches[key];
      if (!w) {
        recent.set(key, rec);
        if (recent.size > RECENT_MAX) recent.delete(recent.keys().next().value as string);
        return false;
      }
      const { output, outcome } = outcomeOf(rec.State);
      const created = utcMs(rec.CreateUTC);
      const closedAt = utcMs(rec.StatusUTC);
      const elapsedMs = created !== undefined && closedAt !== undefined ? closedAt - created : Date.now() - w.since;
      emit(key, w, output, {
        ID: int64Out(BigInt(key)),
        outcome,
        State: rec.State,
        StateName: STATE_NAMES[rec.State] ?? `STATE_${rec.State}`,
        elapsedSeconds: Math.max(0, Math.round(elapsedMs / 1000)),
        CreateUTC: rec.CreateUTC,
        StatusUTC: rec.StatusUTC,
        record: rec,
      });
      forget(key);
      return true;
    };

    const onRecords = (records: StatusRecord[]) => {
      // Names of ErrorIDs come from the gateway's catalogue (loaded once; never throws).
      const names = records.some((r) => Number(r.ErrorID ?? 0) > 0) && !(gw instanceof GatewayError) ? gw.catalogue.load() : undefined;
      void Promise.all([load(), names]).then(() => {
        let changed = false;
        for (const r of records) changed = resolveRecord(r) || changed;
        if (changed) {
          showStatus();
          void persist().catch((e: Error) => node.warn(`could not store the watch list: ${e.message}`));
        }
      });
    };

    const sweep = () => {
      void load().then(() => {
        const now = Date.now();
        let changed = false;
        for (const [key, w] of Object.entries(saved.watches)) {
          if (w.deadline > now) continue;
          emit(key, w, 3, {
            ID: int64Out(BigInt(key)),
            outcome: 'expired',
            StateName: 'NOT_CLOSED_IN_TIME',
            elapsedSeconds: Math.round((now - w.since) / 1000),
            limitDays: limitMs / 86_400_000,
          });
          forget(key);
          changed = true;
        }
        if (changed) {
          showStatus();
          void persist().catch(() => {});
        }
      });
    };

    const onPollers = () => showStatus();

    handleInput(RED, node, async (msg: Msg) => {
      if (gw instanceof GatewayError) throw gw;
      await load();
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
      const fresh = keys.filter((k) => !saved.watches[k]);
      if (count + fresh.length > maxWatched) {
        throw new GatewayError('RATE_LIMITED', `watch list full: ${count} messages watched, at most ${maxWatched}; raise "Watch at most" or wait for messages to close`);
      }
      const props: Record<string, unknown> = { ...msg };
      delete props.payload;
      delete props._msgid;
      const ref = `m${++refSeq}`;
      saved.msgs[ref] = props;
      const now = Date.now();
      for (const k of fresh) {
        saved.watches[k] = { since: now, deadline: now + limitMs, ref };
        count++;
      }
      // A record that closed before the watch began resolves at once.
      for (const k of fresh) {
        const r = recent.get(k);
        if (r) resolveRecord(r);
      }
      if (!Object.values(saved.watches).some((w) => w.ref === ref)) delete saved.msgs[ref];
      await persist();
      showStatus();
    }, { idleStatus: statusNow });

    if (gw instanceof GatewayError) {
      node.status(errorStatus(RED, gw));
      return;
    }
    gw.statusFeed.on('records', onRecords);
    gw.statusFeed.on('pollers', onPollers);
    void load().then(() => {
      if (!closed) showStatus();
    }, (e: Error) => node.error(`could not read the watch list: ${e.message}`));
    const sweepTimer = setInterval(sweep, Math.max(200, Math.min(60_000, limitMs / 20)));

    node.on('close', (_removed: boolean, done: () => void) => {
      closed = true;
      clearInterval(sweepTimer);
      gw.statusFeed.off('records', onRecords);
      gw.statusFeed.off('pollers', onPollers);
      done();
    });
  }

  RED.nodes.registerType('iotgw-message-tracker', IotgwMessageTrackerNode as unknown as (this: Node, c: NodeDef) => void);
}
