/**
 * The terminal inventory (issue 35, real-services.md "More of the gateway"): `info/terminals`
 * one keyset page at a time (`SinceID` = the last `PrimeID` of the page before; an empty or
 * missing `Terminals` ends the list) and `info/terminal` for one terminal. Both in the INFO
 * group. Input checks (BAD_INPUT naming the field) and reply schemas live here, shared by
 * the `iotgw-terminals` node and TerminalClient.
 */
import { GatewayError, badInput } from '../common/errors';
import { describeType, showValue } from '../common/int64';
import { schema } from '../common/schema';
import type { Query } from '../transport/http';
import { exactIds, parseReply } from './terminal';
import { int64Out as exactInt64 } from '../common/int64';
import { shownEntry, throwOnCallError } from './gateway-errors';
import { gatewayGet, type GatewayContext, type LookupOptions } from './gateway-context';
import { isTerminalId, isUtcField, terminalIdText, utcText } from './records';

export const INVENTORY_PATHS = { terminals: 'info/terminals', terminal: 'info/terminal' } as const;
export const MAX_PAGE_SIZE = 1000;
/** Pages one walk reads at most, the empty one that ends it included (999,000 terminals at 1000 a page). */
export const DEFAULT_MAX_PAGES = 1000;
const MOST_MAX_PAGES = 1_000_000;

const int32 = schema((z) => z.number().int());
const int64Out = schema((z) => z.union([z.number().int(), z.string().regex(/^-?\d+$/)]));

/** TerminalInfo: field names confirmed (PascalCase); liberal about the rest. */
export const terminalInfo = schema((z) =>
  z
    .object({
      PrimeID: terminalIdText(),
      UnitID: z.union([z.number(), z.string()]).nullish(),
      Description: z.string().nullish(),
      LastRegistrationUTC: utcText().nullish(),
      LastRegistrationMessageID: int64Out().nullish(),
      LastRegionName: z.string().nullish(),
      LastSatelliteNetwork: int32().nullish(),
      LastOperationMode: int32().nullish(),
      IsRegistered: z.union([z.number(), z.boolean()]).nullish(),
      UpdateUTC: utcText().nullish(),
      LastCellAccessUTC: utcText().nullish(),
    })
    .loose(),
);
export type TerminalInfo = { PrimeID: string } & Record<string, unknown>;

/** The typed fields of TerminalInfo and what each may hold (besides null). */
const FIELD_TYPES: Array<[string, (v: unknown) => boolean, string]> = [
  ['UnitID', (v) => typeof v === 'number' || typeof v === 'string', 'a number or text'],
  ['Description', (v) => typeof v === 'string', 'text'],
  ['LastRegistrationUTC', isUtcField, 'a UTC time as yyyy-MM-dd HH:mm:ss'],
  ['LastRegistrationMessageID', (v) => Number.isInteger(v) || (typeof v === 'string' && /^-?\d{1,20}$/.test(v)), 'an integer'],
  ['LastRegionName', (v) => typeof v === 'string', 'text'],
  ['LastSatelliteNetwork', (v) => Number.isInteger(v), 'an integer'],
  ['LastOperationMode', (v) => Number.isInteger(v), 'an integer'],
  ['IsRegistered', (v) => typeof v === 'number' || typeof v === 'boolean', 'a number'],
  ['UpdateUTC', isUtcField, 'a UTC time as yyyy-MM-dd HH:mm:ss'],
  ['LastCellAccessUTC', isUtcField, 'a UTC time as yyyy-MM-dd HH:mm:ss'],
];

/**
 * Checks a page reply where it lies, as terminalInfo would (BAD_RESPONSE naming the first
 * bad field), and makes its int64 field exact in place: a walk of 100,000 terminals makes
 * no copy of any of them (each copy outlived the young generation and swelled the heap).
 */
function checkTerminalsReply(body: unknown, where: string): { ErrorID?: number | null; Terminals?: TerminalInfo[] | null } {
  const bad = (at: string, what: string) => new GatewayError('BAD_RESPONSE', `${where}: unexpected reply at ${at}: ${what}`);
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw bad('(body)', 'expected an object');
  const b = body as { ErrorID?: unknown; Terminals?: unknown };
  if (b.ErrorID !== undefined && b.ErrorID !== null && !Number.isInteger(b.ErrorID)) throw bad('ErrorID', 'expected an integer');
  if (b.Terminals === undefined || b.Terminals === null) return b as { ErrorID?: number | null };
  if (!Array.isArray(b.Terminals)) throw bad('Terminals', 'expected an array');
  b.Terminals.forEach((t: unknown, i: number) => {
    if (t === null || typeof t !== 'object' || Array.isArray(t)) throw bad(`Terminals.${i}`, 'expected an object');
    const r = t as Record<string, unknown>;
    if (!isTerminalId(r.PrimeID)) throw bad(`Terminals.${i}.PrimeID`, 'expected a terminal ID: 1 to 32 letters and digits (e.g. 01000005SKYCD96)');
    for (const [k, ok, what] of FIELD_TYPES) {
      const v = r[k];
      if (v !== undefined && v !== null && !ok(v)) throw bad(`Terminals.${i}.${k}`, `expected ${what}`);
    }
    if (typeof r.LastRegistrationMessageID === 'string') r.LastRegistrationMessageID = exactInt64(BigInt(r.LastRegistrationMessageID));
  });
  return b as { ErrorID?: number | null; Terminals: TerminalInfo[] };
}

const terminalReply = schema((z) => z.object({ ErrorID: int32().nullish(), Terminal: terminalInfo().nullish() }).loose());

/** A PrimeID: text of 1 to 64 printable characters. */
export function checkPrimeId(v: unknown, where: string): string {
  if (typeof v !== 'string') throw badInput(where, `a PrimeID must be text (e.g. "01000005SKYCD96"), not ${describeType(v)}`);
  const s = v.trim();
  if (s === '' || s.length > 64 || /[\u0000-\u001f\u007f]/.test(s)) throw badInput(where, `a PrimeID is 1 to 64 printable characters, not ${showValue(v)}`);
  return s;
}

/** pageSize: a whole number 1..1000 (numbers or numeric text); `fallback` when absent. */
export function checkPageSize(v: unknown, where: string, fallback = MAX_PAGE_SIZE): number {
  if (v === undefined || v === null || v === '') return fallback;
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > MAX_PAGE_SIZE) throw badInput(where, `must be a whole number from 1 to ${MAX_PAGE_SIZE}, not ${showValue(v)}`);
  return n;
}

/** maxPages: a whole number 1..1,000,000 (numbers or numeric text); `fallback` when absent (older flows). */
export function checkMaxPages(v: unknown, where: string, fallback = DEFAULT_MAX_PAGES): number {
  if (v === undefined || v === null || v === '') return fallback;
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > MOST_MAX_PAGES) throw badInput(where, `must be a whole number from 1 to ${MOST_MAX_PAGES}, not ${showValue(v)}`);
  return n;
}

/** One keyset page: its terminals and the SinceID of the next (null once the list has ended). */
export interface TerminalPage {
  terminals: TerminalInfo[];
  nextSinceId: string | null;
  statusCode: number;
}

const ID_KEYS = ['LastRegistrationMessageID'];

/**
 * Keyset order, as this package takes it (real-services.md: order by PrimeID is a guess; the
 * simulator's order): each PrimeID sorts strictly after the one before it, and the first after
 * the SinceID, comparing the text code unit by code unit (JavaScript's `<`, a binary collation;
 * for PrimeIDs of digits and capital letters every usual collation agrees). So the SinceIDs of
 * a walk only go up and none is asked from twice. BAD_RESPONSE naming the two PrimeIDs.
 */
export function checkKeysetOrder(list: TerminalInfo[], sinceId: string | undefined, where: string): void {
  let before = sinceId;
  list.forEach((t, i) => {
    if (before !== undefined && !(t.PrimeID > before)) {
      const what = i === 0 ? `the page after SinceID ${showValue(before)} starts with ${showValue(t.PrimeID)}` : `Terminals.${i} ${showValue(t.PrimeID)} follows ${showValue(before)}`;
      throw new GatewayError('BAD_RESPONSE', `${where}: ${what}, not in keyset order (each PrimeID after the one before); the inventory cannot be walked`);
    }
    before = t.PrimeID;
  });
}

/** GET info/terminals: the page after `sinceId`, its order not yet checked. */
async function fetchTerminalsPage(g: GatewayContext, sinceId: string | undefined, pageSize: number, o: LookupOptions): Promise<TerminalPage & { where: string }> {
  const query: Query = sinceId === undefined ? { PageSize: pageSize } : { PageSize: pageSize, SinceID: sinceId };
  const res = await gatewayGet(g, INVENTORY_PATHS.terminals, query, o);
  const where = `GET ${res.path}`;
  const reply = checkTerminalsReply(res.body, where);
  await throwOnCallError(g, reply.ErrorID, where, res.statusCode, o.signal);
  const list = reply.Terminals ?? [];
  if (list.length > pageSize) throw new GatewayError('BAD_RESPONSE', `${where}: ${list.length} terminals for a page of ${pageSize}`);
  const last = list.length ? list[list.length - 1]!.PrimeID : null;
  return { terminals: list, nextSinceId: last, statusCode: res.statusCode, where };
}

/** GET info/terminals: the page after `sinceId` (undefined: the first page), in keyset order. */
export async function getTerminalsPage(g: GatewayContext, sinceId: string | undefined, pageSize: number, o: LookupOptions = {}): Promise<TerminalPage> {
  const { where, ...page } = await fetchTerminalsPage(g, sinceId, pageSize, o);
  checkKeysetOrder(page.terminals, sinceId, where);
  return page;
}

/**
 * Every page of the inventory in turn, the empty one that ends it included (issue 43: a walk
 * always ends). BAD_RESPONSE, naming what happened, for a page that ends with a SinceID the
 * walk already asked from (the pages go round), a page out of keyset order, or a list not
 * ended within `maxPages` pages (no request past the cap). Holds the SinceIDs asked from (at
 * most `maxPages`), never the terminals.
 */
export async function* walkTerminals(g: GatewayContext, pageSize: number, maxPages: number, o: LookupOptions = {}): AsyncGenerator<TerminalPage> {
  const asked = new Set<string>();
  let since: string | undefined;
  for (let n = 1; ; n++) {
    if (n > maxPages) {
      throw new GatewayError('BAD_RESPONSE', `GET info/terminals: the inventory did not end within ${maxPages} pages (maxPages; the last after SinceID ${showValue(since)}): the walk stops there`);
    }
    const { where, ...page } = await fetchTerminalsPage(g, since, pageSize, o);
    const next = page.nextSinceId;
    if (next !== null && asked.has(next)) {
      throw new GatewayError('BAD_RESPONSE', `${where}: page ${n} ends with ${showValue(next)}, a SinceID this walk already asked from: the pages go round in a cycle`);
    }
    checkKeysetOrder(page.terminals, since, where);
    yield page;
    if (next === null) return;
    asked.add(next);
    since = next;
  }
}

/** GET info/terminal: one terminal; NOT_FOUND when the gateway does not know it. */
export async function getTerminal(g: GatewayContext, primeId: string, o: LookupOptions = {}): Promise<{ terminal: TerminalInfo; statusCode: number }> {
  const res = await gatewayGet(g, INVENTORY_PATHS.terminal, { PrimeID: primeId }, o);
  const where = `GET ${res.path}`;
  const reply = parseReply(terminalReply, res.body, where);
  if (!reply.Terminal) {
    const id = reply.ErrorID ?? 0;
    if (id > 0) await g.catalogue.load(o.signal);
    const found = id > 0 ? g.catalogue.lookup(id) : undefined;
    const e = found && shownEntry(found);
    throw new GatewayError('NOT_FOUND', `${where}: the gateway knows no terminal ${showValue(primeId)}${id > 0 ? ` (ErrorID ${id}${e ? ` ${e.name}` : ''})` : ''}`, {
      statusCode: res.statusCode,
      ...(id > 0 ? { errorId: id } : {}),
      ...(e ? { errorName: e.name } : {}),
    });
  }
  await throwOnCallError(g, reply.ErrorID, where, res.statusCode, o.signal);
  return { terminal: exactIds(reply.Terminal as TerminalInfo, ID_KEYS), statusCode: res.statusCode };
}
