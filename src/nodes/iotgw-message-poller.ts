/**
 * `iotgw-message-poller` (`get/re_messages`): reads the terminals' from-mobile messages
 * through the same feed-reading core as the status poller (src/lib/feed, unchanged):
 * FromUTC inclusive at one-second resolution, messages de-duplicated on `ID`, the mark and
 * the IDs already emitted for its second written together after every reply, before the
 * next request; the account's GET budget shared with the status poller.
 *
 * One msg per message: `msg.topic` = MobileID, `msg.payload` = the message (int64 `ID`
 * exact), `msg.raw` = RawPayload as a Buffer when present, `msg.fields` = the Payload
 * fields as `{Name: value}` (src/lib/cmf). Or one msg per reply in batch mode. Optional
 * filters by SIN and MobileID are applied after the fetch (the gateway has none): a
 * filtered-out message still spends its share of the GET budget and moves the mark.
 *
 * Where the mark lives (`contextStore`) and the control input are as for the status poller.
 */
import * as path from 'node:path';
import type { Node, NodeAPI, NodeDef, NodeMessage, NodeStatus } from 'node-red';
import type { MarkStore } from '../lib/account/types';
import { GatewayError, badInput, toGatewayError } from '../lib/errors';
import { ContextMarkStore, FallbackMarkStore, FeedReader, FileMarkStore, parseUtcSeconds, startMark, type ContextLike, type FeedPage } from '../lib/feed';
import { int64Out } from '../lib/int64';
import { errorStatus, handleInput, isPlainObject, mergeQuery, numberSetting, t, useConfigNode, type Msg, nodeAbortController } from '../lib/node-kit';
import { throwOnCallError } from '../lib/gateway-errors';
import { parseReply } from '../lib/terminal-api';
import { decodeFields } from '../lib/cmf';
import { z } from 'zod';
import { isGateway } from '../lib/guards';
import type { GatewayNode } from '../lib/account/config-nodes';

export interface MessagePollerConfig extends NodeDef {
  gateway: string;
  intervalSeconds: string | number;
  /** "" (now), "-24h" / "-30m" (relative), or "yyyy-MM-dd HH:mm:ss". */
  startFrom: string;
  output: 'record' | 'batch';
  /** "": a file under the user directory; else a Node-RED context store's name. */
  contextStore: string;
  autoStart: boolean;
  fullAt: string | number;
  /** Comma-separated SINs to keep ("" = all). */
  sinFilter: string;
  /** Comma-separated MobileIDs to keep ("" = all). */
  mobileFilter: string;
  /** Ask for RawPayload too (IncludeRawPayload=true). */
  includeRaw: boolean;
}

const int64 = z.union([z.number().int(), z.string().regex(/^-?\d+$/)]);
export const fromMobileMessage = z
  .object({
    ID: int64,
    MessageUTC: z.string().nullish(),
    ReceiveUTC: z.string().nullish(),
    SIN: z.number().int().nullish(),
    MobileID: z.string().nullish(),
    RawPayload: z.string().nullish(),
    Payload: z.object({ Name: z.string().nullish(), SIN: z.number().nullish(), MIN: z.number().nullish(), Fields: z.array(z.unknown()).nullish() }).loose().nullish(),
  })
  .loose();
export type FromMobileMessage = z.infer<typeof fromMobileMessage>;
export const reMessagesReply = z.object({ ErrorID: z.number().int().nullish(), NextFromUTC: z.string().nullish(), Messages: z.array(fromMobileMessage).nullish() }).loose();

/** A comma-separated filter setting -> the set of values, or undefined for "all". */
export function listSetting(v: unknown): Set<string> | undefined {
  const items = String(v ?? '')
    .split(',')
    .map((x) => x.trim().toLowerCase())
    .filter(Boolean);
  return items.length ? new Set(items) : undefined;
}

/** Where older versions kept the mark (a plain string) in node context. */
const LEGACY_MARK_KEY = 'nextFromUTC';
const MARK_KEY = 'feedMark';
/** Folder under the user directory with one mark file per poller (shared with the status poller). */
const FEED_DIR = 'iotgw-feeds';

/** A from-mobile message's identity: its ID (exact, whatever its JSON form). */
export const messageKey = (m: FromMobileMessage): string => BigInt(m.ID).toString();

function behindText(ms: number): string {
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

const NS = '@iotgateway/node-red-gateway/iotgw-message-poller:iotgw-message-poller.';
/** English texts for when the node's catalogue is not loaded (an embedded runtime, tests). */
const EN: Record<string, string> = {
  'status.mark': 'at __mark__ UTC · __behind__ behind · __count__ new',
  'status.missingStore': 'no context store "__store__"',
  'warn.missingStore': 'context store "__store__" is not configured in settings.js (contextStorage): the mark is kept in __used__ instead',
  'warn.crowded':
    'the second __second__ filled a whole reply (__fetched__ of its messages fetched): any more messages of that second cannot be fetched; polling goes on from the next second',
};
function tp(RED: NodeAPI, key: string, vars: Record<string, string | number> = {}): string {
  const out = RED._(NS + key, vars);
  if (out !== NS + key && out !== key && !out.endsWith(key)) return out;
  return (EN[key] ?? key).replace(/__(\w+)__/g, (m, k: string) => (k in vars ? String(vars[k]) : m));
}

export default function register(RED: NodeAPI): void {
  function IotgwMessagePollerNode(this: Node, config: MessagePollerConfig) {
    RED.nodes.createNode(this, config);
    const node = this;
    const gw = useConfigNode(RED, node, config.gateway, isGateway, 'gateway', 'iotgw-gateway');
    const intervalMs = Math.round(numberSetting(config.intervalSeconds, 60, 1, 86400) * 1000);
    const pageSize = Math.round(numberSetting(config.fullAt, 500, 1, 1_000_000));
    const sins = listSetting(config.sinFilter);
    const mobiles = listSetting(config.mobileFilter);
    const includeRaw = config.includeRaw !== false;
    const batchMode = config.output === 'batch';
    const closing = nodeAbortController();
    const feed = `message-poller-${node.id}`;

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
    void storeLabel;

    // "Now" means when the node started, not when the first poll happens.
    let reader: FeedReader<FromMobileMessage> | GatewayError;
    const keep = (m: FromMobileMessage): boolean =>
      (!sins || sins.has(String(m.SIN ?? m.Payload?.SIN ?? ''))) && (!mobiles || mobiles.has(String(m.MobileID ?? '').trim().toLowerCase()));
    /** payload (ID exact), raw (Buffer), fields (decoded) of one message. */
    const decorate = (m: FromMobileMessage): { payload: FromMobileMessage; raw?: Buffer; fields?: Record<string, unknown> } => {
      const payload: FromMobileMessage = { ...m, ID: int64Out(BigInt(m.ID)) };
      const out: { payload: FromMobileMessage; raw?: Buffer; fields?: Record<string, unknown> } = { payload };
      if (typeof m.RawPayload === 'string') out.raw = Buffer.from(m.RawPayload, 'base64');
      if (m.Payload && Array.isArray(m.Payload.Fields)) out.fields = decodeFields(m.Payload.Fields);
      return out;
    };
    try {
      reader = new FeedReader<FromMobileMessage>({
        feed,
        store,
        pageSize,
        startFrom: startMark(config.startFrom),
        key: messageKey,
        // The feed's seconds are those FromUTC selects on: ReceiveUTC (MessageUTC when absent).
        time: (m) => m.ReceiveUTC ?? m.MessageUTC,
        fetchPage: async (fromUtc, signal): Promise<FeedPage<FromMobileMessage>> => {
          const g = gw as GatewayNode;
          const p = g.apiPath('get/re_messages');
          const res = await g.client().request({
            method: 'GET',
            path: p,
            query: mergeQuery(includeRaw ? { FromUTC: fromUtc, IncludeRawPayload: 'true' } : { FromUTC: fromUtc }, nextQuery),
            group: 'GET',
            auth: g.bearerAuth(),
            idempotent: true,
            signal,
          });
          const reply = parseReply(reMessagesReply, res.body, `GET ${p}`);
          await throwOnCallError(g, reply.ErrorID, `GET ${p}`, res.statusCode, signal);
          return { records: reply.Messages ?? [], nextFromUtc: reply.NextFromUTC };
        },
        emit: (records, info) => {
          const out = records.filter(keep).map(decorate);
          if (!out.length) return undefined;
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
          } else {
            for (const o of out) {
              const msg: Record<string, unknown> = { topic: String(o.payload.MobileID ?? ''), payload: o.payload, statusCode: 200 };
              if (o.raw) msg.raw = o.raw;
              if (o.fields) msg.fields = o.fields;
              node.send(msg as NodeMessage);
            }
          }
          // Let Node-RED deliver what was just sent before the mark moves past it (and
          // before the next reply is fetched: bounded memory).
          return new Promise<void>((resolve) => setImmediate(resolve));
        },
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
        if (lastFailure) node.log(`from-mobile polling recovered after: ${lastFailure}`);
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
        node.error(err, { topic: 'fromMobileMessages', payload: null, error: { message: err.message, code: err.code } } as unknown as NodeMessage);
      }
    };

    /** Runs a poll unless one is running; a request during a poll asks for one more after it. */
    const poll = (query?: Record<string, unknown>): Promise<void> => {
      if (closed) return Promise.resolve();
      if (reader instanceof GatewayError) return Promise.reject(reader);
      if (gw instanceof GatewayError) return Promise.reject(gw);
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

  RED.nodes.registerType('iotgw-message-poller', IotgwMessagePollerNode as unknown as (this: Node, c: NodeDef) => void);
}
