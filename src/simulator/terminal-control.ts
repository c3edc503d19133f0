/**
 * Control routes of the terminal gateway's fleet, for people and tests (no auth, loopback):
 *
 * - `POST /_sim/terminal-updates {count, sec?, from?}`: a crowded second: `count` fleet
 *   terminals re-register in second `sec` (default now; seconds since the epoch);
 * - `POST /_sim/fleet {register?: [PrimeID], suspend?: [PrimeID], resume?: [PrimeID]}`;
 * - `GET /_sim/terminal-commands`: the bodies terminal/reset, sysreset and mute received;
 * - `POST /_sim/account {clientId, superAccount?, subaccounts?}`: whether an account is a super
 *   account (403 on subaccount calls otherwise) and which subaccounts it has.
 */
import type { SimServer } from './server';
import { json } from './replies';
import type { TerminalCommand } from './terminal-commands';
import type { Account } from './terminal-model';

export interface ControlHost {
  readonly accounts: Map<string, Account>;
  readonly fleet: { size: number; register(id: string, sec: number): unknown };
  readonly commands: { commands: TerminalCommand[] };
  now(): number;
  crowdTerminalUpdates(count: number, opts: { sec?: number; from?: number }): string[];
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

export function mountTerminalControl(sim: SimServer, gw: ControlHost): void {
  sim.route('POST', /^\/_sim\/terminal-updates$/, '_sim/terminal-updates', (r) => {
    const b = body(r.text);
    const count = Number(b.count ?? 0);
    if (!Number.isInteger(count) || count < 1 || count > gw.fleet.size) return json(400, { error: `count must be 1 to ${gw.fleet.size} (the fleet's size)` });
    const sec = b.sec === undefined ? undefined : Number(b.sec);
    if (sec !== undefined && !Number.isInteger(sec)) return json(400, { error: 'sec must be whole seconds since the epoch' });
    const from = Number(b.from ?? 0);
    const changed = gw.crowdTerminalUpdates(count, { sec, from: Number.isInteger(from) && from >= 0 ? from : 0 });
    return json(200, { updated: changed.length, first: changed[0], last: changed[changed.length - 1] });
  });
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
  sim.route('GET', /^\/_sim\/terminal-commands$/, '_sim/terminal-commands', () => json(200, { commands: gw.commands.commands }));
}
