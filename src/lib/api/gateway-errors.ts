/** ErrorID handling of area (a) replies, with names from the account's catalogue. */
import { GatewayError, quote } from '../common/errors';
import type { CatalogueEntry } from './catalogue';

/** What names an ErrorID: an `iotgw-gateway` config node, or a TerminalClient (their `catalogue`). */
export interface CatalogueHolder {
  catalogue: { load(signal?: AbortSignal): Promise<void>; lookup(id: number): CatalogueEntry | undefined };
}

/** A top-level ErrorID > 0 fails the whole call with GATEWAY_ERROR. */
export async function throwOnCallError(g: CatalogueHolder, errorId: number | null | undefined, where: string, statusCode: number, signal?: AbortSignal): Promise<void> {
  if (!errorId || errorId <= 0) return;
  await g.catalogue.load(signal);
  const e = g.catalogue.lookup(errorId);
  // The name and description are the gateway's own text: quoted, bounded.
  const name = e ? quote(e.name, 100) : undefined;
  throw new GatewayError('GATEWAY_ERROR', `${where}: the gateway refused the call with ErrorID ${errorId}${e ? ` (${name}${e.description ? `: ${quote(e.description)}` : ''})` : ''}`, {
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
    const e = g.catalogue.lookup(s.ErrorID!);
    const out: T & { ErrorName?: string; ErrorDescription?: string } = { ...s, ErrorName: e?.name ?? `ERROR_${s.ErrorID}` };
    if (e?.description) out.ErrorDescription = e.description;
    return out;
  });
}
