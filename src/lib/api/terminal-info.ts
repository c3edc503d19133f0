/**
 * The terminals' own records (real-services.md, "More of the gateway"): TerminalInfo and the
 * terminal changes feed `info/terminal_updates`, a FromUTC feed like the other two (FromUTC
 * inclusive at one-second resolution, `NextFromUTC` the second of the last record), whose
 * records are de-duplicated on `PrimeID` + `UpdateUTC`. Each record is the terminal's
 * current state, not an event. Field names are confirmed, their types partly guessed: the
 * reader checks the few a feed relies on and keeps the rest as received.
 */
import type { ApiClient, AuthProvider, Query } from '../transport/http';
import { int64Out } from '../common/int64';
import { schema, type Infer } from '../common/schema';
import { throwOnCallError, type CatalogueHolder } from './gateway-errors';
import { checkReply } from './terminal';
import { MalformedRecord, readRecords, terminalIdText, utcText } from './records';
import { withExtraQuery } from './gateway-context';

/** The endpoints of this file, under `/api/v{version}/`. */
export const TERMINAL_INFO_PATHS = { terminalUpdates: 'info/terminal_updates' } as const;

const int = schema((z) => z.number().int());
const int64 = schema((z) => z.union([z.number().int(), z.string().regex(/^-?\d{1,19}$/)]));

/** One terminal as the gateway describes it (PascalCase; fields not named here kept as received). */
export const terminalInfo = schema((z) =>
  z
    .object({
      PrimeID: terminalIdText(),
      UpdateUTC: utcText().nullish(),
      LastRegistrationUTC: utcText().nullish(),
      LastCellAccessUTC: utcText().nullish(),
      LastRegistrationMessageID: int64().nullish(),
      LastSatelliteNetwork: int().nullish(),
      LastOperationMode: int().nullish(),
      TerminalWakeupPeriod: int().nullish(),
      Description: z.string().nullish(),
      LastRegionName: z.string().nullish(),
    })
    .loose(),
);
export type TerminalInfo = Infer<typeof terminalInfo>;
/** TerminalInfo's checks without a copy (a strip schema, see `readRecord`). */
const terminalInfoCheck = schema((z) => z.object(terminalInfo().shape));

/** The reply of `info/terminal_updates`: its own fields; each record is checked on its own. */
const terminalUpdatesReply = schema((z) => z.object({ ErrorID: int().nullish(), NextFromUTC: z.string().nullish(), Terminals: z.array(z.unknown()).nullish() }));

/** The field that holds an update's second. */
export const TERMINAL_TIME = ['UpdateUTC'] as const;

/** A terminal update's identity: the same update when PrimeID and UpdateUTC are. */
export function terminalKey(r: TerminalInfo | MalformedRecord): string {
  return r instanceof MalformedRecord ? r.key : `${r.PrimeID.trim()}|${String(r.UpdateUTC ?? '')}`;
}

/** An update's second (the reader reads `yyyy-MM-dd HH:mm:ss`). */
export const terminalTime = (r: TerminalInfo | MalformedRecord): unknown => (r instanceof MalformedRecord ? r.time : r.UpdateUTC);

/** A copy of `r` as the nodes and the client give it: LastRegistrationMessageID exact (a number up to 2^53, else a decimal string). */
export function terminalOut(r: TerminalInfo): TerminalInfo {
  const v = r.LastRegistrationMessageID;
  return typeof v === 'string' ? { ...r, LastRegistrationMessageID: int64Out(BigInt(v)) } : { ...r };
}

/** What a call of this file needs of its account (an `iotgw-gateway` config node, a TerminalClient). */
export interface InfoContext extends CatalogueHolder {
  client(): ApiClient;
  bearerAuth(): AuthProvider;
  apiPath(rest: string): string;
}

/** One reply of the terminal changes feed: its records (each checked) and its `NextFromUTC`. */
export interface TerminalUpdatesPage {
  records: Array<TerminalInfo | MalformedRecord>;
  nextFromUtc: string | null | undefined;
}

/** GET info/terminal_updates: one page of terminal changes from `fromUtc` (INFO group). */
export async function getTerminalUpdatesPage(g: InfoContext, fromUtc: string, o: { query?: Query; signal?: AbortSignal } = {}): Promise<TerminalUpdatesPage> {
  const p = g.apiPath(TERMINAL_INFO_PATHS.terminalUpdates);
  const res = await g.client().request({ method: 'GET', path: p, query: withExtraQuery({ FromUTC: fromUtc }, o.query), group: 'INFO', auth: g.bearerAuth(), idempotent: true, signal: o.signal });
  const reply = checkReply<{ ErrorID?: number | null; NextFromUTC?: string | null; Terminals?: unknown[] | null }>(terminalUpdatesReply, res.body, `GET ${p}`);
  await throwOnCallError(g, reply.ErrorID, `GET ${p}`, res.statusCode, o.signal);
  return { records: readRecords<TerminalInfo>(terminalInfoCheck, reply.Terminals, TERMINAL_TIME), nextFromUtc: reply.NextFromUTC };
}
