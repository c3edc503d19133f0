/**
 * `iotgw-status-poller` (endpoint 3): polls status updates of to-mobile messages on an
 * interval, passes NextFromUTC back as the next FromUTC, and keeps that high-water mark
 * in node context: with a persistent context store a restart resumes where it stopped.
 * Records are sent before the new mark is stored, so a crash can repeat records but
 * never lose one; a clean stop stores the mark first, so nothing repeats.
 *
 * A full reply (the gateway's cap, 500 by default) is followed at once by another poll,
 * at the next free GET slot, until drained. A failing poller reports the first failure
 * and then keeps quiet until its state changes (no flood while the gateway is down).
 *
 * Control input: "poll" polls now; "stop" / "start" pause and resume the timer;
 * {fromUTC: "yyyy-MM-dd HH:mm:ss"} resets the mark.
 */
import type { Node, NodeAPI, NodeDef, NodeMessage } from 'node-red';
import { GatewayError, badInput, toGatewayError } from '../lib/errors';
import { int64Out } from '../lib/int64';
import { errorStatus, handleInput, isPlainObject, mergeQuery, numberSetting, t, useConfigNode, type Msg, nodeAbortController } from '../lib/node-kit';
import { throwOnCallError } from '../lib/gateway-errors';
import { FROM_UTC_RE, STATE_NAMES, TRANSPORT_NAMES, parseReply, statusReply, type StatusRecord } from '../lib/terminal-api';
import { isGateway } from '../lib/guards';
import type { GatewayNode } from '../lib/account/config-nodes';

export interface StatusPollerConfig extends NodeDef {
  gateway: string;
  intervalSeconds: string | number;
  /** "" (now), "-24h" / "-30m" (relative), or "yyyy-MM-dd HH:mm:ss". */
  startFrom: string;
  output: 'record' | 'batch';
  contextStore: string;
  autoStart: boolean;
  fullAt: string | number;
  addNames: boolean;
}

export const MARK_KEY = 'nextFromUTC';

export function formatUtc(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
}

/** The first FromUTC when no mark is stored. */
export function initialMark(startFrom: string | undefined, now = Date.now()): string {
  const s = String(startFrom ?? '').trim();
  // FromUTC is exclusive of its own second: start one second back so that updates in
  // the current second are not skipped.
  if (s === '' || s === 'now') return formatUtc(now - 1000);
  const rel = /^-(\d+(?:\.\d+)?)\s*([smhd])$/.exec(s);
  if (rel) {
    const unit = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[rel[2] as 's' | 'm' | 'h' | 'd'];
    return formatUtc(now - Number(rel[1]) * unit);
  }
  if (FROM_UTC_RE.test(s)) return s;
  throw badInput('startFrom', `"${s.slice(0, 30)}" is not "now", a relative time like -24h, or yyyy-MM-dd HH:mm:ss`);
}

export default function register(RED: NodeAPI): void {
  function IotgwStatusPollerNode(this: Node, config: StatusPollerConfig) {
    RED.nodes.createNode(this, config);
    const node = this;
    const gw = useConfigNode(RED, node, config.gateway, isGateway, 'gateway', 'iotgw-gateway');
    const intervalMs = Math.round(numberSetting(config.intervalSeconds, 60, 1, 86400) * 1000);
    const fullAt = Math.round(numberSetting(config.fullAt, 500, 1, 1_000_000));
    const store = config.contextStore ? String(config.contextStore) : undefined;
    const addNames = config.addNames !== false;
    const batchMode = config.output === 'batch';
    const closing = nodeAbortController();

    let mark: string | undefined;
    let timer: NodeJS.Timeout | undefined;
    let running = config.autoStart !== false;
    let current: Promise<void> | undefined;
    let again = false;
    let lastFailure: string | undefined;
    let lastOk: { at: number; count: number } | undefined;
    let closed = false;

    const ctx = node.context();
    const getMark = (): Promise<string | undefined> =>
      new Promise((resolve, reject) => {
        const cb = (err: Error | null, v: unknown) => (err ? reject(err) : resolve(typeof v === 'string' ? v : undefined));
        if (store) ctx.get(MARK_KEY, store, cb);
        else ctx.get(MARK_KEY, cb);
      });
    const setMark = (v: string): Promise<void> =>
      new Promise((resolve, reject) => {
        const cb = (err?: Error | null) => (err ? reject(err) : resolve());
        if (store) ctx.set(MARK_KEY, v, store, cb);
        else ctx.set(MARK_KEY, v, cb);
      });

    const okStatus = () =>
      lastOk
        ? { fill: 'green' as const, shape: 'dot' as const, text: t(RED, 'status.polled', { time: formatUtc(lastOk.at).slice(11), count: lastOk.count }) }
        : running
          ? { fill: 'grey' as const, shape: 'ring' as const, text: t(RED, 'status.waiting') }
          : { fill: 'grey' as const, shape: 'ring' as const, text: t(RED, 'status.stopped') };

    // "Now" means when the node started, not when the first poll happens: an update in
    // between must not fall behind the mark.
    let startMark: string | GatewayError;
    try {
      startMark = initialMark(config.startFrom);
    } catch (err) {
      startMark = err as GatewayError;
    }
    const loadMark = async (): Promise<string> => {
      if (mark) return mark;
      const stored = await getMark();
      if (stored && FROM_UTC_RE.test(stored)) mark = stored;
      else if (startMark instanceof GatewayError) throw startMark;
      else mark = startMark;
      return mark;
    };

    const emit = (records: StatusRecord[], from: string, next: string) => {
      const out = records.map((r) => {
        const rec: StatusRecord = { ...r };
        if (typeof rec.ID === 'string') rec.ID = int64Out(BigInt(rec.ID));
        if (addNames) {
          if (typeof rec.State === 'number') rec.StateName = STATE_NAMES[rec.State] ?? `STATE_${rec.State}`;
          if (typeof rec.Transport === 'number') rec.TransportName = TRANSPORT_NAMES[rec.Transport] ?? `TRANSPORT_${rec.Transport}`;
        }
        return rec;
      });
      // Other nodes of the account (the message tracker) see the records too.
      if (out.length && !(gw instanceof GatewayError)) gw.statusFeed.emit('records', out);
      if (batchMode) {
        if (out.length) node.send({ topic: 'statusUpdates', payload: out, fromUTC: from, nextFromUTC: next, statusCode: 200 } as NodeMessage);
      } else {
        for (const rec of out) node.send({ topic: String(rec.ID), payload: rec, statusCode: 200 } as NodeMessage);
      }
    };

    /** One poll, then more while replies are full. */
    const pollOnce = async (g: GatewayNode, query: Record<string, unknown> | undefined): Promise<void> => {
      const client = g.client();
      const path = g.apiPath('get/subaccounts/fw_status_updates');
      let total = 0;
      for (;;) {
        const from = await loadMark();
        const res = await client.request({
          method: 'GET',
          path,
          query: mergeQuery({ FromUTC: from }, query),
          group: 'GET',
          auth: g.bearerAuth(),
          idempotent: true,
          signal: closing.signal,
        });
        const reply = parseReply(statusReply, res.body, `GET ${path}`);
        await throwOnCallError(g, reply.ErrorID, `GET ${path}`, res.statusCode, closing.signal);
        const records = reply.Statuses ?? [];
        const next = reply.NextFromUTC && FROM_UTC_RE.test(reply.NextFromUTC) ? reply.NextFromUTC : from;
        if (reply.NextFromUTC && !FROM_UTC_RE.test(reply.NextFromUTC)) {
          throw new GatewayError('BAD_RESPONSE', `GET ${path}: NextFromUTC "${reply.NextFromUTC.slice(0, 30)}" is not yyyy-MM-dd HH:mm:ss`);
        }
        emit(records, from, next);
        total += records.length;
        // Records are out; now move the mark. A crash between the two repeats, never loses.
        if (next !== mark) {
          mark = next;
          await setMark(next);
        }
        if (records.length < fullAt || closing.signal.aborted) break;
        // Let the records just sent be delivered before fetching more (bounded memory).
        await new Promise((r) => setImmediate(r));
      }
      lastOk = { at: Date.now(), count: total };
    };

    const report = (err: GatewayError | undefined) => {
      if (!err) {
        if (lastFailure) node.log(`status polling recovered after: ${lastFailure}`);
        lastFailure = undefined;
        input.idle();
        return;
      }
      const key = `${err.code}:${err.statusCode ?? ''}`;
      node.status({ ...errorStatus(RED, err), text: `${errorStatus(RED, err).text} · ${t(RED, 'status.retrying')}` });
      if (key !== lastFailure) {
        lastFailure = key;
        // Catchable, reported once per change of state.
        node.error(err, { topic: 'statusUpdates', payload: null, error: { message: err.message, code: err.code } } as unknown as NodeMessage);
      }
    };

    /** Runs a poll unless one is running; a request during a poll asks for one more after it. */
    const poll = (query?: Record<string, unknown>): Promise<void> => {
      if (closed) return Promise.resolve();
      if (current) {
        again = true;
        return current;
      }
      if (gw instanceof GatewayError) return Promise.reject(gw);
      unschedule();
      node.status({ fill: 'blue', shape: 'dot', text: t(RED, 'status.polling') });
      current = pollOnce(gw, query)
        .then(
          () => report(undefined),
          (e: unknown) => {
            const err = toGatewayError(e);
            if (!closing.signal.aborted) report(err);
            throw err;
          },
        )
        .finally(() => {
          current = undefined;
          if (again && !closed) {
            again = false;
            void poll().catch(() => {});
          } else schedule();
        });
      return current;
    };

    const schedule = () => {
      unschedule();
      if (!running || closed) return;
      timer = setTimeout(() => {
        timer = undefined;
        poll().catch(() => {
          /* reported by report() */
        });
      }, intervalMs);
    };
    const unschedule = () => {
      if (timer) clearTimeout(timer);
      timer = undefined;
    };

    const input = handleInput(
      RED,
      node,
      async (msg: Msg) => {
        const p = msg.payload;
        if (p === 'poll' || msg.topic === 'poll') {
          await poll(msg.query as Record<string, unknown> | undefined);
          return;
        }
        if (p === 'stop') {
          running = false;
          unschedule();
          return;
        }
        if (p === 'start') {
          running = true;
          if (!current) schedule();
          return;
        }
        if (isPlainObject(p) && 'fromUTC' in p) {
          const v = p.fromUTC;
          if (typeof v !== 'string' || !FROM_UTC_RE.test(v.trim())) throw badInput('msg.payload.fromUTC', 'must be a UTC time as yyyy-MM-dd HH:mm:ss');
          if (current) await current.catch(() => {});
          mark = v.trim();
          await setMark(mark);
          return;
        }
        throw badInput('msg.payload', 'must be "poll", "stop", "start" or {fromUTC: "yyyy-MM-dd HH:mm:ss"}');
      },
      { idleStatus: () => (lastFailure ? undefined : okStatus()) },
    );

    node.on('close', (_removed: boolean, done: () => void) => {
      closed = true;
      unschedule();
      closing.abort(new GatewayError('NETWORK', 'the poller was closed (redeploy or shutdown)'));
      const wait = current ? current.catch(() => {}) : Promise.resolve();
      void wait.then(() => done());
    });

    if (gw instanceof GatewayError) {
      node.status(errorStatus(RED, gw));
      node.error(gw.message);
      return;
    }
    node.status(okStatus());
    if (running) {
      // First poll soon after start, then every interval.
      timer = setTimeout(() => {
        timer = undefined;
        poll().catch(() => {});
      }, 250);
    }
  }

  RED.nodes.registerType('iotgw-status-poller', IotgwStatusPollerNode as unknown as (this: Node, c: NodeDef) => void);
}
