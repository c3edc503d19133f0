/**
 * The node plumbing both feed pollers share (iotgw-status-poller, iotgw-message-poller):
 * where the mark lives, the schedule, the control input ("poll" / "stop" / "start" /
 * {fromUTC}), the status texts and error reporting once per change of state, and the
 * account's feed lease (one active poller per feed when the account is shared, the others
 * on "standby"). A node gives its feed-specific parts: how to fetch a page, a record's key
 * and time, and how records become msgs.
 *
 * Where the mark lives (`contextStore`):
 * - "" (the default): a small JSON file per poller under Node-RED's user directory
 *   (`<userDir>/iotgw-feeds/`), written durably with every reply; a mark an older version
 *   kept in the default context store is picked up once. Without a user directory (an
 *   embedded runtime) the default context store is used.
 * - a named context store: node context there. A store this Node-RED does not have: yellow
 *   status and one warning at deploy, and the file above is used instead.
 * - a shared account (`gw.account.lease.shared`, e.g. Redis): the account's mark store.
 */
import * as path from 'node:path';
import type { Node, NodeAPI, NodeMessage, NodeStatus } from 'node-red';
import type { FeedLease, MarkStore } from '../account/types';
import type { GatewayNode } from './config-nodes';
import { GatewayError, badInput, toGatewayError } from '../common/errors';
import { isSettingError } from '../common/setting-error';
import { errorStatus, handleInput, isPlainObject, mergeQuery, numberSetting, t, type Msg, nodeAbortController } from './node-kit';
import { FeedReader, type CrowdedSecond, type FeedEmitInfo, type FeedPage } from '../feed/reader';
import { ContextMarkStore, FallbackMarkStore, FileMarkStore, needsReset, type ContextLike } from '../feed/stores';
import { parseUtcSeconds } from '../feed/time';
import { startMark } from '../feed/start';
import type { FeedReporter } from '../account/figures';

/** Where older versions kept the mark (a plain string) in node context. */
export const LEGACY_MARK_KEY = 'nextFromUTC';
/** The mark in node context (a named store): {fromUtc, seen, generation}. */
export const MARK_KEY = 'feedMark';
/** Folder under the user directory with one mark file per poller. */
export const FEED_DIR = 'iotgw-feeds';

/** "12 s", "3 min", "5 h", "2 d". */
export function behindText(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  if (s < 172800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} d`;
}

/** The context stores this Node-RED has (settings.js contextStorage); undefined: unknown. */
export function contextStores(RED: NodeAPI): string[] | undefined {
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

/** English texts both pollers share (each node adds its own warn.crowded). */
export const POLLER_TEXTS: Record<string, string> = {
  'status.mark': 'at __mark__ UTC · __behind__ behind · __count__ new',
  'status.missingStore': 'no context store "__store__"',
  'status.standby': 'standby (another instance polls)',
  'status.sharedDown': 'shared state (Redis) unreachable: not polling',
  'status.sendFromUtc': 'send {fromUTC}',
  'warn.missingStore': 'context store "__store__" is not configured in settings.js (contextStorage): the mark is kept in __used__ instead',
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

/** The settings both poller nodes share. */
export interface PollerSettings {
  intervalSeconds: string | number;
  /** "" (now), "-24h" / "-30m" (relative), or "yyyy-MM-dd HH:mm:ss". */
  startFrom: string;
  /** "": a file under the user directory; else a Node-RED context store's name. */
  contextStore: string;
  autoStart: boolean;
  fullAt: string | number;
}

export interface PollerNodeOptions<R> {
  RED: NodeAPI;
  node: Node;
  config: PollerSettings;
  gw: GatewayNode | GatewayError;
  /** The feed's name (mark file, lease, mark key). */
  feed: string;
  /** The node's translator (status.mark, status.missingStore, status.standby, status.sharedDown, warn.missingStore, warn.crowded). */
  tp: (key: string, vars?: Record<string, string | number>) => string;
  /** "status polling": for the log line after a recovery. */
  what: string;
  /** msg.topic of the error msg of a failed timer poll. */
  errorTopic: string;
  /** One page from fromUtc; `query` is the extra query of a "poll" msg. */
  fetchPage: (g: GatewayNode, fromUtc: string, query: Record<string, unknown> | undefined, signal: AbortSignal) => Promise<FeedPage<R>>;
  key: (record: R) => string;
  time: (record: R) => unknown;
  /** Sends the msgs of new records; resolves once they may count as delivered. */
  emit: (records: R[], info: FeedEmitInfo) => void | Promise<void>;
}

/** Lets Node-RED deliver what was just sent before the mark moves past it (bounded memory). */
export const delivered = (): Promise<void> => new Promise<void>((resolve) => setImmediate(resolve));

export function runPollerNode<R>(o: PollerNodeOptions<R>): void {
  const { RED, node, config, gw, feed, tp } = o;
  const intervalMs = Math.round(numberSetting(config.intervalSeconds, 60, 1, 86400) * 1000);
  const pageSize = Math.round(numberSetting(config.fullAt, 500, 1, 1_000_000));
  const closing = nodeAbortController();

  let timer: NodeJS.Timeout | undefined;
  let running = config.autoStart !== false;
  let current: Promise<void> | undefined;
  let again = false;
  let nextQuery: Record<string, unknown> | undefined;
  let lastFailure: string | undefined;
  /** The config node's settings are wrong: no more timer polls (a redeploy builds a new node). */
  let settingError = false;
  let lastOk: { at: number; count: number } | undefined;
  let closed = false;
  /** Input msgs waiting on the poll in progress: their done(err) is its Catch message. */
  let msgWaiting = 0;
  let storeWarning: string | undefined;

  // Where the mark lives.
  const ctx = node.context() as unknown as ContextLike;
  const userDir = (RED.settings as unknown as { userDir?: string }).userDir;
  let store: MarkStore;
  const named = config.contextStore ? String(config.contextStore).trim() : '';
  const legacy = new ContextMarkStore(ctx, undefined, MARK_KEY, LEGACY_MARK_KEY);
  // Errors name the file relative to the user directory (FEED_DIR/<file>), never its absolute path.
  const fileStore = (): MarkStore => new FallbackMarkStore(new FileMarkStore(path.join(userDir!, FEED_DIR), FEED_DIR), legacy);
  if (named) {
    const stores = contextStores(RED);
    if (stores && !stores.includes(named)) {
      storeWarning = named;
      store = userDir ? fileStore() : legacy;
      node.warn(tp('warn.missingStore', { store: named, used: userDir ? path.join(userDir, FEED_DIR) : 'default' }));
    } else {
      store = new ContextMarkStore(ctx, named, MARK_KEY, LEGACY_MARK_KEY);
    }
  } else {
    store = userDir ? fileStore() : legacy;
  }
  // Several instances sharing the account (issue 19): one active poller per feed (a fenced
  // lease), the mark and de-dup set in the account's shared store; the others stand by.
  let sharedLease: FeedLease | undefined;
  if (!(gw instanceof GatewayError)) {
    const lease = gw.account?.lease;
    if (lease?.shared) {
      sharedLease = lease;
      store = gw.account.marks;
      storeWarning = undefined;
    }
  }

  // "Now" means when the node started, not when the first poll happens.
  let reader: FeedReader<R> | GatewayError;
  try {
    reader = new FeedReader<R>({
      feed,
      store,
      pageSize,
      startFrom: startMark(config.startFrom),
      key: o.key,
      time: o.time,
      fetchPage: (fromUtc, signal) => o.fetchPage(gw as GatewayNode, fromUtc, nextQuery, signal),
      emit: o.emit,
      ...(sharedLease ? { fence: () => sharedLease.fence(feed) } : {}),
      onCrowded: ({ second, fetched }: CrowdedSecond) => {
        node.warn(tp('warn.crowded', { second, fetched, next: second }));
      },
    });
  } catch (err) {
    reader = toGatewayError(err);
  }

  const markStatus = (): NodeStatus => {
    const m = reader instanceof FeedReader ? reader.mark : undefined;
    const sec = m ? parseUtcSeconds(m.fromUtc) : undefined;
    // A missing store stays in sight (yellow) for as long as the node runs.
    const missing = storeWarning ? `${tp('status.missingStore', { store: storeWarning })} · ` : '';
    const fill = storeWarning ? ('yellow' as const) : undefined;
    if (!lastOk || sec === undefined) {
      const text = missing + (running ? t(RED, 'status.waiting') : t(RED, 'status.stopped'));
      return { fill: fill ?? 'grey', shape: 'ring', text };
    }
    const text = missing + tp('status.mark', { mark: m!.fromUtc, behind: behindText(Date.now() - sec * 1000), count: lastOk.count });
    return { fill: fill ?? 'green', shape: fill ? 'ring' : 'dot', text };
  };

  const report = (err: GatewayError | undefined) => {
    if (!err) {
      if (lastFailure) node.log(`${o.what} recovered after: ${lastFailure}`);
      lastFailure = undefined;
      input.idle();
      return;
    }
    const key = `${err.code}:${err.statusCode ?? ''}`;
    if (!(gw instanceof GatewayError)) gw.account?.watch.failed(err);
    // A settings error of the config node: shown once, red; only a redeploy can fix it, so no
    // retrying. A mark that cannot be read waits for {fromUTC}; anything else is retried.
    if (isSettingError(err)) settingError = true;
    const next = settingError ? t(RED, 'status.redeploy') : needsReset(err) ? tp('status.sendFromUtc') : t(RED, 'status.retrying');
    node.status({ ...errorStatus(RED, err), text: `${errorStatus(RED, err).text} · ${next}`.slice(0, 60) });
    const first = key !== lastFailure;
    lastFailure = key;
    // A msg waiting on this poll ends with done(err): that is its one Catch message.
    // A timer poll reports once per change of state.
    if (first && msgWaiting === 0) {
      node.error(err, { topic: o.errorTopic, payload: null, error: { message: err.message, code: err.code } } as unknown as NodeMessage);
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
          if (res.emitted > 0) {
            emitted.push(lastOk);
            while (emitted[0]!.at <= lastOk.at - 60_000) emitted.shift();
          }
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
      node.status({ fill: 'yellow', shape: 'ring', text: tp('status.standby') });
      if (!current) waitForLease();
    } else if (state === 'down') {
      node.status({ fill: 'red', shape: 'ring', text: tp('status.sharedDown') });
      if (!downWarned) node.warn(tp('status.sharedDown'));
      downWarned = true;
      if (!current) waitForLease();
    } else {
      downWarned = false;
    }
  };
  sharedLease?.on('state', onLeaseState);

  // The account's figures (its status node, the editor's sidebar): read only when asked.
  const emitted: { at: number; count: number }[] = [];
  const feedReporter: FeedReporter = {
    figures(now) {
      while (emitted.length && emitted[0]!.at <= now - 60_000) emitted.shift();
      const m = reader instanceof FeedReader ? reader.mark : undefined;
      const sec = m ? parseUtcSeconds(m.fromUtc) : undefined;
      const state = reader instanceof GatewayError || lastFailure ? 'error' : !running ? 'stopped' : sharedLease && !sharedLease.held(feed) ? 'standby' : 'active';
      return {
        type: node.type === 'iotgw-message-poller' ? 'messages' : 'status',
        node: (node as Node & { name?: string }).name || node.id,
        state,
        mark: m?.fromUtc ?? null,
        behindSeconds: sec === undefined ? null : Math.max(0, Math.round(now / 1000 - sec)),
        emittedLastMinute: emitted.reduce((n, e) => n + e.count, 0),
      };
    },
  };
  const watch = gw instanceof GatewayError ? undefined : gw.account?.watch;
  watch?.feeds.add(feedReporter);

  const schedule = () => {
    unschedule();
    if (!running || closed || settingError) return;
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
    watch?.feeds.delete(feedReporter);
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
