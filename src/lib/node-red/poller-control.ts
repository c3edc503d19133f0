/**
 * A feed poller's control input: "poll" (with an optional msg.query), "stop", "start" and
 * {fromUTC: "yyyy-MM-dd HH:mm:ss"}. Anything else is bad input, nothing is sent.
 */
import type { Node, NodeAPI, NodeStatus } from 'node-red';
import { badInput } from '../common/errors';
import { parseUtcSeconds } from '../feed/time';
import { handleInput, isPlainObject, mergeQuery, type InputHandle, type Msg } from './node-kit';

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
        const q = msg.query as Record<string, unknown> | undefined;
        if (q !== undefined && q !== null) mergeQuery({}, q); // BAD_INPUT before any request
        return control.pollForMsg(q ?? undefined);
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
