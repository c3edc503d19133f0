/**
 * Outbox: the engine over an OutboxStore (types.ts says the contract; shared/spec/nodes.md
 * "Commands that survive the edge"). It decides, the store keeps:
 * - accept: checks, bounds (whenFull), the store's accept; resolves once durable;
 * - drain: one batch at a time, the longest run of one kind at the head of the order
 *   (priority, then seq); each attempt is recorded before the request leaves;
 * - unknown outcomes: nothing is sent while any is unreconciled (the whole outbox waits);
 * - TTL: an entry waiting past its expiresAt ends EXPIRED (a timer, within a second or so);
 * - one outcome per msg once all its entries ended, then the msg is forgotten.
 */
import { EventEmitter } from 'node:events';
import { badInput, GatewayError } from '../common/errors';
import { Drain, type DrainHost } from './drain';
import { makeKey } from './keys';
import { SendQueue } from './queue';
import type {
  AcceptOptions, AcceptReceipt, EntryOutcome, JsonObject, MsgOutcome, NewEntry, OutboxApi, OutboxEntry, OutboxOptions, OutboxState, OutboxStore,
} from './types';
import { OUTBOX_KINDS } from './types';

export const OUTBOX_DEFAULTS = { ttlSeconds: 3600, maxEntries: 10000, maxBytes: 64 * 1024 * 1024, whenFull: 'reject', batchMax: 100, priority: 4 } as const;

/** A msg the engine follows until its outcome is emitted. */
export interface MsgHead {
  key: string;
  msgId: string;
  acceptedAt: number;
  bytes: number;
  entries: OutboxEntry[];
  /** Entries not ended. */
  open: number;
  emitted?: boolean;
}

export class Outbox extends EventEmitter implements OutboxApi, DrainHost {
  readonly name: string;
  readonly store: OutboxStore;
  readonly queue = new SendQueue();
  readonly msgs = new Map<string, MsgHead>();
  readonly drain: Drain;
  readonly now: () => number;
  readonly limits: { ttlSeconds: number; maxEntries: number; maxBytes: number; whenFull: 'reject' | 'drop-oldest' };
  /** Entries not ended, and bytes of msgs not forgotten. */
  live = { entries: 0, bytes: 0 };
  private reserved = { entries: 0, bytes: 0 };
  private opened = false;
  closed = false;
  private expiryTimer?: NodeJS.Timeout;
  private nextExpiry = Infinity;
  private readonly emitting = new Set<Promise<void>>();
  private stateTimer?: NodeJS.Timeout;

  constructor(readonly options: OutboxOptions) {
    super();
    this.name = options.name;
    this.store = options.store;
    this.now = options.now ?? Date.now;
    this.limits = {
      ttlSeconds: options.ttlSeconds ?? OUTBOX_DEFAULTS.ttlSeconds,
      maxEntries: options.maxEntries ?? OUTBOX_DEFAULTS.maxEntries,
      maxBytes: options.maxBytes ?? OUTBOX_DEFAULTS.maxBytes,
      whenFull: options.whenFull ?? OUTBOX_DEFAULTS.whenFull,
    };
    this.drain = new Drain(this);
  }

  async open(): Promise<void> {
    const found = await this.store.open();
    const lost = found.lost.torn + found.lost.corrupt;
    if (lost) {
      const parts = [found.lost.torn ? `a torn last record` : '', found.lost.corrupt ? `${found.lost.corrupt} corrupt record(s)` : ''].filter(Boolean);
      this.warn(`the outbox's store had ${parts.join(' and ')} (power lost mid-write?): that much was lost, every other entry was kept`);
    }
    for (const m of found.msgs) this.msgs.set(m.key, { key: m.key, msgId: m.msgId, acceptedAt: m.acceptedAt, bytes: m.bytes, entries: [], open: 0 });
    for (const e of found.entries) {
      const msg = this.msgs.get(e.msgKey);
      if (!msg) continue;
      msg.entries.push(e);
      if (e.state.phase !== 'ended') {
        msg.open++;
        this.live.entries++;
      }
      if (e.state.phase === 'waiting') this.queue.insert(e);
      else if (e.state.phase === 'sending') this.drain.addUnknown(e.state.attempt, [e]);
    }
    for (const m of this.msgs.values()) this.live.bytes += m.bytes;
    this.opened = true;
    for (const m of [...this.msgs.values()]) if (m.open === 0) this.track(this.emitOutcome(m));
    this.scheduleExpiry(this.queue.nextExpiry());
    this.changed();
    this.drain.kick();
  }

  async accept(msgId: string, json: JsonObject, entries: NewEntry[], opts: AcceptOptions = {}): Promise<AcceptReceipt> {
    const { priority, ttlMs } = this.check(entries, opts);
    if (!this.opened || this.closed) throw new GatewayError('STORAGE', `the outbox "${this.name}" is not open`);
    const now = this.now();
    const key = makeKey(now);
    const list: OutboxEntry[] = entries.map((e, i) => ({
      id: `${key}/${i}`, msgKey: key, kind: e.kind, item: e.item, priority, seq: 0, acceptedAt: now, expiresAt: now + ttlMs, attempts: 0, state: { phase: 'waiting' },
    }));
    const msg = { key, msgId, json, acceptedAt: now, entryIds: list.map((e) => e.id) };
    const bytes = this.store.sizeOf(msg, list);
    await this.makeRoom(list.length, bytes);
    this.reserved.entries += list.length;
    this.reserved.bytes += bytes;
    let seq: number;
    try {
      seq = await this.store.accept(msg, list);
    } finally {
      this.reserved.entries -= list.length;
      this.reserved.bytes -= bytes;
    }
    const head: MsgHead = { key, msgId, acceptedAt: now, bytes, entries: list, open: list.length };
    this.msgs.set(key, head);
    this.live.entries += list.length;
    this.live.bytes += bytes;
    for (const [i, e] of list.entries()) {
      e.seq = seq + i;
      delete e.item; // the payload stays in the store
      this.queue.insert(e);
    }
    if (now + ttlMs < this.nextExpiry) this.scheduleExpiry(now + ttlMs);
    this.changed();
    this.drain.kick();
    return { key, ids: msg.entryIds };
  }

  state(): OutboxState {
    const unknown = this.drain.unknownCount();
    const waitingAt = this.queue.oldestAt();
    const unknownAt = this.drain.oldestUnknownAt();
    const oldestAt = waitingAt === undefined ? unknownAt : unknownAt === undefined ? waitingAt : Math.min(waitingAt, unknownAt);
    return {
      outbox: this.name, waiting: this.live.entries, unknown, bytes: this.live.bytes, oldestAt, problem: this.drain.problem,
      phase: this.closed ? 'closed' : this.drain.phase,
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.expiryTimer);
    clearTimeout(this.stateTimer);
    await this.drain.stop();
    await Promise.allSettled([...this.emitting]);
    await this.store.close();
    this.emit('state', this.state());
  }

  /** Ends entries (recorded first); emits the outcome of each msg all of whose entries ended. */
  async endEntries(ends: Array<{ entry: OutboxEntry; outcome: EntryOutcome }>): Promise<void> {
    if (!ends.length) return;
    await this.store.end(ends.map((x) => ({ id: x.entry.id, outcome: x.outcome })));
    this.ended(ends);
  }

  /** In memory, after the store recorded the ends. */
  ended(ends: Array<{ entry: OutboxEntry; outcome: EntryOutcome }>): Promise<void>[] {
    const done: Promise<void>[] = [];
    for (const { entry, outcome } of ends) {
      if (entry.state.phase === 'ended') continue;
      if (entry.state.phase === 'sending' && outcome.result !== 'EXPIRED' && outcome.result !== 'OUTBOX_FULL') entry.sentAt = entry.state.attempt.startedAt;
      entry.state = { phase: 'ended', outcome };
      this.live.entries--;
      const msg = this.msgs.get(entry.msgKey);
      if (msg && --msg.open === 0) done.push(this.track(this.emitOutcome(msg)));
    }
    this.changed();
    return done;
  }

  warn(message: string): void {
    this.emit('warning', { outbox: this.name, message });
  }

  /** Says the state soon (at most every 250 ms, so a flood of accepts is not a flood of statuses). */
  changed(): void {
    if (this.stateTimer || this.closed) return;
    this.stateTimer = setTimeout(() => {
      this.stateTimer = undefined;
      if (!this.closed) this.emit('state', this.state());
    }, 250);
    this.stateTimer.unref();
  }

  private check(entries: NewEntry[], opts: AcceptOptions): { priority: number; ttlMs: number } {
    if (!Array.isArray(entries) || entries.length === 0) throw badInput('entries', 'a msg gives the outbox at least one entry');
    for (const e of entries) if (!OUTBOX_KINDS.includes(e?.kind)) throw badInput('entries', `an entry's kind is one of ${OUTBOX_KINDS.join(', ')}`);
    const priority = opts.priority ?? OUTBOX_DEFAULTS.priority;
    if (!Number.isInteger(priority) || priority < 0 || priority > 9) throw badInput('msg.priority', 'an integer 0 (first) to 9');
    const ttl = opts.ttlSeconds ?? this.limits.ttlSeconds;
    if (typeof ttl !== 'number' || !Number.isFinite(ttl) || ttl <= 0) throw badInput('msg.ttl', 'a number of seconds above 0');
    return { priority, ttlMs: Math.round(ttl * 1000) };
  }

  private fits(entries: number, bytes: number): boolean {
    return this.live.entries + this.reserved.entries + entries <= this.limits.maxEntries && this.live.bytes + this.reserved.bytes + bytes <= this.limits.maxBytes;
  }

  private full(what: string): GatewayError {
    return new GatewayError('OUTBOX_FULL', `the outbox "${this.name}" is full (${what}); nothing of this msg was kept`);
  }

  /** Room for a msg: at once, or (drop-oldest) by ending the oldest waiting entries OUTBOX_FULL. */
  private async makeRoom(entries: number, bytes: number): Promise<void> {
    const { maxEntries, maxBytes } = this.limits;
    if (entries > maxEntries || bytes > maxBytes) throw this.full(`this msg alone is over the bound: ${entries} entries, ${bytes} bytes; at most ${maxEntries} entries, ${maxBytes} bytes`);
    for (let round = 0; !this.fits(entries, bytes); round++) {
      if (this.limits.whenFull === 'reject' || round > 1000) throw this.full(`${this.live.entries} entries waiting, ${this.live.bytes} bytes; at most ${maxEntries}, ${maxBytes}`);
      const victims = this.pickVictims(entries, bytes);
      if (!victims.length) throw this.full('every entry is being sent; none can be dropped');
      const at = this.now();
      try {
        await this.store.end(victims.map((entry) => ({ id: entry.id, outcome: { result: 'OUTBOX_FULL', at } })));
      } catch (err) {
        for (const v of victims) this.queue.insert(v);
        throw err;
      }
      await Promise.all(this.ended(victims.map((entry) => ({ entry, outcome: { result: 'OUTBOX_FULL' as const, at } }))));
    }
  }

  /** The oldest waiting entries whose end makes room (taken out of the queue). */
  private pickVictims(entries: number, bytes: number): OutboxEntry[] {
    const victims: OutboxEntry[] = [];
    const open = new Map<string, number>();
    let freeEntries = 0;
    let freeBytes = 0;
    while (!this.fitsAfter(entries + 0, bytes, freeEntries, freeBytes)) {
      const v = this.queue.takeOldest();
      if (!v) break;
      victims.push(v);
      freeEntries++;
      const msg = this.msgs.get(v.msgKey);
      if (!msg) continue;
      const left = (open.get(msg.key) ?? msg.open) - 1;
      open.set(msg.key, left);
      if (left === 0) freeBytes += msg.bytes;
    }
    return victims;
  }

  private fitsAfter(entries: number, bytes: number, freeEntries: number, freeBytes: number): boolean {
    return this.live.entries + this.reserved.entries + entries - freeEntries <= this.limits.maxEntries &&
      this.live.bytes + this.reserved.bytes + bytes - freeBytes <= this.limits.maxBytes;
  }

  /** Emits a msg's outcome once, then forgets it in the store. */
  private async emitOutcome(msg: MsgHead): Promise<void> {
    if (msg.emitted) return;
    msg.emitted = true;
    const json = await this.store.msgJson(msg.key).catch(() => undefined);
    const items = await this.store.load(msg.entries.map((e) => e.id)).catch(() => new Map());
    if (json === undefined) this.warn(`the msg ${msg.key} of the outbox ended, but its properties could not be read: its outcome carries none`);
    const outcome: MsgOutcome = {
      outbox: this.name, key: msg.key, msgId: msg.msgId, json, acceptedAt: msg.acceptedAt,
      entries: msg.entries.map((e) => ({
        id: e.id, kind: e.kind, item: items.get(e.id), outcome: (e.state as { outcome: EntryOutcome }).outcome, attempts: e.attempts, acceptedAt: e.acceptedAt,
        ...(e.sentAt === undefined ? {} : { sentAt: e.sentAt }),
      })),
    };
    try {
      this.emit('outcome', outcome);
    } catch (err) {
      this.warn(`an outcome listener threw (${(err as Error)?.name ?? 'an error'}); the outbox goes on`);
    }
    try {
      await this.store.forget([msg.key]);
    } catch {
      // Emitted, not forgotten: at the next open it is emitted again (at least once across a failure).
    }
    this.msgs.delete(msg.key);
    this.live.bytes -= msg.bytes;
    this.changed();
  }

  private track(p: Promise<void>): Promise<void> {
    const t = p.finally(() => this.emitting.delete(t));
    this.emitting.add(t);
    return t;
  }

  private scheduleExpiry(at: number): void {
    clearTimeout(this.expiryTimer);
    this.nextExpiry = at;
    if (at === Infinity || this.closed) return;
    this.expiryTimer = setTimeout(() => void this.expire(), Math.max(0, at - this.now()) + 20);
    this.expiryTimer.unref();
  }

  /** Ends the waiting entries whose TTL ended (never sent after); false when that could not be recorded. */
  async expire(): Promise<boolean> {
    if (this.closed) return true;
    const now = this.now();
    const gone = this.queue.removeWhere((e) => e.expiresAt <= now);
    this.scheduleExpiry(this.queue.nextExpiry());
    if (!gone.length) return true;
    try {
      await this.endEntries(gone.map((entry) => ({ entry, outcome: { result: 'EXPIRED', at: now } })));
      return true;
    } catch {
      for (const e of gone) this.queue.insert(e); // not recorded: they wait, and expire at the next try
      this.scheduleExpiry(Math.min(this.nextExpiry, now + 1000));
      return false;
    }
  }
}
