/** ErrorID handling of area (a) replies, with names from the account's catalogue. */
import { GatewayError } from '../common/errors';
import type { GatewayNode } from '../node-red/config-nodes';

/** A top-level ErrorID > 0 fails the whole call with GATEWAY_ERROR. */
export async function throwOnCallError(g: GatewayNode, errorId: number | null | undefined, where: string, statusCode: number, signal: AbortSignal): Promise<void> {
  if (!errorId || errorId <= 0) return;
  await g.catalogue.load(signal);
  const e = g.catalogue.lookup(errorId);
  throw new GatewayError('GATEWAY_ERROR', `${where}: the gateway refused the call with ErrorID ${errorId}${e ? ` (${e.name}${e.description ? `: ${e.description}` : ''})` : ''}`, {
    statusCode,
    errorId,
    errorName: e?.name,
  });
}

/** Adds ErrorName (and ErrorDescription) to entries with ErrorID > 0. */
export async function nameErrors<T extends { ErrorID?: number | null }>(g: GatewayNode, entries: T[], signal: AbortSignal): Promise<Array<T & { ErrorName?: string; ErrorDescription?: string }>> {
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
