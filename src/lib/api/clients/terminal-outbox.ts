/**
 * The TerminalClient's outbox (issue 45; nodes.md "Commands that survive the edge"): the
 * nodes' outbox engine (outbox/outbox.ts) for a script without Node-RED, with the same
 * promises: a command accepted (the send's promise resolved) is durable, reaches the
 * gateway exactly once in order, or ends with an error that says why (EXPIRED,
 * OUTBOX_FULL), across outages and restarts of the script.
 *
 * Built as the node layer builds it (node-red/outbox-registry.ts): a store (a folder of its
 * own, FileOutboxStore; or Redis, RedisOutboxStore under the account's keys, so a fleet of
 * scripts, or a script and Node-RED naming the same account and outbox name, share it), a
 * GatewaySender and a GatewayReconciler on the client itself (its token, limits and
 * retries). Outcomes reach the script through outbox/delivery.ts: forgotten only once the
 * script took them.
 */
import * as path from 'node:path';
import { EventEmitter } from 'node:events';
import type { ConnectionOptions } from 'node:tls';
import { GatewayError, badInput } from '../../common/errors';
import { isPlainObject, joinProblems } from '../../common/checks';
import { showValue } from '../../common/int64';
import { Outbox, OUTBOX_DEFAULTS } from '../../outbox/outbox';
import { FileOutboxStore } from '../../outbox/file-store';
import { GatewaySender, toJsonItem } from '../../outbox/gateway-sender';
import { GatewayReconciler } from '../../outbox/gateway-adapter';
import { SETTLE_SECONDS_RANGE, isSettleSeconds } from '../../outbox/reconcile';
import { OutcomeDelivery } from '../../outbox/delivery';
import { BAD_END, entryResults, outboxInfo, outcomeError } from '../../outbox/results';
import type { AcceptOptions, JsonObject, MsgOutcome, NewEntry, OutboxKind, OutboxState, OutboxStore, WhenFull } from '../../outbox/types';
import type { RedisConnection } from '../../account/redis/connection';
import { AccountKeys } from '../../account/redis/keys';
import { checkGeneralItem, readIds, type ItemDefaults } from '../terminal-inputs';
import { DEFAULT_MAX_DESTINATIONS, checkMultipleItem } from '../to-multiple';
import { TerminalClient, asList, checkModeItems, refuse, type MessageInput, type ModeInput, type SubmitMessagesOptions, type SubmitModesOptions } from './terminal';
import type { MultipleMessageInput } from './terminal-more';
import { intOption, textOption } from './options';

/** A Redis server for the outbox (as an `iotgw-redis` config node gives it). */
export interface OutboxRedisOptions {
  /** `redis://[user@]host:port/db` or `rediss://` (TLS). */
  url: string;
  /** Default `iotgw:` (the nodes' default: Node-RED naming the same account and outbox name shares it). */
  keyPrefix?: string;
  username?: string;
  password?: string;
  /** Default `standalone`. */
  mode?: 'standalone' | 'sentinel' | 'cluster';
  /** Sentinel mode: `host:port` of each sentinel, comma-separated. */
  sentinels?: string;
  /** Sentinel mode. Default `mymaster`. */
  masterName?: string;
  sentinelPassword?: string;
  /** Cluster mode: `host:port` of some nodes, comma-separated. */
  nodes?: string;
  tls?: ConnectionOptions;
}

/** `client.outbox(options)`: where the outbox lives (a folder, or Redis) and its bounds, as the nodes' settings. */
export interface TerminalOutboxOptions {
  /** A folder of its own (made when missing): the outbox's log. */
  file?: string;
  /** Or a Redis server: any process of a fleet naming the same account and `name` drains it. */
  redis?: OutboxRedisOptions;
  /** The outbox's identity (required with `redis`; default the folder's name). */
  name?: string;
  /** An entry not sent within this time ends EXPIRED, never sent after. Default 3600. */
  ttlSeconds?: number;
  /** Entries waiting, at most. Default 10000. */
  maxEntries?: number;
  /** Bytes on disk (or in Redis), at most. Default 64 MiB. */
  maxBytes?: number;
  /** `reject` (the send fails OUTBOX_FULL, nothing kept) or `drop-oldest`. Default `reject`. */
  whenFull?: WhenFull;
  /**
   * Seconds the gateway's status feed must be past a send whose reply never came, with no
   * match, before it is sent again (the nodes' settings.js `iotgwOutboxSettleSeconds`): 5 to
   * 600, default 30. Shorter sends again sooner, and risks a second creation where the feed lags more.
   */
  settleSeconds?: number;
}

/** Per send: `priority` 0 (first) to 9 (default 4), `ttl` (s, overrides ttlSeconds), `meta` (JSON given back with the outcome). */
export interface OutboxSendOptions {
  priority?: number;
  ttl?: number;
  meta?: Record<string, unknown>;
}

/** A send accepted: durable. `key` is the outcome's key. */
export interface OutboxReceipt {
  key: string;
  entries: number;
  /** Redis: another process drains the outbox now; the outcome comes there. */
  standby?: true;
}

/**
 * One send's outcome, once every entry ended. `results` as the matching TerminalClient call
 * gives them (one per item or destination, in order: `{ID, DestinationID, ErrorID, ...}`,
 * cancellations `{ID, CancelRequestID, ErrorID}`); an item never sent says `Outbox:
 * 'EXPIRED' | 'OUTBOX_FULL'` (or `'failed'`, a call the gateway refused as such, or
 * `'unknown'`: sent, no answer, the gateway's records cannot tell whether it was created; never
 * sent again), and `error` is then a GatewayError EXPIRED, OUTBOX_FULL or the call's code
 * (NETWORK or TIMEOUT for unknown, with `error.outcome` 'unknown'), `error.entries` listing those entries.
 */
export interface OutboxOutcome {
  outbox: string;
  key: string;
  meta?: Record<string, unknown>;
  acceptedAt: string;
  sentAt: string | null;
  attempts: number;
  results: Array<Record<string, unknown>>;
  error?: GatewayError & { entries?: unknown[]; outcome?: 'unknown' };
}

/** Folders open in this process (one outbox per folder: two would write one log). */
const openFolders = new Set<string>();

function checkOptions(o: unknown): Required<Pick<TerminalOutboxOptions, 'ttlSeconds' | 'maxEntries' | 'maxBytes' | 'whenFull'>> & { name: string; file?: string; redis?: OutboxRedisOptions; settleSeconds?: number } {
  if (!isPlainObject(o)) throw badInput('options', `client.outbox takes {file} or {redis, name}, not ${showValue(o)}`);
  const file = textOption(o, 'file');
  const redis = o.redis;
  if ((file === undefined) === (redis === undefined)) throw badInput('options', 'give file (a folder of the outbox\'s own) or redis ({url, ...}), one of them');
  if (redis !== undefined && !(isPlainObject(redis) && typeof redis.url === 'string')) throw badInput('redis', `must be {url, keyPrefix?, username?, password?, ...}, not ${showValue(redis)}`);
  const name = textOption(o, 'name') ?? (file ? path.basename(path.resolve(file)) : undefined);
  if (!name) throw badInput('name', 'required with redis: the outbox\'s identity');
  const ttl = o.ttlSeconds ?? OUTBOX_DEFAULTS.ttlSeconds;
  if (typeof ttl !== 'number' || !Number.isFinite(ttl) || ttl < 1 || ttl > 365 * 86400) throw badInput('ttlSeconds', `must be seconds from 1 to ${365 * 86400}, not ${showValue(ttl)}`);
  const whenFull = o.whenFull ?? 'reject';
  if (whenFull !== 'reject' && whenFull !== 'drop-oldest') throw badInput('whenFull', `must be "reject" or "drop-oldest", not ${showValue(whenFull)}`);
  const settle = o.settleSeconds;
  if (settle !== undefined && !isSettleSeconds(settle)) throw badInput('settleSeconds', `must be seconds from ${SETTLE_SECONDS_RANGE.min} to ${SETTLE_SECONDS_RANGE.max}, not ${showValue(settle)}`);
  return {
    name, ttlSeconds: ttl, whenFull,
    ...(settle === undefined ? {} : { settleSeconds: settle }),
    maxEntries: intOption(o, 'maxEntries', OUTBOX_DEFAULTS.maxEntries, 1, 10_000_000),
    maxBytes: intOption(o, 'maxBytes', OUTBOX_DEFAULTS.maxBytes, 1024, 2 ** 40),
    ...(file ? { file: path.resolve(file) } : { redis: redis as unknown as OutboxRedisOptions }),
  };
}

/** priority and ttl (BAD_INPUT naming them), and meta as JSON. */
function sendOptions(o: OutboxSendOptions & { query?: unknown }): { accept: AcceptOptions; json: JsonObject } {
  if (o.query !== undefined && o.query !== null) throw badInput('query', 'is not kept by the outbox; send without it, or call the client directly');
  const accept: AcceptOptions = {};
  if (o.priority !== undefined) {
    if (typeof o.priority !== 'number' || !Number.isInteger(o.priority) || o.priority < 0 || o.priority > 9) throw badInput('priority', `must be a whole number from 0 (first) to 9, not ${showValue(o.priority)}`);
    accept.priority = o.priority;
  }
  if (o.ttl !== undefined) {
    if (typeof o.ttl !== 'number' || !Number.isFinite(o.ttl) || o.ttl <= 0) throw badInput('ttl', `must be a number of seconds above 0, not ${showValue(o.ttl)}`);
    accept.ttlSeconds = o.ttl;
  }
  if (o.meta === undefined) return { accept, json: {} };
  if (!isPlainObject(o.meta)) throw badInput('meta', `must be a plain object of JSON values, not ${showValue(o.meta)}`);
  let text: string | undefined;
  try {
    text = JSON.stringify(o.meta, (_k, x: unknown) => (typeof x === 'bigint' ? x.toString() : x));
  } catch {
    text = undefined;
  }
  if (text === undefined) throw badInput('meta', 'must be JSON (no cycles)');
  return { accept, json: { meta: JSON.parse(text) as JsonObject } };
}

/** The engine's outcome as the script sees it. */
function outcomeOf(o: MsgOutcome): OutboxOutcome {
  const info = outboxInfo(o) as { acceptedAt: string; sentAt: string | null; attempts: number };
  const error = outcomeError(o) as OutboxOutcome['error'];
  if (error) error.entries = o.entries.filter((e) => BAD_END.has(e.outcome.result)).map((e) => ({ id: e.id, kind: e.kind, outcome: e.outcome, results: entryResults(e) }));
  const meta = o.json?.meta;
  return {
    outbox: o.outbox, key: o.key, ...(isPlainObject(meta) ? { meta } : {}),
    acceptedAt: info.acceptedAt, sentAt: info.sentAt, attempts: info.attempts,
    results: o.entries.flatMap(entryResults), ...(error ? { error } : {}),
  };
}

async function redisStore(client: TerminalClient, r: OutboxRedisOptions, name: string, bounds: { maxEntries: number; maxBytes: number }): Promise<{ store: OutboxStore; conn: RedisConnection }> {
  // Loaded here: a client without a Redis outbox never loads ioredis.
  const { RedisConnection, parseHostPorts } = await import('../../account/redis/connection');
  const { RedisOutboxStore } = await import('../../account/redis/outbox-store');
  const mode = r.mode ?? 'standalone';
  if (!['standalone', 'sentinel', 'cluster'].includes(mode)) throw badInput('redis.mode', `must be "standalone", "sentinel" or "cluster", not ${showValue(mode)}`);
  const conn = new RedisConnection({
    url: r.url, keyPrefix: r.keyPrefix ?? 'iotgw:', mode, label: `outbox "${name.slice(0, 60)}" redis`,
    ...(r.username ? { username: r.username } : {}), ...(r.password ? { password: r.password } : {}), ...(r.tls ? { tls: r.tls } : {}),
    ...(mode === 'sentinel' ? { sentinels: parseHostPorts('redis.sentinels', r.sentinels ?? ''), masterName: r.masterName ?? 'mymaster', ...(r.sentinelPassword ? { sentinelPassword: r.sentinelPassword } : {}) } : {}),
    ...(mode === 'cluster' ? { nodes: parseHostPorts('redis.nodes', r.nodes ?? '') } : {}),
  });
  const keys = AccountKeys.of(conn.keyPrefix, client.keyIdentity());
  return { conn, store: new RedisOutboxStore(conn, keys, name, { timeoutMs: 15_000, ...bounds }) };
}

const FULL_KIND: Record<OutboxKind, string> = { message: 'submitMessages', multiple: 'submitToMultiple', mode: 'submitModes', cancel: 'cancel' };

/**
 * An open outbox of a TerminalClient (`await client.outbox({file})`). Sends resolve once
 * durable (`{key}`); outcomes come as 'outcome' events (a listener may return a promise:
 * the outcome is forgotten once it settled) or from `outcomes()`; also 'state' and 'warning'.
 */
export class TerminalOutbox extends EventEmitter {
  private readonly delivery: OutcomeDelivery<OutboxOutcome>;
  private engine!: Outbox;
  private readonly abort = new AbortController();
  private conn?: RedisConnection;
  private folder?: string;
  private closing?: Promise<void>;
  private authSaid = false;

  /** Use `client.outbox(options)`. */
  constructor(private readonly client: TerminalClient, readonly name: string) {
    super();
    this.delivery = new OutcomeDelivery<OutboxOutcome>(
      // rawListeners: a once() listener's wrapper, which removes it as it is called.
      () => this.rawListeners('outcome').map((l) => (o: OutboxOutcome) => (l as (o: OutboxOutcome) => unknown).call(this, o)),
      (err) => this.emit('warning', `an outcome listener threw (${(err as Error)?.name ?? 'an error'}); the outcome counts as taken`),
    );
    this.on('newListener', (event) => {
      if (event === 'outcome') queueMicrotask(() => void this.delivery.pump());
    });
  }

  /** @internal Opens the store and the engine (client.outbox does it). */
  async open(o: ReturnType<typeof checkOptions>): Promise<void> {
    let store: OutboxStore;
    if (o.file) {
      if (openFolders.has(o.file)) throw badInput('file', 'this folder\'s outbox is open already in this process; use that one, or close it first');
      openFolders.add(o.file);
      this.folder = o.file;
      store = new FileOutboxStore(o.file, { limitBytes: o.maxBytes });
    } else {
      const made = await redisStore(this.client, o.redis!, o.name, o);
      this.conn = made.conn;
      store = made.store;
    }
    const context = () => (this.closing ? undefined : this.client);
    this.engine = new Outbox({
      name: o.name, store: this.delivery.wrap(store),
      sender: new GatewaySender({ context, signal: this.abort.signal, onAuth: (p) => this.onAuth(p) }),
      reconciler: new GatewayReconciler({ context, signal: this.abort.signal, ...(o.settleSeconds ? { reconcile: { settleSeconds: o.settleSeconds } } : {}) }),
      ttlSeconds: o.ttlSeconds, maxEntries: o.maxEntries, maxBytes: o.maxBytes, whenFull: o.whenFull,
    });
    this.engine.on('outcome', (m: MsgOutcome) => this.delivery.push(outcomeOf(m)));
    this.engine.on('state', (s: OutboxState) => this.emit('state', s));
    this.engine.on('warning', (w: { message: string }) => this.emit('warning', w.message));
    this.client.dependents.add(this);
    try {
      await this.engine.open();
    } catch (err) {
      await this.close();
      throw err;
    }
  }

  /** Like client.submitMessages, kept in the outbox: resolves once durable. */
  async submitMessages(items: MessageInput | MessageInput[], options: SubmitMessagesOptions & OutboxSendOptions = {}): Promise<OutboxReceipt> {
    const d: ItemDefaults = {
      TransportType: options.transportType, MessageLifetime: options.messageLifetime, MessageClass: options.messageClass,
      maxRawBytes: intOption(options as Record<string, unknown>, 'maxRawBytes', 1023, 2, 1_000_000),
    };
    const problems: string[] = [];
    const checked = asList(items, 'items').map((raw, i) => checkGeneralItem(raw, Array.isArray(items) ? `items[${i}]` : 'items', d, problems));
    refuse(problems);
    return this.accept('message', checked, options);
  }

  /** Like client.submitModes, kept in the outbox. */
  async submitModes(items: ModeInput | ModeInput[], options: SubmitModesOptions & OutboxSendOptions = {}): Promise<OutboxReceipt> {
    return this.accept('mode', checkModeItems(items, options), options);
  }

  /** Like client.cancel, kept in the outbox (a cancel sent twice cancels nothing twice). */
  async cancel(ids: number | string | bigint | { ID: unknown } | Array<number | string | bigint | { ID: unknown }>, options: OutboxSendOptions = {}): Promise<OutboxReceipt> {
    return this.accept('cancel', readIds(ids, 'ids'), options);
  }

  /** Like client.submitToMultiple (one entry: one call for every destination), kept in the outbox. */
  async submitToMultiple(message: MultipleMessageInput, destinations: string[], options: OutboxSendOptions & { maxDestinations?: number; maxRawBytes?: number } = {}): Promise<OutboxReceipt> {
    const problems: string[] = [];
    const raw = { ...(message as Record<string, unknown>), Destinations: destinations };
    const item = checkMultipleItem(raw, 'message', { maxRawBytes: options.maxRawBytes ?? 1023 }, options.maxDestinations ?? DEFAULT_MAX_DESTINATIONS, problems);
    if (!item) throw new GatewayError('BAD_INPUT', joinProblems(problems), { field: problems[0]?.split(':')[0] ?? 'message' });
    return this.accept('multiple', [item], options);
  }

  /** Outcomes as an async iterator: each is forgotten once the loop asks for the next (or ends). */
  outcomes(): AsyncIterableIterator<OutboxOutcome> {
    return this.delivery.iterate();
  }

  /** What waits now: `{outbox, waiting, unknown, bytes, oldestAt, problem, phase}`. */
  state(): OutboxState {
    return this.engine.state();
  }

  /**
   * Stops sending (a send in flight finishes and is recorded; one that hangs is aborted after
   * 5 s, reconciled at the next open) and closes the store; entries wait for the next open.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const hang = setTimeout(() => this.abort.abort(), 5000);
      await this.engine?.close().catch(() => undefined);
      clearTimeout(hang);
      this.abort.abort();
      this.delivery.close();
      await this.conn?.close().catch(() => undefined);
      if (this.folder) openFolders.delete(this.folder);
      this.client.dependents.delete(this);
    })();
    return this.closing;
  }

  private async accept(kind: OutboxKind, items: unknown[], options: OutboxSendOptions): Promise<OutboxReceipt> {
    const { accept, json } = sendOptions(options);
    if (this.closing) throw new GatewayError('STORAGE', `the outbox "${this.name}" is closed; open it again`);
    const entries: NewEntry[] = items.map((it) => ({ kind, item: toJsonItem(it) }));
    const r = await this.engine.accept(FULL_KIND[kind], json, entries, accept);
    return { key: r.key, entries: r.ids.length, ...(r.standby ? { standby: true as const } : {}) };
  }

  private onAuth(problem: string | undefined): void {
    if (problem && !this.authSaid) this.emit('warning', `the outbox "${this.name}" cannot send: ${problem}; its entries wait until the account is fixed (a new client on the same outbox)`);
    this.authSaid = problem !== undefined;
  }
}

/** `client.outbox(options)`: opens the outbox (its entries from an earlier run drain at once). */
export async function openTerminalOutbox(client: TerminalClient, options: TerminalOutboxOptions): Promise<TerminalOutbox> {
  const o = checkOptions(options);
  client.client(); // a closed client refuses (its sends would fail as calls: entries lost)
  const ob = new TerminalOutbox(client, o.name);
  await ob.open(o);
  return ob;
}

declare module './terminal' {
  interface TerminalClient {
    /**
     * An outbox on this client (issue 45): sends kept durably (a folder, or Redis) until the
     * gateway has them, exactly once, in order; outcomes survive a restart. See docs/client.md.
     */
    outbox(options: TerminalOutboxOptions): Promise<TerminalOutbox>;
  }
}
TerminalClient.prototype.outbox = function outbox(this: TerminalClient, options: TerminalOutboxOptions) {
  return openTerminalOutbox(this, options);
};
