/**
 * A bound on every Redis reply (issue 25): ioredis buffers a reply whole before it hands it
 * over, so anything answering on the Redis address could stream one endless bulk string
 * into Node-RED's memory. The guard listens to the socket's bytes before the client's own
 * parser (prependListener), follows the reply boundaries of RESP2/RESP3 (types and lengths
 * only, never the content), and destroys the socket when one reply passes `maxBytes` or
 * nests deeper than `MAX_DEPTH`: the client then reconnects as after any broken connection.
 */
import type { Duplex } from 'node:stream';

/** Aggregates may nest at most this deep (ours: 2). */
const MAX_DEPTH = 32;

export interface ReplyGuardLimit {
  maxBytes: number;
  /** Told once per broken stream, with a message that holds no reply content. */
  onTrip: (why: string) => void;
}

/** Follows reply boundaries; `bytes` is the size so far of the reply being received. */
export class ReplyScanner {
  bytes = 0;
  /** Values still due per open aggregate (innermost last). */
  private readonly stack: number[] = [];
  private bulkLeft = 0;
  private line: Buffer[] = [];
  private lineLen = 0;
  tripped = '';

  constructor(private readonly maxBytes: number) {}

  /** Consumes one chunk; returns a reason when the reply is over its bound. */
  push(chunk: Buffer): string {
    let i = 0;
    while (i < chunk.length && !this.tripped) {
      if (this.bulkLeft > 0) {
        const n = Math.min(this.bulkLeft, chunk.length - i);
        this.bulkLeft -= n;
        i += n;
        this.bytes += n;
        if (this.bulkLeft === 0) this.valueDone();
      } else {
        const nl = chunk.indexOf(0x0a, i);
        const end = nl < 0 ? chunk.length : nl + 1;
        this.bytes += end - i;
        if (this.lineLen < 64) this.line.push(chunk.subarray(i, Math.min(end, i + 64)));
        this.lineLen += end - i;
        i = end;
        if (nl >= 0) {
          const text = Buffer.concat(this.line).toString('latin1');
          this.line = [];
          this.lineLen = 0;
          this.header(text);
        }
      }
      if (this.bytes > this.maxBytes) this.tripped = `a reply larger than ${this.maxBytes} bytes`;
    }
    return this.tripped;
  }

  private header(text: string): void {
    const type = text[0];
    const n = Number.parseInt(text.slice(1), 10);
    switch (type) {
      case '$': // bulk string
      case '=': // verbatim string
      case '!': // blob error
        if (n >= 0) this.bulkLeft = n + 2;
        else this.valueDone();
        return;
      case '*': // array
      case '~': // set
      case '>': // push
        return this.open(n);
      case '%': // map
        return this.open(n * 2);
      case '|': // attribute: n pairs, then the value it describes
        return this.open(n * 2 + 1);
      default: // + - : _ , # ( and anything else: one line
        this.valueDone();
    }
  }

  private open(n: number): void {
    if (!(n > 0)) return this.valueDone();
    if (this.stack.length >= MAX_DEPTH) {
      this.tripped = `a reply nested deeper than ${MAX_DEPTH} levels`;
      return;
    }
    this.stack.push(n);
  }

  private valueDone(): void {
    while (this.stack.length) {
      const left = this.stack[this.stack.length - 1]! - 1;
      if (left > 0) {
        this.stack[this.stack.length - 1] = left;
        return;
      }
      this.stack.pop();
    }
    this.bytes = 0; // a whole reply is in
  }
}

/** Guards one socket (called at each new connection of a client). */
export function guardStream(stream: Duplex, limit: ReplyGuardLimit): void {
  const scanner = new ReplyScanner(limit.maxBytes);
  const onData = (chunk: Buffer | string) => {
    const why = scanner.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
    if (why) {
      stream.off('data', onData);
      limit.onTrip(why);
      // No error: the owner's one warning is the trip's, not a second 'cannot be reached'.
      stream.destroy();
    }
  };
  stream.prependListener('data', onData);
}
