/**
 * Keys of accepted msgs and of send attempts: time-ordered (the time in ms, base 36, first),
 * then this process's random tag and a counter, so two processes (a fleet on one Redis
 * outbox) never make the same key. Only [0-9a-z-]: no '/' (an entry id is `<key>/<index>`).
 */
import { randomBytes } from 'node:crypto';

const TAG = randomBytes(4).readUInt32BE(0).toString(36).padStart(7, '0');
let counter = 0;

export function makeKey(now: number): string {
  counter = (counter + 1) % 36 ** 6;
  return `${Math.max(0, Math.floor(now)).toString(36).padStart(9, '0')}-${TAG}-${counter.toString(36).padStart(6, '0')}`;
}
