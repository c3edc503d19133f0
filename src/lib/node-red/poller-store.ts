/**
 * Where a feed poller's mark lives (`contextStore`), and the account's feed lease when the
 * account is shared (see poller-node.ts for the rules).
 */
import * as path from 'node:path';
import type { Node, NodeAPI } from 'node-red';
import type { FeedLease, MarkStore } from '../account/types';
import type { GatewayNode } from './config-nodes';
import { GatewayError } from '../common/errors';
import { ContextMarkStore, FallbackMarkStore, FileMarkStore, type ContextLike } from '../feed/stores';

/** Where older versions kept the mark (a plain string) in node context. */
export const LEGACY_MARK_KEY = 'nextFromUTC';
/** The mark in node context (a named store): {fromUtc, seen, generation}. */
export const MARK_KEY = 'feedMark';
/** Folder under the user directory with one mark file per poller. */
export const FEED_DIR = 'iotgw-feeds';

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

/** A poller's mark store, as its settings and its account give it. */
export interface PollerStore {
  store: MarkStore;
  /** The named context store this Node-RED does not have (shown in the status), if any. */
  storeWarning?: string;
  /** The account's feed lease when the account is shared: one active poller per feed. */
  sharedLease?: FeedLease;
  /** Removes the mark file of a deleted poller (a no-op when the mark is not in a file). */
  removeMark(feed: string): Promise<void>;
}

/**
 * The mark store of a poller: a file under the user directory, a named context store, or
 * (a shared account) the account's own store. A named store this Node-RED does not have is
 * warned about here, once.
 */
export function pollerStore(
  RED: NodeAPI,
  node: Node,
  contextStore: string,
  gw: GatewayNode | GatewayError,
  tp: (key: string, vars?: Record<string, string | number>) => string,
): PollerStore {
  const ctx = node.context() as unknown as ContextLike;
  const userDir = (RED.settings as unknown as { userDir?: string }).userDir;
  const named = contextStore ? String(contextStore).trim() : '';
  const legacy = new ContextMarkStore(ctx, undefined, MARK_KEY, LEGACY_MARK_KEY);
  // Errors name the file relative to the user directory (FEED_DIR/<file>), never its absolute path.
  const fileStore = (): MarkStore => new FallbackMarkStore(new FileMarkStore(path.join(userDir!, FEED_DIR), FEED_DIR), legacy);
  let store: MarkStore;
  let storeWarning: string | undefined;
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
  const lease = gw instanceof GatewayError ? undefined : gw.account?.lease;
  if (lease?.shared && !(gw instanceof GatewayError)) return { store: gw.account.marks, sharedLease: lease, removeMark: async () => {} };
  // A deleted poller's mark file goes with it (as its node context does).
  const removeMark = async (feed: string) => {
    if (store instanceof FallbackMarkStore && userDir) await new FileMarkStore(path.join(userDir, FEED_DIR)).remove(feed).catch(() => {});
  };
  return { store, storeWarning, removeMark };
}
