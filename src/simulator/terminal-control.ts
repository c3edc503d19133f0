/**
 * Control routes of the terminal gateway's fleet, for people and tests (no auth, loopback):
 *
 * - `POST /_sim/terminal-updates {count, sec?, from?, lateCount?, lateAfterMs?, lateSec?, release?}`:
 *   a crowded second: `count` fleet terminals re-register in second `sec` (default now;
 *   seconds since the epoch); late arrivals (none by default): `lateCount` more (the next
 *   terminals after those) re-register in second `lateSec` (default `sec`) but become visible
 *   only `lateAfterMs` from now (default 2000), in a second a poll may already have read;
 *   `release: true` makes every late one waiting visible now, in its own past second;
 * - `POST /_sim/fleet {register?: [PrimeID], suspend?: [PrimeID], resume?: [PrimeID]}`;
 * - `GET /_sim/terminal-commands`: the bodies terminal/reset, sysreset and mute received;
 * - `GET /_sim/creations[?all=true]`: messages created by (destination, payload), those created
 *   more than once, messages cancelled more than once (`all`: every pair and cancellation);
 *   `DELETE` clears the counts;
 * - `POST /_sim/account {clientId, superAccount?, subaccounts?}`: whether an account is a super
 *   account (403 on subaccount calls otherwise) and which subaccounts it has.
 */
import type { SimReply, SimServer } from './server';
import { json } from './replies';
import type { TerminalCommand } from './terminal-commands';
import type { Account } from './terminal-model';

export interface ControlHost {
  readonly accounts: Map<string, Account>;
  readonly fleet: { size: number; register(id: string, sec: number): unknown; releaseLate(): number; readonly lateCount: number };
  readonly commands: { commands: TerminalCommand[] };
  readonly creations: { describe(all: boolean): Record<string, unknown>; clear(): void };
  now(): number;
  crowdTerminalUpdates(count: number, opts: { sec?: number; from?: number }): string[];
  lateTerminalUpdates(count: number, opts: { sec?: number; from?: number; afterMs?: number }): string[];
  suspend(id: string, suspended?: boolean): boolean;
}

function body(text: string): Record<string, unknown> {
  try {
    const v = text.trim() ? (JSON.parse(text) as unknown) : {};
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

const ids = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

const int = (v: unknown, dflt: number): number => (v === undefined ? dflt : Number(v));

/** POST /_sim/terminal-updates: a crowded second, late arrivals, or the release of those waiting. */
function terminalUpdates(gw: ControlHost, b: Record<string, unknown>): SimReply {
  const count = int(b.count, 0);
  const late = int(b.lateCount, 0);
  const afterMs = int(b.lateAfterMs, 2000);
  const size = gw.fleet.size;
  const release = b.release === true;
  if (!Number.isInteger(count) || !Number.isInteger(late) || count < 0 || late < 0 || count + late > size || (count + late < 1 && !release)) {
    return json(400, { error: `count + lateCount must be 1 to ${size} (the fleet's size), each a whole number from 0` });
  }
  if (!Number.isInteger(afterMs) || afterMs < 0 || afterMs > 86_400_000) return json(400, { error: 'lateAfterMs must be whole milliseconds, 0 to 86400000' });
  const sec = b.sec === undefined ? undefined : Number(b.sec);
  const lateSec = b.lateSec === undefined ? sec : Number(b.lateSec);
  if ((sec !== undefined && !Number.isInteger(sec)) || (lateSec !== undefined && !Number.isInteger(lateSec))) {
    return json(400, { error: 'sec and lateSec must be whole seconds since the epoch' });
  }
  const from = int(b.from, 0);
  const start = Number.isInteger(from) && from >= 0 ? from : 0;
  const released = release ? gw.fleet.releaseLate() : 0;
  const changed = count ? gw.crowdTerminalUpdates(count, { sec, from: start }) : [];
  const lateIds = late ? gw.lateTerminalUpdates(late, { sec: lateSec, from: start + count, afterMs }) : [];
  return json(200, { updated: changed.length, first: changed[0], last: changed[changed.length - 1], late: lateIds, released, waiting: gw.fleet.lateCount });
}

export function mountTerminalControl(sim: SimServer, gw: ControlHost): void {
  sim.route('POST', /^\/_sim\/terminal-updates$/, '_sim/terminal-updates', (r) => terminalUpdates(gw, body(r.text)));
  sim.route('POST', /^\/_sim\/fleet$/, '_sim/fleet', (r) => {
    const b = body(r.text);
    const sec = Math.floor(gw.now() / 1000);
    const unknown: string[] = [];
    for (const id of ids(b.register)) if (!gw.fleet.register(id, sec)) unknown.push(id);
    for (const id of ids(b.suspend)) if (!gw.suspend(id, true)) unknown.push(id);
    for (const id of ids(b.resume)) if (!gw.suspend(id, false)) unknown.push(id);
    return json(unknown.length ? 404 : 200, { unknown });
  });
  sim.route('POST', /^\/_sim\/account$/, '_sim/account', (r) => {
    const b = body(r.text);
    const acct = gw.accounts.get(String(b.clientId ?? ''));
    if (!acct) return json(404, { error: `no account "${String(b.clientId ?? '')}"; accounts: ${[...gw.accounts.keys()].join(', ')}` });
    if (typeof b.superAccount === 'boolean') acct.superAccount = b.superAccount;
    if (Array.isArray(b.subaccounts)) acct.subaccounts = ids(b.subaccounts).filter((id) => gw.accounts.has(id));
    return json(200, { clientId: acct.clientId, superAccount: acct.superAccount, subaccounts: acct.subaccounts });
  });
  sim.route('GET', /^\/_sim\/creations$/, '_sim/creations', (r) => json(200, gw.creations.describe(r.query.get('all') === 'true')));
  sim.route('DELETE', /^\/_sim\/creations$/, '_sim/creations', () => {
    gw.creations.clear();
    return json(200, { total: 0 });
  });
  sim.route('GET', /^\/_sim\/terminal-commands$/, '_sim/terminal-commands', () => json(200, { commands: gw.commands.commands }));
}
