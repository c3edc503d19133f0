/**
 * Writes that must survive a failover (sentinel, cluster): acknowledged by a replica of the
 * master that holds the key (WAIT 1), or by the master alone when it has no replica online
 * (issue 34; nodes.md "Through a failover..."): after a failover with one replica per master,
 * or a Cluster shard whose replica took over, the new master has none until one joins, and
 * the feeds go on. The master says how many it has (ROLE, in the same round trip as the
 * WAIT); a master that has one must get its acknowledgement, as before.
 *
 * Cost: one round trip as before; one more when a replica has just joined (the WAIT asked
 * for none), and one WAIT timeout when the last replica has just left (it asked for one).
 */
import type Redis from 'ioredis';
import { SharedStateError } from './errors';
import { int, onlineReplicas } from './replies';

type Pipeline = ReturnType<Redis['pipeline']>;

/** What of a RedisConnection this needs (connection.ts builds one ReplicaAcks per connection). */
export interface AckConnection {
  readonly label: string;
  readonly address: string;
  readonly replicaAckMs: number;
  master(key?: string): string | undefined;
  run<T>(what: string, fn: (r: Redis) => Promise<T>, opts: { timeoutMs: number }): Promise<T>;
  emit(event: string, ...args: unknown[]): boolean;
}

interface Reply {
  first: unknown;
  /** Online replicas; undefined: the node is no master; null: ROLE refused (an ACL without @admin), so unknown. */
  replicas: number | undefined | null;
  acks: number;
}

export class ReplicaAcks {
  /** Online replicas of each master at its last ROLE (host:port; '' while unknown). */
  private readonly known = new Map<string, number>();
  /** Masters told about as acknowledging alone (until a replica joins). */
  private readonly alone = new Set<string>();

  constructor(private readonly conn: AckConnection) {}

  /** See RedisConnection.acknowledged. */
  async acknowledged<T>(what: string, key: string, timeoutMs: number, read?: (p: Pipeline) => void): Promise<T | undefined> {
    const conn = this.conn;
    const before = conn.master(key) ?? '';
    const ask = (this.known.get(before) ?? 0) > 0 ? 1 : 0;
    const r = await conn.run(what, (c) => this.exchange(c, key, ask, read), { timeoutMs });
    // The master as it stands after the round trip: before it, during a failover, the connection
    // may not know one yet (''), and the new master would then be told about twice.
    const master = conn.master(key) ?? before;
    if (r.replicas === undefined) throw this.unacknowledged(what, 'the node answering is no master (any more)');
    if (this.known.size > 64) this.known.clear();
    // Unknown (ROLE refused): a replica's acknowledgement is needed, as before issue 34.
    this.known.set(master, r.replicas ?? 1);
    if (r.replicas === 0) {
      if (!this.alone.has(master)) {
        this.alone.add(master);
        conn.emit('alone', master || conn.address);
      }
      return r.first as T;
    }
    if (this.alone.delete(master)) conn.emit('replicated', master || conn.address);
    if (r.acks >= 1) return r.first as T;
    if (ask === 0) {
      // A replica has joined since the last look: its acknowledgement, now.
      const acks = await conn.run(
        what,
        async (c) => {
          const res = (await c.pipeline().exists(key).wait(1, conn.replicaAckMs).exec()) ?? [];
          for (const [err] of res) if (err) throw err;
          return int(res[1]?.[1], 'WAIT');
        },
        { timeoutMs },
      );
      if (acks >= 1) return r.first as T;
    }
    const acl = r.replicas === null ? ' (the ACL refuses ROLE, so a master without replicas cannot be told: allow +role)' : '';
    throw this.unacknowledged(what, `no replica acknowledged the write within ${conn.replicaAckMs} ms${acl}`);
  }

  /** One round trip: the read (or a keyed command: it routes the pipeline to the key's master), ROLE, WAIT `ask`. */
  private async exchange(c: Redis, key: string, ask: number, read?: (p: Pipeline) => void): Promise<Reply> {
    const p = c.pipeline();
    if (read) read(p);
    else p.exists(key);
    p.role();
    p.wait(ask, this.conn.replicaAckMs);
    const res = (await p.exec()) ?? [];
    const role = res[res.length - 2];
    const refused = !!role?.[0] && /^NOPERM/.test(role[0].message);
    const replicas = refused ? null : role && !role[0] ? onlineReplicas(role[1], 'ROLE') : undefined;
    if (replicas === undefined && role && !role[0]) return { first: undefined, replicas, acks: 0 };
    for (const [err] of res.filter((_, i) => !(refused && i === res.length - 2))) if (err) throw err;
    return { first: res[0]?.[1], replicas, acks: int(res[res.length - 1]?.[1], 'WAIT') };
  }

  private unacknowledged(what: string, why: string): SharedStateError {
    return new SharedStateError(`${this.conn.label}: ${why} while ${what}; nothing is emitted until one does (is a replica running?)`, 'unacknowledged');
  }
}
