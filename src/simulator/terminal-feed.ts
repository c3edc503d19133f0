/**
 * Area (a), the status feed (get/subaccounts/fw_status_updates): every state change of a
 * to-mobile message as a record, seeded backlogs generated on demand, records marked
 * unknown, paged by FromUTC as the real gateway does (./feed.ts).
 */
import type { SimReply, SimRequest } from './server';
import { json } from './server';
import { FeedLog, formatUtc, pageFeed, parseUtc } from './feed';
import { ERRORS, STATE, type Message, type TerminalContext } from './terminal-model';

interface StatusEvent {
  sec: number;
  ID: bigint;
  State: number;
  IsClosed: boolean;
  CreateUTC: string;
  Transport: number;
  RegionName?: string;
  ReferenceNumber: number;
  AccountID: string;
  ErrorID?: number;
}

/** A backlog generated on demand: record i of `count`, `perSecond` per second from `startSec`. */
interface Backlog {
  startSec: number;
  count: number;
  perSecond: number;
  baseId: bigint;
  account: string;
}

export class StatusFeed {
  private nextRef = 1;
  /** Records made up by `heldSecondRecords` so far. */
  private held = 0;
  /** The last second crowded by `crowdStatusRecords` (one number, not a set that grows each second), and the made-up IDs given so far. */
  private crowdedSec = -Infinity;
  private crowdIds = 0;
  private events = new FeedLog<StatusEvent>();
  private backlogs: Backlog[] = [];

  constructor(private readonly gw: TerminalContext) {}

  private nowSec(): number {
    return Math.floor(this.gw.now() / 1000);
  }

  /** See TerminalGateway.seedBacklog. */
  seedBacklog(count: number, opts: { perSecond?: number; account?: string; baseId?: bigint } = {}): void {
    const perSecond = Math.max(1, Math.floor(opts.perSecond ?? 100));
    const seconds = Math.ceil(count / perSecond);
    const firstReal = this.events.first ? this.events.first.sec : this.nowSec();
    const earliestBacklog = this.backlogs.length ? this.backlogs[0]!.startSec : firstReal;
    const startSec = Math.min(firstReal, earliestBacklog) - seconds - 1;
    const baseId = opts.baseId ?? 10_000_000_000n + BigInt(this.backlogs.reduce((n, b) => n + b.count, 0));
    this.backlogs.unshift({ startSec, count, perSecond, baseId, account: opts.account ?? 'demo' });
  }

  /** A closed RECEIVED record of message `id` in the second `sec`. */
  addReceived(id: bigint, sec: number, account: string): void {
    this.events.add({ sec, ID: id, State: STATE.RECEIVED, IsClosed: true, CreateUTC: formatUtc(sec - 60), Transport: 1, ReferenceNumber: this.nextRef++, AccountID: account });
  }

  /** A record of message `m` as it is now (late by `lateBySeconds` when set). */
  record(m: Message): void {
    const term = m.broadcast ? undefined : this.gw.terminals.get(m.terminal);
    const sec = this.nowSec() - Math.max(0, this.gw.options.lateBySeconds);
    this.crowd(sec, m.account);
    m.statusSec = sec;
    m.referenceNumber = this.nextRef;
    this.events.add({
      sec,
      ID: m.id,
      State: m.state,
      IsClosed: m.closed,
      CreateUTC: formatUtc(m.createSec),
      Transport: 1,
      RegionName: term?.family === 'OGx' ? 'AMERRB' : undefined,
      ReferenceNumber: this.nextRef++,
      AccountID: m.account,
    });
  }

  /** `crowdStatusRecords`: the second `sec` gets that many made-up closed records first (once per second; records' seconds only go forward, one before the last crowded is not crowded). */
  private crowd(sec: number, account: string): void {
    const n = this.gw.options.crowdStatusRecords;
    if (!(n > 0) || sec <= this.crowdedSec) return;
    this.crowdedSec = sec;
    for (let i = 0; i < n; i++) this.addReceived(30_000_000_000n + BigInt(this.crowdIds++), sec, account);
  }

  /** Marks a message unknown-to-the-gateway in the status feed: a record with only ID and ErrorID. */
  addUnknownStatus(id: bigint | string, errorId: number = ERRORS.MESSAGE_NOT_FOUND): void {
    this.events.add({ sec: this.nowSec(), ID: BigInt(id), State: -1, IsClosed: false, CreateUTC: '', Transport: 0, ReferenceNumber: this.nextRef++, AccountID: 'demo', ErrorID: errorId });
  }

  /** GET get/subaccounts/fw_status_updates for `account` (and its subaccounts). */
  statusUpdates(r: SimRequest, account: string): SimReply {
    const from = r.query.get('FromUTC') ?? r.query.get('fromUTC') ?? '';
    const fromSec = parseUtc(from);
    if (fromSec === undefined) return json(200, { ErrorID: ERRORS.INVALID_FROM_UTC, NextFromUTC: null, Statuses: null });
    if (this.gw.options.heldSecondRecords > 0) return this.heldSecond(from, fromSec, this.gw.options.heldSecondRecords, account);
    const acct = this.gw.accounts.get(account)!;
    const visible = new Set([account, ...acct.subaccounts]);
    const options = this.gw.options;
    const page = pageFeed(
      this.eventsFrom(fromSec),
      from,
      fromSec,
      this.nowSec(),
      { maxPerReply: options.maxStatuses, emptyNextFromUTC: options.emptyNextFromUTC, completedSecondsOnly: options.completedSecondsOnly },
      (e) => visible.has(e.AccountID),
    );
    const out = page.items;
    this.gw.counters.statusRecordsServed += out.length;
    return json(200, { ErrorID: 0, NextFromUTC: page.NextFromUTC, Statuses: out.map(statusRecord) });
  }

  /** The `heldSecondRecords` reply: `count` new records in the second asked for, NextFromUTC that second. */
  private heldSecond(from: string, fromSec: number, count: number, account: string): SimReply {
    const out = Array.from({ length: count }, () => ({ sec: fromSec, ID: 20_000_000_000n + BigInt(this.held++), State: STATE.RECEIVED, IsClosed: true, CreateUTC: formatUtc(fromSec - 60), Transport: 1, ReferenceNumber: this.nextRef++, AccountID: account }));
    this.gw.counters.statusRecordsServed += out.length;
    return json(200, { ErrorID: 0, NextFromUTC: from, Statuses: out.map(statusRecord) });
  }

  private backlogEvent(b: Backlog, i: number): StatusEvent {
    const sec = b.startSec + Math.floor(i / b.perSecond);
    return {
      sec,
      ID: b.baseId + BigInt(i),
      State: STATE.RECEIVED,
      IsClosed: true,
      CreateUTC: formatUtc(sec - 60),
      Transport: 1,
      ReferenceNumber: i + 1,
      AccountID: b.account,
    };
  }

  /** Events at or after `fromSec`, in time order (backlogs, then live ones; both sorted). */
  private *eventsFrom(fromSec: number): Generator<StatusEvent> {
    // Backlogs lie before every live event; the live log is kept in time order.
    for (const b of this.backlogs) {
      const endSec = b.startSec + Math.ceil(b.count / b.perSecond);
      if (endSec <= fromSec) continue;
      for (let i = Math.max(0, (fromSec - b.startSec) * b.perSecond); i < b.count; i++) yield this.backlogEvent(b, i);
    }
    yield* this.events.from(fromSec);
  }
}

/** One event as the reply carries it (an unknown message: its ID and ErrorID only). */
function statusRecord(e: StatusEvent): Record<string, unknown> {
  if (e.ErrorID) return { ID: e.ID, ErrorID: e.ErrorID };
  const rec: Record<string, unknown> = {
    ID: e.ID,
    IsClosed: e.IsClosed,
    State: e.State,
    CreateUTC: e.CreateUTC,
    StatusUTC: formatUtc(e.sec),
    Transport: e.Transport,
    ReferenceNumber: e.ReferenceNumber,
    AccountID: e.AccountID,
  };
  if (e.RegionName) rec.RegionName = e.RegionName;
  return rec;
}
