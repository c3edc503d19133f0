/**
 * Area (a), `POST submit/to_multiple` (throttle group SEND): one message to many terminals,
 * `{Message: {...}, Destinations: ["<PrimeID>", ...]}`. `Message` holds the fields of a
 * submit/messages item without `DestinationID`. The reply has one `Submissions` entry per
 * destination, in order: accepted (its message ID), or refused with its ErrorID (101 an
 * unknown terminal, 21786 a suspended one). A broadcast ID (8 digits, `GRP`, 4 characters)
 * is a destination too: its message ends in State 7. More destinations than
 * `maxDestinations` (100): ErrorID 111 and no `Submissions`.
 */
import type { SimReply, SimRequest } from './replies';
import { json } from './replies';
import { checkGeneralMessage, jsonBody, payloadOf } from './message-checks';
import { BROADCAST_ID, ERRORS, PRIME_ID, type Terminal, type TerminalOptions } from './terminal-model';

/** What to_multiple needs of the gateway. */
export interface MultipleHost {
  readonly options: TerminalOptions;
  readonly terminals: Map<string, Terminal>;
  readonly mobile: { options: { maxRawBytes: number } };
  addTerminal(t: { id: string }): Terminal;
  acceptMessage(term: Terminal, payload?: { RawPayload?: string; Payload?: unknown }): bigint;
  acceptBroadcast(id: string, account: string, payload?: { RawPayload?: string; Payload?: unknown }): bigint;
}

export class MultipleDestinations {
  /** Each call accepted (for tests): its message and destinations as sent (the last `max`). */
  readonly calls: Array<{ account: string; Message: Record<string, unknown>; Destinations: unknown[] }> = [];
  max = 1000;

  constructor(private readonly gw: MultipleHost) {}

  /** POST submit/to_multiple for `account`. */
  submit(r: SimRequest, account: string): SimReply {
    const parsed = jsonBody(r);
    if (!('body' in parsed)) return parsed;
    const b = parsed.body as Record<string, unknown> | null;
    const refuse = (errorId: number) => json(200, { ErrorID: errorId, Submissions: null });
    if (!b || typeof b !== 'object' || Array.isArray(b) || !b.Message || typeof b.Message !== 'object' || !Array.isArray(b.Destinations)) return refuse(ERRORS.INVALID_REQUEST);
    const message = b.Message as Record<string, unknown>;
    const dests = b.Destinations;
    if (dests.length === 0) return refuse(ERRORS.INVALID_REQUEST);
    if (dests.length > this.gw.options.maxDestinations) return refuse(ERRORS.TOO_MANY_DESTINATIONS);
    const checked = checkGeneralMessage(message, this.gw.mobile.options.maxRawBytes);
    if ('errorId' in checked) return refuse(checked.errorId);
    const userId = message.UserMessageID === undefined || message.UserMessageID === null ? undefined : BigInt(String(message.UserMessageID));
    this.calls.push({ account, Message: message, Destinations: dests });
    if (this.calls.length > this.max) this.calls.splice(0, this.calls.length - this.max);
    const payload = payloadOf(message);
    const submissions = dests.map((d) => {
      const dest = typeof d === 'string' ? d : '';
      const out: Record<string, unknown> = { DestinationID: dest };
      if (userId !== undefined) out.UserMessageID = userId;
      const refused = this.refusal(dest);
      if (refused) return { ...out, ErrorID: refused };
      const id = BROADCAST_ID.test(dest) ? this.gw.acceptBroadcast(dest, account, payload) : this.gw.acceptMessage(this.terminal(dest)!, payload);
      return { ID: id, ...out, ErrorID: 0, OTAMessageSize: checked.size };
    });
    return json(200, { ErrorID: 0, Submissions: submissions });
  }

  /** The ErrorID refusing destination `dest`, or 0. */
  private refusal(dest: string): number {
    if (BROADCAST_ID.test(dest)) return 0;
    const term = this.terminal(dest);
    if (!term) return ERRORS.INVALID_DESTINATION;
    return term.suspended ? ERRORS.TERMINAL_SUSPENDED : 0;
  }

  private terminal(dest: string): Terminal | undefined {
    const term = this.gw.terminals.get(dest);
    if (term || !this.gw.options.acceptUnknownTerminals || !PRIME_ID.test(dest)) return term;
    return this.gw.addTerminal({ id: dest });
  }
}
