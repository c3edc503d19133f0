/**
 * Area (a) request and reply shapes, validated with zod. Replies are liberal (unknown
 * fields are kept, ints may be exact decimal strings above 2^53) but wrong types are
 * refused as BAD_RESPONSE. The schemas are built at their first use (common/schema).
 */
import { GatewayError, quote } from '../common/errors';
import { int64Out as int64Value } from '../common/int64';
import { built, schema, type Infer, type SchemaOf } from '../common/schema';
import { MalformedRecord, terminalIdText, utcText } from './records';

const int64Out = schema((z) => z.union([z.number().int(), z.string().regex(/^-?\d+$/)]));
const int32 = schema((z) => z.number().int());

export const submitResult = schema((z) =>
  z
    .object({
      ID: int64Out().nullish(),
      DestinationID: z.string().nullish(),
      ErrorID: int32().nullish(),
      UserMessageID: int64Out().nullish(),
      OTAMessageSize: int32().nullish(),
      OperationMode: int32().nullish(),
      ScheduledSendUTC: z.string().nullish(),
      TerminalWakeupPeriod: int32().nullish(),
    })
    .loose(),
);
export type SubmitResult = Infer<typeof submitResult> & { ErrorName?: string; ErrorDescription?: string };

export const submitReply = schema((z) => z.object({ ErrorID: int32().nullish(), Submissions: z.array(submitResult()).nullish() }).loose());

export const cancellation = schema((z) =>
  z.object({ ID: int64Out().nullish(), CancellationStatus: int32().nullish(), CancelRequestID: int64Out().nullish(), ErrorID: int32().nullish() }).loose(),
);
export type Cancellation = Infer<typeof cancellation> & { ErrorName?: string; ErrorDescription?: string };
export const cancelReply = schema((z) => z.object({ ErrorID: int32().nullish(), Cancellations: z.array(cancellation()).nullish() }).loose());

export const statusRecord = schema((z) =>
  z
    .object({
      ID: int64Out(),
      IsClosed: z.boolean().nullish(),
      State: int32().nullish(),
      CreateUTC: utcText().nullish(),
      StatusUTC: utcText().nullish(),
      Transport: int32().nullish(),
      RegionName: z.string().nullish(),
      ReferenceNumber: z.number().nullish(),
      ErrorID: int32().nullish(),
    })
    .loose(),
);
export type StatusRecord = Infer<typeof statusRecord> & { StateName?: string; TransportName?: string };
export const statusReply = schema((z) =>
  z.object({ ErrorID: int32().nullish(), NextFromUTC: z.string().nullish(), Statuses: z.array(statusRecord()).nullish() }).loose(),
);
/**
 * The checks of `statusReply` for a poll, without copying what they do not name (a poller
 * drains a million records; the reply itself is what it emits): the reply's own fields here,
 * each record on its own with `statusRecordCheck` (src/lib/api/records.ts), so one bad record
 * never blocks the feed.
 */
export const statusReplyCheck = schema((z) => z.object({ ErrorID: int32().nullish(), NextFromUTC: z.string().nullish(), Statuses: z.array(z.unknown()).nullish() }));
/** A status record's checks (a strip schema: its output is not kept, see `readRecord`). */
export const statusRecordCheck = schema((z) => z.object(statusRecord().shape));
/** The field that holds a status record's second. */
export const STATUS_TIME = ['StatusUTC'] as const;

/** A from-mobile message of `get/re_messages` (ID exact: a number, or a decimal string above 2^53). */
export const fromMobileMessage = schema((z) =>
  z
    .object({
      ID: int64Out(),
      MessageUTC: utcText().nullish(),
      ReceiveUTC: utcText().nullish(),
      SIN: z.number().int().nullish(),
      MobileID: terminalIdText().nullish(),
      RawPayload: z.string().nullish(),
      Payload: z.object({ Name: z.string().nullish(), SIN: z.number().nullish(), MIN: z.number().nullish(), Fields: z.array(z.unknown()).nullish() }).loose().nullish(),
    })
    .loose(),
);
export type FromMobileMessage = Infer<typeof fromMobileMessage>;
/** The reply; each message is checked on its own (`readMessage`): one bad message never blocks the feed. */
export const reMessagesReply = schema((z) => z.object({ ErrorID: int32().nullish(), NextFromUTC: z.string().nullish(), Messages: z.array(z.unknown()).nullish() }).loose());

/**
 * A message of a reply that breaks the API's rules (`ID: 1.5`, a string SIN...): it takes
 * its place in the feed (its second moves the mark, its key is de-duplicated like any
 * other), so it is reported once, with the raw record, and the rest of the reply goes out.
 */
export class MalformedMessage extends MalformedRecord {
  constructor(raw: unknown, why: string) {
    super(raw, why, ['ReceiveUTC', 'MessageUTC']);
  }
}
export type FeedMessage = FromMobileMessage | MalformedMessage;

/** One message of a reply: checked, or a MalformedMessage naming the first bad field. */
export function readMessage(raw: unknown): FeedMessage {
  const r = fromMobileMessage().safeParse(raw);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  return new MalformedMessage(raw, `${issue?.path.length ? quote(issue.path.join('.')) : '(message)'}: ${quote(issue?.message ?? 'invalid')}`);
}

/** Standard base64 with padding, as the gateway writes RawPayload. */
const BASE64_RE = /^[A-Za-z0-9+/]*={0,2}$/;
export const isBase64 = (s: string): boolean => s.length % 4 === 0 && BASE64_RE.test(s);

/** A copy of `r` with its int64 fields `keys` as the contract gives them: a number when safe, else a decimal string. */
export function exactIds<T extends object>(r: T, keys: readonly string[]): T {
  const out: Record<string, unknown> = { ...(r as Record<string, unknown>) };
  for (const k of keys) {
    const v = out[k];
    if (typeof v === 'string' || typeof v === 'bigint') out[k] = int64Value(BigInt(v));
  }
  return out as T;
}

/** Parses a reply with a schema or throws BAD_RESPONSE naming the first bad field. */
export function parseReply<T>(schema: SchemaOf<T>, body: unknown, where: string): T {
  const r = built(schema).safeParse(body);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  // The path holds the reply's own keys and zod's message may quote its value: both bounded.
  const path = issue?.path.length ? quote(issue.path.join('.')) : '(body)';
  throw new GatewayError('BAD_RESPONSE', `${where}: unexpected reply at ${path}: ${quote(issue?.message ?? 'invalid')}`);
}

/**
 * Checks a reply with a schema (BAD_RESPONSE naming the first bad field, as `parseReply`)
 * and returns the reply itself instead of zod's copy of it. Only for a schema with no
 * transform and no default, whose output equals its input: pass a strip schema (`z.object`
 * without `.loose()`) of the same fields as the reply's loose one; it refuses exactly what
 * the loose one refuses and copies only the few fields it names, so a reply of many
 * records is not copied whole once more.
 */
export function checkReply<T>(schema: SchemaOf<unknown>, body: unknown, where: string): T {
  parseReply(schema, body, where);
  return body as T;
}

/** The area (a) endpoints, under `/api/v{version}/`. */
export const TERMINAL_PATHS = {
  token: 'auth/token',
  errorCodes: 'info/service',
  mode: 'terminal/mode',
  cancellations: 'submit/cancellations',
  statusUpdates: 'get/subaccounts/fw_status_updates',
  messages: 'get/re_messages',
  subaccountMessages: 'get/subaccounts/re_messages',
  submitMessages: 'submit/messages',
} as const;

export const STATE_NAMES: Record<number, string> = {
  0: 'SUBMITTED',
  1: 'RECEIVED',
  2: 'ERROR',
  3: 'DELIVERY_FAILED',
  4: 'TIMED_OUT',
  5: 'CANCELLED',
  6: 'WAITING',
  7: 'BROADCAST_SUBMITTED',
  8: 'SENDING_IN_PROGRESS',
};
/** Names of a cancellation's CancellationStatus. */
export const CANCELLATION_STATUS_NAMES: Record<number, string> = { 1: 'CANCELLED' };
export const CLOSED_STATES = new Set([1, 2, 3, 4, 5]);
export const TRANSPORT_NAMES: Record<number, string> = { 0: 'ANY', 1: 'SATELLITE', 2: 'CELLULAR' };
export const MODE_NAMES = ['ALWAYS_ON', 'WAKE_UP', 'RECEIVE_ON_SEND', 'HYBRID'];
export const FROM_UTC_RE = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/;

/** Top-level ErrorIDs that mean "rate exceeded, nothing was done" (real-services.md). */
export const THROTTLE_ERROR_IDS: ReadonlySet<number> = new Set([24579, 24581]);

/** Is this area (a) reply a throttled call (HTTP 200 with ErrorID 24579 or 24581 at the top level)? */
export function isThrottleReply(res: { body: unknown }): boolean {
  const b = res.body;
  if (!b || typeof b !== 'object' || Array.isArray(b)) return false;
  const id = (b as { ErrorID?: unknown }).ErrorID;
  return typeof id === 'number' && THROTTLE_ERROR_IDS.has(id);
}

/** A destination ID as the gateway compares it: without case or surrounding spaces. */
export function sameDestination(a: string | null | undefined, b: string | null | undefined): boolean {
  return String(a ?? '').trim().toLowerCase() === String(b ?? '').trim().toLowerCase();
}

/**
 * Which result belongs to which input: by key (UserMessageID, a message ID) where the input
 * has one and a result echoes it, the rest by position among the results left. Returns the
 * result index of each input. The counts must be equal (checked by the caller).
 */
export function matchByKey(inputKeys: Array<string | undefined>, resultKeys: Array<string | undefined>): number[] {
  const byKey = new Map<string, number[]>();
  resultKeys.forEach((k, j) => {
    if (k === undefined) return;
    const list = byKey.get(k);
    if (list) list.push(j);
    else byKey.set(k, [j]);
  });
  const used = new Set<number>();
  const out: number[] = new Array<number>(inputKeys.length).fill(-1);
  inputKeys.forEach((k, i) => {
    const j = k === undefined ? undefined : byKey.get(k)?.shift();
    if (j !== undefined) {
      out[i] = j;
      used.add(j);
    }
  });
  let next = 0;
  out.forEach((j, i) => {
    if (j >= 0) return;
    while (used.has(next)) next++;
    out[i] = next;
    used.add(next++);
  });
  return out;
}
