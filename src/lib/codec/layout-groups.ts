/**
 * Arrays and bitmask lists of a compiled layout (layout.ts): fields that hold objects of
 * element fields. The elements' own decoders and encoders are compiled by layout.ts and
 * handed in, once, at compile time.
 */
import { badInput } from '../common/errors';
import { readUint } from './bits';
import { readLength, writeLength } from './layout-bytes';
import { decodeAll, ended, has, isObject, kindOf, setOwn, type Dec, type Enc, type Fields, type Put, type Read } from './layout-common';

const listItems = (items: string[]) => items.map((s) => JSON.stringify(s)).join(', ');

/**
 * An array of at most `n` elements (exactly `n` when `fixed`), each decoded by `decs`;
 * each element takes at least `least` bits.
 */
export function arrayReader(n: number, fixed: boolean, decs: Dec[], least: number, at: string): Read {
  return (r) => {
    const count = fixed ? n : readLength(r, at);
    if (count > n) throw badInput(at, `its length claims ${count} elements, more than its Size ${n}`);
    // Each element takes at least `least` bits: a count the bits left cannot hold is refused now.
    if (count * least > r.end - r.pos) throw badInput(at, `${count} elements need at least ${count * least} bits at bit ${r.pos}; ${r.end - r.pos} are left`);
    const out: Fields[] = new Array(count);
    for (let i = 0; i < count; i++) out[i] = decodeAll(decs, r, {});
    return out;
  };
}

/** A mask of `n` bits, then one element (decoded by `decs`) per set bit, keyed by its item. */
export function bitmaskReader(n: number, items: string[], decs: Dec[], at: string): Read {
  return (r) => {
    if (r.pos + n > r.end) throw ended(r, n, at);
    const mask = readUint(r, n);
    const out: Fields = {};
    for (let i = 0; i < n; i++) {
      if (Math.floor(mask / 2 ** i) % 2 === 0) continue;
      if (i >= items.length) throw badInput(at, `bit ${i} of the mask is set, but the field has no item ${i}`);
      setOwn(out, items[i]!, decodeAll(decs, r, {}));
    }
    return out;
  };
}

export function arrayWriter(n: number, fixed: boolean, el: Enc, at: string): Put {
  return (w, v) => {
    if (!Array.isArray(v)) throw badInput(at, `needs an array of objects, not ${kindOf(v)}`);
    if (fixed ? v.length !== n : v.length > n) throw badInput(at, `${v.length} elements; ${fixed ? 'exactly' : 'at most'} ${n}`);
    if (!fixed) writeLength(w, v.length);
    for (let i = 0; i < v.length; i++) {
      const e: unknown = v[i];
      if (!isObject(e)) throw badInput(`${at}[${i}]`, `an element must be an object of fields, not ${kindOf(e)}`);
      el(w, e);
    }
  };
}

export function bitmaskWriter(n: number, items: string[], el: Enc, at: string): Put {
  return (w, v) => {
    if (!isObject(v)) throw badInput(at, `needs an object {item: {fields}} (items ${listItems(items)}), not ${kindOf(v)}`);
    let mask = 0;
    for (const k of Object.keys(v)) {
      const i = items.indexOf(k);
      if (i < 0) throw badInput(`${at}.${k}`, `not one of its items (${listItems(items)})`);
      mask += 2 ** i;
    }
    w.uint(mask, n);
    for (let i = 0; i < items.length; i++) {
      if (!has.call(v, items[i]!)) continue;
      const e = v[items[i]!];
      if (!isObject(e)) throw badInput(`${at}.${items[i]}`, `must be an object of fields, not ${kindOf(e)}`);
      el(w, e);
    }
  };
}
