/**
 * The runtime half of the editor's "iot gateway" sidebar tab (a Node-RED plugin; its
 * editor half is nodes/iotgw-sidebar.html). Nodes.md, "Seeing an account at work":
 *
 * - `GET /iotgw/accounts` (admin API: Node-RED's admin authentication, permission
 *   `iotgw.read`, which a user with `read` has) answers the figures of every account of
 *   the running flows: the array `iotgw-account-status` would emit, one object per account.
 * - Live: while a tab is shown, it says so over the editor's comms channel
 *   (`iotgw/watch`, every few seconds); while someone watches, the figures are published on
 *   the comms topic `iotgw/accounts` at most once a second, and only when they changed.
 *   When nobody watches nothing runs: no timer, no read.
 *
 * No credential is in the figures (labels, counts, times, error texts already cut of secrets).
 */
import { allFigures, type AccountFigures } from '../lib/account/figures';

/** The bits of the plugin's RED this file uses. */
export interface PluginRED {
  plugins: { registerPlugin(id: string, def: Record<string, unknown>): void };
  httpAdmin: { get(path: string, ...handlers: Array<(req: unknown, res: Res, next: () => void) => void>): void };
  auth: { needsPermission(p: string): (req: unknown, res: Res, next: () => void) => void };
  comms: { publish(topic: string, data: unknown, retain?: boolean): void };
  events: { on(ev: string, fn: (...a: unknown[]) => void): void };
  log?: { warn(m: string): void };
}

interface Res {
  json(body: unknown): void;
  status(code: number): Res;
}

export const TOPIC = 'iotgw/accounts';
export const WATCH_TOPIC = 'iotgw/watch';
/** How long one "I am watching" from a tab keeps the publishing on (the tab repeats it every 5 s). */
export const WATCH_MS = 15_000;
/** At most one publish per this long. */
export const PUBLISH_MS = 1000;

/** The figures without their read time: what "changed" compares. */
function sameAs(a: AccountFigures[], b: string | undefined): string | undefined {
  const s = JSON.stringify(a.map((f) => ({ ...f, at: '' })));
  return s === b ? undefined : s;
}

export default function register(RED: PluginRED): void {
  let watchedUntil = 0;
  let timer: NodeJS.Timeout | undefined;
  let last: string | undefined;
  let busy = false;

  const tick = () => {
    if (Date.now() > watchedUntil) {
      clearInterval(timer);
      timer = undefined;
      last = undefined;
      return;
    }
    if (busy) return;
    busy = true;
    allFigures().then(
      (list) => {
        busy = false;
        const changed = sameAs(list, last);
        if (changed === undefined) return;
        last = changed;
        RED.comms.publish(TOPIC, list, false);
      },
      () => {
        busy = false;
      },
    );
  };

  const watch = () => {
    watchedUntil = Date.now() + WATCH_MS;
    if (!timer) {
      // A new watcher gets the figures at once, changed or not.
      last = undefined;
      timer = setInterval(tick, PUBLISH_MS);
      timer.unref?.();
      tick();
    }
  };

  RED.events.on(`comms:message:${WATCH_TOPIC}`, watch);

  RED.httpAdmin.get('/iotgw/accounts', RED.auth.needsPermission('iotgw.read'), (_req, res) => {
    allFigures().then(
      (list) => res.json(list),
      (err: unknown) => res.status(500).json({ error: String((err as Error)?.message ?? err).slice(0, 200) }),
    );
  });

  RED.plugins.registerPlugin('iotgw-sidebar', { type: 'iotgw-sidebar' });
}

