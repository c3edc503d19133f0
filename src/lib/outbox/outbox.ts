/**
 * Outbox: the engine over an OutboxStore (types.ts says the contract; shared/spec/nodes.md
 * "Commands that survive the edge"). It decides, the store keeps:
 * - accept: checks, bounds (whenFull), the store's accept; resolves once durable;
 * - drain: one batch at a time, the longest run of one kind at the head of the order
 *   (priority, then seq); each attempt is recorded before the request leaves;
 * - unknown outcomes: nothing is sent while any is unreconciled (the whole outbox waits);
 * - TTL: an entry waiting past its expiresAt ends EXPIRED (a timer, within a second or so);
 * - one outcome per msg once all its entries ended, then the msg is forgotten.
 * Memory: entries live in an EntryTable (columns, table.ts) and the queue holds its slots;
 * an entry is an object only while it is out of the queue (a batch, an outcome).
 */
import { EventEmitter } from 'node:events';
import { badInput, GatewayError } from '../common/errors';
import { Drain, endInStore, type DrainHost, type End } from './drain';
import { adopt, adoptAll, claimed, Fleet, isFleetStore } from './fleet';
import { makeKey } from './keys';
import { SendQueue, takeOldestUntil } from './queue';
import { ENDED, EntryTable, OUT, WAITING } from './table';
import type {
  AcceptOptions, AcceptReceipt, EntryOutcome, JsonObject, JsonValue, MsgOutcome, NewEntry, OutboxApi, OutboxEntry, OutboxOptions, OutboxState, OutboxStore,
} from './types';
import { OUTBOX_KINDS } from './types';

export const OUTBOX_DEFAULTS = { ttlSeconds: 3600, maxEntries: 10000, maxBytes: 64 * 1024 * 1024, whenFull: 'reject', batchMax: 100, priority: 4 } as const;

export class Outbox extends EventEmitter implements OutboxApi, DrainHost {
  readonly name: string;
  readonly store: OutboxStore;
  table = new EntryTable();
  queue = new SendQueue(this.table);
  drain: Drain;
  /** A fleet's store (Redis): only the lease holder drains (fleet.ts). */
  readonly fleet?: Fleet;
  readonly now: () => number;
  readonly limits: { ttlSeconds: number; maxEntries: number; maxBytes: number; whenFull: 'reject' | 'drop-oldest' };
  /** Entries not ended, and bytes of msgs not forgotten. */
  live = { entries: 0, bytes: 0 };
  private reserved = { entries: 0, bytes: 0 };
  private opened = false;
  closed = false;
  private expiryTimer?: NodeJS.Timeout;
  private nextExpiry = Infinity;
  readonly emitting = new Set<Promise<void>>();
  private stateTimer?: NodeJS.Timeout;
  /** Accepts waiting for room (drop-oldest), so accepts reach the store in call order. */
  private admitting: Promise<unknown> = Promise.resolve();
  private waitingForRoom = 0;
  private lastEmitted: Promise<void> = Promise.resolve();

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
    if (isFleetStore(this.store)) this.fleet = new Fleet(this, this.store);
  }

  /** A fleet's holder: every entry up to this seq read (fleet.ts). */
  seenThrough(): number | undefined {
    return this.fleet?.seenThrough();
  }

  catchUp(): Promise<boolean> {
    return this.fleet ? this.fleet.catchUp() : Promise.resolve(false);
  }

  /** Whether this instance drains (always, but in a fleet whose lease another instance holds). */
  drains(): boolean {
    return !this.closed && (!this.fleet || this.fleet.active);
  }

  async open(): Promise<void> {
    if (this.fleet) {
      this.opened = true;
      return this.fleet.open();
    }
    const found = this.store.openEach ? await this.store.openEach((m, es) => adopt(this, m, es)) : adoptAll(this, await this.store.open());
    this.opened = true;
    this.started(found.lost);
  }

  /** After entries were loaded: what was lost said, the outcomes a crash left unemitted emitted, the drain started. */
  started(lost: { torn: number; corrupt: number }): void {
    this.lostRecords(lost);
    const done: string[] = [];
    for (const first of this.table.byKey.slots()) if (this.table.open.get(first) === 0 && !this.table.emitted.get(first)) done.push(this.table.keyOf(first));
    for (const key of done) this.track(this.emitOutcome(key));
    this.scheduleExpiry(this.queue.nextExpiry());
    this.changed();
    this.drain.kick();
  }

  private lostRecords(found: { torn: number; corrupt: number }): void {
    const parts = [found.torn ? `a torn last record` : '', found.corrupt ? `${found.corrupt} corrupt record(s)` : ''].filter(Boolean);
    if (parts.length) this.warn(`the outbox's store had ${parts.join(' and ')} (power lost mid-write?): that much was lost, every other entry was kept`);
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
    // A fleet's instance that does not drain accepts only: the store's bound is the guard.
    if (this.fleet && !this.fleet.active) return this.fleet.acceptOnly(msg, list);
    // Several accepts may be in flight (the store commits them in groups): each reaches the
    // store in call order, at once when there is room, else after the accepts before it.
    if (this.waitingForRoom > 0 || !this.fitsAfter(list.length, bytes, 0, 0)) await this.inTurn(() => this.makeRoom(list.length, bytes));
    this.reserved.entries += list.length;
    this.reserved.bytes += bytes;
    let seq: number;
    const gen = this.fleet?.accepting(key);
    try {
      seq = await this.store.accept(msg, list);
    } catch (err) {
      this.fleet?.failed(key);
      throw err;
    } finally {
      this.reserved.entries -= list.length;
      this.reserved.bytes -= bytes;
    }
    if (this.fleet && !this.fleet.accepted(key, seq, gen!)) return { key, ids: msg.entryIds, standby: true };
    list.forEach((e, i) => {
      e.seq = seq + i;
    });
    const first = this.table.add({ key, msgId, acceptedAt: now, bytes, entries: list });
    this.live.entries += list.length;
    this.live.bytes += bytes;
    for (let i = 0; i < list.length; i++) this.queue.insert(first + i);
    if (now + ttlMs < this.nextExpiry) this.scheduleExpiry(now + ttlMs);
    this.changed();
    this.drain.kick();
    return { key, ids: msg.entryIds };
  }

  /**
   * Whether accepts may be called while earlier ones are in flight and still be applied and
   * acknowledged in call order, many under one sync (a store that says so, not a fleet's):
   * the node layer then hands msgs over without waiting for the one before.
   */
  groupsAccepts(): boolean {
    return this.store.groupsAccepts === true && !this.fleet;
  }

  /** Runs `step` after the steps before it (and reserves nothing itself). */
  private inTurn(step: () => Promise<void>): Promise<void> {
    this.waitingForRoom++;
    const run = this.admitting.then(step);
    this.admitting = run.catch(() => undefined).finally(() => {
      this.waitingForRoom--;
    });
    return run;
  }

  state(): OutboxState {
    if (this.fleet && !this.fleet.active && !this.closed) return this.fleet.state();
    const unknown = this.drain.unknownCount();
    const waitingAt = this.queue.oldestAt();
    const heldAt = this.drain.oldestHeldAt();
    const oldestAt = waitingAt === undefined ? heldAt : heldAt === undefined ? waitingAt : Math.min(waitingAt, heldAt);
    return {
      outbox: this.name, waiting: this.live.entries, unknown, bytes: this.live.bytes, oldestAt, problem: this.drain.problem,
      phase: this.closed ? 'closed' : this.drain.phase,
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.fleet?.close();
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
    this.ended(await endInStore(this.store, ends, (m) => this.warn(m)));
  }

  /** In memory, after the store recorded the ends. */
  ended(ends: Array<{ entry: OutboxEntry; outcome: EntryOutcome }>): Promise<void>[] {
    const done: Promise<void>[] = [];
    const t = this.table;
    for (const { entry, outcome } of ends) {
      const slot = t.slotOf(entry.id);
      if (entry.state.phase === 'ended' || slot < 0 || t.phase.get(slot) === ENDED) continue;
      if (entry.state.phase === 'sending' && outcome.result !== 'EXPIRED' && outcome.result !== 'OUTBOX_FULL') entry.sentAt = entry.state.attempt.startedAt;
      entry.state = { phase: 'ended', outcome };
      t.record(slot, entry, ENDED);
      this.live.entries--;
      const first = t.firstOf(slot);
      const left = t.open.get(first) - 1;
      t.open.set(first, left);
      if (left === 0) done.push(this.track(this.emitOutcome(entry.msgKey)));
    }
    this.changed();
    return done;
  }

  /** Entries out of the queue wait again, each in its place (with its attempts). */
  requeue(entries: OutboxEntry[]): void {
    for (const e of entries) {
      const slot = this.table.slotOf(e.id);
      if (slot < 0 || this.table.phase.get(slot) !== OUT) continue;
      e.state = { phase: 'waiting' };
      this.table.record(slot, e, WAITING);
      this.queue.insert(slot);
    }
  }

  /** The next entry in sending order: its kind and expiry (not taken). */
  head(): { kind: OutboxEntry['kind']; expiresAt: number } | undefined {
    const s = this.queue.peek();
    return s < 0 ? undefined : { kind: this.table.kindOf(s), expiresAt: this.table.expiresAt.get(s) };
  }

  /** Takes the next run (see SendQueue.takeRun) out of the queue, as entry objects. */
  takeRun(max: number, fits: (kind: OutboxEntry['kind'], expiresAt: number) => boolean): OutboxEntry[] {
    const t = this.table;
    return this.out(this.queue.takeRun(max, (s) => fits(t.kindOf(s), t.expiresAt.get(s))));
  }

  /** Slots taken out of the queue, as entry objects. */
  private out(slots: number[]): OutboxEntry[] {
    return slots.map((s) => {
      this.table.phase.set(s, OUT);
      return this.table.entry(s);
    });
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

  private full(what: string): GatewayError {
    return new GatewayError('OUTBOX_FULL', `the outbox "${this.name}" is full (${what}); nothing of this msg was kept`);
  }

  /** Room for a msg: at once, or (drop-oldest) by ending the oldest waiting entries OUTBOX_FULL. */
  private async makeRoom(entries: number, bytes: number): Promise<void> {
    const { maxEntries, maxBytes } = this.limits;
    if (entries > maxEntries || bytes > maxBytes) throw this.full(`this msg alone is over the bound: ${entries} entries, ${bytes} bytes; at most ${maxEntries} entries, ${maxBytes} bytes`);
    for (let round = 0; !this.fitsAfter(entries, bytes, 0, 0); round++) {
      if (this.limits.whenFull === 'reject' || round > 1000) throw this.full(`${this.live.entries} entries waiting, ${this.live.bytes} bytes; at most ${maxEntries}, ${maxBytes}`);
      const victims = this.pickVictims(entries, bytes);
      if (!victims.length) throw this.full('every entry is being sent; none can be dropped');
      const at = this.now();
      let made: End[];
      try {
        made = await endInStore(this.store, victims.map((entry) => ({ entry, outcome: { result: 'OUTBOX_FULL' as const, at } })), (m) => this.warn(m));
      } catch (err) {
        this.requeue(victims);
        throw err;
      }
      await Promise.all(this.ended(made));
    }
  }

  /** The oldest waiting entries whose end makes room (taken out of the queue). */
  private pickVictims(entries: number, bytes: number): OutboxEntry[] {
    return this.out(takeOldestUntil(this.table, this.queue, (freeEntries, freeBytes) => this.fitsAfter(entries, bytes, freeEntries, freeBytes)));
  }

  private fitsAfter(entries: number, bytes: number, freeEntries: number, freeBytes: number): boolean {
    return this.live.entries + this.reserved.entries + entries - freeEntries <= this.limits.maxEntries &&
      this.live.bytes + this.reserved.bytes + bytes - freeBytes <= this.limits.maxBytes;
  }

  /** Emits a msg's outcome once, then forgets it in the store. */
  async emitOutcome(key: string): Promise<void> {
    const t = this.table;
    const first = t.byKey.get(key);
    if (first === undefined || t.emitted.get(first)) return;
    t.emitted.set(first, 1);
    const msgId = t.msgIds.get(first) as string;
    const acceptedAt = t.acceptedAt.get(first);
    const bytes = t.bytes.get(first);
    const entries = Array.from({ length: t.count.get(first) }, (_, i) => t.entry(first + i));
    // Read at once, emitted in the order the msgs ended (reads may finish in any order).
    const before = this.lastEmitted;
    const read = Promise.all([this.store.msgJson(key).catch(() => undefined), this.store.load(entries.map((e) => e.id)).catch(() => new Map<string, JsonValue>())]);
    const emitted = read.then(async ([json, items]) => {
      await before;
      if (!(await claimed(this, key))) return undefined; // another instance of the fleet emits it
      return this.emitNow({
        outbox: this.name, key, msgId, json, acceptedAt,
        entries: entries.map((e) => ({
          id: e.id, kind: e.kind, item: items.get(e.id), outcome: (e.state as { outcome: EntryOutcome }).outcome, attempts: e.attempts, acceptedAt: e.acceptedAt,
          ...(e.sentAt === undefined ? {} : { sentAt: e.sentAt }),
        })),
      });
    });
    this.lastEmitted = emitted.then(() => undefined, () => undefined);
    const how = await emitted;
    if (how === undefined) return;
    if (!how) {
      const now = t.byKey.get(key); // not taken: left in the store, the next open emits it
      if (now !== undefined) t.emitted.set(now, 0);
      return;
    }
    // Node-RED hands a send to the next node on a later turn (setImmediate): forgotten after that turn, so a kill
    // between the two gives the outcome again (at least once), never loses it.
    await new Promise((resolve) => setImmediate(resolve));
    try {
      await this.store.forget([key]);
    } catch {
      // Emitted, not forgotten: at the next open it is emitted again (at least once across a failure).
    }
    if (this.table === t) this.forgotten(key, bytes);
  }

  /** False when `options.deliver` says no one can take it now (then it is not emitted). */
  private emitNow(outcome: MsgOutcome): boolean {
    if (outcome.json === undefined) this.warn(`the msg ${outcome.key} of the outbox ended, but its properties could not be read: its outcome carries none`);
    try {
      if (this.options.deliver && !this.options.deliver(outcome)) return false;
      this.emit('outcome', outcome);
    } catch (err) {
      this.warn(`an outcome listener threw (${(err as Error)?.name ?? 'an error'}); the outbox goes on`);
    }
    return true;
  }

  /** A msg's slots freed (the table compacted when mostly free: no slot is held across an await). */
  private forgotten(key: string, bytes: number): void {
    this.table.remove(key);
    this.live.bytes -= bytes;
    if (this.table.sparse()) this.queue.remap(this.table.compact());
    this.changed();
  }

  track(p: Promise<void>): Promise<void> {
    const t = p.finally(() => this.emitting.delete(t));
    this.emitting.add(t);
    return t;
  }

  scheduleExpiry(at: number): void {
    clearTimeout(this.expiryTimer);
    this.nextExpiry = at;
    if (at === Infinity || !this.drains()) return;
    this.expiryTimer = setTimeout(() => void this.expire(), Math.max(0, at - this.now()) + 20);
    this.expiryTimer.unref();
  }

  /** Ends the waiting entries whose TTL ended (never sent after); false when that could not be recorded. */
  async expire(): Promise<boolean> {
    if (!this.drains()) return true;
    const now = this.now();
    const x = this.table.expiresAt;
    const gone = this.out(this.queue.removeWhere((s) => x.get(s) <= now));
    this.scheduleExpiry(this.queue.nextExpiry());
    if (!gone.length) return true;
    try {
      await this.endEntries(gone.map((entry) => ({ entry, outcome: { result: 'EXPIRED', at: now } })));
      return true;
    } catch {
      this.requeue(gone); // not recorded: they wait, and expire at the next try
      this.scheduleExpiry(Math.min(this.nextExpiry, now + 1000));
      return false;
    }
  }
}
