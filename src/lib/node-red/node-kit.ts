/**
 * Plumbing shared by every node, so that no node repeats it:
 * - `handleInput` wraps a node's async onInput: every input msg ends in exactly one
 *   `done()` (after the node's own sends) or one `done(err)`; status shows requests in
 *   flight (blue), clears when idle, turns red with a short reason on failure; closing
 *   the node aborts its work and waits until every pending msg has been ended.
 * - `resolveCredential` resolves `${ENV_VAR}` in credentials (Node-RED does it for
 *   properties, not credentials).
 * - `mergeQuery` adds `msg.query` last, after checking its shape.
 */
import { setMaxListeners } from 'node:events';
import type { Node, NodeAPI, NodeMessage, NodeMessageInFlow, NodeStatus } from 'node-red';
import { GatewayError, badInput, toGatewayError } from '../common/errors';
import type { Query } from '../transport/http';
import { describeType } from '../common/int64';
import { isPlainObject } from '../common/checks';
import { setWaitReporter, type SlotWait } from '../transport/wait-status';
import { networkCause } from '../transport/network-cause';

export const NS = '@iotgateway/node-red-gateway/iotgw-gateway';

/** A runtime string from the package's common catalogue (nodes/locales/<lang>/iotgw-gateway.json). */
export function t(RED: NodeAPI, key: string, vars?: Record<string, string | number>): string {
  const full = `${NS}:${key}`;
  const out = RED._(full, vars);
  // Outside a full runtime (catalogue not loaded) i18next returns the key itself.
  return out === full || out === key ? key.split('.').pop()! : out;
}

export type Msg = NodeMessageInFlow & Record<string, unknown>;
export type SendFn = (msg: NodeMessage | Array<NodeMessage | NodeMessage[] | null>) => void;
export interface InputContext {
  /** Aborted when the node closes (redeploy, shutdown). */
  signal: AbortSignal;
}

export interface InputOptions {
  /** Status shown after a success when nothing else is in flight; default: cleared. */
  idleStatus?: () => NodeStatus | undefined;
  /**
   * Other signals the node's calls carry (e.g. a batcher's): a call with one of them that
   * waits for a rate-limit slot shows "waiting for a SEND slot (23 s)" too.
   */
  waitSignals?: AbortSignal[];
}

export interface InputHandle {
  /** Messages started and not yet ended. */
  readonly pending: number;
  /** Sets the red status for an error (also used by nodes that report without a msg). */
  fail(err: GatewayError): void;
  /** Sets the idle status now. */
  idle(): void;
}

export function errorStatus(RED: NodeAPI, err: GatewayError): NodeStatus {
  // A network failure names its cause (refused, DNS, TLS, timeout, reset) instead of "network error".
  const cause = networkCause(err);
  const reason = t(RED, `errors.${cause && err.code === 'NETWORK' ? `network-${cause}` : err.statusKey}`);
  const extra = err.statusCode ? ` (${err.statusCode})` : err.field ? ` (${err.field})` : '';
  return { fill: 'red', shape: 'ring', text: `${reason}${extra}`.slice(0, 60) };
}

/**
 * An AbortController for a node's lifetime. Every wait and call of the node listens to
 * its signal (each listener is removed when its wait ends), so a busy node legitimately
 * has more than Node's default of 10 listeners.
 */
export function nodeAbortController(): AbortController {
  const c = new AbortController();
  setMaxListeners(0, c.signal);
  return c;
}

/**
 * The input wrapper's state: the msgs in flight (a count, not a set of promises: no promise
 * per msg to track) and what the status shows: blue "requesting (n)" while msgs are in
 * flight, blue "waiting for a SEND slot (23 s)" while a call waits for a rate-limit slot,
 * red on a failure, the node's idle status (default: none) when nothing is in flight.
 */
class InputState implements InputHandle {
  private inFlight = 0;
  /** Set while closing: called once the last pending msg has ended. */
  private onDrained: (() => void) | undefined;
  private busyShown = false;
  private busyAt = 0;
  // Translated once per node: i18next on every msg was a tenth of the CPU time of a call (issue 6).
  private requesting: string | undefined;
  // Calls waiting for a rate-limit slot: shown after half a second of waiting, with the
  // limiter's own estimate, refreshed every second (one timer per node, only while waiting).
  private readonly waits = new Set<SlotWait>();
  private waitTimer: NodeJS.Timeout | undefined;
  private waitShown = false;
  /** What a call waiting for a slot reports to (setWaitReporter). */
  readonly reporter = { begin: (w: SlotWait) => this.beginWait(w) };

  constructor(
    private readonly RED: NodeAPI,
    private readonly node: Node,
    private readonly idleStatus?: () => NodeStatus | undefined,
  ) {}

  get pending(): number {
    return this.inFlight;
  }

  /** A msg arrives. */
  begin(): void {
    this.inFlight++;
    this.busy();
  }

  /** Ends one msg: done() after a success (its sends are made), done(err) after a failure. */
  end(msg: Msg, done: (err?: Error) => void, err?: GatewayError): void {
    this.inFlight--;
    if (err) {
      this.fail(err);
      // The HTTP status of the failed reply reaches Catch nodes as msg.statusCode.
      if (err.statusCode !== undefined) msg.statusCode = err.statusCode;
      done(err);
    } else {
      if (this.inFlight === 0) this.idle();
      else this.busy();
      done();
    }
    if (this.inFlight === 0 && this.onDrained) {
      const drained = this.onDrained;
      this.onDrained = undefined;
      drained();
    }
  }

  /** Calls `drained` once every pending msg has ended (each ends in its send or done(err) first). */
  whenDrained(drained: () => void): void {
    if (this.inFlight === 0) void Promise.resolve().then(drained);
    else this.onDrained = drained;
  }

  idle(): void {
    this.busyShown = false;
    this.waitShown = false;
    this.node.status(this.idleStatus?.() ?? {});
  }

  // Status only changes when it says something new: on becoming busy, and then the count
  // at most every 500 ms (a status update per msg was a measurable share of a call).
  busy(): void {
    const now = Date.now();
    if (this.busyShown && now - this.busyAt < 500) return;
    this.requesting ??= t(this.RED, 'status.requesting');
    this.busyShown = true;
    this.busyAt = now;
    this.node.status({ fill: 'blue', shape: 'dot', text: `${this.requesting}${this.inFlight > 1 ? ` (${this.inFlight})` : ''}` });
  }

  fail(err: GatewayError): void {
    this.busyShown = false;
    this.node.status(errorStatus(this.RED, err));
  }

  /** Stops the refresh of a wait's status (the node closes). */
  stop(): void {
    clearInterval(this.waitTimer);
    this.waitTimer = undefined;
  }

  /** A call starts waiting for a slot; the function returned ends its wait. */
  private beginWait(w: SlotWait): () => void {
    this.waits.add(w);
    this.waitTimer ??= setInterval(() => this.showWait(), 1000);
    this.waitTimer.unref?.();
    const first = setTimeout(() => this.showWait(), 500);
    first.unref?.();
    return () => {
      clearTimeout(first);
      this.waits.delete(w);
      if (this.waits.size > 0) return;
      this.stop();
      if (this.waitShown && this.inFlight > 0) {
        this.waitShown = false;
        this.busy();
      }
    };
  }

  private showWait(): void {
    if (this.inFlight === 0 || this.waits.size === 0) return;
    let first: SlotWait | undefined;
    for (const w of this.waits) if (!first || w.since < first.since) first = w;
    if (!first || Date.now() - first.since < 500) return;
    this.waitShown = true;
    this.busyShown = false;
    this.node.status({ fill: 'blue', shape: 'ring', text: this.waitText(first) });
  }

  /** The catalogue's text; English when the catalogue is not loaded (t() gives the key back). */
  private waitText(first: SlotWait): string {
    const s = Math.ceil(first.remaining() / 1000);
    const say = (key: string, vars: Record<string, string | number>, english: string) => {
      const out = t(this.RED, `status.${key}`, vars);
      return out === key ? english : out;
    };
    return s > 0 ? say('waitingSlotFor', { group: first.group, s }, `waiting for a ${first.group} slot (${s} s)`) : say('waitingSlot', { group: first.group }, `waiting for a ${first.group} slot`);
  }
}

export function handleInput(
  RED: NodeAPI,
  node: Node,
  onInput: (msg: Msg, send: SendFn, ctx: InputContext) => Promise<void>,
  options: InputOptions = {},
): InputHandle {
  const controller = nodeAbortController();
  const state = new InputState(RED, node, options.idleStatus);
  setWaitReporter(controller.signal, state.reporter);
  for (const s of options.waitSignals ?? []) setWaitReporter(s, state.reporter);

  node.on('input', (msg: NodeMessageInFlow, send: SendFn, done: (err?: Error) => void) => {
    state.begin();
    let ended = false;
    const finish = (err?: GatewayError) => {
      if (ended) return;
      ended = true;
      state.end(msg as Msg, done, err);
    };
    try {
      onInput(msg as Msg, send, { signal: controller.signal }).then(
        () => finish(),
        (e: unknown) => finish(toGatewayError(e)),
      );
    } catch (e) {
      finish(toGatewayError(e));
    }
  });

  node.on('close', (_removed: boolean, done: () => void) => {
    state.stop();
    controller.abort(new GatewayError('NETWORK', 'the node was closed (redeploy or shutdown) before the work finished'));
    state.whenDrained(() => {
      node.status({});
      done();
    });
  });
  return state;
}

const ENV_RE = /^\$\{([^}]+)\}$/;

/** Resolves `${ENV_VAR}` (flow, group, global or process env) in a credential value. */
export function resolveCredential(RED: NodeAPI, node: Node, value: unknown): string {
  if (typeof value !== 'string') return '';
  const m = ENV_RE.exec(value.trim());
  if (!m) return value;
  const v = RED.util.evaluateNodeProperty(m[1]!, 'env', node, {} as NodeMessage);
  return v === undefined || v === null ? '' : String(v);
}

/** A plain object check (src/lib/common/checks.ts; re-exported for the node files). */
export { isPlainObject };

/** Checks `msg.query` and returns base parameters with it merged last. */
export function mergeQuery(base: Query, msgQuery: unknown): Query {
  if (msgQuery === undefined || msgQuery === null) return base;
  if (!isPlainObject(msgQuery)) throw badInput('msg.query', `must be an object of query parameters, not ${describeType(msgQuery)}`);
  const out: Query = { ...base };
  for (const [k, v] of Object.entries(msgQuery)) {
    if (k.length === 0 || k.length > 200) throw badInput('msg.query', 'parameter names must be 1 to 200 characters');
    if (v === undefined || v === null) {
      delete out[k];
      continue;
    }
    if (typeof v === 'string') {
      if (v.length > 4096) throw badInput(`msg.query.${k}`, 'must be at most 4096 characters');
      out[k] = v;
    } else if (typeof v === 'number' && Number.isFinite(v)) out[k] = v;
    else if (typeof v === 'boolean' || typeof v === 'bigint') out[k] = v;
    else throw badInput(`msg.query.${k}`, `must be a string, number or boolean, not ${describeType(v)}`);
  }
  return out;
}

/** Reads a TypedInput property (async form, so JSONata works). */
export function evalProperty(RED: NodeAPI, node: Node, value: unknown, type: string | undefined, msg: Msg): Promise<unknown> {
  if (!type || type === 'str' && (value === '' || value === undefined)) return Promise.resolve(value === '' ? undefined : value);
  return new Promise((resolve, reject) => {
    const bad = (err: Error) => new GatewayError('BAD_INPUT', `could not evaluate ${type} property "${String(value).slice(0, 60)}": ${err.message}`);
    try {
      RED.util.evaluateNodeProperty(String(value ?? ''), type, node, msg as NodeMessage, (err: Error | null, result: unknown) => {
        if (err) reject(bad(err));
        else resolve(result);
      });
    } catch (err) {
      // A JSONata expression that does not parse throws instead of calling back.
      reject(bad(err as Error));
    }
  });
}

/** Number setting with a default and a range. */
export function numberSetting(value: unknown, fallback: number, min: number, max: number): number {
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : typeof value === 'number' ? value : NaN;
  if (!Number.isFinite(n)) return fallback;
  return Math.min(max, Math.max(min, n));
}

/**
 * Looks up a node's config node and registers the node with it (deregistered on close),
 * as the MQTT nodes do with their broker. Throws BAD_INPUT when none is selected.
 */
export function useConfigNode<T extends Node & { register?(n: Node): void; deregister?(n: Node): void }>(
  RED: NodeAPI,
  node: Node,
  id: string | undefined,
  check: (n: unknown) => n is T,
  field: string,
  what: string,
): T | GatewayError {
  const cfg = id ? RED.nodes.getNode(id) : null;
  if (!check(cfg)) {
    return new GatewayError('BAD_INPUT', `${field}: no ${what} config node is selected; open the node and choose one`, { field });
  }
  cfg.register?.(node);
  node.on('close', () => cfg.deregister?.(node));
  return cfg;
}

/** A stable key for a query object (sorted names). */
export function queryKey(q: Query): string {
  return JSON.stringify(Object.keys(q).sort().map((k) => [k, String(q[k])]));
}
