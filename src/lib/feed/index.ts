/** The feed-reading core shared by the pollers (see ./reader.ts for the rules). */
export { FeedReader, type FeedReaderOptions, type FeedPage, type FeedEmitInfo, type CrowdedSecond, type OverfullSecond, type KeysDropped, type PollResult, RecentKeys, FEED_BOUNDS } from './reader';
export { FileMarkStore, ContextMarkStore, FallbackMarkStore, feedFileName, needsReset, unreadableMark, type ContextLike } from './stores';
export { UTC_TIME_RE, formatUtcSeconds, parseUtcSeconds, isUtcTime } from './time';
export { startMark } from './start';
