/** Small input checks shared by the API layer and the Node-RED plumbing (no Node-RED here). */

/** A plain object check that refuses arrays, class instances and null. */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v) as { constructor?: unknown } | null;
  if (proto === Object.prototype || proto === null) return true;
  // An object literal made in another realm, such as a function node's vm sandbox: its
  // prototype is that realm's Object.prototype, whose own prototype is null.
  return (
    Object.getPrototypeOf(proto) === null &&
    Object.prototype.toString.call(v) === '[object Object]' &&
    typeof proto.constructor === 'function' &&
    proto.constructor.name === 'Object'
  );
}

/** The first ten problems of a BAD_INPUT, joined, and how many more there are. */
export function joinProblems(problems: string[]): string {
  const shown = problems.slice(0, 10).join('; ');
  return problems.length > 10 ? `${shown}; and ${problems.length - 10} more` : shown;
}
