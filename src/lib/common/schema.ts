/**
 * zod schemas built at their first use (issue 26). Requiring zod and building our
 * schemas took about 70 ms of CPU, most of what a flow of our nodes added to Node-RED's
 * start; now a node pays it with its first checked input or reply.
 *
 *   export const statusRecord = schema((z) => z.object({ ... }).loose());
 *   statusRecord().safeParse(body);          // zod is required and the schema built once
 *   export type StatusRecord = Infer<typeof statusRecord>;
 */
import type { z as Z } from 'zod';

export type Zod = typeof Z;

let loaded: Zod | undefined;
/** zod's `z`, required on the first call. */
export function zod(): Zod {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (loaded ??= (require('zod') as typeof import('zod')).z);
}

/** A schema (or any value made with zod) built by `build` on the first call, then kept. */
export function schema<T>(build: (z: Zod) => T): () => T {
  let built: T | undefined;
  return () => (built ??= build(zod()));
}

/** What a lazy schema parses to, as `z.infer` for the schema itself. */
export type Infer<S extends () => Z.ZodType> = Z.infer<ReturnType<S>>;

/** A zod schema, or a lazy one made by `schema()`. */
export type SchemaOf<T> = Z.ZodType<T> | (() => Z.ZodType<T>);

/** The schema itself, built if it is a lazy one. */
export function built<T>(s: SchemaOf<T>): Z.ZodType<T> {
  return typeof s === 'function' ? s() : s;
}
