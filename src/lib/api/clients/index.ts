/** The plain typed clients of the gateway's APIs, one per area, for Node.js without Node-RED. */
export { TerminalClient, type TerminalClientOptions, type ModeInput, type MessageInput, type SubmitModesOptions, type SubmitMessagesOptions, type SubmitOutcome, type CancelOutcome, type StatusUpdate, type MobileMessage, type FeedReply, type CallOptions } from './terminal';
export { TerminalOutbox, type TerminalOutboxOptions, type OutboxRedisOptions, type OutboxSendOptions, type OutboxReceipt, type OutboxOutcome } from './terminal-outbox';
export { BrokerClient, type BrokerClientOptions, type Contract, type BrokerMessage, type ContractCreate, type ContractFilters, type DevicePage, type DeviceQuery, type SmsEnvelope } from './broker';
export { AppClient, type AppClientOptions, type TagPage, type TagRecord, type UserRecord, type TagQuery, type TagConfigQuery } from './app';
export type { CommonClientOptions } from './options';
