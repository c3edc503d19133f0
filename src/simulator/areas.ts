/**
 * The simulator's areas besides the terminal gateway (which index.ts always mounts).
 * Each entry creates one area from the simulator's options; add new areas here.
 */
import type { SimServer } from './server';
import { createAppArea } from './app';
import { BrokerApi, type BrokerOptions } from './broker';

/** An area of the simulator (broker/SMS, app API) that mounts its routes. */
export interface SimArea {
  mount(sim: SimServer): void;
  start?(): void;
  stop?(): void;
  /** A summary for GET /_sim/state. */
  state?(): unknown;
}

export const AREAS: Array<{ name: string; create: (options: Record<string, unknown>) => SimArea }> = [
  { name: 'broker', create: (o) => new BrokerApi(o.broker as Partial<BrokerOptions> | undefined) },
  { name: 'app', create: createAppArea },
];
