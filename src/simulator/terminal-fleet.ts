/**
 * The simulator's fleet (area a, real-services.md "More of the gateway"): a few thousand
 * terminals that look real, generated from a seed, cheaply and lazily (terminal `i` is a
 * pure function of the seed and `i`, so 100,000 of them cost nothing until asked for).
 *
 * - PrimeIDs `01000001SKYA001`, ... in PrimeID order by index (the first four are the
 *   simulator's long-standing terminals, DEFAULT_TERMINALS);
 * - both networks (`LastSatelliteNetwork` 0 IDP, 1 OGx), beams of several regions
 *   (`AMERRB16`, `EMEARB5`, `APACRB3`, ...), modes 0 to 3 (2 and 3 on OGx only), some
 *   never registered (`IsRegistered` null or 0, no registration), some
 *   `LastRegistrationMessageID`s beyond 2^53, cellular fields on OGx;
 * - a share of the terminals belongs to the subaccount (`sub`), the rest to `demo`.
 *
 * Changes (a registration, a new mode) are kept as overrides with their second; the
 * terminal-updates feed (`updatesFrom`) yields every terminal once, at its current
 * `UpdateUTC`, oldest first. Terminals added by hand (`_sim/terminals`, unknown destinations
 * accepted) join the fleet as extras.
 *
 * Late arrivals (`crowdLate`, off unless asked for): a registration in a past second that
 * becomes visible only later (at its time by the fleet's clock, or at `releaseLate()`); until
 * then the terminal is as it was, and then its record lands in that past second, which a poll
 * may already have read, as the real gateway's late records do (real-services.md).
 */
import { FeedLog, formatUtc } from './feed';
import { DEFAULT_TERMINALS, WAKEUP_SECONDS } from './terminal-model';
import { DEFAULT_FLEET_OPTIONS, generateState, mix, primeIdAt, type FleetOptions, type FleetState } from './terminal-fleet-gen';

export { DEFAULT_FLEET_OPTIONS, REGIONS, mix, generateState } from './terminal-fleet-gen';
export type { FleetOptions, FleetState } from './terminal-fleet-gen';

/** One terminal as `info/terminal(s)` and `info/terminal_updates` give it (field names as the real service's). */
export interface TerminalInfo {
  PrimeID: string;
  UnitID: number | null;
  Description: string | null;
  LastRegistrationUTC: string | null;
  LastRegistrationMessageID: bigint | null;
  LastRegionName: string | null;
  LastSatelliteNetwork: number | null;
  LastOperationMode: number | null;
  /** Seconds between wake-ups (as `TerminalWakeupPeriod` of a submission reply); 0 when always on. */
  TerminalWakeupPeriod: number | null;
  MTSN: string | null;
  IMEI: string | null;
  MEID: string | null;
  MAC: string | null;
  PairedTerminalPrimeID: string | null;
  IsRegistered: number | null;
  LastCellAccessUTC: string | null;
  UpdateUTC: string;
}

/** The reply form of a terminal's state. */
export function terminalInfo(s: FleetState): TerminalInfo {
  return {
    PrimeID: s.id,
    UnitID: s.unitId,
    Description: s.description,
    LastRegistrationUTC: s.regSec === null ? null : formatUtc(s.regSec),
    LastRegistrationMessageID: s.regMsgId,
    LastRegionName: s.beam,
    LastSatelliteNetwork: s.family === 'OGx' ? 1 : 0,
    LastOperationMode: s.mode,
    TerminalWakeupPeriod: s.mode === 1 || s.mode === 3 ? (WAKEUP_SECONDS[s.wakeCode] ?? 0) : 0,
    MTSN: s.mtsn,
    IMEI: s.imei,
    MEID: s.meid,
    MAC: s.mac,
    PairedTerminalPrimeID: s.paired,
    IsRegistered: s.registered,
    LastCellAccessUTC: s.cellSec === null ? null : formatUtc(s.cellSec),
    UpdateUTC: formatUtc(s.updateSec),
  };
}

/** A change of one terminal (what a registration or a mode change sets). */
export type FleetChange = Partial<Omit<FleetState, 'id' | 'index' | 'updateSec'>>;

/** A state with a change applied (the change's bookkeeping left out). */
function withChange(s: FleetState, o: FleetChange & { updateSec: number; seq: number }): FleetState {
  const out: FleetState & { seq?: number } = { ...s, ...o };
  delete out.seq;
  return out;
}

interface ChangeEvent {
  sec: number;
  id: string;
  seq: number;
}

/** A registration in second `sec` not visible before `visibleAt` (ms). */
interface LateChange {
  id: string;
  sec: number;
  visibleAt: number;
}

export class Fleet {
  readonly options: FleetOptions;
  /** The second the fleet's history is counted back from. */
  readonly epochSec: number;
  private readonly overrides = new Map<string, FleetChange & { updateSec: number; seq: number }>();
  private readonly extras = new Map<string, FleetState>();
  private readonly changes = new FeedLog<ChangeEvent>();
  private byUpdate: Int32Array | undefined;
  private seq = 0;
  private nextRegMsgId = 90_000_000_000n;
  private late: LateChange[] = [];
  private nextLateAt = Infinity;
  /** The clock late registrations become visible by (the gateway sets its own). */
  now: () => number = Date.now;

  constructor(options: Partial<FleetOptions> = {}, nowMs = Date.now()) {
    this.options = { ...DEFAULT_FLEET_OPTIONS, ...options };
    this.options.size = Math.max(0, Math.floor(this.options.size));
    this.epochSec = Math.floor(nowMs / 1000);
  }

  /** Terminals generated (extras not counted). */
  get size(): number {
    return this.options.size;
  }

  /** PrimeID of generated terminal `i`. */
  primeId(i: number): string {
    return primeIdAt(this.options.seed, i);
  }

  /** Index of a generated terminal's PrimeID, or -1. */
  indexOf(id: string): number {
    if (!/^\d{8}SKY[0-9A-F]{4}$/.test(id)) return -1;
    const i = Number(id.slice(0, 8)) - 1_000_001;
    return i >= 0 && i < this.size && this.primeId(i) === id ? i : -1;
  }

  /** Generated terminal `i` as it is now (overrides applied). */
  at(i: number): FleetState {
    const base = generateState(this.options, i, this.epochSec);
    const o = this.overrides.get(base.id);
    return o ? withChange(base, o) : base;
  }

  /** A terminal of the fleet (generated or extra) as it is now. */
  get(id: string): FleetState | undefined {
    this.releaseLate(this.now());
    const i = this.indexOf(id);
    if (i >= 0) return this.at(i);
    const x = this.extras.get(id);
    if (!x) return undefined;
    const o = this.overrides.get(id);
    return o ? withChange(x, o) : x;
  }

  /** A terminal added by hand: it joins the inventory and the updates feed (`sec` its UpdateUTC). */
  addExtra(t: { id: string; family: 'IDP' | 'OGx'; online: boolean; mode: number; wakeup: number; account: string }, sec: number): void {
    if (this.indexOf(t.id) >= 0 || this.extras.has(t.id)) return;
    const s: FleetState = {
      ...generateState(this.options, DEFAULT_TERMINALS.length + this.size + this.extras.size, sec),
      index: -1,
      id: t.id,
      family: t.family,
      online: t.online,
      mode: t.mode,
      wakeCode: t.wakeup,
      account: t.account,
      registered: 1,
      regSec: sec,
      updateSec: sec,
      paired: null,
    };
    this.extras.set(t.id, s);
    this.record(t.id, sec);
  }

  /** Applies `change` to terminal `id` in second `sec` (its new UpdateUTC): its new state, or undefined when unknown. */
  update(id: string, change: FleetChange, sec: number): FleetState | undefined {
    if (!this.get(id)) return undefined;
    const prev = this.overrides.get(id);
    this.overrides.set(id, { ...prev, ...change, updateSec: sec, seq: 0 });
    this.record(id, sec);
    return this.get(id);
  }

  /** A registration of terminal `id` in second `sec` (a new registration message ID, a beam). */
  register(id: string, sec: number, beam?: string): FleetState | undefined {
    const s = this.get(id);
    if (!s) return undefined;
    return this.update(id, { registered: 1, regSec: sec, regMsgId: this.nextRegMsgId++, beam: beam ?? s.beam ?? 'AMERRB16', online: true }, sec);
  }

  private record(id: string, sec: number): void {
    this.seq++;
    const o = this.overrides.get(id);
    if (o) o.seq = this.seq;
    else this.overrides.set(id, { updateSec: sec, seq: this.seq });
    this.changes.add({ sec, id, seq: this.seq });
  }

  /**
   * One inventory page: up to `pageSize` terminals whose PrimeID sorts after `sinceId`
   * (exclusive; none: from the first), in PrimeID order, those `visible` only.
   */
  page(sinceId: string | undefined, pageSize: number, visible: (s: FleetState) => boolean): FleetState[] {
    this.releaseLate(this.now());
    const out: FleetState[] = [];
    const extras = [...this.extras.keys()].filter((id) => sinceId === undefined || id > sinceId).sort();
    let i = sinceId === undefined ? 0 : this.firstAfter(sinceId);
    let x = 0;
    while (out.length < pageSize && (i < this.size || x < extras.length)) {
      const takeExtra = i >= this.size || (x < extras.length && extras[x]! < this.primeId(i));
      const s = takeExtra ? this.get(extras[x++]!)! : this.at(i++);
      if (visible(s)) out.push(s);
    }
    return out;
  }

  /** The first generated index whose PrimeID sorts after `id` (PrimeIDs grow with the index). */
  private firstAfter(id: string): number {
    let lo = 0;
    let hi = this.size;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.primeId(mid) <= id) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Generated indexes ordered by their generated UpdateUTC (computed once, at the first updates call). */
  private updateOrder(): Int32Array {
    if (this.byUpdate) return this.byUpdate;
    const secs = new Float64Array(this.size);
    for (let i = 0; i < this.size; i++) secs[i] = generateState(this.options, i, this.epochSec).updateSec;
    const order = new Int32Array(this.size);
    for (let i = 0; i < this.size; i++) order[i] = i;
    order.sort((a, b) => secs[a]! - secs[b]! || a - b);
    this.byUpdate = order;
    return order;
  }

  /**
   * Every terminal whose current UpdateUTC is at or after `fromSec`, each once, oldest first
   * (terminals never changed here, then within a second those changed here in their order).
   */
  *updatesFrom(fromSec: number): Generator<FleetState & { sec: number }> {
    this.releaseLate(this.now());
    const order = this.updateOrder();
    const base = this.baseFrom(order, fromSec);
    const live = this.liveFrom(fromSec);
    let a = base.next();
    let b = live.next();
    while (!a.done || !b.done) {
      if (!a.done && (b.done || a.value.updateSec <= b.value.updateSec)) {
        yield { ...a.value, sec: a.value.updateSec };
        a = base.next();
      } else if (!b.done) {
        yield { ...b.value, sec: b.value.updateSec };
        b = live.next();
      }
    }
  }

  /** Generated terminals at or after `fromSec` by their generated UpdateUTC, unless changed here since. */
  private *baseFrom(order: Int32Array, fromSec: number): Generator<FleetState> {
    let lo = 0;
    let hi = order.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (generateState(this.options, order[mid]!, this.epochSec).updateSec < fromSec) lo = mid + 1;
      else hi = mid;
    }
    for (let k = lo; k < order.length; k++) {
      const i = order[k]!;
      if (this.overrides.has(this.primeId(i))) continue;
      yield this.at(i);
    }
  }

  /** Terminals changed here, at their latest change only, at or after `fromSec`. */
  private *liveFrom(fromSec: number): Generator<FleetState> {
    for (const e of this.changes.from(fromSec)) {
      if (this.overrides.get(e.id)?.seq !== e.seq) continue;
      const s = this.get(e.id);
      if (s) yield s;
    }
  }

  /**
   * A crowded second: `count` terminals (generated ones from index `from`, wrapping; at most
   * the fleet's size, since each terminal is in the feed once) re-register in second `sec`.
   */
  crowd(count: number, sec: number, from = 0): string[] {
    const ids = this.pick(count, from);
    for (const id of ids) this.register(id, sec);
    return ids;
  }

  /**
   * Late arrivals: `count` terminals (generated ones from index `from`, wrapping) re-register
   * in second `sec`, visible only from `visibleAtMs` on (or at `releaseLate()`); then each
   * record lands in `sec`, a second a poll may already have read.
   */
  crowdLate(count: number, sec: number, from: number, visibleAtMs: number): string[] {
    const ids = this.pick(count, from);
    for (const id of ids) this.late.push({ id, sec, visibleAt: visibleAtMs });
    if (ids.length) this.nextLateAt = Math.min(this.nextLateAt, visibleAtMs);
    return ids;
  }

  /** Late registrations not visible yet. */
  get lateCount(): number {
    return this.late.length;
  }

  /** Makes visible the late registrations due at `nowMs` (default: all of them now); how many. */
  releaseLate(nowMs = Infinity): number {
    if (nowMs < this.nextLateAt) return 0;
    const due = this.late.filter((l) => l.visibleAt <= nowMs);
    this.late = this.late.filter((l) => l.visibleAt > nowMs);
    this.nextLateAt = this.late.reduce((m, l) => Math.min(m, l.visibleAt), Infinity);
    for (const l of due) this.register(l.id, l.sec);
    return due.length;
  }

  /** PrimeIDs of `count` generated terminals from index `from`, wrapping (at most the fleet's size). */
  private pick(count: number, from: number): string[] {
    const n = Math.min(Math.max(0, Math.floor(count)), this.size);
    return Array.from({ length: n }, (_, k) => this.primeId((from + k) % this.size));
  }

  /** A deterministic number in [0, 1) for `i` and `salt` (the demo's choices). */
  unit(i: number, salt: number): number {
    return mix(this.options.seed, i, salt) / 2 ** 32;
  }
}

/**
 * The gateway's terminals by ID: those it holds, and a fleet terminal materialized on its
 * first look-up (so a destination from the inventory is a terminal of the gateway). Iterating
 * yields the materialized ones only.
 */
export class TerminalMap<T> extends Map<string, T> {
  constructor(private readonly resolve: (id: string) => T | undefined) {
    super();
  }

  override get(id: string): T | undefined {
    const held = super.get(id);
    if (held !== undefined || !this.resolve) return held;
    const t = this.resolve(id);
    if (t !== undefined) super.set(id, t);
    return t;
  }

  /** The terminal held, without materializing one. */
  peek(id: string): T | undefined {
    return super.get(id);
  }

  override has(id: string): boolean {
    return this.get(id) !== undefined;
  }
}
