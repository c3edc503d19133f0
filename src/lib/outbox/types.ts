/**
 * The outbox's seams (issue 45; shared/spec/nodes.md "Commands that survive the edge").
 *
 * Three parts meet here, each replaceable on its own:
 * - an `OutboxStore` keeps entries durably (file-store.ts: an append-only log in the user
 *   directory; a Redis store implements the same interface, each call atomic: one MULTI
 *   or one script);
 * - the engine, `Outbox` (outbox.ts), decides: bounds, TTL, order, batches, back-off,
 *   reconciliation, one outcome per msg;
 * - the node layer gives it an `OutboxSender` (one batch, one call, paced by the account's
 *   limits) and an `OutboxReconciler` (was a send whose outcome is unknown created at the
 *   gateway?, real-services.md "Outbox reconciliation").
 *
 * Plain data only: every value is JSON-safe (int64 IDs as decimal strings), so a store may
 * write it as it is. Times are ms since the epoch (Date.now()).
 */

/** A JSON value, as a store keeps it. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

/**
 * What an entry is sent as: `message` one item of submit/messages, `multiple` one
 * submit/to_multiple body, `mode` one terminal-mode change, `cancel` one cancellation.
 * A batch holds entries of one kind only.
 */
export type OutboxKind = 'message' | 'multiple' | 'mode' | 'cancel';
export const OUTBOX_KINDS: readonly OutboxKind[] = ['message', 'multiple', 'mode', 'cancel'];

/** One entry as a msg gives it to `Outbox.accept`. */
export interface NewEntry {
  kind: OutboxKind;
  /** The request body item, JSON-safe (int64 IDs as decimal strings). */
  item: JsonValue;
}

/**
 * One send: written (`markSending`) before the request leaves, so a crash during it is
 * found at open() and reconciled. `gatewayTime` is the gateway's clock just before the
 * send (`ServerUTC`, "yyyy-MM-dd HH:mm:ss"), when the sender could read it: the
 * reconciler reads the status feed from a little before it.
 */
export interface SendAttempt {
  /** Unique per attempt (time-ordered, like entry ids). */
  id: string;
  startedAt: number;
  gatewayTime?: string;
}

/** How an entry ended. Only these end an entry; everything else keeps it waiting. */
export type EntryOutcome =
  /** The gateway accepted it: its message (or cancel request) ID, decimal string. */
  | { result: 'accepted'; gatewayId: string; at: number }
  /** The gateway answered it with an error for this entry (per-entry ErrorID). */
  | { result: 'rejected'; errorId: number; errorName: string; at: number }
  /** The gateway refused the request as such (4xx other than 401/403/429): sending again cannot help. */
  | { result: 'failed'; code: string; message: string; at: number }
  /** Its TTL ended before it could be sent; it was never sent. */
  | { result: 'EXPIRED'; at: number }
  /** The outbox was at its bound (whenFull drop-oldest); it was never sent. */
  | { result: 'OUTBOX_FULL'; at: number }
  /** Sent, no answer, and the gateway's records cannot tell whether it was created (`message` says why): never sent again. `code` the attempt's failure, NETWORK or TIMEOUT. */
  | { result: 'unknown'; code: string; message: string; at: number };

/**
 * Where an entry is: `waiting` to be sent, `sending` (an attempt started whose outcome is
 * not recorded: unknown until reconciled), or `ended`.
 */
export type EntryState =
  | { phase: 'waiting' }
  | { phase: 'sending'; attempt: SendAttempt }
  | { phase: 'ended'; outcome: EntryOutcome };

/**
 * One entry as the engine holds it. `item` is absent where a store leaves payloads on disk
 * (open() gives heads; `load` gives the items of a batch).
 */
export interface OutboxEntry {
  /** `<msgKey>/<index>`: unique, time-ordered with its msg. */
  id: string;
  /** The accepted msg it belongs to (`AcceptedMsg.key`). */
  msgKey: string;
  kind: OutboxKind;
  item?: JsonValue;
  /** 0 (first) to 9. */
  priority: number;
  /** Acceptance order in this outbox (entries of one msg are consecutive). */
  seq: number;
  acceptedAt: number;
  /** Not sent from this time on: ends EXPIRED. */
  expiresAt: number;
  /** Sends started (markSending calls). */
  attempts: number;
  state: EntryState;
  /** Started of the attempt that got an answer, once sent (for msg.outbox.sentAt). */
  sentAt?: number;
}

/** An accepted msg: kept once, whatever its number of entries. */
export interface AcceptedMsg {
  /** Unique per acceptance (a msg accepted twice is two keys), time-ordered. */
  key: string;
  /** The input msg's `_msgid` (informational). */
  msgId: string;
  /** The msg's JSON properties as accepted (what the outputs carry after a restart). */
  json: JsonObject;
  acceptedAt: number;
  /** The entry ids of this msg, in order. */
  entryIds: string[];
}

/** A msg as open() finds it: its JSON is read with `msgJson` when its outcome is emitted. */
export interface StoredMsg {
  key: string;
  msgId: string;
  acceptedAt: number;
  entryIds: string[];
  /** What this msg takes in the store (counted against maxBytes until it is forgotten). */
  bytes: number;
}

/** What open() found. */
export interface OpenedStore {
  /** Every entry not forgotten: waiting, sending and ended (whose msg was not yet emitted). */
  entries: OutboxEntry[];
  msgs: StoredMsg[];
  /** The next free seq. */
  nextSeq: number;
  /** Records that could not be read: a torn last one, corrupt ones in the middle. */
  lost: { torn: number; corrupt: number };
}

export interface StoreFigures {
  /** Entries not ended. */
  entries: number;
  /** Bytes of the live msgs (what the bound counts). */
  bytes: number;
  /** What the store takes now (a log's file size: live plus not yet reclaimed). */
  storedBytes: number;
}

/**
 * Durable operations. Each resolves only once what it changed is durable (synced to disk,
 * or acknowledged by Redis), and is all or nothing. A failure rejects with a
 * GatewayError STORAGE (or SHARED_STATE for Redis) and changes nothing that the engine
 * relies on. Calls may overlap (the file store commits them in groups); their effects
 * are applied in call order.
 */
export interface OutboxStore {
  open(): Promise<OpenedStore>;
  /**
   * Optional, the same as open() one msg at a time (in acceptance order, with its entries
   * in order): the engine keeps them compact at once, so a large backlog is never held as
   * two arrays of objects. The engine uses it when a store has it, else open().
   */
  openEach?(onMsg: (msg: StoredMsg, entries: OutboxEntry[]) => void): Promise<Pick<OpenedStore, 'nextSeq' | 'lost'>>;
  /**
   * True when accepts called while earlier ones are in flight are applied and resolve in
   * call order, those that come during one sync sharing the next (group commit: the file
   * store). Absent: the caller waits for each accept before the next (a fleet's store).
   */
  readonly groupsAccepts?: boolean;
  /** The bytes `accept(msg, entries)` would take (for the engine's bound check; sync). */
  sizeOf(msg: AcceptedMsg, entries: OutboxEntry[]): number;
  /**
   * Keeps a msg and its entries (all waiting). Assigns seqs: resolves with the seq of the
   * first entry (the others follow it), so a shared store can number across a fleet.
   */
  accept(msg: AcceptedMsg, entries: OutboxEntry[]): Promise<number>;
  /** The items of these entries (an entry forgotten meanwhile is left out). */
  load(ids: string[]): Promise<Map<string, JsonValue>>;
  /** A msg's JSON as accepted (undefined when it was forgotten). */
  msgJson(key: string): Promise<JsonObject | undefined>;
  /**
   * The entries (waiting) are being sent now: attempts + 1 each. `seenThrough` (a fleet's
   * store): the caller read every entry up to that seq; an older waiting entry of the same
   * priority after it (another instance's, not read yet) refuses the mark (SHARED_STATE,
   * reason 'unseen'), so nothing overtakes it.
   */
  markSending(ids: string[], attempt: SendAttempt, seenThrough?: number): Promise<void>;
  /**
   * These entries ended. A fleet's store may answer `taken`: ids it did not end because another
   * writer had (ended otherwise, or forgotten: the lease's next holder, which emits their msgs);
   * the caller emits nothing for them (one outcome per msg).
   */
  end(ends: Array<{ id: string; outcome: EntryOutcome }>): Promise<void | { taken: string[] }>;
  /** A fleet's store: whether this instance emits this ended msg's outcome: 0 yes, -1 no (another does or did), else ms to ask again. */
  claim?(key: string): Promise<number>;
  /** These sending entries were not created at the gateway: waiting again, in their place. */
  backToWaiting(ids: string[]): Promise<void>;
  /** These msgs' outcomes were emitted: they and their entries are forgotten (space reclaimed). */
  forget(msgKeys: string[]): Promise<void>;
  figures(): StoreFigures;
  close(): Promise<void>;
  /**
   * A store shared by a fleet (Redis) has these four (fleet.ts): only the instance that holds
   * the outbox's drain lease drains; the others accept only. `join()` takes part in the
   * lease instead of open() (nothing read); `holds()` says whether this instance holds it
   * now; `onLease` calls back when it is gained (true) or lost (false), and returns its
   * removal; `openAfter(seq)` reads the msgs whose entries came after `seq` (accepted by
   * any instance), as open() does (`nextSeq - 1` is the last seq it read through).
   */
  join?(): Promise<void>;
  holds?(): boolean;
  onLease?(listener: (held: boolean) => void): () => void;
  openAfter?(seq: number): Promise<OpenedStore>;
  /** Optional (a fleet's store): its figures and oldest entry not ended, read now (the status of an instance that does not drain). */
  summary?(): Promise<StoreSummary>;
}

/** What a fleet's outbox holds, as read from its store now. */
export interface StoreSummary {
  entries: number;
  bytes: number;
  /** Acceptance time of the oldest entry not ended (absent: none). */
  oldestAt?: number;
}

/** One batch handed to the sender: entries of one kind, in order, with their items. */
export interface SendBatch {
  outbox: string;
  kind: OutboxKind;
  attempt: SendAttempt;
  entries: Array<OutboxEntry & { item: JsonValue }>;
}

/**
 * The sender's answer for one entry. `retry`: the request was answered and did not create
 * it, or never left (network refused, 5xx, 429 or a throttling ErrorID, 401/403): it waits
 * (with back-off, or `retryAfterMs`). `unknown`: the request may have left (a reset after
 * it was written, a timeout): it must be reconciled before anything is sent again.
 */
export type SendOutcome =
  | { result: 'accepted'; gatewayId: string }
  | { result: 'rejected'; errorId: number; errorName: string }
  | { result: 'failed'; code: string; message: string }
  | { result: 'retry'; reason: string; retryAfterMs?: number }
  /** `code`: the attempt's own failure, as the msg's error gives it when the outcome cannot be told (absent: NETWORK). */
  | { result: 'unknown'; reason: string; code?: 'NETWORK' | 'TIMEOUT' };

/** Provided by the node layer (or a TerminalClient). */
export interface OutboxSender {
  /**
   * The gateway's time now (`ServerUTC`), read before an attempt is recorded. Optional; a
   * rejection (the link is down) keeps the batch waiting with back-off, nothing recorded.
   */
  gatewayTime?(): Promise<string | undefined>;
  /** Sends one batch (one call): one outcome per entry, in the batch's order. A throw counts as `unknown` for all. */
  send(batch: SendBatch): Promise<SendOutcome[]>;
}

/** Per entry of an unknown attempt: `found` at the gateway, `absent` (send again), `not-yet` (ask later), `unknown` (cannot be told, `why`: it ends, never sent again). */
export type ReconcileOutcome =
  | { result: 'found'; gatewayId: string }
  | { result: 'absent' }
  | { result: 'unknown'; why: string }
  | { result: 'not-yet'; retryAfterMs?: number };

/** What the drain knows of an unknown send besides its attempt. */
export interface ReconcileContext {
  /**
   * When the call ended without an answer (local ms): a request may have left (or reached the
   * gateway) until then, so the settle time counts from it too. For a send found 'sending' at
   * open (the process died during it, or another instance of a fleet held it) the open's time.
   */
  unknownSince?: number;
}

export interface OutboxReconciler {
  /** One outcome per entry, in order. A throw counts as `not-yet` for all. */
  reconcile(attempt: SendAttempt, entries: Array<OutboxEntry & { item: JsonValue }>, context?: ReconcileContext): Promise<ReconcileOutcome[]>;
}

export type WhenFull = 'reject' | 'drop-oldest';

export interface OutboxOptions {
  /** The outbox's identity (`outboxName`, or the node id). */
  name: string;
  store: OutboxStore;
  sender: OutboxSender;
  reconciler: OutboxReconciler;
  /** Default TTL of an entry (s). Default 3600. */
  ttlSeconds?: number;
  /** Entries not ended, at most. Default 10000. */
  maxEntries?: number;
  /** Bytes of live msgs in the store, at most. Default 64 MiB. */
  maxBytes?: number;
  whenFull?: WhenFull;
  /** Entries per batch, at most. Default 100. */
  batchMax?: number;
  /** Per kind, over batchMax (default: `multiple` 1, a to_multiple body is one call). */
  batchMaxByKind?: Partial<Record<OutboxKind, number>>;
  /** Back-off after a retry: first and longest wait (ms). Defaults 1000 and 60000. */
  backoffMs?: { first: number; max: number };
  /** Wait before asking the reconciler again after `not-yet` (ms). Default 5000. */
  reconcileEveryMs?: number;
  /** A fleet's store (fleet.ts): how often the drainer reads what other instances accepted (ms). Default 1000. */
  refreshMs?: number;
  /**
   * Optional: hands a msg's outcome to whoever takes it, before the 'outcome' event. False: no
   * one can now (the Node-RED nodes on the outbox are closing): it is neither emitted nor
   * forgotten, and the next open of the outbox emits it.
   */
  deliver?: (o: MsgOutcome) => boolean;
  /** The clock (tests). */
  now?: () => number;
}

/** Per msg accepted: `ttlSeconds` (msg.ttl) and `priority` (msg.priority, default 4). */
export interface AcceptOptions {
  ttlSeconds?: number;
  priority?: number;
}

export interface AcceptReceipt {
  key: string;
  ids: string[];
  /** A fleet's instance that does not drain now: another one sends the msg and emits its outcome. */
  standby?: true;
}

/** One entry of a msg's outcome. */
export interface EntryResult {
  id: string;
  kind: OutboxKind;
  item?: JsonValue;
  outcome: EntryOutcome;
  attempts: number;
  acceptedAt: number;
  sentAt?: number;
}

/**
 * Event 'outcome': a msg whose entries have all ended, emitted once (also after a
 * restart, from the msg's JSON as accepted). The msg is forgotten (store.forget) after the
 * listeners ran: a crash between the two emits it again at the next open (at least once
 * across a crash, exactly once otherwise).
 */
export interface MsgOutcome {
  outbox: string;
  key: string;
  msgId: string;
  /** The msg's JSON properties as accepted (undefined when the store lost its record). */
  json?: JsonObject;
  acceptedAt: number;
  entries: EntryResult[];
}

/** Event 'state': what the status shows. */
export interface OutboxState {
  outbox: string;
  /** Entries not ended (waiting or sending). */
  waiting: number;
  /** Entries in an attempt whose outcome is not known yet. */
  unknown: number;
  bytes: number;
  /** Acceptance time of the oldest entry not ended (undefined when none waits). */
  oldestAt?: number;
  /** The last reason sending waits (link down, 429, 401...), cleared by a success. */
  problem?: string;
  /** 'idle' | 'sending' | 'backoff' | 'reconciling' | 'closed' */
  phase: 'idle' | 'sending' | 'backoff' | 'reconciling' | 'closed';
}

/** Event 'warning': said once (records lost at open, a msg whose record was lost). */
export interface OutboxWarning {
  outbox: string;
  message: string;
}

/**
 * The engine (outbox.ts `Outbox implements OutboxApi`, an EventEmitter of 'outcome',
 * 'state' and 'warning'). Attach listeners, then `open()`: it loads the store, emits the
 * outcomes a crash left unemitted, reconciles the attempts it left unknown, then drains.
 *
 * Order: priority 0 first, then acceptance (seq). One batch is in flight at a time, and a
 * batch is the longest run of entries of one kind at the head of that order (at most
 * batchMax), so nothing overtakes anything: per destination and for the whole outbox.
 * While any entry's outcome is unknown, nothing is sent (the whole outbox waits for its
 * reconciliation: simpler than per destination, and an unknown send is rare).
 */
export interface OutboxApi {
  readonly name: string;
  open(): Promise<void>;
  /**
   * Keeps a msg's entries durably; resolves once they are (then the node takes the next
   * msg). Rejects with BAD_INPUT (a priority or TTL out of range, no entries), OUTBOX_FULL
   * (whenFull reject, or a msg larger than the bounds: nothing kept) or STORAGE.
   */
  accept(msgId: string, json: JsonObject, entries: NewEntry[], opts?: AcceptOptions): Promise<AcceptReceipt>;
  state(): OutboxState;
  /** Stops sending and timers (an attempt in flight finishes and is recorded), closes the store. */
  close(): Promise<void>;
  on(event: 'outcome', listener: (o: MsgOutcome) => void): this;
  on(event: 'state', listener: (s: OutboxState) => void): this;
  on(event: 'warning', listener: (w: OutboxWarning) => void): this;
  /** A fleet's store: this instance drains now (true: the lease gained, its entries loaded) or no longer (false). */
  on(event: 'lease', listener: (draining: boolean) => void): this;
}
