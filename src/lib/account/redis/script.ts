/** A Lua script run by EVALSHA, loaded with EVAL when the server does not know it (NOSCRIPT). */
import { createHash } from 'node:crypto';
import type Redis from 'ioredis';

export type Script = (r: Redis, keys: string[], args: (string | number)[]) => Promise<unknown>;

export function script(lua: string): Script {
  const sha = createHash('sha1').update(lua, 'utf8').digest('hex');
  return async (r, keys, args) => {
    try {
      return await r.evalsha(sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (err instanceof Error && err.message.startsWith('NOSCRIPT')) return r.eval(lua, keys.length, ...keys, ...args);
      throw err;
    }
  };
}
