/**
 * A poller's malformed records (issue 34): each one a catchable BAD_RESPONSE with the record
 * as received, once (the reader de-duplicates its key like any other), and the rest of the
 * reply goes out.
 */
import type { Node, NodeMessage } from 'node-red';
import { GatewayError } from '../common/errors';
import { MalformedRecord } from '../api/records';

/** How a poller names its records in a report. */
export interface RecordWords {
  /** `GET get/re_messages` */
  where: string;
  /** `a from-mobile message` */
  what: string;
  /** msg.topic of the report */
  topic: string;
}

/** The well-formed records of a reply; each malformed one is reported (a catchable error) and left out. */
export function wellFormed<R>(node: Node, records: Array<R | MalformedRecord>, fromUtc: string, words: RecordWords): R[] {
  const good: R[] = [];
  for (const r of records) {
    if (!(r instanceof MalformedRecord)) {
      good.push(r);
      continue;
    }
    const err = new GatewayError('BAD_RESPONSE', `${words.where}: ${words.what} of the reply is malformed (${r.why}); it is skipped (msg.payload is the record as received), the rest of the reply goes out`);
    node.error(err, { topic: words.topic, payload: r.raw, fromUTC: fromUtc } as unknown as NodeMessage);
  }
  return good;
}
