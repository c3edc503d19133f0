/** The file store's use of the file system (file-store.ts): what it needs, its errors, a folder's sync. */
import type * as fsp from 'node:fs/promises';
import { GatewayError } from '../common/errors';

/** What the store needs of node:fs/promises (tests inject failures here). */
export interface StoreFs {
  mkdir: typeof fsp.mkdir;
  readdir: (dir: string) => Promise<string[]>;
  open: typeof fsp.open;
  rename: typeof fsp.rename;
  unlink: typeof fsp.unlink;
}

/** An fs failure as STORAGE, naming the error code only (its message holds the path). */
export function outboxStorageError(err: unknown, what: string): GatewayError {
  if (err instanceof GatewayError) return err;
  const code = (err as NodeJS.ErrnoException)?.code;
  const c = typeof code === 'string' && /^E[A-Z]+$/.test(code) ? ` (${code})` : '';
  return new GatewayError('STORAGE', `the outbox could not ${what}${c}; nothing of this msg was kept`, { cause: err });
}

/** Syncs a folder (so a rename in it is durable), where the file system can. */
export async function syncDir(fs: StoreFs, dir: string): Promise<void> {
  try {
    const d = await fs.open(dir, 'r');
    try {
      await d.sync();
    } finally {
      await d.close();
    }
  } catch {
    /* some file systems cannot sync a folder: the rename is still atomic */
  }
}

