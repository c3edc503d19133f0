/**
 * The package's JavaScript API, for code outside Node-RED (tests of your own flows,
 * scripts): the bundled gateway simulator and the error codes the nodes use.
 * Node-RED itself loads the nodes listed in package.json "node-red.nodes".
 * Its declarations (dist/index.d.ts, package.json "types") are generated from this source.
 */
export { startSimulator, Simulator, type SimulatorOptions } from './simulator';
export type { CallRecord, Fault, SimServer } from './simulator/server';
export type { TerminalGateway, TerminalOptions } from './simulator/terminal';
export { GatewayError, ERROR_CODES, type ErrorCode, type GatewayErrorOptions } from './lib/common/errors';

// The typed clients (src/lib/api/clients), loaded at first use: requiring the package stays
// cheap (no zod, no undici) until a client is made.
import type * as Clients from './lib/api/clients';
export type {
  TerminalClientOptions, TerminalOutbox, TerminalOutboxOptions, OutboxRedisOptions, OutboxSendOptions, OutboxReceipt, OutboxOutcome, ModeInput, MessageInput, SubmitModesOptions, SubmitMessagesOptions, SubmitOutcome, CancelOutcome, StatusUpdate, MobileMessage, FeedReply, CallOptions,
  BrokerClientOptions, Contract, BrokerMessage, ContractCreate, ContractFilters, DevicePage, DeviceQuery, SmsEnvelope,
  AppClientOptions, TagPage, TagRecord, UserRecord, TagQuery, TagConfigQuery, CommonClientOptions,
} from './lib/api/clients';
/** The terminals' API (area a): modes, messages, cancellations, the status and from-mobile feeds. */
export declare const TerminalClient: typeof Clients.TerminalClient;
export type TerminalClient = Clients.TerminalClient;
/** The LoRaWAN broker and SMS API (areas b, c). */
export declare const BrokerClient: typeof Clients.BrokerClient;
export type BrokerClient = Clients.BrokerClient;
/** The application API (area d). */
export declare const AppClient: typeof Clients.AppClient;
export type AppClient = Clients.AppClient;
for (const name of ['TerminalClient', 'BrokerClient', 'AppClient'] as const) {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  Object.defineProperty(exports, name, { enumerable: true, get: () => (require('./lib/api/clients') as typeof Clients)[name] });
}
