/**
 * The living fleet of the demo (issue 36): every `everyMs` a few of the fleet's terminals
 * report their position, and one terminal changes (a registration, a mode), so a dashboard
 * sees markers move and the terminal-updates feed moves on. Off unless `everyMs` > 0
 * (`npm start` and the `iotgw-simulator` command turn it on).
 *
 * - The movers are the first `movers` registered, online terminals (of the account and its
 *   subaccount: `get/subaccounts/re_messages` has them all, `get/re_messages` its own); each
 *   travels from its home in its region, its heading wandering, at a vehicle's speed with
 *   time sped up `timeScale` times (so a move shows on a map), turning back at its region's
 *   edge.
 * - A report is a SatelliteTelemetry message (SIN 255, MIN 1 of
 *   examples/definitions/demo.idpmsg), RawPayload only: `latitude` and `longitude` in
 *   thousandths of a minute (degrees x 60,000, as IDP position reports), `speed` km/h,
 *   `heading` degrees, `timestamp` seconds since the epoch (mod 2^31).
 */
import { satelliteTelemetry, type FromMobile } from './messages';
import { REGIONS, type Fleet, type FleetChange, type FleetState } from './terminal-fleet';

export interface FleetDemoOptions {
  /** A round every this many ms; 0 = off. */
  everyMs: number;
  /** Terminals that move and report. */
  movers: number;
  /** Position reports per round (the movers take turns). */
  reportsPerRound: number;
  /** Terminal changes (registration or mode) per round. */
  changesPerRound: number;
  /** Simulated travel time per real second. */
  timeScale: number;
}

export const DEFAULT_FLEET_DEMO: FleetDemoOptions = { everyMs: 0, movers: 24, reportsPerRound: 4, changesPerRound: 1, timeScale: 60 };

/** What the demo needs of the gateway. */
export interface DemoHost {
  readonly now: () => number;
  readonly fleet: Fleet;
  readonly mobile: { add(m: Omit<FromMobile, 'ID' | 'visibleAt'> & { visibleAt?: number }): FromMobile };
  /** Applies a change to a fleet terminal (and to the gateway's own record of it). */
  fleetChange(id: string, change: FleetChange): void;
}

/** Where a mover is. */
export interface MoverPosition {
  PrimeID: string;
  account: string;
  lat: number;
  lon: number;
  heading: number;
  speedKmh: number;
  /** ms of the last report. */
  at: number;
}

const STILL_KINDS = /^(Pump station|Generator|Pipeline valve|Tank)/;

export class FleetDemo {
  options: FleetDemoOptions = { ...DEFAULT_FLEET_DEMO };
  readonly counters = { reports: 0, changes: 0, rounds: 0 };
  private movers: MoverPosition[] | undefined;
  private regionOf = new Map<string, (typeof REGIONS)[number]>();
  private next = 0;
  private round = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly gw: DemoHost) {}

  configure(o: Partial<FleetDemoOptions>): void {
    this.options = { ...this.options, ...o };
    this.movers = undefined;
    if (this.timer) {
      this.stop();
      this.start();
    }
  }

  start(): void {
    if (this.timer || !(this.options.everyMs > 0)) return;
    this.timer = setInterval(() => this.tick(), this.options.everyMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** The movers where they last reported. */
  positions(): MoverPosition[] {
    return (this.movers ?? this.pickMovers()).map((m) => ({ ...m }));
  }

  /** One round: a few position reports, and a few terminal changes. */
  tick(): void {
    const movers = this.movers ?? (this.movers = this.pickMovers());
    const now = this.gw.now();
    this.round++;
    this.counters.rounds++;
    for (let k = 0; k < Math.min(this.options.reportsPerRound, movers.length); k++) {
      const m = movers[this.next++ % movers.length]!;
      this.move(m, now);
      this.report(m, now);
    }
    for (let k = 0; k < this.options.changesPerRound; k++) this.change(now);
  }

  /** The first `movers` registered, online terminals of the fleet. */
  private pickMovers(): MoverPosition[] {
    const out: MoverPosition[] = [];
    const fleet = this.gw.fleet;
    for (let i = 4; i < fleet.size && out.length < this.options.movers; i++) {
      const s = fleet.at(i);
      if (s.registered !== 1 || !s.online) continue;
      const still = STILL_KINDS.test(s.description ?? '');
      this.regionOf.set(s.id, regionOf(s));
      out.push({ PrimeID: s.id, account: s.account, lat: s.home.lat, lon: s.home.lon, heading: Math.floor(fleet.unit(i, 40) * 360), speedKmh: still ? 8 : 25 + Math.floor(fleet.unit(i, 41) * 60), at: this.gw.now() });
    }
    return out;
  }

  /** Moves `m` by its speed over the time since its last report (sped up), its heading wandering. */
  private move(m: MoverPosition, now: number): void {
    const hours = (Math.max(0, now - m.at) / 3_600_000) * this.options.timeScale;
    const km = m.speedKmh * hours;
    const turn = (this.gw.fleet.unit(this.counters.reports, 44) - 0.5) * 50;
    m.heading = (((m.heading + turn) % 360) + 360) % 360;
    const rad = (m.heading * Math.PI) / 180;
    let lat = m.lat + (km * Math.cos(rad)) / 111;
    let lon = m.lon + (km * Math.sin(rad)) / (111 * Math.max(0.2, Math.cos((m.lat * Math.PI) / 180)));
    const box = this.regionOf.get(m.PrimeID) ?? REGIONS[0];
    if (lat < box.lat[0] || lat > box.lat[1] || lon < box.lon[0] || lon > box.lon[1]) {
      m.heading = (m.heading + 180) % 360; // back into its region
      lat = Math.min(box.lat[1], Math.max(box.lat[0], lat));
      lon = Math.min(box.lon[1], Math.max(box.lon[0], lon));
    }
    m.lat = Math.round(lat * 1e5) / 1e5;
    m.lon = Math.round(lon * 1e5) / 1e5;
    m.at = now;
  }

  private report(m: MoverPosition, now: number): void {
    const sec = Math.floor(now / 1000);
    const n = this.counters.reports++;
    const raw = satelliteTelemetry({
      timestamp: sec % 2 ** 31,
      latitude: Math.round(m.lat * 60_000),
      longitude: Math.round(m.lon * 60_000),
      altitude: 20 + (n % 80),
      speed: Math.min(255, m.speedKmh),
      heading: Math.round(m.heading) % 360,
      satellites: 6 + (n % 7),
      pdop: 1 + (n % 4),
      snr: 300 + (n % 80),
      temperature: 5 + (n % 30),
    });
    const beam = this.gw.fleet.get(m.PrimeID)?.beam ?? 'AMERRB16';
    this.gw.mobile.add({ sec, visibleAt: now, MobileID: m.PrimeID, account: m.account, SIN: 255, MIN: 1, name: 'SatelliteTelemetry', fields: [], raw, region: beam, transport: 1, rawOnly: true });
  }

  /** One terminal changes: a first registration, a registration in another beam, or a new mode. */
  private change(now: number): void {
    const fleet = this.gw.fleet;
    if (fleet.size <= 4) return;
    const i = 4 + Math.floor(fleet.unit(this.round * 7 + this.counters.changes, 42) * (fleet.size - 4));
    const s = fleet.at(i);
    const sec = Math.floor(now / 1000);
    const region = regionOf(s);
    const pick = fleet.unit(i, 43 + this.round);
    this.counters.changes++;
    if (s.registered !== 1 || pick < 0.5) {
      const beam = region.beams[Math.floor(pick * 2 * region.beams.length) % region.beams.length]!;
      this.gw.fleetChange(s.id, { registered: 1, regSec: sec, regMsgId: BigInt(70_000_000_000 + this.counters.changes), beam, online: true });
      return;
    }
    const mode = s.family === 'IDP' ? 1 - Math.min(1, s.mode) : (s.mode + 1) % 4;
    this.gw.fleetChange(s.id, { mode, wakeCode: mode === 1 || mode === 3 ? 5 : 0 });
  }
}

/** The region of a terminal's beam (its home region when it has none). */
function regionOf(s: FleetState): (typeof REGIONS)[number] {
  const byBeam = REGIONS.find((r) => (r.beams as readonly string[]).includes(s.beam ?? ''));
  if (byBeam) return byBeam;
  return REGIONS.find((r) => s.home.lat >= r.lat[0] && s.home.lat <= r.lat[1] && s.home.lon >= r.lon[0] && s.home.lon <= r.lon[1]) ?? REGIONS[0];
}
