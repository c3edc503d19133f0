/**
 * Area (a), the `info/*` calls (throttle group INFO; real-services.md "More of the gateway"):
 *
 * - `info/terminals?PageSize&SinceID`: the inventory by keyset, in PrimeID order, `SinceID`
 *   exclusive, no `More`; the page after the last is empty. `PageSize` 1..1000 (default
 *   1000); anything else: HTTP 200 with ErrorID 109 and no `Terminals`;
 * - `info/terminal?PrimeID`: `{ErrorID, Terminal}`; unknown: ErrorID 110, no `Terminal`;
 * - `info/terminal_updates?FromUTC`: a FromUTC feed as the other two (./feed.ts): every
 *   terminal whose current UpdateUTC is at or after FromUTC, each record its current state;
 * - `info/service[?GetErrorCodes=true]`, `info/broadcast`, `info/subaccount/list` (403 for
 *   an account that is not a super account).
 *
 * A super account sees its subaccounts' terminals too (as in the status feed).
 */
import type { SimReply, SimRequest } from './server';
import { json } from './server';
import { formatUtc, pageFeed, parseUtc } from './feed';
import { terminalInfo, type Fleet, type TerminalInfo } from './terminal-fleet';
import { CATALOGUE, ERRORS, visibleAccounts, type Account, type TerminalOptions, type ThrottleGroup } from './terminal-model';

/** What the info calls need of the gateway. */
export interface InfoHost {
  readonly options: TerminalOptions;
  readonly now: () => number;
  readonly accounts: Map<string, Account>;
  readonly fleet: Fleet;
  guard(r: SimRequest, group: ThrottleGroup | undefined, handle: (account: string) => SimReply | Promise<SimReply>, superOnly?: boolean): Promise<SimReply>;
}

type At = (method: string, rest: string, name: string, h: (r: SimRequest) => SimReply | Promise<SimReply>) => void;

/** A broadcast ID of an account: the destination of one message to many terminals. */
export interface BroadcastGroup {
  ID: string;
  Description: string;
  SatelliteNetwork: number;
}

export const DEFAULT_BROADCAST_IDS: BroadcastGroup[] = [
  { ID: '12345678GRPAB12', Description: 'All trucks (IDP)', SatelliteNetwork: 0 },
  { ID: '12345678GRPOG01', Description: 'Vessels (OGx)', SatelliteNetwork: 1 },
  { ID: '87654321GRPEU05', Description: 'Europe, pump stations', SatelliteNetwork: 0 },
];

/** The PrimeIDs `endless` makes up after the fleet: `ZZZZ` and 11 digits (after every generated one). */
const MADE_UP = /^ZZZZ(\d{11})$/;

/**
 * A page of the `inventoryLoop` option: `cycle` gives the first page again after the second
 * page's last PrimeID; `endless` gives made-up terminals where the fleet's list ends.
 */
function hostilePage(loop: 'cycle' | 'endless', since: string | undefined, size: number, pageAfter: (id: string | undefined) => TerminalInfo[]): TerminalInfo[] {
  if (loop === 'cycle') {
    const first = pageAfter(undefined);
    const second = first.length ? pageAfter(first[first.length - 1]!.PrimeID) : [];
    return second.length && since === second[second.length - 1]!.PrimeID ? first : pageAfter(since);
  }
  const made = since === undefined ? undefined : MADE_UP.exec(since);
  const real = made ? [] : pageAfter(since);
  if (real.length) return real;
  const from = made ? Number(made[1]) + 1 : 0;
  return Array.from({ length: size }, (_, i) => ({ PrimeID: `ZZZZ${String(from + i).padStart(11, '0')}`, Description: 'made up (inventoryLoop endless)', IsRegistered: 1 }) as unknown as TerminalInfo);
}

export class TerminalInfoCalls {
  /** Broadcast IDs by account (the default account's by default). */
  readonly broadcastIds = new Map<string, BroadcastGroup[]>([['demo', DEFAULT_BROADCAST_IDS.map((b) => ({ ...b }))]]);
  readonly counters = { terminalsServed: 0, terminalUpdatesServed: 0 };

  constructor(private readonly gw: InfoHost) {}

  mount(at: At): void {
    // Route names (call log, faults) are matched as substrings: none is part of another.
    const info = (rest: string, name: string, h: (r: SimRequest, account: string) => SimReply, superOnly = false) =>
      at('GET', `info/${rest}`, name, (r) => this.gw.guard(r, 'INFO', (acct) => h(r, acct), superOnly));
    info('terminals', 'terminal/inventory', (r, a) => this.terminals(r, a));
    info('terminal', 'terminal/terminal-info', (r, a) => this.terminal(r, a));
    info('terminal_updates', 'terminal/terminal-updates', (r, a) => this.updates(r, a));
    info('broadcast', 'terminal/broadcast-ids', (_r, a) => this.broadcast(a));
    info('subaccount/list', 'terminal/subaccount-list', (_r, a) => this.subaccounts(a), true);
    // The name the call log has always used for info/service.
    at('GET', 'info/service', 'terminal/info', (r) => this.gw.guard(r, 'INFO', () => this.service(r)));
  }

  /** GET info/terminals: one keyset page. */
  private terminals(r: SimRequest, account: string): SimReply {
    const raw = r.query.get('PageSize');
    const max = this.gw.options.maxPageSize;
    const size = raw === null || raw === '' ? max : /^\d{1,9}$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
    if (!(size >= 1 && size <= max)) return json(200, { ErrorID: ERRORS.INVALID_PAGE_SIZE, Terminals: null });
    const since = r.query.get('SinceID')?.trim() || undefined;
    const visible = visibleAccounts(this.gw.accounts, account);
    const pageAfter = (id: string | undefined) => this.gw.fleet.page(id, size, (s) => visible.has(s.account)).map(terminalInfo);
    const page = this.gw.options.inventoryLoop === 'none' ? pageAfter(since) : hostilePage(this.gw.options.inventoryLoop, since, size, pageAfter);
    this.counters.terminalsServed += page.length;
    const end = this.gw.options.inventoryEnd;
    if (!page.length && end !== 'empty') return json(200, end === 'null' ? { ErrorID: 0, Terminals: null } : { ErrorID: 0 });
    return json(200, { ErrorID: 0, Terminals: page });
  }

  /** GET info/terminal: one terminal, or ErrorID 110 without `Terminal`. */
  private terminal(r: SimRequest, account: string): SimReply {
    const id = (r.query.get('PrimeID') ?? '').trim().toUpperCase();
    if (!id) return json(200, { ErrorID: ERRORS.INVALID_REQUEST });
    const s = this.gw.fleet.get(id);
    if (!s || !visibleAccounts(this.gw.accounts, account).has(s.account)) return json(200, { ErrorID: ERRORS.TERMINAL_NOT_FOUND });
    return json(200, { ErrorID: 0, Terminal: terminalInfo(s) });
  }

  /** GET info/terminal_updates: the terminals changed at or after FromUTC, each once, as they are now. */
  private updates(r: SimRequest, account: string): SimReply {
    const from = r.query.get('FromUTC') ?? '';
    const fromSec = parseUtc(from);
    if (fromSec === undefined) return json(200, { ErrorID: ERRORS.INVALID_FROM_UTC, NextFromUTC: null, Terminals: null });
    const visible = visibleAccounts(this.gw.accounts, account);
    const o = this.gw.options;
    const page = pageFeed(
      this.gw.fleet.updatesFrom(fromSec),
      from,
      fromSec,
      Math.floor(this.gw.now() / 1000),
      { maxPerReply: o.maxTerminalUpdates, emptyNextFromUTC: o.emptyNextFromUTC, completedSecondsOnly: false },
      (s) => visible.has(s.account),
    );
    this.counters.terminalUpdatesServed += page.items.length;
    return json(200, { ErrorID: 0, NextFromUTC: page.NextFromUTC, Terminals: page.items.map(terminalInfo) });
  }

  /** GET info/service: version and time; the error catalogue only when asked for. */
  private service(r: SimRequest): SimReply {
    const body: Record<string, unknown> = { ErrorID: 0, Version: '1.0.0', ServerUTC: formatUtc(Math.floor(this.gw.now() / 1000)) };
    if ((r.query.get('GetErrorCodes') ?? '').toLowerCase() === 'true') body.ErrorCodes = CATALOGUE;
    return json(200, body);
  }

  /** GET info/broadcast: the account's broadcast IDs (`BroadcastInfos` in the predecessor's form). */
  private broadcast(account: string): SimReply {
    const list = this.broadcastIds.get(account) ?? [];
    return json(200, { ErrorID: 0, [this.gw.options.infoForm === 'predecessor' ? 'BroadcastInfos' : 'BroadcastIDs']: list });
  }

  /** GET info/subaccount/list (super accounts only: the guard answers 403 to the others). */
  private subaccounts(account: string): SimReply {
    const subs = this.gw.accounts.get(account)?.subaccounts ?? [];
    const numbers = [...this.gw.accounts.keys()];
    const list = subs.map((name) => {
      const n = this.gw.accounts.get(name)?.accountNumber ?? 10_000 + numbers.indexOf(name) + 1;
      return this.gw.options.infoForm === 'predecessor' ? { AccountID: String(n), Name: name } : { AccountID: n, AccountName: name };
    });
    return json(200, { ErrorID: 0, Subaccounts: list });
  }

  /** Is `id` one of the broadcast IDs of `account`? */
  isBroadcastOf(account: string, id: string): boolean {
    return (this.broadcastIds.get(account) ?? []).some((b) => b.ID === id);
  }
}
