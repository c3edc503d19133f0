/**
 * Errors in a config node's settings (a bad base URL, API version, ...): no retry can fix
 * them, only a redeploy with the setting corrected. The config node marks the error it
 * found; a poller shows it once, red, and stops polling instead of saying "retrying".
 */
const settingErrors = new WeakSet<object>();

/** Marks `err` as a settings error (returns it). */
export function markSettingError<E extends object>(err: E): E {
  settingErrors.add(err);
  return err;
}

export function isSettingError(err: unknown): boolean {
  return typeof err === 'object' && err !== null && settingErrors.has(err);
}
