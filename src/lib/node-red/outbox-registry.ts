/**
 * One outbox engine per outbox name per process (issue 45), shared by the sending nodes that
 * name it (`outboxName`, else the node's id). The first node that names it opens it (its
 * store, sender and reconciler on that node's account and bounds); the last one to close
 * closes it (a redeploy closes and reopens it: the entries stay in the store). A node that
 * comes while the previous engine of its name closes waits for that close.
 *
 * The store: `outboxStoreFor(account, name, userDir, bounds)` (Redis when the account names
 * an `iotgw-redis`, else a file store in `<userDir>/iotgw-outbox/<name>/`).
 */
import * as path from 'node:path';
import type { Node } from 'node-red';
import { Outbox } from '../outbox/outbox';
import { FileOutboxStore } from '../outbox/file-store';
import { isFolderInUse } from '../outbox/folder-lock';
import { GatewaySender, type SenderContext } from '../outbox/gateway-sender';
import { GatewayReconciler } from '../outbox/gateway-adapter';
import { isSettleSeconds } from '../outbox/reconcile';
import type { MsgOutcome, OutboxState, OutboxStore, WhenFull } from '../outbox/types';
import type { GatewayNode } from './config-nodes';
import type { AccountWatch, OutboxFigures, OutboxReporter, OutboxStateName } from '../account/figures';

export const OUTBOX_DIR = 'iotgw-outbox';

export interface OutboxSettings {
  name: string;
  ttlSeconds: number;
  maxEntries: number;
  maxBytes: number;
  whenFull: WhenFull;
  /** settings.js `iotgwOutboxSettleSeconds` (outboxSettleSetting): how long a lost send's message may be missing from the status feed. */
  settleSeconds?: number;
}

/**
 * settings.js `iotgwOutboxSettleSeconds` (5 to 600; default 30, real-services.md "Outbox
 * reconciliation": a guess, a setting): how long after a send whose reply never came the
 * gateway's status feed may still lack the message it created. Only once the feed is that far
 * past the send with no match is the entry sent again; shorter sends again sooner, and is safe
 * only where the gateway's records are known to show up sooner. Out of range: the default.
 */
export function outboxSettleSetting(settings: unknown): number | undefined {
  const v = (settings as { iotgwOutboxSettleSeconds?: unknown } | undefined)?.iotgwOutboxSettleSeconds;
  return isSettleSeconds(v) ? v : undefined;
}

/** A node that uses an outbox: its account, and what it does with outcomes and states. */
export interface OutboxUser {
  node: Node;
  gw: () => GatewayNode | undefined;
  /** 401/403 while sending (undefined: fixed). */
  onAuth(problem: string | undefined): void;
  /** Is this msg (its key) one this node accepted and still follows? */
  owns(key: string): boolean;
  /** A msg's outcome: `owned` when this node follows the msg, else one accepted before (a restart, a deleted node). */
  onOutcome(o: MsgOutcome, owned: boolean): void;
  onState(s: OutboxState): void;
  onWarning(message: string): void;
  /** A fleet: this instance no longer drains the outbox (the msgs it follows end on another instance, which emits their outcomes). */
  onHandover?(): void;
  /** Closing (a redeploy or a stop): it takes no outcome any more. */
  closing?(): boolean;
}

export interface SharedOutbox {
  name: string;
  outbox: Outbox;
  opened: Promise<void>;
  users: User[];
  abort: AbortController;
  /** What `iotgw-account-status` and the sidebar show of it (in its users' accounts' watches). */
  reporter: OutboxReporter;
  /** The last 401/403 while sending (undefined: none, or fixed). */
  authProblem?: string;
  /** The next try of an outbox whose folder another process holds (retryWhileInUse). */
  retry?: NodeJS.Timeout;
}
type User = OutboxUser;

const engines = new Map<string, SharedOutbox>();
const closing = new Map<string, Promise<void>>();

/** A folder name for an outbox name: letters, digits, '-' and '_' kept, anything else as ~hex. */
export function folderOf(name: string): string {
  const safe = name.replace(/[^A-Za-z0-9_-]/g, (c) => `~${c.codePointAt(0)!.toString(16)}`);
  return safe.length > 120 ? `${safe.slice(0, 100)}~${Buffer.from(name).toString('base64url').slice(-16)}` : safe;
}

/**
 * Where an outbox keeps its entries: with an `iotgw-redis` on the account, in Redis (one
 * outbox for the fleet, RedisOutboxStore); else a file store in
 * `<userDir>/iotgw-outbox/<name>/`. The choice is made here alone.
 */
export function outboxStoreFor(account: GatewayNode | undefined, name: string, userDir: string, bounds: { maxEntries: number; maxBytes: number }): OutboxStore {
  const shared = account?.account?.sharedOutboxStore?.(name, bounds);
  return shared ?? new FileOutboxStore(path.join(userDir, OUTBOX_DIR, folderOf(name)), { limitBytes: bounds.maxBytes });
}

/** The account of the newest node on the outbox that has one. */
function contextOf(shared: SharedOutbox): SenderContext | undefined {
  for (let i = shared.users.length - 1; i >= 0; i--) {
    const g = shared.users[i]!.gw();
    if (g) return g;
  }
  return undefined;
}

const MINUTE = 60_000;

/** Counts per minute for the last hour (60 buckets): what ended how, read when someone asks. */
export class HourCounter {
  private readonly counts = new Map<number, number>();

  add(at: number, n = 1): void {
    const m = Math.floor(at / MINUTE);
    this.counts.set(m, (this.counts.get(m) ?? 0) + n);
    if (this.counts.size > 61) this.prune(at);
  }

  total(now: number): number {
    this.prune(now);
    let n = 0;
    for (const c of this.counts.values()) n += c;
    return n;
  }

  private prune(now: number): void {
    const first = Math.floor(now / MINUTE) - 59;
    for (const m of this.counts.keys()) if (m < first) this.counts.delete(m);
  }
}

/** The state an account shows of an outbox, from the engine's state and the sender's 401/403. */
export function outboxStateName(s: OutboxState, authProblem: string | undefined): OutboxStateName {
  if (authProblem && s.waiting > 0) return 'unauthorized';
  if (s.phase === 'reconciling' || s.unknown > 0) return 'reconciling';
  if (s.waiting === 0) return 'idle';
  return s.problem || s.phase === 'backoff' ? 'waiting for the link' : 'draining';
}

function reporterOf(shared: SharedOutbox, counted: { sent: HourCounter; expired: HourCounter }): OutboxReporter {
  return {
    figures(now: number): OutboxFigures {
      const s = shared.outbox.state();
      const first = shared.users[0]?.node;
      return {
        name: shared.name,
        node: (first?.name || first?.id || '').slice(0, 200),
        waiting: s.waiting,
        bytes: s.bytes,
        oldestSeconds: s.oldestAt === undefined ? null : Math.max(0, Math.floor((now - s.oldestAt) / 1000)),
        sentLastHour: counted.sent.total(now),
        expiredLastHour: counted.expired.total(now),
        state: outboxStateName(s, shared.authProblem),
      };
    },
  };
}

const watchOf = (u: User): AccountWatch | undefined => u.gw()?.account?.watch;

/**
 * A msg's outcome to the node that follows it, else to the newest node on the outbox that is not
 * closing; false when every node is closing (a send's reply that came during a redeploy): the
 * engine then keeps it, and the node that opens the outbox next gives it.
 */
function deliver(shared: SharedOutbox, o: MsgOutcome): boolean {
  const owner = shared.users.find((u) => u.owns(o.key));
  const user = owner ?? [...shared.users].reverse().find((u) => !u.closing?.());
  if (!user) return false;
  user.onOutcome(o, owner !== undefined);
  return true;
}

function open(settings: OutboxSettings, first: User, userDir: string, wait: Promise<void> | undefined): SharedOutbox {
  const abort = new AbortController();
  const shared = { name: settings.name, users: [first], abort } as unknown as SharedOutbox;
  const context = () => contextOf(shared);
  const gw = first.gw();
  const outbox = new Outbox({
    name: settings.name,
    store: outboxStoreFor(gw, settings.name, userDir, settings),
    sender: new GatewaySender({
      context,
      signal: abort.signal,
      onAuth: (p) => {
        shared.authProblem = p;
        shared.users.forEach((u) => u.onAuth(p));
      },
    }),
    reconciler: new GatewayReconciler({ context, signal: abort.signal, ...(settings.settleSeconds ? { reconcile: { settleSeconds: settings.settleSeconds } } : {}) }),
    ttlSeconds: settings.ttlSeconds,
    maxEntries: settings.maxEntries,
    maxBytes: settings.maxBytes,
    whenFull: settings.whenFull,
    batchMax: Math.max(1, Math.min(100, gw?.settings?.maxBatchSize ?? 100)),
    deliver: (o) => deliver(shared, o),
  });
  shared.outbox = outbox;
  const counted = { sent: new HourCounter(), expired: new HourCounter() };
  shared.reporter = reporterOf(shared, counted);
  outbox.on('outcome', (o) => {
    for (const e of o.entries) {
      const r = e.outcome.result;
      if (r === 'EXPIRED') counted.expired.add(e.outcome.at);
      else if (r !== 'OUTBOX_FULL') counted.sent.add(e.outcome.at);
    }
  });
  outbox.on('state', (s) => shared.users.forEach((u) => u.onState(s)));
  outbox.on('warning', (w) => shared.users[0]?.onWarning(w.message));
  outbox.on('lease', (draining: boolean) => {
    if (!draining) shared.users.forEach((u) => u.onHandover?.());
  });
  shared.opened = (async () => {
    await wait;
    await outbox.open();
  })();
  shared.opened.catch((e: unknown) => retryWhileInUse(shared, e));
  return shared;
}

/** How often an outbox whose folder another process holds is tried again. */
export const IN_USE_RETRY_MS = 5000;

/**
 * The folder is held by another process (folder-lock.ts): tried again every IN_USE_RETRY_MS
 * until it opens (the holder stopped or died: the status turns from red to the outbox's) or the
 * last node leaves. Meanwhile each msg ends with the latest refusal (`shared.opened`).
 */
function retryWhileInUse(shared: SharedOutbox, e: unknown): void {
  if (!isFolderInUse(e) || shared.abort.signal.aborted || !engines.has(shared.name)) return;
  shared.retry = setTimeout(() => {
    shared.retry = undefined;
    if (shared.abort.signal.aborted || engines.get(shared.name) !== shared) return;
    shared.opened = shared.outbox.open();
    shared.opened.catch((again: unknown) => retryWhileInUse(shared, again));
  }, IN_USE_RETRY_MS);
  shared.retry.unref?.();
}

/** The outbox of this name, opened for `user` (or shared with the nodes already on it). */
export function acquireOutbox(settings: OutboxSettings, user: User, userDir: string): { shared: SharedOutbox; first: boolean } {
  const have = engines.get(settings.name);
  if (have) {
    have.users.push(user);
    watchOf(user)?.outboxes.add(have.reporter);
    return { shared: have, first: false };
  }
  const shared = open(settings, user, userDir, closing.get(settings.name));
  engines.set(settings.name, shared);
  watchOf(user)?.outboxes.add(shared.reporter);
  return { shared, first: true };
}

/** The node leaves the outbox; the last one closes it (resolves once closed). */
export async function releaseOutbox(shared: SharedOutbox, user: User): Promise<{ last: boolean }> {
  const i = shared.users.indexOf(user);
  if (i >= 0) shared.users.splice(i, 1);
  const watch = watchOf(user);
  if (watch && !shared.users.some((u) => watchOf(u) === watch)) watch.outboxes.delete(shared.reporter);
  if (shared.users.length) return { last: false };
  if (engines.get(shared.name) === shared) engines.delete(shared.name);
  clearTimeout(shared.retry);
  const done = (async () => {
    await shared.opened.catch(() => {});
    // A send in flight finishes and is recorded; one that hangs is aborted after 5 s (its
    // outcome is then unknown, reconciled when the outbox opens again).
    const hang = setTimeout(() => shared.abort.abort(), 5000);
    await shared.outbox.close().catch(() => {});
    clearTimeout(hang);
    shared.abort.abort();
  })();
  closing.set(shared.name, done);
  await done;
  if (closing.get(shared.name) === done) closing.delete(shared.name);
  return { last: true };
}

/** Every open outbox (account status, sidebar). */
export function openOutboxes(): SharedOutbox[] {
  return [...engines.values()];
}
