/**
 * A Message Definition File (XML) -> services, messages and fields (./model.ts), checked:
 * every problem is refused with the source, the line and the element it is in, so a bad
 * file fails at deploy rather than on the first message. What the spec does not list
 * (version, description elements) is ignored.
 */
import { GatewayError, quote } from '../common/errors';
import { FIELD_KINDS, type Direction, type FieldDef, type FieldKind, type MessageDef, type ServiceDef } from './model';
import { parseXml, XmlError, type XmlElement } from './xml';

/** Most bits of an integer field, bytes of a string or data, elements of an array. */
export const MAX_INT_BITS = 64;
export const MAX_LENGTH = 32767;

export class DefinitionsError extends GatewayError {
  constructor(source: string, line: number | undefined, where: string, problem: string) {
    super('BAD_INPUT', `${source}${line ? `, line ${line}` : ''}: ${where ? `${where}: ` : ''}${problem}`, { field: where || source });
  }
}

const child = (el: XmlElement, name: string): XmlElement | undefined => el.children.find((c) => c.name === name);
const children = (el: XmlElement | undefined, name: string): XmlElement[] => (el ? el.children.filter((c) => c.name === name) : []);

interface Ctx {
  source: string;
}

function fail(ctx: Ctx, el: XmlElement, where: string, problem: string): never {
  throw new DefinitionsError(ctx.source, el.line, where, problem);
}

function intIn(ctx: Ctx, el: XmlElement, name: string, where: string, lo: number, hi: number): number {
  const c = child(el, name);
  if (!c) fail(ctx, el, where, `<${name}> is missing`);
  if (!/^\d+$/.test(c.text) || Number(c.text) < lo || Number(c.text) > hi) fail(ctx, c, where, `<${name}> must be a whole number from ${lo} to ${hi}, not "${c.text.slice(0, 20)}"`);
  return Number(c.text);
}

function nameOf(ctx: Ctx, el: XmlElement, where: string): string {
  const c = child(el, 'Name');
  if (!c || c.text === '') fail(ctx, el, where, '<Name> is missing or empty');
  if (c.text === '__proto__') fail(ctx, c, where, '"__proto__" cannot be a name');
  return c.text;
}

const flag = (el: XmlElement, name: string): boolean => (child(el, name)?.text ?? '').toLowerCase() === 'true';

/** The least bits one element of `fields` takes (0 when every field can be empty). */
export function minBits(fields: FieldDef[]): number {
  let n = 0;
  for (const f of fields) n += f.optional ? 1 : minFieldBits(f);
  return n;
}
/** The least bits of `f` when present (its presence bit not counted). */
export function minFieldBits(f: FieldDef): number {
  switch (f.kind) {
    case 'BooleanField':
      return 1;
    case 'EnumField':
    case 'UnsignedIntField':
    case 'SignedIntField':
      return f.size;
    case 'StringField':
    case 'DataField':
      return f.fixed ? f.size * 8 : 8;
    case 'ArrayField':
      return f.fixed ? f.size * minBits(f.fields) : 8;
    case 'BitmaskListField':
      return f.size;
    case 'DynamicField':
      return 4;
    default:
      return 0;
  }
}

function readField(ctx: Ctx, el: XmlElement, parent: string, depth: number): FieldDef {
  const fname = nameOf(ctx, el, `${parent} > Field`);
  const where = `${parent} > Field "${fname}"`;
  const type = el.attrs.type;
  if (!type) fail(ctx, el, where, 'the xsi:type attribute (the kind of field) is missing');
  if (!(FIELD_KINDS as readonly string[]).includes(type)) fail(ctx, el, where, `unknown field kind xsi:type="${type}"; known: ${FIELD_KINDS.join(', ')}`);
  const kind = type as FieldKind;
  const f: FieldDef = { name: fname, kind, optional: flag(el, 'Optional'), size: 0, fixed: flag(el, 'Fixed'), items: [], fields: [], line: el.line };
  readKind(ctx, el, f, where, depth);
  const def = child(el, 'Default');
  if (def) {
    const problem = checkDefault(f, def.text);
    if (problem) fail(ctx, def, where, `<Default> ${problem}`);
    f.default = def.text;
  }
  return f;
}

/** What the field's kind needs: its Size, Items and element Fields, checked. */
function readKind(ctx: Ctx, el: XmlElement, f: FieldDef, where: string, depth: number): void {
  const size = (lo: number, hi: number) => (f.size = intIn(ctx, el, 'Size', where, lo, hi));
  const items = () => {
    const list = child(el, 'Items');
    f.items = children(list, 'string').map((s) => s.text);
    if (!f.items.length) fail(ctx, list ?? el, where, '<Items> must list at least one <string>');
    const problem = itemsProblem(f.items, f.kind === 'EnumField' ? f.size : 0);
    if (problem) fail(ctx, list ?? el, where, problem);
  };
  const sub = () => {
    if (depth > 16) fail(ctx, el, where, 'arrays nested more than 16 deep');
    f.fields = readFields(ctx, child(el, 'Fields'), where, depth + 1);
  };
  switch (f.kind) {
    case 'BooleanField':
      f.size = 1;
      break;
    case 'EnumField':
      size(1, 32);
      items();
      if (f.items.length > 2 ** f.size) fail(ctx, el, where, `${f.items.length} items do not fit in ${f.size} bits`);
      break;
    case 'UnsignedIntField':
    case 'SignedIntField':
      size(1, MAX_INT_BITS);
      break;
    case 'StringField':
    case 'DataField':
      size(1, MAX_LENGTH);
      break;
    case 'ArrayField':
      size(1, MAX_LENGTH);
      if (!child(el, 'Fields')) fail(ctx, el, where, 'an array needs <Fields> (the fields of one element)');
      sub();
      // An element of no bits would let a 1-byte count make 32,767 objects: refused.
      if (minBits(f.fields) === 0) fail(ctx, el, where, 'the elements of an array must take at least one bit');
      if (f.fixed && f.size * Math.max(1, minBits(f.fields)) > 8 * 10_000) fail(ctx, el, where, 'a fixed array of more than 10,000 bytes');
      break;
    case 'BitmaskListField':
      size(1, 32);
      items();
      if (f.items.length > f.size) fail(ctx, el, where, `${f.items.length} items for a mask of ${f.size} bits`);
      sub();
      break;
    default:
      // DynamicField has no size; PropertyField and MessageField are refused on use.
      break;
  }
}

/**
 * Items two indexes share (an enum would encode the text to the first, a bitmask would
 * keep one element of two), or a text that reads as the number of an index with no item
 * (an enum decodes that index to the number, and the common message format carries it
 * as that text: it must encode back to the same index).
 */
function itemsProblem(items: string[], enumBits: number): string | undefined {
  const seen = new Map<string, number>();
  for (let i = 0; i < items.length; i++) {
    const t = items[i]!;
    const first = seen.get(t);
    if (first !== undefined) return `items ${first} and ${i} are both "${t.slice(0, 40)}"; each item must be named once`;
    seen.set(t, i);
    if (enumBits && /^\d+$/.test(t) && Number(t) >= items.length && Number(t) < 2 ** enumBits) return `item ${i} is "${t}", which also reads as index ${t} (an index with no item decodes to its number)`;
  }
  return undefined;
}

function checkDefault(f: FieldDef, text: string): string | undefined {
  switch (f.kind) {
    case 'BooleanField':
      return /^(true|false)$/i.test(text) ? undefined : 'must be true or false';
    case 'EnumField':
      return f.items.includes(text) || (/^\d+$/.test(text) && Number(text) < 2 ** f.size) ? undefined : 'must be one of the items';
    case 'UnsignedIntField':
    case 'SignedIntField': {
      if (!/^-?\d+$/.test(text)) return 'must be a whole number';
      const v = BigInt(text);
      const [lo, hi] = f.kind === 'UnsignedIntField' ? [0n, (1n << BigInt(f.size)) - 1n] : [-(1n << BigInt(f.size - 1)), (1n << BigInt(f.size - 1)) - 1n];
      return v < lo || v > hi ? `${text} does not fit in ${f.size} bits` : undefined;
    }
    case 'StringField':
      return Buffer.byteLength(text) > f.size ? `is longer than ${f.size} bytes` : undefined;
    default:
      return `is only for integer, string, boolean and enum fields, not ${f.kind}`;
  }
}

function readFields(ctx: Ctx, el: XmlElement | undefined, where: string, depth: number): FieldDef[] {
  const out: FieldDef[] = [];
  const seen = new Set<string>();
  for (const c of children(el, 'Field')) {
    const f = readField(ctx, c, where, depth);
    if (seen.has(f.name)) fail(ctx, c, where, `two fields are named "${f.name}"`);
    seen.add(f.name);
    out.push(f);
  }
  return out;
}

function readMessages(ctx: Ctx, svc: XmlElement, sin: number, service: string, direction: Direction): MessageDef[] {
  const list = direction === 'forward' ? 'ForwardMessages' : 'ReturnMessages';
  const out: MessageDef[] = [];
  const mins = new Map<number, string>();
  for (const m of children(child(svc, list), 'Message')) {
    const base = `Service "${service}" (SIN ${sin}) > ${list} > Message`;
    const name = nameOf(ctx, m, base);
    const where = `${base} "${name}"`;
    const min = intIn(ctx, m, 'MIN', where, 0, 255);
    if (mins.has(min)) fail(ctx, m, where, `MIN ${min} is already defined by ${list} message "${mins.get(min)}"`);
    mins.set(min, name);
    out.push({ name, sin, min, direction, service, fields: readFields(ctx, child(m, 'Fields'), `${where} (MIN ${min})`, 0), line: m.line });
  }
  return out;
}

/** Reads one file's text. `source` names it in errors (a path, or "pasted XML"). */
export function readDefinitions(xml: string, source: string): ServiceDef[] {
  const ctx: Ctx = { source };
  let root: XmlElement;
  try {
    root = parseXml(xml);
  } catch (e) {
    if (e instanceof XmlError) throw new DefinitionsError(source, e.line, '', `not well-formed XML: ${quote(e.message)}`);
    throw e;
  }
  if (root.name !== 'MessageDefinition') fail(ctx, root, '', `the root element must be <MessageDefinition>, not <${root.name}>`);
  const services = child(root, 'Services');
  if (!services) fail(ctx, root, 'MessageDefinition', '<Services> is missing');
  const out: ServiceDef[] = [];
  for (const s of children(services, 'Service')) {
    const name = nameOf(ctx, s, 'Service');
    const sin = intIn(ctx, s, 'SIN', `Service "${name}"`, 0, 255);
    out.push({ name, sin, forward: readMessages(ctx, s, sin, name, 'forward'), return: readMessages(ctx, s, sin, name, 'return'), line: s.line, source });
  }
  return out;
}
