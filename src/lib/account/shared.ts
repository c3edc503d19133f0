/**
 * Where the account factory finds a shared-state backend, so that a backend (an
 * `iotgw-redis` config node) plugs in without touching a node file: the backend calls
 * `provideSharedState(resolver)` when it starts (and its return value when it closes); the
 * factory asks the resolvers, lazily at the account's first use, with the account's key
 * and the config node's raw settings (so a resolver may read a property such as
 * `config.sharedState`).
 */
import type { AccountKey, SharedState } from './types';

export type SharedStateResolver = (account: AccountKey, config: Readonly<Record<string, unknown>>) => SharedState | undefined;

const resolvers = new Set<SharedStateResolver>();

/** Registers a resolver; returns the function that removes it. */
export function provideSharedState(resolver: SharedStateResolver): () => void {
  resolvers.add(resolver);
  return () => {
    resolvers.delete(resolver);
  };
}

/** The first shared state a resolver offers for `account`, or undefined (in-process). */
export function sharedStateFor(account: AccountKey, config: Readonly<Record<string, unknown>>): SharedState | undefined {
  for (const r of resolvers) {
    const s = r(account, config);
    if (s) return s;
  }
  return undefined;
}
