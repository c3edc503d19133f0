/**
 * The gateway simulator: a real HTTP server on loopback that behaves like the real
 * services (shared/spec/real-services.md). Start it in-process with `startSimulator()`,
 * or from the shell with `npm run simulator` / `iotgw-simulator`.
 *
 * Layout of one server:
 * - `{url}`                 gateway base_url: /api/v1.0/... (area a), /lorawan/broker/... and /sms/request (areas b, c)
 * - `{url}/app`             app_base_url of the application API (area d)
 * - `{url}/_sim/...`        control routes (state, reset, seeding, faults) for people and tests
 */
import { SimServer, json, faultFromJson, LINK_STATES, type Fault, type LinkChaos, type LinkState } from './server';
import { TerminalGateway, type TerminalOptions } from './terminal';
import { parseJson } from '../lib/common/int64';
import { AREAS } from './areas';
import type { MobileOptions } from './messages';
import type { FleetOptions } from './terminal-fleet';
import type { FleetDemoOptions } from './fleet-demo';

export interface SimulatorOptions {
  port?: number;
  host?: string;
  terminal?: Partial<TerminalOptions>;
  /** From-mobile and general messages (messages.ts); `reportEveryMs` > 0 makes terminals report. */
  messages?: Partial<MobileOptions>;
  /** The fleet of the inventory (terminal-fleet.ts): size (default 3,000), seed, shares. */
  fleet?: Partial<FleetOptions>;
  /** The living fleet (fleet-demo.ts): `everyMs` > 0 makes a few terminals report moving positions and change. */
  demo?: Partial<FleetDemoOptions>;
  /** Extra reply latency in ms for every call. */
  latencyMs?: number;
  /** Random link windows from the start (link.ts): `{seed, upMs: [min, max], downMs: [min, max], kinds}`. */
  linkChaos?: LinkChaos;
}

export type { SimArea } from './areas';
import type { SimArea } from './areas';


/** The JSON object of a control call's body ({} when empty or not an object). */
function controlBody(text: string): Record<string, unknown> {
  if (!text.trim()) return {};
  const v = parseJson(text);
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

export class Simulator {
  readonly server = new SimServer();
  readonly terminal: TerminalGateway;
  readonly areas: Record<string, SimArea> = {};

  constructor(readonly options: SimulatorOptions & Record<string, unknown> = {}) {
    this.terminal = new TerminalGateway(options.terminal, options.fleet);
    this.server.latencyMs = options.latencyMs ?? 0;
    if (options.messages) this.terminal.mobile.configure(options.messages);
    if (options.demo) this.terminal.demo.configure(options.demo);
    this.terminal.mount(this.server);
    this.server.actions.expireTokens = () => this.terminal.expireTokens();
    for (const f of AREAS) {
      const area = f.create(options);
      this.areas[f.name] = area;
      area.mount(this.server);
    }
    this.mountControl();
  }

  /** Gateway base URL (areas a, b, c). */
  get url(): string {
    return this.server.url;
  }

  /** Application API base URL (area d). */
  get appUrl(): string {
    return `${this.server.url}/app`;
  }

  inject(f: Fault): Fault {
    return this.server.inject(f);
  }

  async start(port = this.options.port ?? 0, host = this.options.host ?? '127.0.0.1'): Promise<this> {
    await this.server.listen(port, host);
    if (this.options.linkChaos) this.server.link.chaos(this.options.linkChaos);
    this.terminal.start();
    for (const a of Object.values(this.areas)) a.start?.();
    return this;
  }

  async close(): Promise<void> {
    this.terminal.stop();
    for (const a of Object.values(this.areas)) a.stop?.();
    await this.server.close();
  }

  private mountControl(): void {
    const s = this.server;
    const body = controlBody;
    s.route('GET', /^\/_sim\/state$/, '_sim/state', () =>
      json(200, {
        terminal: {
          counters: this.terminal.counters,
          options: this.terminal.options,
          terminals: [...this.terminal.terminals.values()],
          messages: this.terminal.messages.size,
        },
        areas: Object.fromEntries(Object.entries(this.areas).map(([k, a]) => [k, a.state?.()])),
        calls: s.calls.length,
      }),
    );
    s.route('POST', /^\/_sim\/terminals$/, '_sim/terminals', (r) => {
      const b = body(r.text);
      const list = Array.isArray(b.terminals) ? b.terminals : [b];
      for (const t of list as Array<Record<string, unknown>>) {
        if (typeof t.id !== 'string') return json(400, { error: 'each terminal needs an id' });
        this.terminal.addTerminal({ id: t.id, family: t.family === 'OGx' ? 'OGx' : 'IDP', online: t.online !== false });
      }
      return json(200, { terminals: this.terminal.terminals.size });
    });
    s.route('POST', /^\/_sim\/terminal-options$/, '_sim/terminal-options', (r) => {
      const b = body(r.text) as Partial<TerminalOptions> & { nextId?: string | number };
      if (b.nextId !== undefined) this.terminal.setNextId(String(b.nextId));
      delete b.nextId;
      this.terminal.configure(b);
      return json(200, this.terminal.options);
    });
    s.route('POST', /^\/_sim\/backlog$/, '_sim/backlog', (r) => {
      const b = body(r.text);
      const count = Number(b.count ?? 1000);
      if (!Number.isInteger(count) || count < 1 || count > 100_000_000) return json(400, { error: 'count must be 1 to 100000000' });
      this.terminal.seedBacklog(count);
      return json(200, { seeded: count });
    });
    s.route('POST', /^\/_sim\/faults$/, '_sim/faults', (r) => {
      // One fault, or {faults: [...]} (see FAULT_KINDS in server.ts).
      const b = body(r.text);
      try {
        const list = Array.isArray(b.faults) ? b.faults.map(faultFromJson) : [faultFromJson(b)];
        for (const f of list) this.inject(f);
      } catch (err) {
        return json(400, { error: (err as Error).message });
      }
      return json(200, { faults: s.faults.length });
    });
    s.route('GET', /^\/_sim\/faults$/, '_sim/faults', () =>
      json(200, { faults: s.faults.map((f) => ({ ...f, times: f.times === Infinity ? 'all' : f.times })), injected: s.injected, injectedTotal: s.injectedTotal }),
    );
    s.route('DELETE', /^\/_sim\/faults$/, '_sim/faults', () => {
      s.clearFaults();
      return json(200, { faults: 0 });
    });
    s.route('POST', /^\/_sim\/faults\/release$/, '_sim/faults-release', () => json(200, { released: s.releaseHeld() }));
    s.route('GET', /^\/_sim\/link$/, '_sim/link', () => json(200, { ...s.link.describe(), held: s.held }));
    s.route('POST', /^\/_sim\/link$/, '_sim/link', (r) => this.linkControl(body(r.text)));
  }

  /**
   * POST /_sim/link: `{state: "refused"|"black-hole"|"up", forMs?}` (refused needs `forMs`: nothing
   * could reach this route to end it; it starts 50 ms after the reply), or `{chaos: {...}}` /
   * `{chaos: null}` to start or stop random windows.
   */
  private linkControl(b: Record<string, unknown>): ReturnType<typeof json> {
    const link = this.server.link;
    if ('chaos' in b) {
      if (b.chaos && typeof b.chaos === 'object') link.chaos(b.chaos as LinkChaos);
      else link.stopChaos();
      return json(200, link.describe());
    }
    const state = b.state as LinkState;
    const forMs = b.forMs === undefined ? undefined : Number(b.forMs);
    if (!LINK_STATES.includes(state)) return json(400, { error: `state must be one of ${LINK_STATES.join(', ')}` });
    if (forMs !== undefined && !(Number.isInteger(forMs) && forMs > 0 && forMs <= 86_400_000)) return json(400, { error: 'forMs must be whole milliseconds, 1 to 86400000' });
    if (state === 'refused' && forMs === undefined) return json(400, { error: 'a refused link needs forMs (no call could end it)' });
    if (state === 'refused') setTimeout(() => link.refuse(forMs), 50).unref();
    else void link.set(state, forMs);
    return json(200, { ...link.describe(), state });
  }
}

/** Starts a simulator on loopback (port 0 = any free port). */
export async function startSimulator(options: SimulatorOptions & Record<string, unknown> = {}): Promise<Simulator> {
  return new Simulator(options).start();
}

export { SimServer, FAULT_KINDS, INT64_EDGE_IDS, faultFromJson } from './server';
export { TerminalGateway, STATE, ERRORS, formatUtc, parseUtc } from './terminal';
export { Fleet, terminalInfo, DEFAULT_FLEET_OPTIONS, REGIONS, type FleetOptions, type FleetState, type TerminalInfo } from './terminal-fleet';
export { DEFAULT_FLEET_DEMO, type FleetDemoOptions, type MoverPosition } from './fleet-demo';
