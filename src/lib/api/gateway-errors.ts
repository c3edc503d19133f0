/** ErrorID handling of area (a) replies, with names from the account's catalogue. */
import { GatewayError, foreignText } from '../common/errors';
import type { CatalogueEntry } from './catalogue';

/** What names an ErrorID: an `iotgw-gateway` config node, or a TerminalClient (their `catalogue`). */
export interface CatalogueHolder {
  catalogue: { load(signal?: AbortSignal): Promise<void>; lookup(id: number): CatalogueEntry | undefined };
}

/** Most characters of a catalogue name and description shown (before control characters are escaped). */
export const CATALOGUE_NAME_MAX = 100;
export const CATALOGUE_DESCRIPTION_MAX = 300;

/**
 * A catalogue entry as the package shows it (ErrorName, ErrorDescription, err.errorName and
 * the message): the gateway's own text, quoted like other foreign text: bounded, control
 * characters escaped (a name of 1 MB with ESC and CRLF never reaches an output or a log whole).
 */
export function shownEntry(e: CatalogueEntry): CatalogueEntry {
  let out = shown.get(e);
  if (!out) {
    const name = foreignText(e.name, CATALOGUE_NAME_MAX);
    out = e.description ? { name, description: foreignText(e.description, CATALOGUE_DESCRIPTION_MAX) } : { name };
    shown.set(e, out);
  }
  return out;
}

/** Each entry shaped once (a catalogue keeps its entries: a reply of 100 rejections shapes a name once). */
const shown = new WeakMap<CatalogueEntry, CatalogueEntry>();

/** A top-level ErrorID > 0 fails the whole call with GATEWAY_ERROR. */
export async function throwOnCallError(g: CatalogueHolder, errorId: number | null | undefined, where: string, statusCode: number, signal?: AbortSignal): Promise<void> {
  if (!errorId || errorId <= 0) return;
  await g.catalogue.load(signal);
  const e = g.catalogue.lookup(errorId);
  const shown = e && shownEntry(e);
  const name = shown?.name;
  throw new GatewayError('GATEWAY_ERROR', `${where}: the gateway refused the call with ErrorID ${errorId}${shown ? ` (${name}${shown.description ? `: ${shown.description}` : ''})` : ''}`, {
    statusCode,
    errorId,
    errorName: name,
  });
}

/** Adds ErrorName (and ErrorDescription) to entries with ErrorID > 0. */
export async function nameErrors<T extends { ErrorID?: number | null }>(g: CatalogueHolder, entries: T[], signal?: AbortSignal): Promise<Array<T & { ErrorName?: string; ErrorDescription?: string }>> {
  if (!entries.some((s) => (s.ErrorID ?? 0) > 0)) return entries;
  await g.catalogue.load(signal);
  return entries.map((s) => {
    if (!((s.ErrorID ?? 0) > 0)) return s;
    const found = g.catalogue.lookup(s.ErrorID!);
    const e = found && shownEntry(found);
    const out: T & { ErrorName?: string; ErrorDescription?: string } = { ...s, ErrorName: e?.name ?? `ERROR_${s.ErrorID}` };
    if (e?.description) out.ErrorDescription = e.description;
    return out;
  });
}
