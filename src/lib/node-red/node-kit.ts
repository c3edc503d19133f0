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
  const reason = t(RED, `errors.${err.statusKey}`);
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

export function handleInput(
  RED: NodeAPI,
  node: Node,
  onInput: (msg: Msg, send: SendFn, ctx: InputContext) => Promise<void>,
  options: InputOptions = {},
): InputHandle {
  const controller = nodeAbortController();
  // Messages started and not yet ended (a count, not a set of promises: no promise per msg to track).
  let inFlight = 0;
  /** Set while closing: called once the last pending msg has ended. */
  let onDrained: (() => void) | undefined;
  let busyShown = false;
  let busyAt = 0;

  const showIdle = () => {
    busyShown = false;
    waitShown = false;
    const s = options.idleStatus?.();
    node.status(s ?? {});
  };
  // Translated once per node: i18next on every msg was a tenth of the CPU time of a call (issue 6).
  let requesting: string | undefined;
  // Status only changes when it says something new: on becoming busy, and then the count
  // at most every 500 ms (a status update per msg was a measurable share of a call).
  const showBusy = () => {
    const now = Date.now();
    if (busyShown && now - busyAt < 500) return;
    requesting ??= t(RED, 'status.requesting');
    busyShown = true;
    busyAt = now;
    node.status({ fill: 'blue', shape: 'dot', text: `${requesting}${inFlight > 1 ? ` (${inFlight})` : ''}` });
  };

  // Calls waiting for a rate-limit slot: shown after half a second of waiting, with the
  // limiter's own estimate, refreshed every second (one timer per node, only while waiting).
  const waits = new Set<SlotWait>();
  let waitTimer: NodeJS.Timeout | undefined;
  let waitShown = false;
  const showWait = () => {
    if (inFlight === 0 || waits.size === 0) return;
    const now = Date.now();
    let first: SlotWait | undefined;
    for (const w of waits) if (!first || w.since < first.since) first = w;
    if (!first || now - first.since < 500) return;
    const s = Math.ceil(first.remaining() / 1000);
    // The catalogue's text; English when the catalogue is not loaded (t() gives the key back).
    const say = (key: string, vars: Record<string, string | number>, english: string) => {
      const out = t(RED, `status.${key}`, vars);
      return out === key ? english : out;
    };
    const text = s > 0 ? say('waitingSlotFor', { group: first.group, s }, `waiting for a ${first.group} slot (${s} s)`) : say('waitingSlot', { group: first.group }, `waiting for a ${first.group} slot`);
    waitShown = true;
    busyShown = false;
    node.status({ fill: 'blue', shape: 'ring', text });
  };
  const reporter = {
    begin(w: SlotWait) {
      waits.add(w);
      waitTimer ??= setInterval(showWait, 1000);
      waitTimer.unref?.();
      const first = setTimeout(showWait, 500);
      first.unref?.();
      return () => {
        clearTimeout(first);
        waits.delete(w);
        if (waits.size === 0) {
          clearInterval(waitTimer);
          waitTimer = undefined;
          if (waitShown && inFlight > 0) {
            waitShown = false;
            showBusy();
          }
        }
      };
    },
  };
  setWaitReporter(controller.signal, reporter);
  for (const s of options.waitSignals ?? []) setWaitReporter(s, reporter);

  const handle: InputHandle = {
    get pending() {
      return inFlight;
    },
    fail(err) {
      busyShown = false;
      node.status(errorStatus(RED, err));
    },
    idle: showIdle,
  };

  node.on('input', (msg: NodeMessageInFlow, send: SendFn, done: (err?: Error) => void) => {
    inFlight++;
    showBusy();
    let ended = false;
    const finish = (err?: GatewayError) => {
      if (ended) return;
      ended = true;
      inFlight--;
      if (err) {
        handle.fail(err);
        // The HTTP status of the failed reply reaches Catch nodes as msg.statusCode.
        if (err.statusCode !== undefined) (msg as Msg).statusCode = err.statusCode;
        done(err);
      } else {
        if (inFlight === 0) showIdle();
        else showBusy();
        done();
      }
      if (inFlight === 0 && onDrained) {
        const drained = onDrained;
        onDrained = undefined;
        drained();
      }
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
    clearInterval(waitTimer);
    waitTimer = undefined;
    controller.abort(new GatewayError('NETWORK', 'the node was closed (redeploy or shutdown) before the work finished'));
    const closed = () => {
      node.status({});
      done();
    };
    // Done once every pending msg has ended (each ends in its send or done(err) first).
    if (inFlight === 0) void Promise.resolve().then(closed);
    else onDrained = closed;
  });
  return handle;
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
