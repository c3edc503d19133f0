/**
 * Area (a), the terminal gateway's facts: its message states and error IDs (with the
 * catalogue it serves), its terminals and accounts, its options and their defaults, and
 * what its parts (access, submissions, status feed) share of the gateway.
 */
export const STATE = {
  SUBMITTED: 0,
  RECEIVED: 1,
  ERROR: 2,
  DELIVERY_FAILED: 3,
  TIMED_OUT: 4,
  CANCELLED: 5,
  WAITING: 6,
  BROADCAST_SUBMITTED: 7,
  SENDING_IN_PROGRESS: 8,
} as const;

export const ERRORS = {
  INVALID_DESTINATION: 101,
  MODE_NOT_SUPPORTED: 102,
  WAKEUP_INTERVAL_NOT_SUPPORTED: 103,
  TOO_MANY_MESSAGES: 104,
  INVALID_REQUEST: 105,
  MESSAGE_NOT_FOUND: 106,
  MESSAGE_ALREADY_CLOSED: 107,
  INVALID_FROM_UTC: 108,
  INVALID_PAGE_SIZE: 109,
  TERMINAL_NOT_FOUND: 110,
  TOO_MANY_DESTINATIONS: 111,
  TOO_MANY_IDS: 112,
  /** A name the package does not carry: only the live catalogue names it. */
  TERMINAL_SUSPENDED: 21786,
  SUBMIT_RATE_EXCEEDED: 24579,
  STATUS_RATE_EXCEEDED: 24581,
} as const;

export const CATALOGUE = [
  { ID: 0, Name: 'NO_ERROR', Description: 'No error' },
  { ID: 101, Name: 'INVALID_DESTINATION', Description: 'The destination ID is not a terminal of this account' },
  { ID: 102, Name: 'MODE_NOT_SUPPORTED', Description: 'The terminal does not support this operating mode (RECEIVE_ON_SEND and HYBRID are OGx only)' },
  { ID: 103, Name: 'WAKEUP_INTERVAL_NOT_SUPPORTED', Description: 'The terminal does not support this wake-up interval (above 60 minutes is OGx only)' },
  { ID: 104, Name: 'TOO_MANY_MESSAGES', Description: 'Too many messages in one call' },
  { ID: 105, Name: 'INVALID_REQUEST', Description: 'The request is malformed' },
  { ID: 106, Name: 'MESSAGE_NOT_FOUND', Description: 'No to-mobile message with this ID' },
  { ID: 107, Name: 'MESSAGE_ALREADY_CLOSED', Description: 'The message is already closed and cannot be cancelled' },
  { ID: 108, Name: 'INVALID_FROM_UTC', Description: 'FromUTC is missing or not yyyy-MM-dd HH:mm:ss' },
  { ID: 109, Name: 'INVALID_PAGE_SIZE', Description: 'PageSize must be a whole number from 1 to 1000' },
  { ID: 110, Name: 'TERMINAL_NOT_FOUND', Description: 'No terminal with this PrimeID on this account' },
  { ID: 111, Name: 'TOO_MANY_DESTINATIONS', Description: 'Too many destinations in one call' },
  { ID: 112, Name: 'TOO_MANY_IDS', Description: 'Too many IDs in IDList (at most 100)' },
  { ID: 21786, Name: 'TERMINAL_SERVICE_SUSPENDED', Description: "The terminal's service is suspended: it accepts no to-mobile message" },
  { ID: 24579, Name: 'SUBMIT_RATE_EXCEEDED', Description: 'Submit rate exceeded' },
  { ID: 24581, Name: 'STATUS_RATE_EXCEEDED', Description: 'Status retrieval rate exceeded' },
];

/** Wake-up interval code -> seconds. */
export const WAKEUP_SECONDS = [0, 30, 60, 120, 180, 300, 600, 900, 1200, 1800, 3600, 7200, 10800, 21600, 43200, 86400];

export interface Terminal {
  id: string;
  family: 'IDP' | 'OGx';
  online: boolean;
  mode: number;
  wakeup: number;
  account: string;
  /** Materialized from the fleet (terminal-fleet.ts): it reports through the fleet's demo, not every tick. */
  fleet?: boolean;
  /** Its service is suspended: to_multiple refuses it with ErrorID 21786. */
  suspended?: boolean;
}

export interface Account {
  clientId: string;
  clientSecret: string;
  /** Static tokens that are always valid. */
  staticTokens: string[];
  superAccount: boolean;
  subaccounts: string[];
  /** The account's number (AccountID of info/subaccount/list). */
  accountNumber?: number;
}

export interface TerminalOptions {
  rateLimitCalls: number;
  rateLimitWindowMs: number;
  maxConcurrent: number;
  maxBatch: number;
  maxStatuses: number;
  tokenTtlSeconds: number;
  /** Include Retry-After on 429 replies (the real gateway does not document one). */
  retryAfter: boolean;
  /** Service-wide limit (503) across all accounts; 0 = off. */
  serviceCalls: number;
  serviceWindowMs: number;
  sendingAfterMs: number;
  receivedAfterMs: number;
  offlineTimeoutMs: number;
  /** Unknown destinations matching the prime-ID form become online IDP terminals. */
  acceptUnknownTerminals: boolean;
  /** Failed submission entries: omit ID (default) or carry ID = -1. */
  failedId: 'omit' | 'minus1';
  /** NextFromUTC of an empty status reply: null (default), "" or the FromUTC asked for. */
  emptyNextFromUTC: 'null' | 'empty' | 'from';
  /**
   * A status record becomes visible this many seconds after its StatusUTC (0: at once), so
   * it lands in a second that a poll may already have read (the real gateway's late records).
   */
  lateBySeconds: number;
  /**
   * A hostile status feed (issue 43), 0 (off) by default: every reply holds this many new
   * made-up records, all in the second asked for, with `NextFromUTC` that same second, so
   * the feed never moves on by itself (keep it under `maxStatuses`: never a full reply).
   */
  heldSecondRecords: number;
  /**
   * Crowded seconds of the status feed (issue 45), 0 (off) by default: each second in which a
   * to-mobile message's state is recorded first gets this many made-up closed records of the
   * same account (other traffic), so with N at or above `maxStatuses` that message's records
   * are past the first full reply of their second and no FromUTC can fetch them.
   */
  crowdStatusRecords: number;
  /**
   * A terminal's change (a mode message delivered, the living fleet's changes) gets an
   * UpdateUTC this many seconds back (0: now), so info/terminal_updates serves it late, in a
   * second a poll may already have read. For a few late ones at once: `/_sim/terminal-updates` `lateCount`.
   */
  lateUpdatesBySeconds: number;
  /** Not real, kind: serve a second only once it is complete. Off; no poller test uses it. */
  completedSecondsOnly: boolean;
  /**
   * How a throttled call is answered: `http` (429, the default) or `errorId` (HTTP 200 with a
   * top-level ErrorID 24579 for SEND, 24581 for GET), as the real gateway can.
   */
  throttleAs: 'http' | 'errorId';
  /** The next N calls of a throttle group (SEND or GET) are throttled whatever the window says. */
  throttleNext: number;
  /** A path before `/api/v{version}` (e.g. `/gw/v1`: the gateway then lives at `{url}/gw/v1/api/v1.0/`). */
  basePath: string;
  /** Echo `DestinationID` `as-sent`, in `lower` case, or `padded` with spaces. */
  echoDestination: 'as-sent' | 'lower' | 'padded';
  /** Give per-item results `in-order` or `reversed` (match them by UserMessageID). */
  resultOrder: 'in-order' | 'reversed';
  /** The token endpoint answers a refused login with `http` 401 or with HTTP 200 + `error`. */
  tokenErrorAs: 'http' | 'ok-with-error';
  /** Most destinations of one submit/to_multiple call (not public; guess 100). */
  maxDestinations: number;
  /** Most IDs of one get/fw_messages or get/fw_statuses call. */
  maxIds: number;
  /** Most terminals in one info/terminal_updates reply. */
  maxTerminalUpdates: number;
  /** Largest PageSize of info/terminals (and its default). */
  maxPageSize: number;
  /** info/broadcast and info/subaccount/list in the `current` form or the `predecessor`'s (BroadcastInfos; Name, AccountID as text). */
  infoForm: 'current' | 'predecessor';
  /** The page after the last of info/terminals: `Terminals` empty (default), null, or missing (all seen in the predecessor's habits). */
  inventoryEnd: 'empty' | 'null' | 'missing';
  /**
   * A hostile inventory (issue 43), off by default: `cycle` answers the page after the second
   * page's last PrimeID with the first page again (SinceIDs go A, B, A, B, ...); `endless`
   * follows the fleet's last page with full pages of made-up terminals (`ZZZZ` and a count,
   * PrimeIDs going up) for ever.
   */
  inventoryLoop: 'none' | 'cycle' | 'endless';
  /** IsClosed of a broadcast message in its final State 7 (the facts: IsClosed is true for 1 to 5 only). */
  broadcastIsClosed: boolean;
}

export const DEFAULT_TERMINAL_OPTIONS: TerminalOptions = {
  rateLimitCalls: 5,
  rateLimitWindowMs: 60_000,
  maxConcurrent: 3,
  maxBatch: 100,
  maxStatuses: 500,
  tokenTtlSeconds: 3600,
  retryAfter: false,
  serviceCalls: 0,
  serviceWindowMs: 60_000,
  sendingAfterMs: 2000,
  receivedAfterMs: 5000,
  offlineTimeoutMs: 60_000,
  acceptUnknownTerminals: false,
  failedId: 'omit',
  emptyNextFromUTC: 'null',
  lateBySeconds: 0,
  heldSecondRecords: 0,
  crowdStatusRecords: 0,
  lateUpdatesBySeconds: 0,
  completedSecondsOnly: false,
  throttleAs: 'http',
  throttleNext: 0,
  basePath: '',
  echoDestination: 'as-sent',
  resultOrder: 'in-order',
  tokenErrorAs: 'http',
  maxDestinations: 100,
  maxIds: 100,
  maxTerminalUpdates: 500,
  maxPageSize: 1000,
  infoForm: 'current',
  inventoryEnd: 'empty',
  inventoryLoop: 'none',
  broadcastIsClosed: false,
};

export const DEFAULT_ACCOUNTS: Account[] = [
  { clientId: 'demo', clientSecret: 'demo-secret', staticTokens: ['demo-token'], superAccount: true, subaccounts: ['sub'], accountNumber: 10001 },
  { clientId: 'sub', clientSecret: 'sub-secret', staticTokens: ['sub-token'], superAccount: false, subaccounts: [], accountNumber: 10002 },
];

export const DEFAULT_TERMINALS: Array<Pick<Terminal, 'id' | 'family' | 'online'>> = [
  { id: '01000001SKYA001', family: 'IDP', online: true },
  { id: '01000002SKYA002', family: 'IDP', online: false },
  { id: '01000003SKYB003', family: 'OGx', online: true },
  { id: '01000004SKYB004', family: 'OGx', online: false },
];

/** A to-mobile message (mode, or general from messages.ts) and where it is in its life. */
export interface Message {
  id: bigint;
  account: string;
  terminal: string;
  mode: number;
  wakeup: number;
  createdAt: number;
  createSec: number;
  state: number;
  closed: boolean;
  /** A message to a broadcast ID: it ends in State 7 (BROADCAST_SUBMITTED). */
  broadcast?: boolean;
  /** In its final state though not closed (a broadcast in State 7 with broadcastIsClosed off). */
  ended?: boolean;
  /** What was sent (get/fw_messages gives it back). */
  payload?: { RawPayload?: string; Payload?: unknown };
  /** The second of its last state change, and its reference number. */
  statusSec?: number;
  referenceNumber?: number;
}

/** A broadcast ID: 8 digits, GRP, 4 characters (e.g. 12345678GRPAB12). */
export const BROADCAST_ID = /^\d{8}GRP[0-9A-Z]{4}$/;

/** Throttle groups: info/* in INFO, get/* in GET, submit/* and terminal/* in SEND. */
export type ThrottleGroup = 'SEND' | 'GET' | 'INFO';

/** The accounts whose data `account` sees: its own and, for a super account, its subaccounts'. */
export function visibleAccounts(accounts: Map<string, Account>, account: string): Set<string> {
  return new Set([account, ...(accounts.get(account)?.subaccounts ?? [])]);
}

/** A terminal ID of the prime form (acceptUnknownTerminals turns such unknown IDs into terminals). */
export const PRIME_ID = /^\d{8}SKY[0-9A-F]{4}$/;

/** Counters for tests and benchmarks. */
export interface TerminalCounters {
  submitted: number;
  rejected: number;
  cancelled: number;
  statusRecordsServed: number;
  throttled: number;
  unauthorized: number;
}

/**
 * What the gateway's parts share of it (the gateway itself fits): an interface rather than
 * an import of TerminalGateway, which imports the parts (no import circle).
 */
export interface TerminalContext {
  /** Replaced as a whole by configure(): read it through the context each time. */
  readonly options: TerminalOptions;
  readonly now: () => number;
  readonly counters: TerminalCounters;
  readonly accounts: Map<string, Account>;
  readonly terminals: Map<string, Terminal>;
  addTerminal(t: Partial<Terminal> & { id: string }): Terminal;
  /** Counts each message created and each cancellation asked (terminal-creations.ts). */
  readonly creations?: {
    created(m: Message): void;
    cancelAsked(id: string, cancelled: boolean): void;
  };
  /** A terminal's mode or wake-up changed (a mode message arrived): the fleet records an update. */
  terminalChanged?(term: Terminal): void;
}
