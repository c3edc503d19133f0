/**
 * Every socket ioredis opens for one RedisConnection, under the reply guard (issues 34, 43):
 * the data connection, the connections to the sentinels (the master look-up and the failover
 * watch) and, in cluster mode, each node's connection and the duplicates ioredis opens to
 * ask CLUSTER SLOTS. ioredis builds a client's sockets with its `Connector` option, which
 * its sentinel clients and its duplicates carry on: a connector whose `connect()` hands
 * ioredis the guarded stream instead of the socket covers them all. (ioredis's cluster
 * subscriber is built without the option, but it connects only for SUBSCRIBE and the like,
 * which we never send.)
 *
 * Replies ioredis reads itself are checked for their type before it uses them: the
 * sentinel's master address, and CLUSTER SLOTS (a nil there threw inside ioredis's callback,
 * an uncaught exception; 16,384 slot ranges of 0-16383 each held the event loop for minutes).
 */
import type { Duplex } from 'node:stream';
import type { Socket } from 'node:net';
import type Redis from 'ioredis';
import type { RedisOptions } from 'ioredis';
import { WrongReplyError, masterAddress } from './replies';

type Emitter = (type: string, err: Error) => void;

interface ConnectorBase {
  connect(e: Emitter): Promise<Duplex>;
  /** The stream of the last connect (ioredis's disconnect() ends it). */
  stream?: Duplex;
}

interface SentinelBase extends ConnectorBase {
  options: { name?: string };
  connectToSentinel(endpoint: unknown, options?: object): Redis;
  updateSentinels(client: Redis): Promise<void>;
  sentinelNatResolve(item: { host: string; port: number } | null): { host: string; port: number } | null;
}

/** ioredis's `Connector` option. */
export type ConnectorClass = NonNullable<RedisOptions['Connector']>;

export interface ConnectorHooks {
  /** The stream ioredis is to read a new socket through: its replies checked and bounded (reply-guard.ts). */
  guard(socket: Socket): Duplex;
  /** Told of a reply of the wrong type that ioredis itself asked for (a sentinel, CLUSTER SLOTS). */
  wrongReply(err: WrongReplyError): void;
  /**
   * Told of each error of a client of a sentinel (the master look-up, the failover watch): a
   * sentinel that is down or refuses us. The data connection's own errors say whether Redis can
   * be reached; these are for diagnosis.
   */
  sentinelError(err: Error, sentinel: string): void;
}

/** The connector classes of one connection: standalone (and cluster nodes) and sentinel. */
export function guardedConnectors(hooks: ConnectorHooks): { standalone: ConnectorClass; sentinel: ConnectorClass } {
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { StandaloneConnector } = require('ioredis/built/connectors') as { StandaloneConnector: new (o: unknown) => ConnectorBase };
  const { SentinelConnector } = require('ioredis') as { SentinelConnector: new (o: unknown) => SentinelBase };
  /* eslint-enable @typescript-eslint/no-require-imports */

  class GuardedStandalone extends StandaloneConnector {
    override async connect(e: Emitter): Promise<Duplex> {
      this.stream = hooks.guard((await super.connect(e)) as Socket);
      return this.stream;
    }
  }

  class GuardedSentinel extends SentinelConnector {
    override async connect(e: Emitter): Promise<Duplex> {
      this.stream = hooks.guard((await super.connect(e)) as Socket);
      return this.stream;
    }

    /**
     * The sentinels' clients (look-up, failover watch) connect through the guarded connector, and
     * their errors go to `hooks.sentinelError`: ioredis gives its failover-watch clients no
     * listener of their own, so each failed attempt to reach a sentinel that is down printed
     * "[ioredis] Unhandled error event" and a stack trace to stderr (once a minute per sentinel,
     * past Node-RED's log).
     */
    override connectToSentinel(endpoint: unknown, options?: object): Redis {
      const client = super.connectToSentinel(endpoint, { ...(options ?? {}), Connector: GuardedStandalone });
      const at = endpoint as { host?: string; port?: number } | undefined;
      const where = `${at?.host ?? '127.0.0.1'}:${at?.port ?? 26379}`;
      client.on('error', (err: Error) => hooks.sentinelError(err, where));
      return client;
    }

    /** As ioredis's, with the reply's type checked (a wrong one: told, and this sentinel is skipped). */
    async resolveMaster(client: Redis): Promise<{ host: string; port: number } | null> {
      const result: unknown = await (client as unknown as { sentinel: (...a: string[]) => Promise<unknown> }).sentinel('get-master-addr-by-name', this.options.name ?? 'mymaster');
      let addr: { host: string; port: number } | null;
      try {
        addr = masterAddress(result, "a sentinel's master look-up");
      } catch (err) {
        hooks.wrongReply(err as WrongReplyError);
        throw err;
      }
      await this.updateSentinels(client);
      return this.sentinelNatResolve(addr);
    }
  }
  return { standalone: GuardedStandalone as unknown as ConnectorClass, sentinel: GuardedSentinel as unknown as ConnectorClass };
}

/** Throws WrongReplyError unless `v` is a CLUSTER SLOTS reply within a real cluster's bounds. */
export function checkClusterSlots(v: unknown): void {
  const what = 'CLUSTER SLOTS';
  if (!Array.isArray(v) || v.length > 16384) throw new WrongReplyError(what, 'an array of at most 16384 slot ranges', v);
  let slots = 0;
  for (const r of v as unknown[]) {
    const ok =
      Array.isArray(r) &&
      r.length >= 3 &&
      r.length <= 66 &&
      Number.isInteger(r[0]) &&
      Number.isInteger(r[1]) &&
      r[0] >= 0 &&
      r[0] <= r[1] &&
      r[1] < 16384 &&
      r.slice(2).every((n) => Array.isArray(n) && typeof n[0] === 'string' && Number.isInteger(n[1]));
    if (!ok) throw new WrongReplyError(what, 'slot ranges of 0 to 16383 with their nodes', r);
    slots += r[1] - r[0] + 1;
    if (slots > 16384) throw new WrongReplyError(what, 'at most 16384 slots in all', v);
  }
}

/**
 * Cluster mode: the duplicates a node's client opens to ask CLUSTER SLOTS (ioredis's slot
 * refresh) have their reply checked before ioredis reads it.
 */
export function checkSlotsOfDuplicates(node: Redis, wrongReply: (err: WrongReplyError) => void): void {
  const duplicate = node.duplicate.bind(node);
  node.duplicate = (...args: Parameters<Redis['duplicate']>) => {
    const d = duplicate(...args);
    const cluster = (d.cluster as unknown as (...a: unknown[]) => Promise<unknown>).bind(d);
    (d as unknown as { cluster: unknown }).cluster = (...a: unknown[]) => {
      const cb = typeof a[a.length - 1] === 'function' ? (a.pop() as (err: Error | null, v?: unknown) => void) : undefined;
      const p = cluster(...a).then((v) => {
        if (String(a[0]).toUpperCase() === 'SLOTS') {
          try {
            checkClusterSlots(v);
          } catch (err) {
            wrongReply(err as WrongReplyError);
            throw err;
          }
        }
        return v;
      });
      if (cb) {
        p.then(
          (v) => cb(null, v),
          (err: Error) => cb(err),
        ).catch(() => {});
      }
      return p;
    };
    return d;
  };
}
