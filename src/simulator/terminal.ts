/**
 * Area (a): the satellite terminal gateway (IDP and OGx). Token endpoint, mode
 * submission, cancellation, status updates with NextFromUTC, the error catalogue,
 * throttle groups with a sliding window, a concurrency cap, and messages that move
 * through their states over time.
 *
 * Status updates are paged as the real gateway does (./feed.ts): FromUTC inclusive at
 * one-second resolution, at most `maxStatuses` a reply, NextFromUTC = the second of the
 * last record (so the next poll returns that second again), any number of records in one
 * second, and (options) records that become visible late into a second already read, and
 * an empty reply's NextFromUTC null, "" or FromUTC.
 *
 * The gateway is cut by role: terminal-model.ts (states, errors, options, accounts),
 * terminal-access.ts (tokens, limits), terminal-submissions.ts (mode messages,
 * cancellations, their life), terminal-feed.ts (status records and their paging),
 * terminal-fleet.ts (the inventory: a seeded fleet of terminals), terminal-info.ts (info/*),
 * terminal-multiple.ts (submit/to_multiple), terminal-lookup.ts (look-ups by ID),
 * terminal-commands.ts (terminal/reset, sysreset, mute), terminal-control.ts (their
 * /_sim routes) and fleet-demo.ts (the living fleet of the demo); this class wires them and
 * keeps the methods tests and the other areas call.
 */
import type { SimServer, SimReply, SimRequest } from './server';
import { json } from './server';
import { formatUtc, parseUtc } from './feed';
import { MobileMessages } from './messages';
import { TerminalAccess } from './terminal-access';
import { StatusFeed } from './terminal-feed';
import {
  DEFAULT_ACCOUNTS,
  DEFAULT_TERMINAL_OPTIONS,
  DEFAULT_TERMINALS,
  ERRORS,
  type Account,
  type Message,
  type Terminal,
  type TerminalContext,
  type TerminalCounters,
  type TerminalOptions,
} from './terminal-model';
import { Submissions, jsonArray } from './terminal-submissions';
import { Fleet, TerminalMap, type FleetOptions } from './terminal-fleet';
import { TerminalInfoCalls } from './terminal-info';
import { MultipleDestinations } from './terminal-multiple';
import { MessageLookup } from './terminal-lookup';
import { TerminalCommands } from './terminal-commands';
import { Creations } from './terminal-creations';
import { mountTerminalControl } from './terminal-control';
import { FleetDemo } from './fleet-demo';
import type { FleetChange } from './terminal-fleet';

export { formatUtc, parseUtc };
export { DEFAULT_ACCOUNTS, DEFAULT_TERMINAL_OPTIONS, DEFAULT_TERMINALS, ERRORS, STATE, WAKEUP_SECONDS } from './terminal-model';
export type { Account, Terminal, TerminalOptions } from './terminal-model';

export class TerminalGateway implements TerminalContext {
  options: TerminalOptions;
  accounts = new Map<string, Account>();
  /** The inventory (terminal-fleet.ts): a few thousand terminals generated from a seed. */
  readonly fleet: Fleet;
  /** Terminals by ID: those added, and fleet terminals materialized at their first look-up. */
  terminals: Map<string, Terminal> = new TerminalMap<Terminal>((id) => this.fromFleet(id));
  /** Counters for tests and benchmarks. */
  readonly counters: TerminalCounters = { submitted: 0, rejected: 0, cancelled: 0, statusRecordsServed: 0, throttled: 0, unauthorized: 0 };
  now: () => number = Date.now;
  private readonly access: TerminalAccess;
  private readonly feed: StatusFeed;
  private readonly submissions: Submissions;
  private ticker: NodeJS.Timeout | undefined;
  /** General to-mobile and from-mobile messages (messages.ts). */
  readonly mobile = new MobileMessages(this);
  /** The info/* calls (terminal-info.ts). */
  readonly info: TerminalInfoCalls;
  /** submit/to_multiple (terminal-multiple.ts): `calls` holds what each accepted call sent. */
  readonly multiple = new MultipleDestinations(this);
  /** Each message created by (destination, payload), each cancellation asked (terminal-creations.ts). */
  readonly creations = new Creations();
  /** terminal/reset, sysreset, mute (terminal-commands.ts): `commands` holds the bodies received. */
  readonly commands = new TerminalCommands(this);
  private readonly lookup = new MessageLookup(this);
  /** The living fleet of the demo (fleet-demo.ts): positions that move, terminals that change. Off by default. */
  readonly demo = new FleetDemo(this);

  constructor(options: Partial<TerminalOptions> = {}, fleet: Partial<FleetOptions> = {}) {
    this.options = { ...DEFAULT_TERMINAL_OPTIONS, ...options };
    this.fleet = new Fleet(fleet);
    this.fleet.now = () => this.now();
    this.info = new TerminalInfoCalls(this);
    this.access = new TerminalAccess(this);
    this.feed = new StatusFeed(this);
    this.submissions = new Submissions(this, this.feed);
    for (const a of DEFAULT_ACCOUNTS) this.accounts.set(a.clientId, { ...a });
    for (const t of DEFAULT_TERMINALS) this.addTerminal(t);
  }

  /** Every to-mobile message by ID (as a decimal string). */
  get messages(): Map<string, Message> {
    return this.submissions.messages;
  }

  configure(options: Partial<TerminalOptions>): void {
    this.options = { ...this.options, ...options };
    this.access.reset();
  }

  addTerminal(t: Partial<Terminal> & { id: string }): Terminal {
    const term: Terminal = { family: 'IDP', online: true, mode: 0, wakeup: 0, account: 'demo', ...t };
    this.terminals.set(term.id, term);
    this.fleet.addExtra(term, Math.floor(this.now() / 1000));
    return term;
  }

  /** A fleet terminal as the gateway's terminal (materialized at its first look-up). */
  private fromFleet(id: string): Terminal | undefined {
    const s = this.fleet?.get(id);
    if (!s) return undefined;
    return { id: s.id, family: s.family, online: s.online, mode: s.mode, wakeup: s.wakeCode, account: s.account, fleet: true, suspended: s.suspended };
  }

  /** Applies `change` to fleet terminal `id` now, and to the gateway's record of it when it holds one. */
  fleetChange(id: string, change: FleetChange): void {
    const s = this.fleet.update(id, change, this.updateSec());
    const held = (this.terminals as TerminalMap<Terminal>).peek(id);
    if (!s || !held) return;
    held.mode = s.mode;
    held.wakeup = s.wakeCode;
    held.online = s.online;
  }

  /** A mode message reached `term`: the fleet records the change (info/terminal_updates). */
  terminalChanged(term: Terminal): void {
    const s = this.fleet.get(term.id);
    if (!s || (s.mode === term.mode && s.wakeCode === term.wakeup)) return;
    this.fleet.update(term.id, { mode: term.mode, wakeCode: term.wakeup }, this.updateSec());
  }

  /** The UpdateUTC second of a change made now (`lateUpdatesBySeconds` back). */
  private updateSec(): number {
    return Math.floor(this.now() / 1000) - Math.max(0, this.options.lateUpdatesBySeconds);
  }

  /** Makes the next message IDs start at `id` (for example near 2^63 - 1). */
  setNextId(id: bigint | string | number): void {
    this.submissions.nextId = BigInt(id);
  }

  /** Invalidates every issued token (as if they expired). */
  expireTokens(): void {
    this.access.expireTokens();
  }

  /**
   * Seeds a backlog of `count` closed status records in the past, `perSecond` per second
   * (default 100: a reply of 500 spans five seconds, and its last second comes again in
   * the next reply, as on the real gateway). A `perSecond` above the reply cap makes
   * crowded seconds.
   */
  seedBacklog(count: number, opts: { perSecond?: number; account?: string; baseId?: bigint } = {}): void {
    this.feed.seedBacklog(count, opts);
  }

  start(): void {
    if (!this.ticker) {
      this.ticker = setInterval(() => this.tick(), 50);
      this.ticker.unref();
    }
    this.mobile.start();
    this.demo.start();
  }

  stop(): void {
    if (this.ticker) clearInterval(this.ticker);
    this.ticker = undefined;
    this.mobile.stop();
    this.demo.stop();
  }

  /**
   * Adds `count` closed RECEIVED status records in the second `sec` (any number: more than
   * a reply holds is allowed, as on the real gateway), in time order among the others.
   */
  addStatusRecords(count: number, sec: number, opts: { account?: string; baseId?: bigint } = {}): bigint[] {
    const ids: bigint[] = [];
    for (let i = 0; i < count; i++) {
      const id = opts.baseId !== undefined ? opts.baseId + BigInt(i) : this.submissions.nextId++;
      ids.push(id);
      this.feed.addReceived(id, sec, opts.account ?? 'demo');
    }
    return ids;
  }

  /** Marks a message unknown-to-the-gateway in the status feed: a record with only ID and ErrorID. */
  addUnknownStatus(id: bigint | string, errorId: number = ERRORS.MESSAGE_NOT_FOUND): void {
    this.feed.addUnknownStatus(id, errorId);
  }

  /**
   * A crowded second of the terminal-updates feed: `count` fleet terminals (from index `from`)
   * re-register in second `sec` (default now). Their PrimeIDs.
   */
  crowdTerminalUpdates(count: number, opts: { sec?: number; from?: number } = {}): string[] {
    return this.fleet.crowd(count, opts.sec ?? Math.floor(this.now() / 1000), opts.from);
  }

  /**
   * Late arrivals of the terminal-updates feed: `count` fleet terminals (from index `from`)
   * re-register in second `sec` (default now), visible only `afterMs` (default 2000) from now
   * or at `fleet.releaseLate()`: then in `sec`, a second a poll may already have read.
   */
  lateTerminalUpdates(count: number, opts: { sec?: number; from?: number; afterMs?: number } = {}): string[] {
    return this.fleet.crowdLate(count, opts.sec ?? Math.floor(this.now() / 1000), opts.from ?? 0, this.now() + (opts.afterMs ?? 2000));
  }

  /** Suspends (or resumes) a terminal's service: to_multiple then refuses it with ErrorID 21786. */
  suspend(id: string, suspended = true): boolean {
    const term = this.terminals.get(id);
    if (!term) return false;
    term.suspended = suspended;
    if (this.fleet.get(id)) this.fleet.update(id, { suspended }, this.updateSec());
    return true;
  }

  /** Moves messages whose time has come to their next state. */
  tick(): void {
    this.submissions.tick();
  }

  // ---- HTTP ----

  mount(sim: SimServer): void {
    // `(.*?)` is the part before /api/v{version}: it must be exactly `options.basePath`, so a
    // doubled `/api/v1.0/api/v1.0/...` is a 404 as on the real service.
    const at = (method: string, rest: string, name: string, h: (r: SimRequest) => SimReply | Promise<SimReply>) =>
      sim.route(method, new RegExp(`^(.*?)/api/v([^/]+)/${rest}$`), name, (r) => {
        const before = r.params[0] ?? '';
        if (before !== this.options.basePath.replace(/\/+$/, '')) return json(404, { Message: `No HTTP resource was found that matches the request URI '${r.path}'.` });
        return h(r);
      });
    at('POST', 'auth/token', 'terminal/auth', (r) => this.access.token(r));
    at('POST', 'terminal/mode', 'terminal/mode', (r) => this.guard(r, 'SEND', () => this.submissions.submitMode(r)));
    at('POST', 'submit/cancellations', 'terminal/cancel', (r) => this.guard(r, 'SEND', () => this.submissions.cancel(r)));
    at('GET', 'get/subaccounts/fw_status_updates', 'terminal/status', (r) => this.guard(r, 'GET', (acct) => this.statusUpdates(r, acct), true));
    this.mobile.mount(sim, at);
    at('POST', 'submit/to_multiple', 'terminal/to_multiple', (r) => this.guard(r, 'SEND', (acct) => this.multiple.submit(r, acct)));
    this.lookup.mount(at);
    this.commands.mount(at);
    this.info.mount(at);
    mountTerminalControl(sim, this);
  }

  /**
   * A to-mobile message accepted for `term` (general messages, messages.ts): its ID. Its
   * status records follow as for mode messages, so the tracker and status poller see it.
   */
  acceptMessage(term: Terminal, payload?: { RawPayload?: string; Payload?: unknown }): bigint {
    return this.submissions.open(term, term.mode, term.wakeup, this.now(), { payload });
  }

  /** A to-mobile message to broadcast ID `id` of `account`: its ID; it ends in State 7. */
  acceptBroadcast(id: string, account: string, payload?: { RawPayload?: string; Payload?: unknown }): bigint {
    const pseudo: Terminal = { id, family: 'IDP', online: true, mode: 0, wakeup: 0, account };
    return this.submissions.open(pseudo, 0, 0, this.now(), { payload, broadcast: true });
  }

  /** Auth, service limit, concurrency cap and the throttle group's window (also used by messages.ts). */
  guard(r: SimRequest, group: 'SEND' | 'GET' | 'INFO' | undefined, handle: (account: string) => SimReply | Promise<SimReply>, superOnly = false): Promise<SimReply> {
    return this.access.guard(r, group, handle, superOnly);
  }

  /** The request's JSON array, or the 415/400 reply the gateway gives instead. */
  jsonArray(r: SimRequest): unknown[] | SimReply {
    return jsonArray(r);
  }

  private statusUpdates(r: SimRequest, account: string): SimReply {
    this.tick();
    return this.feed.statusUpdates(r, account);
  }
}
