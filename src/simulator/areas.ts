/**
 * The simulator's areas besides the terminal gateway (which index.ts always mounts).
 * Each entry creates one area from the simulator's options; add new areas here.
 */
import type { SimArea } from './area';
import { createAppArea } from './app';
import { BrokerApi, type BrokerOptions } from './broker';

export type { SimArea } from './area';

export const AREAS: Array<{ name: string; create: (options: Record<string, unknown>) => SimArea }> = [
  { name: 'broker', create: (o) => new BrokerApi(o.broker as Partial<BrokerOptions> | undefined) },
  { name: 'app', create: createAppArea },
];
