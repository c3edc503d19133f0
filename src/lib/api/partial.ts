/**
 * A msg whose work takes several calls (a batch split over calls, messages to one and to
 * many, a look-up of more than 100 IDs) and one of them failed: the error of that call,
 * with what the other calls gave attached as `err.partial`, so nothing the gateway answered
 * goes unreported and a retry of the failed part never sends the rest again.
 */
import { GatewayError } from '../common/errors';

export interface PartialResults<R> {
  /** Results by input position; undefined where the item was not sent or its call failed. */
  results: Array<R | undefined>;
  /** The input positions (msg.payload's items) with no result: the part to try again. */
  failed: number[];
}

/**
 * A copy of `src` (each msg gets its own error object: one failed call can end several
 * msgs) carrying `partial` when there is one.
 */
export function partialError<P>(src: GatewayError, partial: P | undefined): GatewayError & { partial?: P } {
  const err: GatewayError & { partial?: P } = new GatewayError(src.code, src.message, {
    statusCode: src.statusCode,
    errorId: src.errorId,
    errorName: src.errorName,
    field: src.field,
    cause: src,
  });
  if (partial !== undefined) err.partial = partial;
  return err;
}

/** The positions of `results` that hold nothing. */
export function unanswered<R>(results: Array<R | undefined>): number[] {
  const out: number[] = [];
  for (let i = 0; i < results.length; i++) if (results[i] === undefined) out.push(i);
  return out;
}

