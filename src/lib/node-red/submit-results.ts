/**
 * How the to-mobile submit nodes (iotgw-terminal-mode, iotgw-send-message) turn the
 * gateway's per-item results into their two outputs: accepted (ErrorID 0) on output 1,
 * rejected on output 2; a failed submit keeps the results it has in `msg.results` (null where
 * none is known) and the items of msg.payload without one in `msg.failed`.
 */
import type { NodeAPI, NodeMessage } from 'node-red';
import { int64Out } from '../common/int64';
import type { Msg } from './node-kit';
import type { SubmitResult } from '../api/terminal';
import type { PartialResults } from '../api/partial';

/** IDs as the contract says: a number when safe, else a decimal string. */
export function normaliseResult(r: SubmitResult): SubmitResult {
  const out = { ...r };
  for (const k of ['ID', 'UserMessageID'] as const) {
    const v = out[k];
    if (typeof v === 'string' || typeof v === 'bigint') out[k] = int64Out(BigInt(v));
  }
  return out;
}

/**
 * Awaits the submit and returns the two outputs. On failure the partial results (when the
 * error carries them) go to `msg.results`, the items without a result to `msg.failed`, and
 * the error is thrown on.
 */
export async function submitToOutputs(RED: NodeAPI, msg: Msg, submit: () => Promise<SubmitResult[]>): Promise<Array<NodeMessage | null>> {
  let results: SubmitResult[];
  try {
    results = await submit();
  } catch (err) {
    const partial = (err as { partial?: PartialResults<SubmitResult> }).partial;
    if (partial) {
      msg.results = partial.results.map((r) => (r ? normaliseResult(r) : null));
      // The items of msg.payload without a result, as given: what a Catch flow may send again.
      const list: unknown[] = Array.isArray(msg.payload) ? msg.payload : [msg.payload];
      msg.failed = partial.failed.map((i) => list[i]);
    }
    throw err;
  }
  return splitResults(RED, msg, results);
}

/** The two outputs of a submit's results: accepted (ErrorID 0) on 1, rejected on 2, in order. */
export function splitResults(RED: NodeAPI, msg: Msg, results: SubmitResult[]): Array<NodeMessage | null> {
  const accepted: SubmitResult[] = [];
  const rejected: SubmitResult[] = [];
  for (const r of results) {
    const n = normaliseResult(r);
    (Number(n.ErrorID ?? 0) > 0 ? rejected : accepted).push(n);
  }
  msg.statusCode = 200;
  const out: Array<NodeMessage | null> = [null, null];
  if (accepted.length) out[0] = Object.assign(rejected.length ? RED.util.cloneMessage(msg) : msg, { payload: accepted }) as NodeMessage;
  if (rejected.length) out[1] = Object.assign(msg, { payload: rejected }) as NodeMessage;
  return out;
}
