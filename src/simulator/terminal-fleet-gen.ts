/**
 * How the fleet's terminal `i` is generated (./terminal-fleet.ts): a pure function of the
 * fleet's seed, `i` and the second its history is counted back from.
 */
import { DEFAULT_TERMINALS } from './terminal-model';

export interface FleetOptions {
  /** Terminals generated (the first four are DEFAULT_TERMINALS). Default 3,000. */
  size: number;
  /** Seed of every choice. */
  seed: number;
  /** Share of OGx terminals (LastSatelliteNetwork 1). */
  ogxShare: number;
  /** Share of terminals never registered (IsRegistered null or 0, no LastRegistrationUTC). */
  neverRegisteredShare: number;
  /** Share of terminals of the subaccount. */
  subaccountShare: number;
  /** Share of LastRegistrationMessageIDs beyond 2^53. */
  bigMessageIdShare: number;
  /** UpdateUTCs are spread over this many days before the fleet's creation. */
  historyDays: number;
  /**
   * Terminals (from the middle of the fleet) whose generated UpdateUTC is one and the same
   * second, a day before the fleet's creation: a crowded second in the updates feed's history
   * from the start. Default 0.
   */
  crowdedSecond: number;
  /** The account owning the fleet, and the subaccount owning its share. */
  account: string;
  subaccount: string;
}

export const DEFAULT_FLEET_OPTIONS: FleetOptions = {
  size: 3000,
  seed: 35,
  ogxShare: 0.35,
  neverRegisteredShare: 0.05,
  subaccountShare: 0.1,
  bigMessageIdShare: 0.1,
  historyDays: 30,
  crowdedSecond: 0,
  account: 'demo',
  subaccount: 'sub',
};

/** Regions, their beams and a box of plausible positions (degrees). */
export const REGIONS = [
  { name: 'AMER', share: 0.5, beams: ['AMERRB16', 'AMERRB7', 'AMERRB11', 'AMERRB3'], lat: [28, 50], lon: [-122, -72] },
  { name: 'EMEA', share: 0.3, beams: ['EMEARB5', 'EMEARB12', 'EMEARB2'], lat: [37, 58], lon: [-6, 28] },
  { name: 'APAC', share: 0.2, beams: ['APACRB3', 'APACRB9'], lat: [-36, -14], lon: [116, 150] },
] as const;

const KINDS = ['Truck', 'Trailer', 'Vessel', 'Pump station', 'Container', 'Rail car', 'Generator', 'Buoy', 'Pipeline valve', 'Tank'];

/** A terminal's state, from which its TerminalInfo is written. */
export interface FleetState {
  /** Index in the fleet; -1 for a terminal added by hand. */
  index: number;
  id: string;
  account: string;
  family: 'IDP' | 'OGx';
  /** IsRegistered: 1, or 0 / null for a terminal never registered. */
  registered: number | null;
  online: boolean;
  mode: number;
  /** Wake-up interval code (WAKEUP_SECONDS). */
  wakeCode: number;
  beam: string | null;
  regSec: number | null;
  regMsgId: bigint | null;
  updateSec: number;
  unitId: number | null;
  description: string | null;
  mtsn: string | null;
  imei: string | null;
  meid: string | null;
  mac: string | null;
  paired: string | null;
  cellSec: number | null;
  /** Its service is suspended (set by hand): to_multiple refuses it with ErrorID 21786. */
  suspended?: boolean;
  /** Where the terminal usually is (degrees). */
  home: { lat: number; lon: number };
}

/** A 32-bit hash of (seed, i, salt): every choice of the fleet. */
export function mix(seed: number, i: number, salt: number): number {
  let h = (Math.imul(seed ^ 0x2545f491, 0x9e3779b1) ^ Math.imul(i + 1, 0x85ebca6b) ^ Math.imul(salt + 7, 0xc2b2ae35)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d) >>> 0;
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b) >>> 0;
  h = Math.imul(h ^ (h >>> 13), 0x9e3779b1) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}

/** PrimeID of terminal `i`: the prefix grows with `i`, so PrimeID order is index order. */
export function primeIdAt(seed: number, i: number): string {
  const d = DEFAULT_TERMINALS[i];
  if (d) return d.id;
  const suffix = (mix(seed, i, 0) & 0xffff).toString(16).toUpperCase().padStart(4, '0');
  return `${String(1_000_001 + i).padStart(8, '0')}SKY${suffix}`;
}

function pickRegion(u: number): (typeof REGIONS)[number] {
  let acc = 0;
  for (const r of REGIONS) {
    acc += r.share;
    if (u < acc) return r;
  }
  return REGIONS[0];
}

/** Mode and wake-up code: IDP 0 or 1, OGx 0 to 3. */
function modeOf(family: 'IDP' | 'OGx', u: number, w: number): { mode: number; wakeCode: number } {
  const mode = family === 'IDP' ? (u < 0.7 ? 0 : 1) : u < 0.4 ? 0 : u < 0.7 ? 1 : u < 0.85 ? 2 : 3;
  const wakeCode = mode === 1 || mode === 3 ? 1 + Math.floor(w * (family === 'IDP' ? 10 : 15)) : 0;
  return { mode, wakeCode };
}

/** Terminal `i` of a fleet whose history ends at `epochSec`. */
export function generateState(o: FleetOptions, i: number, epochSec: number): FleetState {
  const u = (salt: number) => mix(o.seed, i, salt) / 2 ** 32;
  const def = DEFAULT_TERMINALS[i];
  const family = def?.family ?? (u(1) < o.ogxShare ? 'OGx' : 'IDP');
  const never = !def && u(2) < o.neverRegisteredShare;
  const region = def ? REGIONS[0] : pickRegion(u(4));
  const { mode, wakeCode } = def ? { mode: 0, wakeCode: 0 } : modeOf(family, u(6), u(7));
  const mid = Math.floor(o.size / 2);
  const crowded = i >= mid && i < mid + o.crowdedSecond;
  const updateSec = crowded ? epochSec - 86_400 : epochSec - 60 - Math.floor(u(8) * o.historyDays * 86_400);
  const regSec = never ? null : u(9) < 0.5 ? updateSec : updateSec - Math.floor(u(10) * 5 * 86_400);
  const big = u(12) < o.bigMessageIdShare;
  const ogx = family === 'OGx';
  return {
    index: i,
    id: primeIdAt(o.seed, i),
    account: def || u(3) >= o.subaccountShare ? o.account : o.subaccount,
    family,
    registered: never ? (u(13) < 0.5 ? null : 0) : 1,
    online: def ? def.online : !never && u(11) >= 0.1,
    mode,
    wakeCode,
    beam: never ? null : region.beams[Math.floor(u(5) * region.beams.length)]!,
    regSec,
    regMsgId: never ? null : big ? 9_007_199_254_740_993n + BigInt(mix(o.seed, i, 14)) * 1000n : 60_000_000_000n + BigInt(i) * 17n,
    updateSec,
    unitId: 10_000_000 + (mix(o.seed, i, 15) % 89_999_999),
    description: u(16) < 0.05 ? null : `${KINDS[Math.floor(u(17) * KINDS.length)]!} ${String(i + 1).padStart(4, '0')}`,
    mtsn: ogx ? null : `SKY${String(mix(o.seed, i, 18) % 10_000_000).padStart(7, '0')}`,
    imei: ogx ? `35${String(mix(o.seed, i, 19)).padStart(10, '0')}${String(i % 1000).padStart(3, '0')}` : null,
    meid: null,
    mac: ogx && u(20) < 0.3 ? macOf(mix(o.seed, i, 21), i) : null,
    paired: ogx && i > DEFAULT_TERMINALS.length && u(22) < 0.03 ? primeIdAt(o.seed, i - 1) : null,
    cellSec: ogx && !never && u(23) < 0.4 ? updateSec - Math.floor(u(24) * 86_400) : null,
    home: { lat: round5(region.lat[0] + u(25) * (region.lat[1] - region.lat[0])), lon: round5(region.lon[0] + u(26) * (region.lon[1] - region.lon[0])) },
  };
}

function macOf(h: number, i: number): string {
  const bytes = [0x00, 0x1b, (h >>> 24) & 0xff, (h >>> 16) & 0xff, (h >>> 8) & 0xff, i & 0xff];
  return bytes.map((b) => b.toString(16).toUpperCase().padStart(2, '0')).join(':');
}

function round5(x: number): number {
  return Math.round(x * 1e5) / 1e5;
}
