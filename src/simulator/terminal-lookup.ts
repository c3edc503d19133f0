/**
 * Area (a), look-ups by ID (throttle group GET; real-services.md "More of the gateway"):
 *
 * - `get/fw_messages?IDList=...`: whole to-mobile messages, `{ErrorID, Messages}`;
 * - `get/fw_statuses?IDList=...`: their status records, `{ErrorID, NextFromUTC, Statuses}`
 *   (`NextFromUTC` meaningless there: null);
 * - `IDList` as one comma-separated value or the parameter repeated (both may mix); at most
 *   `maxIds` (100), else ErrorID 112; an ID that is no int64: ErrorID 105; both with no list;
 * - each ID gets an entry in the order asked: an unknown one (or another account's) has its
 *   `ID` and ErrorID 106 only.
 *
 * And `get/subaccounts/re_messages?FromUTC=...`: the from-mobile messages of the account and
 * its subaccounts, each with its `AccountID` (403 for an account that is not a super account).
 */
import type { SimReply, SimRequest } from './replies';
import { json } from './replies';
import { formatUtc } from './feed';
import { modePayload } from './terminal-creations';
import { ERRORS, visibleAccounts, type Account, type Message, type TerminalOptions, type ThrottleGroup } from './terminal-model';

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** What the look-ups need of the gateway. */
export interface LookupHost {
  readonly options: TerminalOptions;
  readonly accounts: Map<string, Account>;
  readonly messages: Map<string, Message>;
  readonly fleet: { get(id: string): { beam: string | null } | undefined };
  readonly mobile: { reMessages(r: SimRequest, accounts: ReadonlySet<string>): SimReply };
  guard(r: SimRequest, group: ThrottleGroup | undefined, handle: (account: string) => SimReply | Promise<SimReply>, superOnly?: boolean): Promise<SimReply>;
  /** Moves messages whose time has come (so a look-up sees their state now). */
  tick(): void;
}

type At = (method: string, rest: string, name: string, h: (r: SimRequest) => SimReply | Promise<SimReply>) => void;

/** The IDs of `IDList` (one comma-separated value, repeated, or both), or the ErrorID refusing them. */
export function parseIdList(query: URLSearchParams, max: number): bigint[] | { errorId: number } {
  const parts = query
    .getAll('IDList')
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter((v) => v !== '');
  if (!parts.length) return { errorId: ERRORS.INVALID_REQUEST };
  if (parts.length > max) return { errorId: ERRORS.TOO_MANY_IDS };
  const ids: bigint[] = [];
  for (const p of parts) {
    if (!/^-?\d{1,19}$/.test(p)) return { errorId: ERRORS.INVALID_REQUEST };
    const n = BigInt(p);
    if (n < INT64_MIN || n > INT64_MAX) return { errorId: ERRORS.INVALID_REQUEST };
    ids.push(n);
  }
  return ids;
}

export class MessageLookup {
  constructor(private readonly gw: LookupHost) {}

  mount(at: At): void {
    at('GET', 'get/fw_messages', 'terminal/fw_messages', (r) => this.gw.guard(r, 'GET', (a) => this.lookup(r, a, 'messages')));
    at('GET', 'get/fw_statuses', 'terminal/fw_statuses', (r) => this.gw.guard(r, 'GET', (a) => this.lookup(r, a, 'statuses')));
    at('GET', 'get/subaccounts/re_messages', 'terminal/subaccount-re_messages', (r) =>
      this.gw.guard(r, 'GET', (a) => this.gw.mobile.reMessages(r, visibleAccounts(this.gw.accounts, a)), true),
    );
  }

  private lookup(r: SimRequest, account: string, kind: 'messages' | 'statuses'): SimReply {
    const ids = parseIdList(r.query, this.gw.options.maxIds);
    if (!Array.isArray(ids)) {
      return json(200, kind === 'messages' ? { ErrorID: ids.errorId, Messages: null } : { ErrorID: ids.errorId, NextFromUTC: null, Statuses: null });
    }
    this.gw.tick();
    const visible = visibleAccounts(this.gw.accounts, account);
    const entries = ids.map((id) => {
      const m = this.gw.messages.get(id.toString());
      if (!m || !visible.has(m.account)) return { ID: id, ErrorID: ERRORS.MESSAGE_NOT_FOUND };
      return kind === 'messages' ? this.message(m) : statusOf(m);
    });
    return json(200, kind === 'messages' ? { ErrorID: 0, Messages: entries } : { ErrorID: 0, NextFromUTC: null, Statuses: entries });
  }

  /** A whole to-mobile message (a mode message's payload: SIN 0, MIN 70, mode, wake-up code: the simulator's guess). */
  private message(m: Message): Record<string, unknown> {
    const payload = m.payload ?? modePayload(m.mode, m.wakeup);
    const out: Record<string, unknown> = {
      ID: m.id,
      DestinationID: m.terminal,
      CreateUTC: formatUtc(m.createSec),
      StatusUTC: formatUtc(m.statusSec ?? m.createSec),
      State: m.state,
      ErrorID: 0,
      IsClosed: m.closed,
      ReferenceNumber: m.referenceNumber ?? 0,
      ...payload,
      Transport: 1,
    };
    const beam = m.broadcast ? null : this.gw.fleet.get(m.terminal)?.beam;
    if (beam) out.RegionName = beam;
    return out;
  }
}

/** A message's status record as the status feed gives it. */
function statusOf(m: Message): Record<string, unknown> {
  return {
    ID: m.id,
    IsClosed: m.closed,
    State: m.state,
    CreateUTC: formatUtc(m.createSec),
    StatusUTC: formatUtc(m.statusSec ?? m.createSec),
    Transport: 1,
    ReferenceNumber: m.referenceNumber ?? 0,
    ErrorID: 0,
    AccountID: m.account,
  };
}
