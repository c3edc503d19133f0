/**
 * A feed poller's control input: "poll" (with an optional msg.query), "stop", "start" and
 * {fromUTC: "yyyy-MM-dd HH:mm:ss"}. Anything else is bad input, nothing is sent.
 */
import type { Node, NodeAPI, NodeStatus } from 'node-red';
import { badInput } from '../common/errors';
import { parseUtcSeconds } from '../feed/time';
import { handleInput, isPlainObject, mergeQuery, type InputHandle, type Msg } from './node-kit';

/**
 * The query parameters the feed's reader owns: a "poll" msg's `msg.query` may add others, never
 * these (a `FromUTC` of its own moved the mark past records never emitted; issue 43). Any case.
 */
export const READER_PARAMS = ['FromUTC'];

/** `msg.query` of a "poll" msg, checked: BAD_INPUT naming a parameter the reader owns. */
function pollQuery(q: unknown): Record<string, unknown> | undefined {
  if (q === undefined || q === null) return undefined;
  mergeQuery({}, q); // BAD_INPUT before any request
  for (const k of Object.keys(q as object)) {
    const owned = READER_PARAMS.find((p) => p.toLowerCase() === k.toLowerCase());
    if (owned) throw badInput(`msg.query.${k}`, `${owned} is the feed's own mark: move it with {fromUTC: "yyyy-MM-dd HH:mm:ss"} in msg.payload, not in msg.query`);
  }
  return q as Record<string, unknown>;
}

/** What the control input drives. */
export interface PollerControl {
  /** A poll asked for by a msg: its failure ends that msg (done(err)), its one Catch message. */
  pollForMsg(query: Record<string, unknown> | undefined): Promise<void>;
  start(): void;
  stop(): void;
  /** Moves the mark to `fromUtc`. */
  reset(fromUtc: string): Promise<void>;
}

/** Wires the control input of `node` to `control`; `idleStatus` as handleInput's. */
export function pollerControl(RED: NodeAPI, node: Node, control: PollerControl, idleStatus: () => NodeStatus | undefined): InputHandle {
  return handleInput(
    RED,
    node,
    async (msg: Msg) => {
      const p = msg.payload;
      if (p === 'poll' || msg.topic === 'poll') {
        return control.pollForMsg(pollQuery(msg.query));
      }
      if (p === 'stop') return control.stop();
      if (p === 'start') return control.start();
      if (isPlainObject(p) && 'fromUTC' in p) {
        const v = p.fromUTC;
        if (typeof v !== 'string' || parseUtcSeconds(v.trim()) === undefined) throw badInput('msg.payload.fromUTC', 'must be a real UTC time as yyyy-MM-dd HH:mm:ss');
        return control.reset(v.trim());
      }
      throw badInput('msg.payload', 'must be "poll", "stop", "start" or {fromUTC: "yyyy-MM-dd HH:mm:ss"}');
    },
    { idleStatus },
  );
}
