/**
 * Area (a), to-mobile messages: mode submissions (terminal/mode) checked per item as the
 * real gateway does, cancellations, and each message's life over time (SUBMITTED, then
 * SENDING_IN_PROGRESS, then RECEIVED when its terminal is online or TIMED_OUT), every
 * change a record in the status feed.
 */
import type { SimReply, SimRequest } from './server';

export { jsonArray } from './message-checks';
import { json } from './server';
import { jsonArray } from './message-checks';
import { INT64_MAX } from '../lib/common/int64';
import { formatUtc } from './feed';
import type { StatusFeed } from './terminal-feed';
import { ERRORS, PRIME_ID, STATE, WAKEUP_SECONDS, type Message, type Terminal, type TerminalContext } from './terminal-model';

/** One item of a mode submission, as read from the request. */
interface ModeItem {
  dest: string;
  userId: bigint | undefined;
  mode: unknown;
  wakeup: unknown;
}

export class Submissions {
  readonly messages = new Map<string, Message>();
  nextId = 1n;
  private nextCancelId = 1n;
  private pendingTransitions: Array<{ at: number; id: string; to: 'sending' | 'final' }> = [];

  constructor(
    private readonly gw: TerminalContext,
    private readonly feed: StatusFeed,
  ) {}

  /** Moves messages whose time has come to their next state. */
  tick(): void {
    const now = this.gw.now();
    if (this.pendingTransitions.length === 0) return;
    const due = this.pendingTransitions.filter((p) => p.at <= now);
    if (!due.length) return;
    this.pendingTransitions = this.pendingTransitions.filter((p) => p.at > now);
    due.sort((a, b) => a.at - b.at);
    for (const p of due) {
      const m = this.messages.get(p.id);
      if (!m || m.closed || m.ended) continue;
      const term = m.broadcast ? undefined : this.gw.terminals.get(m.terminal);
      if (p.to === 'sending') {
        m.state = STATE.SENDING_IN_PROGRESS;
      } else if (m.broadcast) {
        m.state = STATE.BROADCAST_SUBMITTED;
        m.closed = this.gw.options.broadcastIsClosed;
        if (!m.closed) m.ended = true;
      } else if (term?.online) {
        m.state = STATE.RECEIVED;
        m.closed = true;
        term.mode = m.mode;
        term.wakeup = m.wakeup;
        this.gw.terminalChanged?.(term);
      } else {
        m.state = STATE.TIMED_OUT;
        m.closed = true;
      }
      this.feed.record(m);
    }
  }

  /** A new message to `term` (SUBMITTED), its status record and its coming transitions: its ID. */
  open(term: Terminal, mode: number, wakeup: number, now: number, extra: Partial<Message> = {}): bigint {
    const id = this.nextId;
    this.nextId = this.nextId >= INT64_MAX ? 1n : this.nextId + 1n;
    const m: Message = { id, account: term.account, terminal: term.id, mode, wakeup, createdAt: now, createSec: Math.floor(now / 1000), state: STATE.SUBMITTED, closed: false, ...extra };
    this.messages.set(id.toString(), m);
    this.gw.creations?.created(m);
    this.feed.record(m);
    const options = this.gw.options;
    this.pendingTransitions.push({ at: now + options.sendingAfterMs, id: id.toString(), to: 'sending' });
    this.pendingTransitions.push({ at: now + (term.online || m.broadcast ? options.receivedAfterMs : options.offlineTimeoutMs), id: id.toString(), to: 'final' });
    this.gw.counters.submitted++;
    return id;
  }

  /** POST terminal/mode: each item accepted (its message ID) or refused (its ErrorID). */
  submitMode(r: SimRequest): SimReply {
    const body = jsonArray(r);
    if (!Array.isArray(body)) return body;
    if (body.length > this.gw.options.maxBatch) return json(200, { ErrorID: ERRORS.TOO_MANY_MESSAGES, Submissions: null });
    const now = this.gw.now();
    const submissions = body.map((item) => this.submitOne(readItem(item), now));
    if (this.gw.options.resultOrder === 'reversed') submissions.reverse();
    return json(200, { Submissions: submissions });
  }

  private submitOne(it: ModeItem, now: number): Record<string, unknown> {
    const { dest, mode, wakeup } = it;
    let term = this.gw.terminals.get(dest);
    if (!term && this.gw.options.acceptUnknownTerminals && PRIME_ID.test(dest)) term = this.gw.addTerminal({ id: dest });
    if (!term) return this.refused(it, ERRORS.INVALID_DESTINATION);
    if (typeof mode !== 'number' || !Number.isInteger(mode) || mode < 0 || mode > 3) return this.refused(it, ERRORS.INVALID_REQUEST);
    if (typeof wakeup !== 'number' || !Number.isInteger(wakeup) || wakeup < 0 || wakeup > 15) return this.refused(it, ERRORS.INVALID_REQUEST);
    if (term.family === 'IDP' && mode >= 2) return this.refused(it, ERRORS.MODE_NOT_SUPPORTED);
    if (term.family === 'IDP' && (mode === 1 || mode === 3) && wakeup > 10) return this.refused(it, ERRORS.WAKEUP_INTERVAL_NOT_SUPPORTED);
    const id = this.open(term, mode, wakeup, now);
    return this.accepted(it, id, term, now);
  }

  private refused(it: ModeItem, errorId: number): Record<string, unknown> {
    this.gw.counters.rejected++;
    const e: Record<string, unknown> = { ErrorID: errorId, DestinationID: it.dest, OperationMode: typeof it.mode === 'number' ? it.mode : null };
    if (it.userId !== undefined) e.UserMessageID = it.userId;
    if (this.gw.options.failedId === 'minus1') e.ID = -1;
    return e;
  }

  /** The reply entry of an accepted item: it describes the terminal's current mode (how the message will reach it). */
  private accepted(it: ModeItem, id: bigint, term: Terminal, now: number): Record<string, unknown> {
    const dest = it.dest;
    const echo = this.gw.options.echoDestination === 'lower' ? dest.toLowerCase() : this.gw.options.echoDestination === 'padded' ? ` ${dest} ` : dest;
    const out: Record<string, unknown> = { ID: id, DestinationID: echo, ErrorID: 0, OTAMessageSize: 6 };
    if (it.userId !== undefined) out.UserMessageID = it.userId;
    if (term.mode !== 0) {
      out.OperationMode = term.mode;
      if (term.mode === 1 || term.mode === 3) {
        const period = WAKEUP_SECONDS[term.wakeup] ?? 0;
        out.TerminalWakeupPeriod = period;
        out.ScheduledSendUTC = formatUtc(Math.floor(now / 1000) + period);
      }
    }
    return out;
  }

  /** POST submit/cancellations: each ID cancelled, unknown, or already closed. */
  cancel(r: SimRequest): SimReply {
    const body = jsonArray(r);
    if (!Array.isArray(body)) return body;
    if (body.length > this.gw.options.maxBatch) return json(200, { ErrorID: ERRORS.TOO_MANY_MESSAGES, Cancellations: null });
    const cancellations = body.map((raw) => {
      const reqId = this.nextCancelId++;
      let key: string;
      try {
        key = BigInt(String(raw)).toString();
      } catch {
        return { ID: null, CancellationStatus: 0, CancelRequestID: reqId, ErrorID: ERRORS.INVALID_REQUEST };
      }
      const m = this.messages.get(key);
      if (!m) return { ID: BigInt(key), CancellationStatus: 0, CancelRequestID: reqId, ErrorID: ERRORS.MESSAGE_NOT_FOUND };
      this.gw.creations?.cancelAsked(key, !(m.closed || m.ended));
      if (m.closed || m.ended) return { ID: m.id, CancellationStatus: 0, CancelRequestID: reqId, ErrorID: ERRORS.MESSAGE_ALREADY_CLOSED };
      m.state = STATE.CANCELLED;
      m.closed = true;
      this.feed.record(m);
      this.gw.counters.cancelled++;
      return { ID: m.id, CancellationStatus: 1, CancelRequestID: reqId };
    });
    if (this.gw.options.resultOrder === 'reversed') cancellations.reverse();
    return json(200, { Cancellations: cancellations });
  }
}

/** The fields of one submitted item (UserMessageID as a BigInt; it throws as before when it is no integer). */
function readItem(item: unknown): ModeItem {
  const it = (item ?? {}) as Record<string, unknown>;
  const dest = typeof it.DestinationID === 'string' ? it.DestinationID : '';
  const userId = it.UserMessageID === undefined || it.UserMessageID === null ? undefined : BigInt(String(it.UserMessageID));
  return { dest, userId, mode: it.Mode, wakeup: it.WakeupInterval ?? 0 };
}
