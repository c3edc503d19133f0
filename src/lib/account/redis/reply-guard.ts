/**
 * The reply guard (issues 25, 43): ioredis reads a Redis peer's bytes only through a stream
 * that checked them first. `guardSocket` wraps the socket a connector opened in a Duplex:
 * each chunk the socket reads goes through a strict RESP check (resp-check.ts: framing,
 * digits-only lengths, each whole reply within `maxBytes`, nesting) and only then is pushed
 * to the Duplex, where ioredis's decoder reads it; the first chunk that breaks the check is
 * never pushed: the socket is destroyed, `onTrip` told once, and the client reconnects as
 * after any broken connection.
 *
 * Before (issue 43) the guard was a 'data' listener beside the decoder, which ioredis adds
 * with prependListener after it: the decoder saw every chunk first, and five bytes (`$*\r\nX`)
 * held it in an endless loop.
 *
 * The Duplex stands for the socket towards ioredis: it passes on what ioredis asks of a socket
 * (connecting, the connect and timeout events, setTimeout, setKeepAlive, setNoDelay, the
 * remote address) and writes through to it.
 */
import { Duplex } from 'node:stream';
import type { Socket } from 'node:net';
import { RespCheck, type RespFault } from './resp-check';

export interface ReplyGuardLimit {
  maxBytes: number;
  /** Told once per broken stream, with a message that holds no reply content. */
  onTrip: (fault: RespFault) => void;
}

/** The events of the socket ioredis waits for on the stream it is given. */
const PASSED_ON = ['connect', 'secureConnect', 'ready', 'timeout'] as const;

/** A socket's readable side behind the RESP check; writes go straight through. */
export class GuardedSocket extends Duplex {
  private readonly check: RespCheck;

  constructor(
    readonly socket: Socket,
    private readonly limit: ReplyGuardLimit,
  ) {
    super({ allowHalfOpen: false });
    this.check = new RespCheck(limit.maxBytes);
    socket.on('data', (chunk: Buffer | string) => this.onData(typeof chunk === 'string' ? Buffer.from(chunk, 'latin1') : chunk));
    socket.on('end', () => this.push(null));
    socket.on('error', (err: Error) => this.destroy(err));
    socket.on('close', () => this.destroy());
    for (const event of PASSED_ON) socket.on(event, (...args: unknown[]) => this.emit(event, ...args));
    if (socket.destroyed) this.destroy();
  }

  private onData(chunk: Buffer): void {
    if (this.destroyed) return;
    const fault = this.check.push(chunk);
    if (fault) {
      this.limit.onTrip(fault);
      // No error: the owner's one warning is the trip's, not a second 'cannot be reached'.
      this.socket.destroy();
      this.destroy();
      return;
    }
    if (!this.push(chunk)) this.socket.pause();
  }

  override _read(): void {
    this.socket.resume();
  }

  override _write(chunk: Buffer, encoding: BufferEncoding, callback: (err?: Error | null) => void): void {
    this.socket.write(chunk, encoding, callback);
  }

  override _final(callback: (err?: Error | null) => void): void {
    this.socket.end(() => callback());
  }

  override _destroy(err: Error | null, callback: (err?: Error | null) => void): void {
    this.socket.destroy();
    callback(err);
  }

  get connecting(): boolean {
    return this.socket.connecting;
  }

  get remoteAddress(): string | undefined {
    return this.socket.remoteAddress;
  }

  get remotePort(): number | undefined {
    return this.socket.remotePort;
  }

  setTimeout(ms: number, callback?: () => void): this {
    this.socket.setTimeout(ms);
    if (callback) {
      if (ms === 0) this.off('timeout', callback);
      else this.once('timeout', callback);
    }
    return this;
  }

  setKeepAlive(enable?: boolean, initialDelay?: number): this {
    this.socket.setKeepAlive(enable, initialDelay);
    return this;
  }

  setNoDelay(noDelay?: boolean): this {
    this.socket.setNoDelay(noDelay);
    return this;
  }
}

/** The stream ioredis is to read one new socket through (called at each new connection of a client). */
export function guardSocket(socket: Socket, limit: ReplyGuardLimit): GuardedSocket {
  return new GuardedSocket(socket, limit);
}
