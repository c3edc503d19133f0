/**
 * A sending node with `outbox` on (issue 45; shared/spec/nodes.md "Commands that survive
 * the edge"): iotgw-send-message, iotgw-terminal-mode and iotgw-cancel hand their checked
 * items here instead of sending them.
 *
 * - Input: msgs are taken in arrival order: the node's own checks (BAD_INPUT at once,
 *   nothing kept), msg.ttl and msg.priority, then the msg's JSON properties and its entries
 *   go to `outbox.accept`, which resolves once they are durable; only then is the msg
 *   accepted (its outcome followed). With a file store (`outbox.groupsAccepts`) the next msg
 *   goes to the store without waiting for that: msgs that arrive while a sync runs are
 *   written together and synced once after it (group commit), each acknowledged only after
 *   the sync that covers it, in arrival order. A fleet's store (Redis) takes one msg at a
 *   time, the next once the previous is acknowledged. An acceptance that fails ends the msg
 *   with done(err) (OUTBOX_FULL, STORAGE).
 * - Outcome: when all its entries ended, the msg ends: the node's outputs as without the
 *   outbox (`deliver`), with `msg.outbox = {key, acceptedAt, sentAt, attempts}`; or done(err)
 *   for entries that ended EXPIRED, OUTBOX_FULL, failed or unknown (`err.entries` lists them,
 *   `msg.results` has what the others gave; unknown: sent, no answer, the gateway's records
 *   cannot tell, never sent again: NETWORK or TIMEOUT with `err.outcome` 'unknown').
 * - A msg accepted before a restart or a redeploy (or by a node since deleted, or by another
 *   instance of a fleet) ends through the node that has the outbox when its outcome comes: the
 *   msg rebuilt from its JSON properties as accepted comes in again (node.receive, known by
 *   `replays`, never accepted again) and ends as a msg does: outputs and done() (a Complete
 *   node sees it), or done(err) (a Catch node). A redeploy or a stop does not end the msgs that
 *   wait (their done() is left: the node that has the outbox next ends them, once).
 * - Status: `outbox: 1,204 waiting, oldest 38 min` (red while the account is refused). An
 *   outbox that cannot be opened (its folder in use by another process, STORAGE) turns the
 *   status red and is logged as an error once; every msg then ends with done(err) until it opens
 *   (a folder in use is tried again every 5 s: the holder may stop).
 */
import type { Node, NodeAPI, NodeMessage, NodeMessageInFlow } from 'node-red';
import { GatewayError, badInput, toGatewayError } from '../common/errors';
import { showValue } from '../common/int64';
import { numberSetting, type Msg } from './node-kit';
import { IN_USE_RETRY_MS, acquireOutbox, outboxSettleSetting, releaseOutbox, type OutboxSettings, type OutboxUser, type SharedOutbox } from './outbox-registry';
import type { AcceptOptions, EntryResult, JsonObject, MsgOutcome, NewEntry, OutboxState } from '../outbox/types';
import type { GatewayNode } from './config-nodes';
import { BAD_END, entryResults, outboxInfo, outcomeError } from '../outbox/results';
import { splitResults } from './submit-results';
import type { SubmitResult } from '../api/terminal';

export interface OutboxConfig {
  id: string;
  outbox?: string;
  outboxName?: string;
  ttlSeconds?: string | number;
  outboxMaxEntries?: string | number;
  outboxMaxBytes?: string | number;
  whenFull?: string;
}

/** The node's outbox settings, or undefined when the outbox is off (absent in older flows). */
export function outboxSettings(config: OutboxConfig): OutboxSettings | undefined {
  if (config.outbox !== 'on') return undefined;
  const name = typeof config.outboxName === 'string' && config.outboxName.trim() ? config.outboxName.trim() : config.id;
  return {
    name,
    ttlSeconds: numberSetting(config.ttlSeconds, 3600, 1, 365 * 86400),
    maxEntries: Math.round(numberSetting(config.outboxMaxEntries, 10000, 1, 10_000_000)),
    maxBytes: Math.round(numberSetting(config.outboxMaxBytes, 64 * 1024 * 1024, 1024, 2 ** 40)),
    whenFull: config.whenFull === 'drop-oldest' ? 'drop-oldest' : 'reject',
  };
}

/** msg.ttl (seconds above 0) and msg.priority (an integer 0 to 9): BAD_INPUT when out of range. */
export function msgOutboxOptions(msg: Msg): AcceptOptions {
  const o: AcceptOptions = {};
  if (msg.ttl !== undefined && msg.ttl !== null) {
    if (typeof msg.ttl !== 'number' || !Number.isFinite(msg.ttl) || msg.ttl <= 0) throw badInput('msg.ttl', `must be a number of seconds above 0, not ${showValue(msg.ttl)}`);
    o.ttlSeconds = msg.ttl;
  }
  if (msg.priority !== undefined && msg.priority !== null) {
    if (typeof msg.priority !== 'number' || !Number.isInteger(msg.priority) || msg.priority < 0 || msg.priority > 9) {
      throw badInput('msg.priority', `must be a whole number from 0 (first) to 9, not ${showValue(msg.priority)}`);
    }
    o.priority = msg.priority;
  }
  return o;
}

/** The msg's JSON properties (bigints as decimal text); the names of those that are not JSON (msg.req, msg.res...). */
export function jsonProps(msg: Msg): { json: JsonObject; dropped: string[] } {
  const json: JsonObject = {};
  const dropped: string[] = [];
  for (const [k, v] of Object.entries(msg)) {
    if (k === 'req' || k === 'res' || typeof v === 'function' || typeof v === 'symbol') {
      dropped.push(k);
      continue;
    }
    try {
      const text = JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? x.toString() : x));
      if (text === undefined) dropped.push(k);
      else json[k] = JSON.parse(text) as JsonObject[string];
    } catch {
      dropped.push(k);
    }
  }
  return { json, dropped };
}

/** What a node gives the outbox layer. */
export interface OutboxNodeSpec {
  /** The msg's entries, checked (throws BAD_INPUT). */
  entries(msg: Msg): NewEntry[];
  /**
   * The outputs for ended entries (accepted and rejected, in entry order): the node's own
   * results, as without the outbox.
   */
  deliver(msg: Msg, results: EntryResult[]): Array<NodeMessage | null> | NodeMessage;
  /** What err.entries and msg.results say of an entry (its results, as the outputs give them). */
  describe(r: EntryResult): unknown[];
}

/** "38 min", "2 h", "40 s" */
function age(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  if (s < 172800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} d`;
}

export function outboxStatusText(RED: NodeAPI, type: string, s: OutboxState): string {
  const n = s.waiting.toLocaleString('en-US');
  const key = s.waiting === 0 ? 'outboxEmpty' : 'outboxWaiting';
  const vars = { n, oldest: s.oldestAt === undefined ? '0 s' : age(Date.now() - s.oldestAt) };
  const said = RED._(`${type}.status.${key}`, vars);
  const text = said && !said.endsWith(key) ? said : s.waiting === 0 ? 'outbox: empty' : `outbox: ${n} waiting, oldest ${vars.oldest}`;
  return s.problem ? `${text} (${s.problem.slice(0, 60)})` : text;
}

interface Pending {
  msg: Msg;
  send: (m: Array<NodeMessage | null> | NodeMessage) => void;
  done: (err?: Error) => void;
}

/** Runs a sending node with its outbox (see the file's comment). */
export function runWithOutbox(RED: NodeAPI, node: Node, type: string, settings: OutboxSettings, account: GatewayNode | GatewayError, spec: OutboxNodeSpec): void {
  new OutboxNodeRunner(RED, node, type, settings, account, spec).start();
}

class OutboxNodeRunner implements OutboxUser {
  private readonly pending = new Map<string, Pending>();
  /** Msgs this node sends itself to end an outcome it did not follow (see the file's comment). */
  private readonly replays = new WeakMap<object, MsgOutcome>();
  private isClosing = false;
  private chain: Promise<void> = Promise.resolve();
  /** Accepts handed to a store that groups them, not resolved yet (close waits for them). */
  private readonly accepting = new Set<Promise<void>>();
  private authProblem: string | undefined;
  private lastState: OutboxState | undefined;
  private warnedDropped = false;
  private shared!: SharedOutbox;

  constructor(
    private readonly RED: NodeAPI,
    readonly node: Node,
    private readonly type: string,
    private readonly settings: OutboxSettings,
    private readonly account: GatewayNode | GatewayError,
    private readonly spec: OutboxNodeSpec,
  ) {}

  gw = (): GatewayNode | undefined => (this.account instanceof GatewayError ? undefined : this.account);
  owns = (key: string): boolean => this.pending.has(key);
  closing = (): boolean => this.isClosing;

  start(): void {
    const userDir = (this.RED.settings as { userDir?: string }).userDir ?? process.cwd();
    this.shared = acquireOutbox({ ...this.settings, settleSeconds: outboxSettleSetting(this.RED.settings) }, this, userDir).shared;
    this.shared.opened.then(
      () => this.onState(this.shared.outbox.state()),
      (e: unknown) => {
        // E.g. the folder in use by another process: said once here, and by each msg's done(err).
        const err = this.notOpened(e);
        this.node.error(`the outbox "${this.settings.name}" could not be opened: ${err.message}; each msg ends with this error until it can (tried again every ${IN_USE_RETRY_MS / 1000} s)`);
      },
    );
    this.node.on('input', (m: NodeMessageInFlow, send, done) => {
      const msg = m as Msg;
      const replay = this.replays.get(m);
      if (replay) {
        this.replays.delete(m);
        return this.finish(replay, msg, { msg, send, done });
      }
      this.chain = this.chain.then(() => this.take(msg, { msg, send, done }));
    });
    this.node.on('close', (removed: boolean, done: () => void) => this.close(removed, done));
  }

  onAuth(problem: string | undefined): void {
    if (problem && !this.authProblem) this.node.warn(`the outbox "${this.settings.name}" cannot send: ${problem}; its entries wait until the account is fixed and deployed`);
    this.authProblem = problem;
    this.show();
  }

  onOutcome(o: MsgOutcome, owned: boolean): void {
    const p = owned ? this.pending.get(o.key) : undefined;
    this.pending.delete(o.key);
    if (p) return this.finish(o, p.msg, p);
    const msg = { ...(o.json ?? {}), _msgid: (o.json?._msgid as string) ?? this.RED.util.generateId() } as Msg;
    this.replays.set(msg, o);
    this.node.receive(msg as NodeMessage);
  }

  /** Another instance drains now: it emits the outcomes of the msgs this node followed; they end here (no output). */
  onHandover(): void {
    for (const p of this.pending.values()) p.done();
    this.pending.clear();
  }

  onState(s: OutboxState): void {
    this.lastState = s;
    this.show();
  }

  onWarning(message: string): void {
    this.node.warn(message);
  }

  /** The outbox could not be opened: the status says why (red), the error is returned. */
  private notOpened(e: unknown): GatewayError {
    const err = toGatewayError(e);
    this.node.status({ fill: 'red', shape: 'ring', text: err.message.slice(0, 80) });
    return err;
  }

  private show(): void {
    const s = this.lastState;
    if (!s) return;
    this.node.status({ fill: this.authProblem ? 'red' : s.problem ? 'yellow' : 'green', shape: s.waiting ? 'ring' : 'dot', text: outboxStatusText(this.RED, this.type, s) });
  }

  private finish(o: MsgOutcome, msg: Msg, p: Pending): void {
    msg.outbox = outboxInfo(o);
    const err = outcomeError(o);
    if (err) {
      const bad = o.entries.filter((e) => BAD_END.has(e.outcome.result));
      const entries = bad.map((e) => ({ id: e.id, kind: e.kind, outcome: e.outcome, results: this.spec.describe(e) }));
      (err as GatewayError & { entries?: unknown }).entries = entries;
      // A Catch node's msg.error keeps the message and code only: the entries go on the msg too.
      msg.failed = entries;
      msg.results = o.entries.filter((e) => !BAD_END.has(e.outcome.result)).flatMap((e) => this.spec.describe(e));
      p.done(err);
      return;
    }
    const out = this.spec.deliver(msg, o.entries);
    p.send(out);
    p.done();
  }

  /**
   * One msg: checked, its entries handed to the outbox. Resolves (so the next msg is taken)
   * once they are durable, or at once when the store groups accepts (their acknowledgement
   * then comes with the sync that covers them).
   */
  private async take(msg: Msg, p: Pending): Promise<void> {
    try {
      if (this.account instanceof GatewayError) throw this.account;
      const entries = this.spec.entries(msg);
      if (msg.query !== undefined && msg.query !== null) throw badInput('msg.query', 'is not kept by the outbox; remove it, or turn the outbox off for calls that need it');
      const opts = msgOutboxOptions(msg);
      const { json, dropped } = jsonProps(msg);
      if (dropped.length && !this.warnedDropped) {
        this.warnedDropped = true;
        this.node.warn(`the outbox keeps a msg's JSON properties only: ${dropped.slice(0, 5).map((d) => `msg.${d}`).join(', ')} not kept (outputs after a restart go without them)`);
      }
      await this.shared.opened.catch((e: unknown) => {
        throw this.notOpened(e);
      });
      const ob = this.shared.outbox;
      const accepted = ob.accept(String(msg._msgid ?? ''), json, entries, opts).then((receipt) => {
        // A fleet's instance that does not drain: the instance that sends it emits its outcome.
        if (receipt.standby) p.done();
        else if (!this.isClosing) this.pending.set(receipt.key, p); // accepted while closing: left open, as the others
      });
      if (ob.groupsAccepts()) {
        const settled = accepted.catch((e: unknown) => this.refused(msg, p, e));
        this.accepting.add(settled);
        void settled.finally(() => this.accepting.delete(settled));
        return;
      }
      await accepted;
    } catch (e) {
      this.refused(msg, p, e);
    }
  }

  private refused(msg: Msg, p: Pending, e: unknown): void {
    const err = toGatewayError(e);
    if (err.statusCode !== undefined) msg.statusCode = err.statusCode;
    p.done(err);
  }

  /** Msgs waiting for their outcome are left open (not ended here): the node that has this outbox next ends them. */
  private close(removed: boolean, done: () => void): void {
    this.isClosing = true;
    this.pending.clear();
    void this.chain.then(async () => {
      // Accepts still being synced end as they come: refused with done(err), or accepted and left open as the others.
      await Promise.allSettled([...this.accepting]);
      this.pending.clear();
      const waiting = this.shared.outbox.state().waiting;
      const { last } = await releaseOutbox(this.shared, this);
      if (removed && last && waiting > 0) {
        this.node.warn(`the outbox "${this.settings.name}" keeps ${waiting} entries waiting until their TTL; a node with outbox name "${this.settings.name}" takes them over`);
      }
      this.node.status({});
      done();
    });
  }
}

/** iotgw-send-message and iotgw-terminal-mode: accepted results on output 1, rejected on output 2. */
export function submitSpec(RED: NodeAPI, entries: (msg: Msg) => NewEntry[]): OutboxNodeSpec {
  return { entries, describe: entryResults, deliver: (msg, results) => splitResults(RED, msg, results.flatMap(entryResults) as SubmitResult[]) };
}

export type { SharedOutbox };
