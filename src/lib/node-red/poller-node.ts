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
import type { Node, NodeAPI, NodeMessage } from 'node-red';
import type { FeedReporter } from '../account/figures';
import type { GatewayNode } from './config-nodes';
import { GatewayError, toGatewayError } from '../common/errors';
import { isSettingError, markSettingError } from '../common/setting-error';
import { errorStatus, numberSetting, t, nodeAbortController, type InputHandle } from './node-kit';
import { FeedReader, type CrowdedSecond, type FeedEmitInfo, type FeedPage } from '../feed/reader';
import { startMark } from '../feed/start';
import { pollerStore, type PollerStore } from './poller-store';
import { LastMinute, failureStatus, markStatus, pollerFigures, type PollOk, type PollerView } from './poller-status';
import { pollerControl, type PollerControl } from './poller-control';

export { LEGACY_MARK_KEY, MARK_KEY, FEED_DIR, contextStores } from './poller-store';
export { POLLER_TEXTS, behindText, nodeTexts, pollerTexts } from './poller-status';

/** The settings both poller nodes share. */
export interface PollerSettings {
  intervalSeconds: string | number;
  /** "" (now), "-24h" / "-30m" (relative), or "yyyy-MM-dd HH:mm:ss". */
  startFrom: string;
  /** "": a file under the user directory; else a Node-RED context store's name. */
  contextStore: string;
  autoStart: boolean;
  fullAt: string | number;
  /**
   * The shared feed's name on a shared account (Redis): "" (default, and older flows) is the
   * node's id, so only pollers of flows deployed from one flow file share a feed; the same
   * name on pollers of separately built flows makes them one feed (one active, one mark).
   */
  feedName?: string;
}

/** A feed name a user may give: letters, digits and . _ - : (it names a Redis key and, with the kind, the feed). */
export const FEED_NAME_RE = /^[A-Za-z0-9._:-]{1,100}$/;

export interface PollerNodeOptions<R> {
  RED: NodeAPI;
  node: Node;
  config: PollerSettings;
  gw: GatewayNode | GatewayError;
  /** The feed's kind (`status-poller`): the feed is `<kind>-<node id or feedName>` (mark file, lease, mark key). */
  feedKind: string;
  /** The node's translator (status.mark, status.missingStore, status.standby, status.sharedDown, warn.missingStore, warn.crowded, warn.overfull, warn.keysDropped). */
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

/** The shared feeds each account's lease serves in this runtime, and the node that reads each. */
const FEEDS_IN_USE = new WeakMap<object, Map<string, string>>();

/** The feedName setting ("" when none), or a settings error naming what is allowed. */
function feedNameOf(config: PollerSettings): string | GatewayError {
  const v = typeof config.feedName === 'string' ? config.feedName.trim() : '';
  if (v === '' || FEED_NAME_RE.test(v)) return v;
  return markSettingError(
    new GatewayError('BAD_INPUT', `feedName "${v.slice(0, 40)}": use 1 to 100 letters, digits or . _ - : (or leave it empty for the node's own feed)`, { field: 'feedName' }),
  );
}

/** Lets Node-RED deliver what was just sent before the mark moves past it (bounded memory). */
export const delivered = (): Promise<void> => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Runs a poller node: its mark store, its reader, the control input, the close; the first
 * poll soon after start, then every interval.
 */
export function runPollerNode<R>(o: PollerNodeOptions<R>): void {
  const { RED, node, gw } = o;
  const poller = new FeedPoller(o);
  node.on('close', (removed: boolean, done: () => void) => {
    void poller.close(removed).then(() => done());
  });
  const broken = gw instanceof GatewayError ? gw : poller.reader instanceof GatewayError ? poller.reader : undefined;
  if (broken) {
    node.status(errorStatus(RED, broken));
    node.error(broken.message);
    return;
  }
  node.status(markStatus(RED, o.tp, poller));
  // First poll soon after start, then every interval.
  poller.schedule(250);
}

/** A poller's life: polls on its schedule or when asked, stands by without the lease, reports. */
class FeedPoller<R> implements PollerControl, PollerView {
  readonly reader: FeedReader<R> | GatewayError;
  running: boolean;
  lastOk: PollOk | undefined;
  private readonly intervalMs: number;
  private readonly closing = nodeAbortController();
  private readonly place: PollerStore;
  /** The feed's name: `<kind>-<node id>`, or `<kind>-<feedName>` on a shared account. */
  readonly feed: string;
  private readonly input: InputHandle;
  /** The account's figures (its status node, the editor's sidebar): read only when asked. */
  private readonly reporter: FeedReporter;
  private readonly lastMinute = new LastMinute();
  private timer: NodeJS.Timeout | undefined;
  private current: Promise<void> | undefined;
  /** The one more poll asked for while one was in flight: its msgs end with it (not with the poll in flight). */
  private next: { promise: Promise<void>; resolve: () => void; reject: (err: unknown) => void } | undefined;
  private nextQuery: Record<string, unknown> | undefined;
  private lastFailure: string | undefined;
  /** The config node's settings are wrong: no more timer polls (a redeploy builds a new node). */
  private settingError = false;
  private closed = false;
  /** Input msgs waiting on the poll in progress: their done(err) is its Catch message. */
  private msgWaiting = 0;
  /** Input msgs waiting on the one more poll (`next`): they count for it once it runs. */
  private msgWaitingNext = 0;
  private acquiring = false;
  /** Redis unreachable was logged in this outage (by a poll's SHARED_STATE or the lease's "down"): once, whichever first. */
  private outageTold = false;
  private claimed = false;

  constructor(private readonly o: PollerNodeOptions<R>) {
    const { RED, node, config, gw, tp } = o;
    this.intervalMs = Math.round(numberSetting(config.intervalSeconds, 60, 1, 86400) * 1000);
    this.running = config.autoStart !== false;
    this.place = pollerStore(RED, node, config.contextStore, gw, tp);
    const named = feedNameOf(config);
    this.feed = `${o.feedKind}-${this.place.sharedLease && typeof named === 'string' && named ? named : node.id}`;
    const clash = named instanceof GatewayError ? named : this.claimFeed();
    this.reader = clash instanceof GatewayError ? clash : this.makeReader(Math.round(numberSetting(config.fullAt, 500, 1, 1_000_000)));
    if (this.claimed) this.place.sharedLease?.on('state', this.onLeaseState);
    this.reporter = { figures: (now) => pollerFigures(node, this, this.lastMinute, now) };
    this.watch?.feeds.add(this.reporter);
    this.input = pollerControl(RED, node, this, () => (this.lastFailure ? undefined : markStatus(RED, tp, this)));
  }

  get mark() {
    return this.reader instanceof FeedReader ? this.reader.mark : undefined;
  }

  get storeWarning() {
    return this.place.storeWarning;
  }

  get failing() {
    return this.reader instanceof GatewayError || this.lastFailure !== undefined;
  }

  get standby() {
    const lease = this.place.sharedLease;
    return lease !== undefined && !lease.held(this.feed);
  }

  private get watch() {
    return this.o.gw instanceof GatewayError ? undefined : this.o.gw.account?.watch;
  }

  /** Two pollers of one runtime on one shared feed would both hold its lease: the second is refused. */
  private claimFeed(): GatewayError | undefined {
    const lease = this.place.sharedLease;
    if (!lease) return undefined;
    const feeds = FEEDS_IN_USE.get(lease) ?? new Map<string, string>();
    FEEDS_IN_USE.set(lease, feeds);
    const other = feeds.get(this.feed);
    if (other !== undefined && other !== this.o.node.id) {
      return markSettingError(new GatewayError('BAD_INPUT', `feedName: the feed ${this.feed} is already read by node ${other} in this Node-RED; give this poller another feed name`, { field: 'feedName' }));
    }
    feeds.set(this.feed, this.o.node.id);
    this.claimed = true;
    return undefined;
  }

  /** The feed's reader. "Now" means when the node started, not when the first poll happens. */
  private makeReader(pageSize: number): FeedReader<R> | GatewayError {
    const { o } = this;
    const lease = this.place.sharedLease;
    try {
      return new FeedReader<R>({
        feed: this.feed,
        store: this.place.store,
        pageSize,
        startFrom: startMark(o.config.startFrom),
        key: o.key,
        time: o.time,
        fetchPage: (fromUtc, signal) => o.fetchPage(o.gw as GatewayNode, fromUtc, this.nextQuery, signal),
        emit: o.emit,
        ...(lease ? { fence: () => lease.fence(this.feed) } : {}),
        onCrowded: ({ second, fetched }: CrowdedSecond) => {
          o.node.warn(o.tp('warn.crowded', { second, fetched, next: second }));
        },
        onOverfull: ({ second, keys, bound }) => o.node.warn(o.tp('warn.overfull', { second, keys, bound })),
        onKeysDropped: ({ second, why }) => o.node.warn(o.tp('warn.keysDropped', { second, why })),
      });
    } catch (err) {
      return toGatewayError(err);
    }
  }

  /**
   * Runs a poll unless one is running; a request during a poll asks for one more after it and
   * resolves (or fails) with that one.
   */
  poll(query?: Record<string, unknown>): Promise<void> {
    const { reader, o } = this;
    if (this.closed) return Promise.resolve();
    if (reader instanceof GatewayError) return Promise.reject(reader);
    if (o.gw instanceof GatewayError) return Promise.reject(o.gw);
    if (!this.current && this.standby) {
      this.waitForLease();
      return Promise.resolve();
    }
    if (this.current) {
      if (query) this.nextQuery = query;
      if (!this.next) {
        let resolve!: () => void;
        let reject!: (err: unknown) => void;
        const promise = new Promise<void>((ok, fail) => {
          resolve = ok;
          reject = fail;
        });
        this.next = { promise, resolve, reject };
      }
      return this.next.promise;
    }
    this.nextQuery = query;
    this.unschedule();
    o.node.status({ fill: 'blue', shape: 'dot', text: t(o.RED, 'status.polling') });
    this.current = reader
      .poll(this.closing.signal)
      .then(
        (res) => this.polled(res.emitted),
        (e: unknown) => {
          const err = toGatewayError(e);
          if (!this.closing.signal.aborted) this.report(err);
          throw err;
        },
      )
      .finally(() => this.afterPoll());
    return this.current;
  }

  /** A poll succeeded, having emitted `count` new records. */
  private polled(count: number): void {
    this.lastOk = { at: Date.now(), count };
    this.lastMinute.add(this.lastOk);
    this.report(undefined);
  }

  /** One more poll when one was asked for during this one; else the next timer poll. */
  private afterPoll(): void {
    this.current = undefined;
    const next = this.next;
    this.next = undefined;
    if (!next) return this.schedule();
    this.msgWaiting += this.msgWaitingNext;
    this.msgWaitingNext = 0;
    // Closed meanwhile: the msgs waiting for it end as those of the poll in flight did.
    if (this.closed) return next.reject(this.closing.signal.reason);
    this.poll(this.nextQuery).then(next.resolve, next.reject);
  }

  /** After a poll: a recovery is logged, a failure shown and reported once per change of state. */
  private report(err: GatewayError | undefined): void {
    const { RED, node } = this.o;
    if (!err) {
      if (this.lastFailure) node.log(`${this.o.what} recovered after: ${this.lastFailure}`);
      this.lastFailure = undefined;
      this.outageTold = false;
      this.input.idle();
      return;
    }
    const key = `${err.code}:${err.statusCode ?? ''}`;
    this.watch?.failed(err);
    // A settings error of the config node: shown once, red; only a redeploy can fix it, so no
    // retrying. A mark that cannot be read waits for {fromUTC}; anything else is retried.
    if (isSettingError(err)) this.settingError = true;
    node.status(failureStatus(RED, this.o.tp, err, this.settingError));
    const first = key !== this.lastFailure && !(err.code === 'SHARED_STATE' && this.outageTold);
    this.lastFailure = key;
    // A msg waiting on this poll ends with done(err): that is its one Catch message.
    // A timer poll reports once per change of state; Redis unreachable, once per outage.
    if (first && this.msgWaiting === 0) {
      if (err.code === 'SHARED_STATE') this.outageTold = true;
      node.error(err, { topic: this.o.errorTopic, payload: null, error: { message: err.message, code: err.code } } as unknown as NodeMessage);
    }
  }

  /** Stands by until this instance holds the feed's lease, then polls at once. */
  private waitForLease(): void {
    const lease = this.place.sharedLease;
    if (!lease || this.acquiring || this.closed) return;
    this.acquiring = true;
    lease.acquire(this.feed, this.closing.signal).then(
      () => {
        this.acquiring = false;
        if (!this.closed && this.running) void this.poll().catch(() => {});
      },
      () => {
        this.acquiring = false;
      },
    );
  }

  /** The shared lease's state changed: standby or Redis down are shown, and waited out. */
  private readonly onLeaseState = (f: string, state: 'active' | 'standby' | 'down') => {
    const { node, tp } = this.o;
    if (f !== this.feed || this.closed) return;
    // Standby or active: Redis answered, the outage (if any) is over.
    const told = this.outageTold;
    this.outageTold = state === 'down';
    if (state === 'active') return;
    node.status(state === 'standby' ? { fill: 'yellow', shape: 'ring', text: tp('status.standby') } : { fill: 'red', shape: 'ring', text: tp('status.sharedDown') });
    if (state === 'down' && !told) node.warn(tp('status.sharedDown'));
    if (!this.current) this.waitForLease();
  };

  /** The next timer poll, in `delayMs` (default: the interval). */
  schedule(delayMs = this.intervalMs): void {
    this.unschedule();
    if (!this.running || this.closed || this.settingError) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.poll().catch(() => {
        /* reported by report() */
      });
    }, delayMs);
  }

  private unschedule(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  async pollForMsg(query: Record<string, unknown> | undefined): Promise<void> {
    const polled = this.poll(query);
    // A msg waiting for the one more poll does not silence the failure of the poll in flight.
    if (this.next && polled === this.next.promise) this.msgWaitingNext++;
    else this.msgWaiting++;
    try {
      await polled;
    } finally {
      this.msgWaiting--;
    }
  }

  start(): void {
    this.running = true;
    if (!this.current) this.schedule();
  }

  stop(): void {
    this.running = false;
    this.unschedule();
  }

  async reset(fromUtc: string): Promise<void> {
    if (this.reader instanceof GatewayError) throw this.reader;
    // Wins over a poll in flight: that poll's reply is neither emitted nor written.
    await this.reader.reset(fromUtc);
  }

  /** Stops polling, ends a poll in flight and waits for it; a clean stop hands the feed over. */
  async close(removed: boolean): Promise<void> {
    this.closed = true;
    this.watch?.feeds.delete(this.reporter);
    this.unschedule();
    this.closing.abort(new GatewayError('NETWORK', 'the poller was closed (redeploy or shutdown)'));
    await this.current?.catch(() => {});
    if (removed) await this.place.removeMark(this.feed);
    const lease = this.place.sharedLease;
    // A poller refused for a feed another node of this runtime reads leaves that feed alone.
    if (lease && this.claimed) {
      FEEDS_IN_USE.get(lease)?.delete(this.feed);
      lease.off('state', this.onLeaseState);
      // A clean stop hands the feed over at once (the mark is written: nothing repeats).
      await lease.release(this.feed);
    }
  }
}
