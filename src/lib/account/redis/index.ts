/** The Redis-backed account seams (issue 19): several Node-RED instances, one account. */
export { RedisConnection, SharedRedis, checkRedisUrl, redisAddress, type RedisConnectionOptions } from './connection';
export { AccountKeys, accountHash, type AccountIdentity } from './keys';
export { RedisRateBudget, type RedisRateBudgetOptions, type RateGroup } from './rate-budget';
export { RedisTokenSource, type TokenFetcher, type FetchedToken } from './token-source';
export { RedisFeedLease, type LeaseState } from './feed-lease';
export { RedisMarkStore, SharedStateError } from './mark-store';
export { redisSharedState, redisGates, GatedRedisRateBudget, type RedisAccountSettings } from './shared-state';
export { RedisOutboxStore, type RedisOutboxStoreOptions } from './outbox-store';
