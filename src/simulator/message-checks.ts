/**
 * Area (a), what a to-mobile message's request must be (shared by submit/messages and
 * submit/to_multiple): a JSON body, and a general message with `RawPayload` (base64, SIN
 * and MIN first, at most `maxRawBytes`) or `Payload` (common message format), not both,
 * and valid `MessageClass`, `TransportType` and `MessageLifetime` when given.
 */
import type { SimReply, SimRequest } from './replies';
import { json } from './replies';

const INVALID_REQUEST = 105;

/** The request's parsed JSON body, or the 415/400 reply the gateway gives instead. */
export function jsonBody(r: SimRequest): { body: unknown } | SimReply {
  const ct = String(r.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (!(ct === 'application/json' || ct === 'text/json' || (ct.startsWith('application/') && ct.endsWith('+json')))) {
    return json(415, { Message: `unsupported content type ${ct || '(none)'}` });
  }
  try {
    return { body: r.json() };
  } catch {
    return json(400, { Message: 'The request body is not valid JSON.' });
  }
}

/** The request's JSON array, or the 415/400 reply the gateway gives instead. */
export function jsonArray(r: SimRequest): unknown[] | SimReply {
  const parsed = jsonBody(r);
  if (!('body' in parsed)) return parsed;
  if (!Array.isArray(parsed.body)) return json(400, { Message: 'A JSON array is expected.' });
  return parsed.body;
}

/** A general message's size in bytes (OTAMessageSize), or the ErrorID that refuses it. */
export function checkGeneralMessage(it: Record<string, unknown>, maxRawBytes: number): { size: number } | { errorId: number } {
  const hasRaw = it.RawPayload !== undefined && it.RawPayload !== null;
  const hasPayload = it.Payload !== undefined && it.Payload !== null;
  const refused = { errorId: INVALID_REQUEST };
  if (hasRaw === hasPayload) return refused;
  let size: number;
  if (hasRaw) {
    if (typeof it.RawPayload !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(it.RawPayload)) return refused;
    size = Buffer.from(it.RawPayload, 'base64').length;
    if (size < 2 || size > maxRawBytes) return refused;
  } else {
    const p = it.Payload as Record<string, unknown>;
    const byte = (x: unknown) => Number.isInteger(x) && (x as number) >= 0 && (x as number) <= 255;
    if (!p || typeof p !== 'object' || !byte(p.SIN) || !byte(p.MIN) || !Array.isArray(p.Fields)) return refused;
    size = 2 + JSON.stringify(p.Fields).length;
  }
  if (it.MessageClass !== undefined && ![1, 2, 3].includes(it.MessageClass as number)) return refused;
  if (it.TransportType !== undefined && ![0, 1, 2].includes(it.TransportType as number)) return refused;
  if (it.MessageLifetime !== undefined && !(Number.isInteger(it.MessageLifetime) && (it.MessageLifetime as number) > 0)) return refused;
  return { size };
}

/** What a message's lookup gives back of it: its RawPayload or its Payload. */
export function payloadOf(it: Record<string, unknown>): { RawPayload?: string; Payload?: unknown } {
  return it.RawPayload !== undefined && it.RawPayload !== null ? { RawPayload: it.RawPayload as string } : { Payload: it.Payload };
}
