/**
 * The link between a client and the simulator (issue 45): up, or down for a window in one of
 * two ways an edge box's uplink fails.
 *
 * - `refused`: the server stops listening (every open connection is dropped), so a new
 *   connection gets ECONNREFUSED; at the window's end it listens again on the same port.
 * - `black-hole`: connections are accepted and requests read, but nothing is handled and
 *   nothing answered (the client waits until its own timeout). A connection that carried a
 *   request in the window stays silent for good, as a TCP connection whose packets were lost
 *   stays stuck. Control calls (`/_sim/...`) are always answered.
 *
 * Random windows for a chaos run: `chaos({seed, upMs, downMs, kinds})`, seeded (mulberry32,
 * as the faults' chaos) so a run can be replayed.
 */
import type net from 'node:net';
import { rng } from './faults';

export type LinkState = 'up' | 'refused' | 'black-hole';
export const LINK_STATES: readonly LinkState[] = ['up', 'refused', 'black-hole'];

export interface LinkChaos {
  seed?: number;
  /** Time up between two windows: [min, max] ms (default [2000, 10000]). */
  upMs?: [number, number];
  /** Length of a window: [min, max] ms (default [500, 5000]). */
  downMs?: [number, number];
  /** The kinds of window to pick from (default both). */
  kinds?: Array<'refused' | 'black-hole'>;
}

/** What the link needs of the HTTP server: stop and start listening, drop every connection. */
export interface LinkHost {
  stopListening(): void;
  listenAgain(): Promise<void>;
  dropConnections(): void;
}

export class Link {
  state: LinkState = 'up';
  /** When the current window ends (ms since the epoch), or undefined when it ends only by `up()`. */
  until: number | undefined;
  /** Requests read and never answered (black hole), and windows opened, by kind. */
  swallowed = 0;
  readonly windows: Record<'refused' | 'black-hole', number> = { refused: 0, 'black-hole': 0 };
  /** Connections that swallowed a request: silent whatever comes on them. */
  private readonly stuck = new WeakSet<net.Socket>();
  private timer: NodeJS.Timeout | undefined;
  private chaosTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly host: LinkHost) {}

  /** Refuses connections for `forMs` (until `up()` without it). */
  refuse(forMs?: number): void {
    this.setDown('refused', forMs);
  }

  /** Swallows requests for `forMs` (until `up()` without it). */
  blackHole(forMs?: number): void {
    this.setDown('black-hole', forMs);
  }

  /** Ends the window: listening again after `refused` (resolves once it listens). */
  async up(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.until = undefined;
    const was = this.state;
    this.state = 'up';
    if (was === 'refused' && !this.closed) await this.host.listenAgain();
  }

  /** Sets the state (the control route's form); `up` ends the window. */
  async set(state: LinkState, forMs?: number): Promise<void> {
    if (state === 'up') await this.up();
    else this.setDown(state, forMs);
  }

  private setDown(kind: 'refused' | 'black-hole', forMs?: number): void {
    if (this.timer) clearTimeout(this.timer);
    const was = this.state;
    this.state = kind;
    this.windows[kind]++;
    this.until = forMs === undefined ? undefined : Date.now() + forMs;
    if (kind === 'refused' && was !== 'refused') this.host.stopListening();
    if (kind === 'refused') this.host.dropConnections();
    if (was === 'refused' && kind === 'black-hole') void this.host.listenAgain();
    if (forMs !== undefined) {
      this.timer = setTimeout(() => void this.up().catch(() => {}), forMs);
      this.timer.unref();
    }
  }

  /**
   * Is a request on `s` to be swallowed? A request in the window is, and its connection stays
   * silent for good (as a TCP connection whose packets were lost stays stuck until the client
   * gives up). A connection merely opened in the window serves requests that come after it (its
   * handshake got through in the end). Control calls (`/_sim/...`) are always answered.
   */
  swallows(s: net.Socket | null | undefined, control: boolean): boolean {
    if (!s || control) return false;
    if (this.state === 'black-hole') this.stuck.add(s);
    if (!this.stuck.has(s)) return false;
    this.swallowed++;
    return true;
  }

  /** Random windows until `stopChaos()` (or close). */
  chaos(c: LinkChaos): void {
    this.stopChaos();
    const random = rng(c.seed ?? 1);
    const pick = ([min, max]: [number, number]) => Math.round(min + random() * Math.max(0, max - min));
    const kinds = c.kinds?.length ? c.kinds : (['refused', 'black-hole'] as const);
    const next = () => {
      const downMs = pick(c.downMs ?? [500, 5000]);
      this.setDown(kinds[Math.floor(random() * kinds.length)]!, downMs);
      this.chaosTimer = setTimeout(next, downMs + pick(c.upMs ?? [2000, 10000]));
      this.chaosTimer.unref();
    };
    this.chaosTimer = setTimeout(next, pick(c.upMs ?? [2000, 10000]));
    this.chaosTimer.unref();
  }

  stopChaos(): void {
    if (this.chaosTimer) clearTimeout(this.chaosTimer);
    this.chaosTimer = undefined;
  }

  get chaosOn(): boolean {
    return this.chaosTimer !== undefined;
  }

  /** The server closes: no timer left, no listening again. */
  close(): void {
    this.closed = true;
    this.stopChaos();
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  describe(): Record<string, unknown> {
    return { state: this.state, until: this.until ?? null, swallowed: this.swallowed, windows: this.windows, chaos: this.chaosOn };
  }
}
