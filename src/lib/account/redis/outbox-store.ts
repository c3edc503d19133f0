/**
 * RedisOutboxStore (issue 45; nodes.md "A fleet"): an outbox kept in Redis, shared by the
 * instances whose sending nodes name the same account and `outboxName`.
 *
 * - Atomic: each call is one Lua script (outbox-lua.ts says the keys), safe to run twice.
 * - Durable as the marks are: a call resolves once Redis ran it and, with Sentinel or a
 *   Cluster, once a replica has it (WAIT 1, or the master alone when it has no replica
 *   online: RedisConnection.acknowledged), on the master that ran it (a failover between
 *   the two: run again on the new master, `call`). A failure rejects with SHARED_STATE (the
 *   bounds: OUTBOX_FULL) and changed nothing; an accept whose reply was lost is withdrawn
 *   first (`withdraw`), or resolves when a drainer already marked it, or says it is unknown.
 * - Bounded: the entries and bytes bounds are checked in the accept script, fleet-wide (the
 *   engine's whenFull policy makes room first, on what it knows); replies stay far below
 *   the connection's bound: open() reads the entries in pages of at most `pageBytes`,
 *   load() and msgJson() their values too (a value over it in slices).
 * - One drainer: the store takes part in the outbox's lease (feed-lease.ts, feed
 *   `outbox:<name>`, with its fencing token) from open() on. Marking a send, its end and
 *   putting it back to waiting need the lease (else SHARED_STATE, reason 'fenced'), and a
 *   mark needs every entry still waiting (else reason 'stale'): two instances never send the
 *   same entry. Ending a waiting entry (EXPIRED, OUTBOX_FULL) needs no lease.
 * - Takeover: 'lease' events ('active' with the fence, 'standby', 'down'; `onLease`). The
 *   engine (outbox/fleet.ts) joins the lease (`join`), and only the holder drains: when it
 *   gains the lease it reads the store (`openAfter(0)`: the entries the last holder left
 *   'sending' are reconciled), and while it holds it reads what the other instances
 *   accepted (`openAfter(seq)`, every second, and at once when a mark is refused 'unseen':
 *   an older entry another instance accepted goes first); the others read `summary()`
 *   (what waits, the oldest) for their status.
 */
import { EventEmitter } from 'node:events';
import { GatewayError } from '../../common/errors';
import type { AcceptedMsg, EntryOutcome, JsonObject, JsonValue, OpenedStore, OutboxEntry, OutboxStore, SendAttempt, StoreFigures, StoreSummary } from '../../outbox/types';
import type { AccountKeys } from './keys';
import type { RedisConnection } from './connection';
import { SharedStateError } from './errors';
import { RedisFeedLease, type LeaseState } from './feed-lease';
import { ACCEPT, BACK_TO_WAITING, CLAIM, END, FORGET, MARK_SENDING, PAGE, SLICE, SUMMARY, VALUES, WITHDRAW } from './outbox-lua';
import { endReply, outboxError, parsePage, pairs, figuresOf, type Page } from './outbox-replies';
import { script, type Script } from './script';

export interface RedisOutboxStoreOptions {
  /** How long a call waits for Redis (ms). */
  timeoutMs: number;
  /** Bounds checked at accept, fleet-wide (the outbox's outboxMaxEntries, outboxMaxBytes). */
  maxEntries?: number;
  maxBytes?: number;
  /** The drain lease's lifetime (ms): a standby takes over at most this long after the holder died. Default 10 s. */
  leaseMs?: number;
  instanceId?: string;
  /** How long the last holder's fresh claim of an outcome is waited out before another takes it (ms). Default: the lease's. */
  claimGraceMs?: number;
  /** The most bytes of one page (open, load, msgJson). Default 1 MiB (the connection's bound is 8 MiB). */
  pageBytes?: number;
  /** The most entries of one page of open(). Default 5000. */
  pageEntries?: number;
}

interface Encoded {
  msg: AcceptedMsg;
  entries: OutboxEntry[];
  args: string[];
  bytes: number;
}

/** How many master changes between a write and its acknowledgement a store call rides out (the script run again each time). */
const MASTER_CHANGES = 3;
/** How many withdraw calls (each up to the store's timeout) an accept whose outcome is unknown makes before it says so. */
const WITHDRAW_TRIES = 3;

/** The keys of one outbox (outbox-lua.ts). */
function outboxKeys(keys: AccountKeys, name: string) {
  const k = (kind: string) => keys.key('outbox', name, kind);
  return {
    seq: k('seq'), meta: k('meta'), z: k('z'), w: k('w'), e: k('e'), i: k('i'), s: k('s'), a: k('a'), sa: k('sa'), mh: k('mh'), mj: k('mj'), mo: k('mo'),
    lease: keys.key('lease', `outbox:${name}`),
  };
}

export class RedisOutboxStore extends EventEmitter implements OutboxStore {
  readonly lease: RedisFeedLease;
  /** The lease's feed name: `outbox:<name>`. */
  readonly feed: string;
  private readonly k: ReturnType<typeof outboxKeys>;
  private readonly lua = {
    accept: script(ACCEPT), mark: script(MARK_SENDING), end: script(END), back: script(BACK_TO_WAITING), forget: script(FORGET), page: script(PAGE), values: script(VALUES), summary: script(SUMMARY), withdraw: script(WITHDRAW), claim: script(CLAIM),
  };
  private figs = { entries: 0, bytes: 0 };
  private sized?: Encoded;
  private closed = false;
  private acquiring?: Promise<void>;
  private readonly stop = new AbortController();
  private readonly pageBytes: number;

  constructor(
    private readonly conn: RedisConnection,
    keys: AccountKeys,
    readonly name: string,
    private readonly opts: RedisOutboxStoreOptions,
  ) {
    super();
    this.feed = `outbox:${name}`;
    this.k = outboxKeys(keys, name);
    this.pageBytes = opts.pageBytes ?? 1024 * 1024;
    this.lease = new RedisFeedLease(conn, keys, { ...(opts.leaseMs !== undefined ? { leaseMs: opts.leaseMs } : {}), ...(opts.instanceId ? { instanceId: opts.instanceId } : {}) });
    this.lease.on('state', (feed: string, state: LeaseState) => {
      if (feed !== this.feed || this.closed) return;
      this.emit('lease', state, state === 'active' ? this.lease.fence(feed) : undefined);
      if (state !== 'active') this.compete();
    });
  }

  /** Reads every live entry (in pages), then takes part in the lease. */
  async open(): Promise<OpenedStore> {
    const found = await this.openAfter(0);
    this.compete();
    return found;
  }

  /** Takes part in the lease, nothing read (the engine of an instance that does not hold it keeps nothing: fleet.ts). */
  async join(): Promise<void> {
    this.check();
    this.compete();
  }

  /** `listener(true)` when this instance gains the drain lease, `(false)` when it loses it; returns its removal. */
  onLease(listener: (held: boolean) => void): () => void {
    const on = (state: LeaseState): void => listener(state === 'active');
    this.on('lease', on);
    return () => this.off('lease', on);
  }

  /**
   * The live entries after `seq` (in pages) and their msgs: what the other instances
   * accepted since the drainer last read (fleet.ts). `nextSeq` is read with the last page:
   * every entry up to `nextSeq - 1` was read, or forgotten before (seqs are given in the
   * accept script together with its writes).
   */
  async openAfter(seq: number): Promise<OpenedStore> {
    this.check();
    const found: OpenedStore = { entries: [], msgs: [], nextSeq: 1, lost: { torn: 0, corrupt: 0 } };
    let after = seq;
    for (;;) {
      const page: Page = await this.call('reading the outbox', this.lua.page, [this.k.z, this.k.e, this.k.s, this.k.a, this.k.sa, this.k.mh, this.k.meta, this.k.seq], [after, this.opts.pageEntries ?? 5000, this.pageBytes], parsePage, false);
      this.figs = page.figures;
      found.nextSeq = page.nextSeq;
      found.entries.push(...page.entries);
      found.msgs.push(...page.msgs);
      found.lost.corrupt += page.corrupt;
      if (page.last === undefined) break;
      after = page.last;
    }
    return found;
  }

  /** The fleet's figures and its oldest entry not ended, read now (one short script; the status of an instance that does not drain). */
  async summary(): Promise<StoreSummary> {
    const k = this.k;
    const [entries, bytes, oldest] = await this.call('reading the outbox', this.lua.summary, [k.meta, k.z, k.s, k.e, k.w], [Math.min(1000, this.opts.pageEntries ?? 1000)], (v) => figuresOf(v, 3, 'the summary script'), false);
    this.figs = { entries: entries!, bytes: bytes! };
    return { entries: entries!, bytes: bytes!, ...(oldest! >= 0 ? { oldestAt: oldest! } : {}) };
  }

  /** Whether this instance holds the drain lease now. */
  holds(): boolean {
    return this.lease.held(this.feed);
  }

  /** Waits until this instance holds the drain lease; resolves with its fence. */
  waitForLease(signal?: AbortSignal): Promise<number> {
    return this.lease.acquire(this.feed, signal);
  }

  sizeOf(msg: AcceptedMsg, entries: OutboxEntry[]): number {
    this.sized = encode(msg, entries);
    return this.sized.bytes;
  }

  async accept(msg: AcceptedMsg, entries: OutboxEntry[]): Promise<number> {
    const enc = this.sized && this.sized.msg === msg && this.sized.entries === entries ? this.sized : encode(msg, entries);
    this.sized = undefined;
    const k = this.k;
    const args = [msg.key, entries.length, enc.bytes, this.opts.maxEntries ?? Number.MAX_SAFE_INTEGER, this.opts.maxBytes ?? Number.MAX_SAFE_INTEGER, ...enc.args];
    this.check();
    try {
      const [first, ...figs] = await this.call('accepting into the outbox', this.lua.accept, [k.seq, k.meta, k.z, k.w, k.e, k.i, k.mh, k.mj], args, (v) => figuresOf(v, 3, 'the accept script'));
      this.figs = { entries: figs[0]!, bytes: figs[1]! };
      return first!;
    } catch (err) {
      if (err instanceof GatewayError && err.code === 'OUTBOX_FULL') throw err;
      return this.withdraw(msg.key, err as GatewayError);
    }
  }

  /**
   * An accept whose reply never came (a timeout, a dropped connection, a WAIT not answered) may
   * have run: its entries would then be sent later, after its msg ended with the error. Its
   * msg is withdrawn if no drainer touched it (nothing kept: the error is true), else the accept
   * happened and resolves with its first seq; when Redis does not answer that either, the error
   * says the outcome is unknown.
   */
  private async withdraw(key: string, err: GatewayError): Promise<number> {
    const k = this.k;
    const said = err.message.replace(/; check that Redis is running.*$/, '');
    for (let tries = 0; tries < WITHDRAW_TRIES && !this.closed; tries++) {
      let got: number[];
      try {
        got = await this.call('withdrawing an accept whose reply was lost', this.lua.withdraw, [k.meta, k.z, k.w, k.e, k.i, k.s, k.a, k.sa, k.mh, k.mj], [key], (v) => figuresOf(v, 4, 'the withdraw script'));
      } catch {
        continue;
      }
      this.figs = { entries: got[2]!, bytes: got[3]! };
      if (got[0] === 2) return got[1]!;
      throw new GatewayError('SHARED_STATE', `${said}; nothing of this msg was kept in the outbox "${this.name}" (its accept withdrawn)`, { cause: err });
    }
    const unknown: GatewayError & { outcome?: 'unknown' } = new GatewayError('SHARED_STATE', `${said}; the outcome is UNKNOWN: this msg may have been kept in the outbox "${this.name}" and its entries may still be sent (Redis did not answer the withdrawal either)`, { cause: err });
    unknown.outcome = 'unknown'; // as an outbox entry whose send's outcome cannot be told (results.ts)
    throw unknown;
  }

  async load(ids: string[]): Promise<Map<string, JsonValue>> {
    const out = new Map<string, JsonValue>();
    for (const [id, text] of await this.values(this.k.i, ids)) out.set(id, JSON.parse(text) as JsonValue);
    return out;
  }

  async msgJson(key: string): Promise<JsonObject | undefined> {
    const text = (await this.values(this.k.mj, [key])).get(key);
    return text === undefined ? undefined : (JSON.parse(text) as JsonObject);
  }

  /**
   * A mark the master ran but no replica acknowledged (one lagging past the WAIT's timeout, or
   * the node no master any more) rejects, and the drain takes it as not made: no request
   * leaves, the entries wait again in its memory and are marked later with a new attempt. In
   * Redis they stayed marked with this one, so every later mark was refused as stale and the
   * outbox stalled until another instance took its lease. They are put back to waiting first.
   * `seenThrough`: the drainer read every entry up to it; an older entry of the same priority
   * after it refuses the mark ('unseen', MARK_SENDING), so another instance's accept is never
   * overtaken by the drainer's own newer one.
   */
  async markSending(ids: string[], attempt: SendAttempt, seenThrough?: number): Promise<void> {
    if (!ids.length) return;
    const k = this.k;
    try {
      await this.fenced('marking a send in the outbox', this.lua.mark, [k.lease, k.meta, k.w, k.e, k.s, k.a], [seenThrough === undefined ? '' : String(seenThrough), JSON.stringify(attempt), ...ids]);
    } catch (err) {
      if (err instanceof SharedStateError && err.reason === 'unacknowledged') await this.backToWaiting(ids).catch(() => undefined);
      throw err;
    }
  }

  /** One writer wins: `taken` lists the ends another instance made first (ended otherwise, or forgotten), not made here. */
  async end(ends: Array<{ id: string; outcome: EntryOutcome }>): Promise<{ taken: string[] }> {
    if (!ends.length) return { taken: [] };
    const k = this.k;
    const args = ends.flatMap((x) => [x.id, JSON.stringify(x.outcome), x.outcome.result === 'EXPIRED' || x.outcome.result === 'OUTBOX_FULL' ? '0' : '1']);
    const got = await this.call('ending outbox entries', this.lua.end, [k.lease, k.meta, k.w, k.e, k.s, k.sa], [this.owner(), ...args], endReply);
    this.figs = got.figures;
    return { taken: got.taken };
  }

  /**
   * Whether this instance emits the outcome of this ended msg (one writer wins): 0 yes, -1 no
   * (another does or did), else the ms to ask again (the last holder's claim, fresh: CLAIM).
   * Not acknowledged by a replica: a claim lost with the master is an outcome given again
   * across a failover, as a forget lost with it is.
   */
  async claim(key: string): Promise<number> {
    const k = this.k;
    const grace = this.opts.claimGraceMs ?? this.opts.leaseMs ?? 10_000;
    return this.call('claiming an outcome of the outbox', this.lua.claim, [k.lease, k.mh, k.mo], [this.owner(), key, grace], (v) => figuresOf([v], 1, 'the claim script')[0]!, false);
  }

  async backToWaiting(ids: string[]): Promise<void> {
    if (!ids.length) return;
    const k = this.k;
    await this.fenced('putting outbox entries back to waiting', this.lua.back, [k.lease, k.meta, k.w, k.e, k.s], ids);
  }

  async forget(msgKeys: string[]): Promise<void> {
    if (!msgKeys.length) return;
    const k = this.k;
    const figs = await this.call('forgetting outbox msgs', this.lua.forget, [k.meta, k.z, k.w, k.e, k.i, k.s, k.a, k.sa, k.mh, k.mj, k.mo], msgKeys, (v) => figuresOf(v, 2, 'the forget script'));
    this.figs = { entries: figs[0]!, bytes: figs[1]! };
  }

  /** As of this instance's last call (the fleet's figures: Redis counts them). */
  figures(): StoreFigures {
    return { entries: this.figs.entries, bytes: this.figs.bytes, storedBytes: this.figs.bytes };
  }

  /** Stops taking part in the lease (released, so another instance takes over at once). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stop.abort(new GatewayError('SHARED_STATE', 'the outbox store was closed'));
    await this.acquiring;
    await this.lease.close();
  }

  /** Takes part in the lease until this store is closed (again after a lost lease). */
  private compete(): void {
    if (this.closed || this.acquiring) return;
    this.acquiring = this.lease.acquire(this.feed, this.stop.signal).then(
      () => {
        this.acquiring = undefined;
      },
      () => {
        this.acquiring = undefined;
        if (!this.closed) setTimeout(() => this.compete(), Math.max(50, (this.opts.leaseMs ?? 10_000) / 4)).unref();
      },
    );
  }

  /** A write of a send: with this instance's lease and fence ('' when not held: refused). */
  private async fenced(what: string, lua: Script, keys: string[], args: string[]): Promise<void> {
    const figs = await this.call(what, lua, keys, [this.owner(), ...args], (v) => figuresOf(v, 2, 'the outbox script'));
    this.figs = { entries: figs[0]!, bytes: figs[1]! };
  }

  /** This instance's `owner:fence` in the lease, '' when it does not hold it. */
  private owner(): string {
    const fence = this.lease.fence(this.feed);
    return fence === undefined ? '' : `${this.lease.instanceId}:${fence}`;
  }

  /** Values of a hash's fields, in pages within the bound (a value over it read in slices). */
  private async values(hash: string, fields: string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    let rest = fields;
    while (rest.length) {
      const chunk = rest.slice(0, 1000);
      const got = await this.call('reading the outbox', this.lua.values, [hash], [this.pageBytes, ...chunk], (v) => pairs(v, 'the values script'), false);
      for (const [i, [len, value]] of got.entries()) {
        if (len < 0) continue;
        out.set(chunk[i]!, len > this.pageBytes ? await this.slices(hash, chunk[i]!, len) : value);
      }
      rest = rest.slice(Math.max(1, got.length));
    }
    return out;
  }

  /** One value over the page bound, read a page at a time (bytes, decoded once whole). */
  private async slices(hash: string, field: string, len: number): Promise<string> {
    const parts: Buffer[] = [];
    for (let from = 0; from < len; from += this.pageBytes) {
      const part = await this.conn.run('reading the outbox', async (r) => {
        const v = (await r.callBuffer('EVAL', SLICE, 1, hash, field, from, this.pageBytes)) as unknown;
        if (!Array.isArray(v) || typeof v[0] !== 'number' || !Buffer.isBuffer(v[1])) throw new GatewayError('SHARED_STATE', 'the outbox slice read gave a reply of the wrong type');
        return v[1] as Buffer;
      }, { timeoutMs: this.opts.timeoutMs });
      parts.push(part);
    }
    return Buffer.concat(parts).toString('utf8');
  }

  private check(): void {
    if (this.closed) throw new GatewayError('SHARED_STATE', `the outbox store "${this.name}" is closed`);
  }

  /**
   * One script, acknowledged when it wrote (`ack`); its errors as the outbox's. WAIT counts
   * the writes of its own connection: when the master changed between the script and its
   * acknowledgement (a failover; the connection asked the new master), the acknowledgement
   * says nothing of the write, which may have died with the old master. The script is then
   * run again on the new master (each is safe to run twice: an accept finds its msg), and
   * acknowledged there; at most MASTER_CHANGES times, then SHARED_STATE.
   */
  private async call<T>(what: string, lua: Script, keys: string[], args: (string | number)[], parse: (v: unknown) => T, ack = true): Promise<T> {
    this.check();
    const key = keys[1] ?? keys[0]!;
    try {
      for (let changes = 0; ; changes++) {
        const out = await this.conn.run(what, async (r) => parse(await lua(r, keys, args)), { timeoutMs: this.opts.timeoutMs });
        if (!ack) return out;
        const wrote = this.conn.master(key);
        await this.conn.acknowledged(what, key, this.opts.timeoutMs);
        if (this.conn.master(key) === wrote) return out;
        if (changes >= MASTER_CHANGES) throw new SharedStateError(`${this.conn.label}: the master changed ${changes + 1} times before a replica acknowledged the write while ${what}`, 'unacknowledged');
      }
    } catch (err) {
      throw outboxError(err, what, this.name);
    }
  }
}

/** The accept script's arguments after the bounds, and the bytes the msg takes. */
function encode(msg: AcceptedMsg, entries: OutboxEntry[]): Encoded {
  const json = JSON.stringify(msg.json);
  const parts: string[] = [];
  let bytes = Buffer.byteLength(json) + msg.key.length + 96;
  for (const e of entries) {
    const head = JSON.stringify({ p: e.priority, k: e.kind, at: e.acceptedAt, x: e.expiresAt });
    const item = JSON.stringify(e.item ?? null);
    parts.push(head, item, String(e.priority));
    bytes += Buffer.byteLength(head) + Buffer.byteLength(item) + e.id.length * 5 + 48;
  }
  const mhead = JSON.stringify({ n: entries.length, b: bytes, m: msg.msgId, at: msg.acceptedAt });
  return { msg, entries, args: [mhead, json, ...parts], bytes };
}
