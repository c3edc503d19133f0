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
 * Control input: "poll" polls now; "stop" / "start" pause and resume the timer;
 * {fromUTC: "yyyy-MM-dd HH:mm:ss"} moves the mark (wins over a poll in flight).
 */
import * as path from 'node:path';
import type { Node, NodeAPI, NodeDef, NodeMessage, NodeStatus } from 'node-red';
import type { MarkStore } from '../lib/account/types';
import { GatewayError, badInput, toGatewayError } from '../lib/errors';
import { ContextMarkStore, FallbackMarkStore, FeedReader, FileMarkStore, parseUtcSeconds, startMark, type ContextLike, type FeedPage } from '../lib/feed';
import { int64Out } from '../lib/int64';
import { errorStatus, handleInput, isPlainObject, mergeQuery, numberSetting, t, useConfigNode, type Msg, nodeAbortController } from '../lib/node-kit';
import { throwOnCallError } from '../lib/gateway-errors';
import { STATE_NAMES, TRANSPORT_NAMES, parseReply, statusReply, type StatusRecord } from '../lib/terminal-api';
import { isGateway } from '../lib/guards';
import type { GatewayNode } from '../lib/account/config-nodes';
import { RedisFeedLease } from '../lib/account/redis/feed-lease';

export interface StatusPollerConfig extends NodeDef {
  gateway: string;
  intervalSeconds: string | number;
  /** "" (now), "-24h" / "-30m" (relative), or "yyyy-MM-dd HH:mm:ss". */
  startFrom: string;
  output: 'record' | 'batch';
  /** "": a file under the user directory; else a Node-RED context store's name. */
  contextStore: string;
  autoStart: boolean;
  fullAt: string | number;
  addNames: boolean;
}

/** Where older versions kept the mark (a plain string) in node context. */
export const LEGACY_MARK_KEY = 'nextFromUTC';
/** The mark in node context (a named store): {fromUtc, seen, generation}. */
export const MARK_KEY = 'feedMark';
/** Folder under the user directory with one mark file per poller. */
export const FEED_DIR = 'iotgw-feeds';

/** A status record's identity: the same record when ID, State and StatusUTC are. */
export const statusKey = (r: StatusRecord): string => `${String(r.ID)}|${String(r.State)}|${String(r.StatusUTC)}`;

/** "12 s", "3 min", "5 h", "2 d". */
export function behindText(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  if (s < 172800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} d`;
}

/** The context stores this Node-RED has (settings.js contextStorage); undefined: unknown. */
function contextStores(RED: NodeAPI): string[] | undefined {
  try {
    const cs = (RED.settings as unknown as { contextStorage?: Record<string, unknown> }).contextStorage;
    if (cs === undefined || cs === null) return ['default', 'memory'];
    if (typeof cs !== 'object') return undefined;
    const names = Object.keys(cs);
    return names.includes('default') ? names : ['default', ...names];
  } catch {
    return undefined;
  }
}

const NS = '@iotgateway/node-red-gateway/iotgw-status-poller:iotgw-status-poller.';
/** English texts for when the node's catalogue is not loaded (an embedded runtime, tests). */
const EN: Record<string, string> = {
  'status.mark': 'at __mark__ UTC · __behind__ behind · __count__ new',
  'status.missingStore': 'no context store "__store__"',
  'status.standby': 'standby (another instance polls)',
  'status.sharedDown': 'shared state (Redis) unreachable: not polling',
  'warn.missingStore': 'context store "__store__" is not configured in settings.js (contextStorage): the mark is kept in __used__ instead',
  'warn.crowded':
    'the second __second__ filled a whole reply (__fetched__ of its records fetched): any more records of that second cannot be fetched; polling goes on from the next second',
};
function tp(RED: NodeAPI, key: string, vars: Record<string, string | number> = {}): string {
  const out = RED._(NS + key, vars);
  if (out !== NS + key && out !== key && !out.endsWith(key)) return out;
  return (EN[key] ?? key).replace(/__(\w+)__/g, (m, k: string) => (k in vars ? String(vars[k]) : m));
}

export default function register(RED: NodeAPI): void {
  function IotgwStatusPollerNode(this: Node, config: StatusPollerConfig) {
    RED.nodes.createNode(this, config);
    const node = this;
    const gw = useConfigNode(RED, node, config.gateway, isGateway, 'gateway', 'iotgw-gateway');
    const intervalMs = Math.round(numberSetting(config.intervalSeconds, 60, 1, 86400) * 1000);
    const pageSize = Math.round(numberSetting(config.fullAt, 500, 1, 1_000_000));
    const addNames = config.addNames !== false;
    const batchMode = config.output === 'batch';
    const closing = nodeAbortController();
    const feed = `status-poller-${node.id}`;

    let timer: NodeJS.Timeout | undefined;
    let running = config.autoStart !== false;
    let current: Promise<void> | undefined;
    let again = false;
    let nextQuery: Record<string, unknown> | undefined;
    let lastFailure: string | undefined;
    let lastOk: { at: number; count: number } | undefined;
    let closed = false;
    /** Input msgs waiting on the poll in progress: their done(err) is its Catch message. */
    let msgWaiting = 0;
    let storeWarning: string | undefined;

    // Where the mark lives.
    const ctx = node.context() as unknown as ContextLike;
    const userDir = (RED.settings as unknown as { userDir?: string }).userDir;
    let store: MarkStore;
    let storeLabel: string;
    const named = config.contextStore ? String(config.contextStore).trim() : '';
    const legacy = new ContextMarkStore(ctx, undefined, MARK_KEY, LEGACY_MARK_KEY);
    const fileStore = (): MarkStore => {
      const dir = path.join(userDir!, FEED_DIR);
      return new FallbackMarkStore(new FileMarkStore(dir), legacy);
    };
    if (named) {
      const stores = contextStores(RED);
      if (stores && !stores.includes(named)) {
        storeWarning = named;
        store = userDir ? fileStore() : legacy;
        storeLabel = userDir ? path.join(userDir, FEED_DIR) : 'default';
        node.warn(tp(RED, 'warn.missingStore', { store: named, used: storeLabel }));
      } else {
        store = new ContextMarkStore(ctx, named, MARK_KEY, LEGACY_MARK_KEY);
        storeLabel = named;
      }
    } else if (userDir) {
      store = fileStore();
      storeLabel = path.join(userDir, FEED_DIR);
    } else {
      store = legacy;
      storeLabel = 'default';
    }
    // Several instances sharing the account through Redis (issue 19): one active poller per
    // feed (a fenced lease), the mark and de-dup set in Redis; the others stand by.
    const sharedLease = !(gw instanceof GatewayError) && gw.account?.lease instanceof RedisFeedLease ? gw.account.lease : undefined;
    if (sharedLease && !(gw instanceof GatewayError)) {
      store = gw.account.marks;
      storeLabel = 'redis';
      storeWarning = undefined;
    }
    void storeLabel;

    // "Now" means when the node started, not when the first poll happens.
    let reader: FeedReader<StatusRecord> | GatewayError;
    const decorate = (r: StatusRecord): StatusRecord => {
      const rec: StatusRecord = { ...r };
      if (typeof rec.ID === 'string') rec.ID = int64Out(BigInt(rec.ID));
      if (addNames) {
        if (typeof rec.State === 'number') rec.StateName = STATE_NAMES[rec.State] ?? `STATE_${rec.State}`;
        if (typeof rec.Transport === 'number') rec.TransportName = TRANSPORT_NAMES[rec.Transport] ?? `TRANSPORT_${rec.Transport}`;
      }
      return rec;
    };
    try {
      reader = new FeedReader<StatusRecord>({
        feed,
        store,
        pageSize,
        startFrom: startMark(config.startFrom),
        key: statusKey,
        time: (r) => r.StatusUTC,
        fetchPage: async (fromUtc, signal): Promise<FeedPage<StatusRecord>> => {
          const g = gw as GatewayNode;
          const p = g.apiPath('get/subaccounts/fw_status_updates');
          const res = await g.client().request({
            method: 'GET',
            path: p,
            query: mergeQuery({ FromUTC: fromUtc }, nextQuery),
            group: 'GET',
            auth: g.bearerAuth(),
            idempotent: true,
            signal,
          });
          const reply = parseReply(statusReply, res.body, `GET ${p}`);
          await throwOnCallError(g, reply.ErrorID, `GET ${p}`, res.statusCode, signal);
          return { records: reply.Statuses ?? [], nextFromUtc: reply.NextFromUTC };
        },
        emit: (records, info) => {
          const out = records.map(decorate);
          // Other nodes of the account (the message tracker) see the records too.
          if (!(gw instanceof GatewayError)) gw.statusFeed.emit('records', out);
          if (batchMode) {
            node.send({ topic: 'statusUpdates', payload: out, fromUTC: info.fromUtc, nextFromUTC: info.nextFromUtc, statusCode: 200 } as NodeMessage);
          } else {
            for (const rec of out) node.send({ topic: String(rec.ID), payload: rec, statusCode: 200 } as NodeMessage);
          }
          // Let Node-RED deliver what was just sent before the mark moves past it (and
          // before the next reply is fetched: bounded memory).
          return new Promise<void>((resolve) => setImmediate(resolve));
        },
        ...(sharedLease ? { fence: () => sharedLease.fence(feed) } : {}),
        onCrowded: ({ second, fetched }) => {
          node.warn(tp(RED, 'warn.crowded', { second, fetched, next: second }));
        },
      });
    } catch (err) {
      reader = toGatewayError(err);
    }

    const markStatus = (): NodeStatus => {
      const m = reader instanceof FeedReader ? reader.mark : undefined;
      const sec = m ? parseUtcSeconds(m.fromUtc) : undefined;
      // A missing store stays in sight (yellow) for as long as the node runs.
      const missing = storeWarning ? `${tp(RED, 'status.missingStore', { store: storeWarning })} · ` : '';
      const fill = storeWarning ? ('yellow' as const) : undefined;
      if (!lastOk || sec === undefined) {
        const text = missing + (running ? t(RED, 'status.waiting') : t(RED, 'status.stopped'));
        return { fill: fill ?? 'grey', shape: 'ring', text };
      }
      const text = missing + tp(RED, 'status.mark', { mark: m!.fromUtc, behind: behindText(Date.now() - sec * 1000), count: lastOk.count });
      return { fill: fill ?? 'green', shape: fill ? 'ring' : 'dot', text };
    };

    const report = (err: GatewayError | undefined) => {
      if (!err) {
        if (lastFailure) node.log(`status polling recovered after: ${lastFailure}`);
        lastFailure = undefined;
        input.idle();
        return;
      }
      const key = `${err.code}:${err.statusCode ?? ''}`;
      node.status({ ...errorStatus(RED, err), text: `${errorStatus(RED, err).text} · ${t(RED, 'status.retrying')}` });
      const first = key !== lastFailure;
      lastFailure = key;
      // A msg waiting on this poll ends with done(err): that is its one Catch message.
      // A timer poll reports once per change of state.
      if (first && msgWaiting === 0) {
        node.error(err, { topic: 'statusUpdates', payload: null, error: { message: err.message, code: err.code } } as unknown as NodeMessage);
      }
    };

    /** Runs a poll unless one is running; a request during a poll asks for one more after it. */
    const poll = (query?: Record<string, unknown>): Promise<void> => {
      if (closed) return Promise.resolve();
      if (reader instanceof GatewayError) return Promise.reject(reader);
      if (gw instanceof GatewayError) return Promise.reject(gw);
      if (sharedLease && !current && !sharedLease.held(feed)) {
        waitForLease();
        return Promise.resolve();
      }
      if (current) {
        again = true;
        if (query) nextQuery = query;
        return current;
      }
      const r = reader;
      nextQuery = query;
      unschedule();
      node.status({ fill: 'blue', shape: 'dot', text: t(RED, 'status.polling') });
      current = r
        .poll(closing.signal)
        .then(
          (res) => {
            lastOk = { at: Date.now(), count: res.emitted };
            report(undefined);
          },
          (e: unknown) => {
            const err = toGatewayError(e);
            if (!closing.signal.aborted) report(err);
            throw err;
          },
        )
        .finally(() => {
          current = undefined;
          if (again && !closed) {
            again = false;
            void poll(nextQuery).catch(() => {});
          } else schedule();
        });
      return current;
    };

    let acquiring = false;
    let downWarned = false;
    /** Stands by until this instance holds the feed's lease, then polls at once. */
    const waitForLease = () => {
      if (!sharedLease || acquiring || closed) return;
      acquiring = true;
      sharedLease.acquire(feed, closing.signal).then(
        () => {
          acquiring = false;
          if (!closed && running) void poll().catch(() => {});
        },
        () => {
          acquiring = false;
        },
      );
    };
    const onLeaseState = (f: string, state: 'active' | 'standby' | 'down') => {
      if (f !== feed || closed) return;
      if (state === 'standby') {
        node.status({ fill: 'yellow', shape: 'ring', text: tp(RED, 'status.standby') });
        if (!current) waitForLease();
      } else if (state === 'down') {
        node.status({ fill: 'red', shape: 'ring', text: tp(RED, 'status.sharedDown') });
        if (!downWarned) node.warn(tp(RED, 'status.sharedDown'));
        downWarned = true;
        if (!current) waitForLease();
      } else {
        downWarned = false;
      }
    };
    sharedLease?.on('state', onLeaseState);

    const schedule = () => {
      unschedule();
      if (!running || closed) return;
      timer = setTimeout(() => {
        timer = undefined;
        poll().catch(() => {
          /* reported by report() */
        });
      }, intervalMs);
    };
    const unschedule = () => {
      if (timer) clearTimeout(timer);
      timer = undefined;
    };

    const input = handleInput(
      RED,
      node,
      async (msg: Msg) => {
        const p = msg.payload;
        if (p === 'poll' || msg.topic === 'poll') {
          const q = msg.query as Record<string, unknown> | undefined;
          if (q !== undefined && q !== null) mergeQuery({}, q); // BAD_INPUT before any request
          msgWaiting++;
          try {
            await poll(q ?? undefined);
          } finally {
            msgWaiting--;
          }
          return;
        }
        if (p === 'stop') {
          running = false;
          unschedule();
          return;
        }
        if (p === 'start') {
          running = true;
          if (!current) schedule();
          return;
        }
        if (isPlainObject(p) && 'fromUTC' in p) {
          const v = p.fromUTC;
          if (typeof v !== 'string' || parseUtcSeconds(v.trim()) === undefined) throw badInput('msg.payload.fromUTC', 'must be a real UTC time as yyyy-MM-dd HH:mm:ss');
          if (reader instanceof GatewayError) throw reader;
          // Wins over a poll in flight: that poll's reply is neither emitted nor written.
          await reader.reset(v.trim());
          return;
        }
        throw badInput('msg.payload', 'must be "poll", "stop", "start" or {fromUTC: "yyyy-MM-dd HH:mm:ss"}');
      },
      { idleStatus: () => (lastFailure ? undefined : markStatus()) },
    );

    node.on('close', (removed: boolean, done: () => void) => {
      closed = true;
      unschedule();
      closing.abort(new GatewayError('NETWORK', 'the poller was closed (redeploy or shutdown)'));
      const wait = current ? current.catch(() => {}) : Promise.resolve();
      void wait
        .then(async () => {
          // A deleted poller's mark file goes with it (as its node context does).
          if (removed && store instanceof FallbackMarkStore && userDir) await new FileMarkStore(path.join(userDir, FEED_DIR)).remove(feed).catch(() => {});
          if (sharedLease) {
            sharedLease.off('state', onLeaseState);
            // A clean stop hands the feed over at once (the mark is written: nothing repeats).
            await sharedLease.release(feed);
          }
        })
        .then(() => done());
    });

    if (gw instanceof GatewayError) {
      node.status(errorStatus(RED, gw));
      node.error(gw.message);
      return;
    }
    if (reader instanceof GatewayError) {
      node.status(errorStatus(RED, reader));
      node.error(reader.message);
      return;
    }
    node.status(markStatus());
    if (running) {
      // First poll soon after start, then every interval.
      timer = setTimeout(() => {
        timer = undefined;
        poll().catch(() => {});
      }, 250);
    }
  }

  RED.nodes.registerType('iotgw-status-poller', IotgwStatusPollerNode as unknown as (this: Node, c: NodeDef) => void);
}
