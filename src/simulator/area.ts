/** The contract of one simulator area (its own file, so that areas.ts, app.ts and broker.ts form no import circle). */
import type { SimServer } from './server';

/** An area of the simulator (broker/SMS, app API) that mounts its routes. */
export interface SimArea {
  mount(sim: SimServer): void;
  start?(): void;
  stop?(): void;
  /** A summary for GET /_sim/state. */
  state?(): unknown;
}
