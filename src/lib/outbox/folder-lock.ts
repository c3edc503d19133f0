/**
 * FolderLock: one process at a time on an outbox folder (issue 45: "sends nothing twice").
 * Two processes draining one file store (a script restarted while its old process still
 * runs, two Node-RED instances on one user directory) would each send its entries.
 *
 * The folder's files `lock.<n>` (n a generation): the highest n says who holds the folder,
 * `{pid, host, boot, start, ns, at, token}`, or that it is free (`{free: true}`, left by close).
 * - Taking it is the exclusive creation of `lock.<n + 1>`, after reading `lock.<n>` free or
 *   stale: written whole to `lock-new.<token>`, then hard-linked to its name (a link fails
 *   when the name exists; where the file system has no hard links, created with 'wx'). Of two
 *   processes that saw `lock.<n>` stale, exactly one creates `lock.<n + 1>`.
 * - The winner removes the lower files. A process with an old view could create one of those
 *   numbers again: after creating, a process checks that no higher file exists, else it lost.
 *   The highest file is never removed (close replaces it by a free record), so this holds.
 * - Stale, on this host (the same hostname and pid namespace): its boot id differs (a reboot),
 *   its pid is not alive (kill(pid, 0): ESRCH), the pid now runs another process (its start
 *   time in /proc/<pid>/stat differs: a pid reused), or it is our own pid with a token this
 *   process does not hold (a container restarted with the same pid).
 * - A holder whose pid cannot be checked here (another hostname: a container recreated, or a
 *   folder shared over the network; or another pid namespace) refreshes its lock file's mtime
 *   every `refreshMs` (5 s): the lock is watched for `watchMs` (30 s), stale when it was not
 *   refreshed meanwhile. A lost lock is seen at the holder's next refresh.
 * - A lock file that cannot be read 10 s after it was written was torn by a crash: stale.
 * - Refused: STORAGE (the outbox cannot be used), naming the folder and the holder's pid
 *   (`isFolderInUse`: the node tries again, as the holder may stop).
 * - A holder whose lock file is gone or names another holder (removed by hand, or taken over
 *   after a stall longer than the watch) has lost the folder: `lost`, seen at its next refresh.
 */
import { randomBytes } from 'node:crypto';
import * as fsp from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { foreignText, GatewayError } from '../common/errors';

export interface LockHolder {
  pid: number;
  host: string;
  /** /proc/sys/kernel/random/boot_id, where there is one. */
  boot?: string;
  /** The holder's start time (clock ticks since boot, /proc/<pid>/stat), where there is one. */
  start?: string;
  /** The holder's pid namespace (/proc/self/ns/pid), where there is one. */
  ns?: string;
  /** When it took the folder (ms since the epoch). */
  at: number;
  token: string;
}

type Read = LockHolder | { free: true } | 'gone' | 'torn';

const LOCK = /^lock\.(\d{1,15})$/;
const NEW = /^lock-new\./;
/** A lock file that cannot be read this long after it was written was torn by a crash. */
const TORN_MS = 10_000;
const ROUNDS = 200;
/** How often a holder refreshes its lock file's mtime, and how long another host's lock is watched. */
const REFRESH_MS = 5_000;
const WATCH_MS = 30_000;

export interface FolderLockOptions {
  /** How long a lock held from another host or pid namespace is watched for a refresh (default 30 s). */
  watchMs?: number;
  /** How often the holder refreshes its lock file's mtime and checks that it still holds it (default 5 s; keep it well under the others' watchMs). */
  refreshMs?: number;
}

/** Folders this process holds (their real paths), so a second open here is refused too. */
const heldHere = new Map<string, string>();

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

async function readText(file: string): Promise<string | undefined> {
  try {
    return (await fsp.readFile(file, 'utf8')).trim();
  } catch {
    return undefined;
  }
}

/** The start time of a process (field 22 of /proc/<pid>/stat), undefined where unknown. */
export async function processStart(pid: number | 'self'): Promise<string | undefined> {
  const stat = await readText(`/proc/${pid}/stat`);
  if (!stat) return undefined;
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
}

/** Whether a pid is alive on this host (EPERM: alive, another user's). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

function isHolder(v: unknown): v is LockHolder {
  const h = v as LockHolder;
  return !!h && typeof h === 'object' && Number.isSafeInteger(h.pid) && h.pid > 0 && typeof h.host === 'string' && typeof h.token === 'string' && typeof h.at === 'number';
}

async function readLock(file: string): Promise<Read> {
  let text: string;
  try {
    text = await fsp.readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'gone';
    throw err;
  }
  try {
    const v = JSON.parse(text) as unknown;
    if (v && typeof v === 'object' && (v as { free?: unknown }).free === true) return { free: true };
    if (isHolder(v)) return v;
  } catch {
    /* torn */
  }
  return 'torn';
}

/** The generations of the lock files in `dir`, highest first. */
async function generations(dir: string): Promise<number[]> {
  const names = await fsp.readdir(dir);
  return names.map((n) => LOCK.exec(n)).filter((m): m is RegExpExecArray => !!m).map((m) => Number(m[1])).sort((a, b) => b - a);
}

/** Whether a holder is stale (see the file's comment); 'foreign' when its pid cannot be checked here. */
async function judge(h: LockHolder, self: LockHolder): Promise<'live' | 'stale' | 'foreign'> {
  if (h.host === self.host && h.boot && self.boot && h.boot !== self.boot) return 'stale';
  if (h.host !== self.host || (h.ns && self.ns && h.ns !== self.ns)) return 'foreign';
  if (h.pid === process.pid) return [...heldHere.values()].includes(h.token) ? 'live' : 'stale';
  if (!alive(h.pid)) return 'stale';
  if (h.start) {
    const now = await processStart(h.pid);
    if (now !== undefined && now !== h.start) return 'stale';
  }
  return 'live';
}

/** A lock whose holder cannot be checked, watched for `ms`: 'live' once refreshed, 'stale' if not; undefined when it changed hands. */
async function watch(file: string, token: string, ms: number): Promise<'live' | 'stale' | undefined> {
  const first = await fsp.stat(file).catch(() => undefined);
  if (!first) return undefined;
  const end = Date.now() + ms;
  while (Date.now() < end) {
    await sleep(Math.min(250, Math.max(1, end - Date.now())));
    const st = await fsp.stat(file).catch(() => undefined);
    if (!st || st.ino !== first.ino) return undefined;
    if (st.mtimeMs !== first.mtimeMs) {
      const now = await readLock(file);
      return typeof now === 'object' && 'token' in now && now.token === token ? 'live' : undefined;
    }
  }
  return 'stale';
}

const IN_USE = Symbol('iotgw.folderInUse');

/** Whether `e` is a refusal because another holder has the folder (it may be free later: worth trying again). */
export function isFolderInUse(e: unknown): boolean {
  return !!e && typeof e === 'object' && (e as { [IN_USE]?: boolean })[IN_USE] === true;
}

const inUse = (err: GatewayError): GatewayError => Object.assign(err, { [IN_USE]: true });

function refused(dir: string, h: LockHolder, how: 'live' | 'foreign'): GatewayError {
  const since = Number.isFinite(h.at) ? ` (held since ${new Date(h.at).toISOString()})` : '';
  const folder = `in the folder "${foreignText(dir, 200)}"${since}: one process at a time may use an outbox folder`;
  if (how === 'foreign') {
    return inUse(new GatewayError('STORAGE', `the outbox is in use by pid ${h.pid} on host "${foreignText(h.host, 64)}" (it keeps its lock fresh), ${folder}; stop that process, or give this one a folder of its own`));
  }
  return inUse(new GatewayError('STORAGE', `the outbox is in use by another process (pid ${h.pid}), ${folder}; stop that process, or give this one a folder of its own`));
}

const inUseHere = (folder: string) => inUse(new GatewayError('STORAGE', `the outbox is in use by this process already, in the folder "${foreignText(folder, 200)}": one outbox per folder`));

/** Creates `file` with `text`, exclusively: false when it exists. */
async function createExclusive(dir: string, file: string, text: string, token: string): Promise<boolean> {
  const tmp = path.join(dir, `lock-new.${token}`);
  await fsp.writeFile(tmp, text);
  try {
    await fsp.link(tmp, file);
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'ENOSYS') throw err;
    return createWx(file, text); // no hard links here (FAT)
  } finally {
    await fsp.unlink(tmp).catch(() => undefined);
  }
}

async function createWx(file: string, text: string): Promise<boolean> {
  let fh: fsp.FileHandle;
  try {
    fh = await fsp.open(file, 'wx');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
  try {
    await fh.writeFile(text);
  } finally {
    await fh.close();
  }
  return true;
}

export class FolderLock {
  private released = false;
  private readonly refresh: NodeJS.Timeout;
  /** The lock file no longer names this holder (removed, or taken over as stale): stop writing. */
  lost = false;

  private constructor(
    readonly dir: string,
    readonly generation: number,
    readonly holder: LockHolder,
    refreshMs: number,
  ) {
    // The mtime says "alive" to a process that cannot check the pid (another host or container).
    const file = path.join(dir, `lock.${generation}`);
    this.refresh = setInterval(() => void this.beat(file), refreshMs);
    this.refresh.unref();
  }

  private async beat(file: string): Promise<void> {
    const now = await readLock(file).catch(() => undefined);
    if (this.released) return;
    if (now === 'gone' || (typeof now === 'object' && !('free' in now) && now.token !== this.holder.token)) {
      this.lost = true;
      clearInterval(this.refresh);
      return;
    }
    const t = new Date();
    await fsp.utimes(file, t, t).catch(() => undefined);
  }

  /** Takes the folder (which must exist) for this process, or throws STORAGE naming the holder. */
  static async acquire(folder: string, options: FolderLockOptions = {}): Promise<FolderLock> {
    const ns = await fsp.readlink('/proc/self/ns/pid').catch(() => undefined);
    const self: LockHolder = {
      pid: process.pid, host: os.hostname(), boot: await readText('/proc/sys/kernel/random/boot_id'), start: await processStart('self'), ns, at: Date.now(), token: randomBytes(12).toString('hex'),
    };
    const dir = await fsp.realpath(folder);
    // Reserved at once (no await between the check and the set): two opens here race no further.
    if (heldHere.has(dir)) throw inUseHere(folder);
    heldHere.set(dir, self.token);
    try {
      return await FolderLock.take(dir, folder, self, options.watchMs ?? WATCH_MS, options.refreshMs ?? REFRESH_MS);
    } catch (err) {
      heldHere.delete(dir);
      throw err;
    }
  }

  private static async take(dir: string, folder: string, self: LockHolder, watchMs: number, refreshMs: number): Promise<FolderLock> {
    for (let round = 0; round < ROUNDS; round++) {
      const next = await FolderLock.nextGeneration(dir, folder, self, watchMs);
      if (next === undefined) continue;
      if (!(await createExclusive(dir, path.join(dir, `lock.${next}`), JSON.stringify(self), self.token))) continue;
      if ((await generations(dir))[0]! > next) {
        // An old view: a number removed by a later winner, created again. Lost.
        await fsp.unlink(path.join(dir, `lock.${next}`)).catch(() => undefined);
        continue;
      }
      await FolderLock.tidy(dir, next);
      return new FolderLock(dir, next, self, refreshMs);
    }
    throw new GatewayError('STORAGE', `the outbox could not take its folder "${foreignText(folder, 200)}": other processes keep taking it`);
  }

  /** The generation to create (the highest is free or stale), undefined to look again; throws when held. */
  private static async nextGeneration(dir: string, folder: string, self: LockHolder, watchMs: number): Promise<number | undefined> {
    const top = (await generations(dir))[0];
    if (top === undefined) return 1;
    const file = path.join(dir, `lock.${top}`);
    const read = await readLock(file);
    if (read === 'gone') return undefined;
    if (read === 'torn') {
      const st = await fsp.stat(file).catch(() => undefined);
      if (st && Date.now() - st.mtimeMs < TORN_MS) {
        await sleep(100); // being written ('wx', no hard links)
        return undefined;
      }
      return top + 1;
    }
    if ('free' in read) return top + 1;
    let how: 'live' | 'stale' | 'foreign' | undefined = await judge(read, self);
    if (how === 'foreign') {
      how = await watch(file, read.token, watchMs);
      if (how === undefined) return undefined;
      if (how === 'live') how = 'foreign';
    }
    if (how !== 'stale') throw refused(folder, read, how);
    return top + 1;
  }

  /** Removes the lower lock files, and new-lock files a crash left. */
  private static async tidy(dir: string, top: number): Promise<void> {
    const now = Date.now();
    for (const n of await fsp.readdir(dir)) {
      const m = LOCK.exec(n);
      const file = path.join(dir, n);
      if (m && Number(m[1]) < top) await fsp.unlink(file).catch(() => undefined);
      else if (NEW.test(n)) {
        const st = await fsp.stat(file).catch(() => undefined);
        if (st && now - st.mtimeMs > 60_000) await fsp.unlink(file).catch(() => undefined);
      }
    }
  }

  /** As a killed process leaves it: nothing written, the lock file stays (a test plays several lives in one process). */
  abandon(): void {
    this.released = true;
    clearInterval(this.refresh);
    if (heldHere.get(this.dir) === this.holder.token) heldHere.delete(this.dir);
  }

  /** Gives the folder up: its lock file says free (the number stays, so none is taken twice). */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    clearInterval(this.refresh);
    if (heldHere.get(this.dir) === this.holder.token) heldHere.delete(this.dir);
    const tmp = path.join(this.dir, `lock-new.${this.holder.token}`);
    try {
      await fsp.writeFile(tmp, JSON.stringify({ free: true }));
      await fsp.rename(tmp, path.join(this.dir, `lock.${this.generation}`));
    } catch {
      await fsp.unlink(tmp).catch(() => undefined);
    }
  }
}
