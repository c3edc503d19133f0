/**
 * The terminals' own bytes (shared/spec/message-definitions.md): one or more Message
 * Definition Files loaded into a `Definitions`, which decodes a message's bytes into typed
 * fields and the gateway's common message format (src/lib/cmf), and encodes fields back
 * into bytes. No Node-RED here: the nodes (iotgw-definitions, iotgw-codec, the message
 * poller and sender) are thin wrappers over it.
 */
import { badInput } from '../common/errors';
import { describeType, showValue } from '../common/int64';
import { decodeFields, type CmfMessage } from '../api/cmf';
import { DefinitionsError, minBits, readDefinitions } from './definitions';
import { compileMessage, type CompiledMessage, type Fields } from './layout';
import { DEFAULT_MAX_BYTES, MAX_VALUES, worstCase, type MaxBytes } from './limits';
import type { Direction, MessageDef, ServiceDef } from './model';

export type { CompiledMessage, Fields } from './layout';
export type { Direction, FieldDef, MessageDef, ServiceDef } from './model';
export { DefinitionsError } from './definitions';
export { DEFAULT_MAX_BYTES, MAX_BYTES_RANGE, MAX_DEFINITIONS_BYTES, MAX_VALUES, worstCase, type MaxBytes } from './limits';

export interface DefinitionsSource {
  /** The XML text. */
  text: string;
  /** Its name in errors: a path, or "pasted XML". */
  source: string;
}

export interface DefinitionsSummary {
  services: number;
  forward: number;
  return: number;
  fields: number;
}

export interface Decoded {
  message: CompiledMessage;
  fields: Fields;
}

const key = (sin: number, min: number) => sin * 256 + min;

/** Bytes as a Buffer: a Buffer, Uint8Array, byte array, JSON'd Buffer or base64 text; else undefined. */
export function asBytes(v: unknown): Buffer | undefined {
  if (Buffer.isBuffer(v)) return v;
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  if (v && typeof v === 'object' && (v as { type?: unknown }).type === 'Buffer' && Array.isArray((v as { data?: unknown }).data)) v = (v as { data: unknown[] }).data;
  if (Array.isArray(v)) return v.every((x) => Number.isInteger(x) && x >= 0 && x <= 255) ? Buffer.from(v as number[]) : undefined;
  if (typeof v === 'string') {
    const s = v.trim();
    return /^[A-Za-z0-9+/]*={0,2}$/.test(s) && s.length % 4 === 0 ? Buffer.from(s, 'base64') : undefined;
  }
  return undefined;
}

/** What nodes see of an `iotgw-definitions` config node. */
export interface DefinitionsNode {
  /** The loaded definitions; throws the deploy-time error (BAD_INPUT) when the file was refused. */
  definitions(): Definitions;
}

const WHICH: Record<Direction, string> = { return: 'from-mobile', forward: 'to-mobile' };

/** Where a message (and the fields down to one of its fields) is, in a DefinitionsError. */
function where(m: MessageDef, path: { name: string }[] = []): string {
  const list = m.direction === 'forward' ? 'ForwardMessages' : 'ReturnMessages';
  return [`Service "${m.service}" (SIN ${m.sin}) > ${list} > Message "${m.name}" (MIN ${m.min})`, ...path.map((f) => `Field "${f.name}"`)].join(' > ');
}

/**
 * Refuses a message that no message of `maxBytes` can hold, or whose worst case (a message
 * of `maxBytes` bytes) decodes into more than MAX_VALUES values, naming the element.
 */
function checkBounds(m: MessageDef, source: string, maxBytes: number): void {
  const least = Math.ceil((16 + minBits(m.fields)) / 8);
  if (least > maxBytes) throw new DefinitionsError(source, m.line, where(m), `takes at least ${least} bytes, more than the largest ${WHICH[m.direction]} message (${maxBytes} bytes, the definitions' setting)`);
  const worst = worstCase(m, maxBytes);
  if (worst.values > MAX_VALUES) {
    // Down to the innermost array or list on the densest path: the Size to make smaller.
    let n = worst.path.length;
    while (n > 1 && !['ArrayField', 'BitmaskListField'].includes(worst.path[n - 1]!.kind)) n--;
    const path = worst.path.slice(0, n);
    const last = path[n - 1]!;
    throw new DefinitionsError(
      source,
      last.line,
      where(m, path),
      `a ${maxBytes}-byte message could decode into ${worst.values.toLocaleString('en-US')} values, more than the ${MAX_VALUES.toLocaleString('en-US')} one message may hold; give this array or list a smaller Size`,
    );
  }
}

export interface DefinitionsOptions {
  /** The largest message of each direction, in bytes (DEFAULT_MAX_BYTES). */
  maxBytes?: Partial<MaxBytes>;
}

export class Definitions {
  readonly services: ServiceDef[];
  /** The largest message of each direction, in bytes: a larger one is refused before decoding. */
  readonly maxBytes: Readonly<MaxBytes>;
  private readonly byKey: Record<Direction, Map<number, CompiledMessage>> = { forward: new Map(), return: new Map() };
  private readonly byName: Record<Direction, Map<string, CompiledMessage | null>> = { forward: new Map(), return: new Map() };

  constructor(services: ServiceDef[], options: DefinitionsOptions = {}) {
    this.services = services;
    this.maxBytes = { ...DEFAULT_MAX_BYTES, ...options.maxBytes };
    const sins = new Map<number, ServiceDef>();
    for (const s of services) {
      const other = sins.get(s.sin);
      if (other) throw new DefinitionsError(s.source, s.line, `Service "${s.name}"`, `SIN ${s.sin} is already defined by service "${other.name}" (${other.source}, line ${other.line})`);
      sins.set(s.sin, s);
      for (const dir of ['forward', 'return'] as const) {
        for (const m of s[dir]) {
          checkBounds(m, s.source, this.maxBytes[dir]);
          const c = compileMessage(m, this.maxBytes[dir]);
          this.byKey[dir].set(key(m.sin, m.min), c);
          // A name given by two services is ambiguous: encoding by it needs SIN and MIN.
          this.byName[dir].set(m.name, this.byName[dir].has(m.name) ? null : c);
        }
      }
    }
  }

  /** The message (SIN, MIN) of `direction`, if held. */
  find(sin: number, min: number, direction: Direction): CompiledMessage | undefined {
    return this.byKey[direction].get(key(sin, min));
  }

  /** The message called `name`; BAD_INPUT if none or several are. */
  named(name: string, direction: Direction, field = 'message'): CompiledMessage {
    const m = this.byName[direction].get(name);
    if (m) return m;
    if (m === null) throw badInput(field, `${direction} message "${name}" is defined by more than one service; give SIN and MIN instead`);
    const names = [...this.byName[direction].keys()];
    throw badInput(field, `no ${direction} message is named ${showValue(name, 40)}; the definitions hold ${names.slice(0, 10).join(', ') || 'none'}${names.length > 10 ? ', ...' : ''}`);
  }

  /** A problem with the size of a message of `bytes` bytes (larger than the largest), or undefined. */
  sizeProblem(bytes: number, direction: Direction): string | undefined {
    const max = this.maxBytes[direction];
    return bytes > max ? `${bytes} bytes, more than the largest ${WHICH[direction]} message (${max} bytes, the definitions' setting); not decoded` : undefined;
  }

  /** Decodes a whole message (SIN and MIN first). BAD_INPUT: too long, too short, not held, or bad bytes. */
  decode(bytes: Buffer, direction: Direction): Decoded {
    const big = this.sizeProblem(bytes.length, direction);
    if (big) throw badInput('payload', big);
    if (bytes.length < 2) throw badInput('payload', `${bytes.length} bytes; a message has at least 2 (SIN and MIN)`);
    const message = this.byKey[direction].get(key(bytes[0]!, bytes[1]!));
    if (!message) throw badInput('payload', `SIN ${bytes[0]} MIN ${bytes[1]}: no ${direction} message of the definitions has it`);
    return { message, fields: message.decode(bytes) };
  }

  /** The message to encode from `{message}` / `{SIN, MIN}` and its fields: `{fields}` or CMF `Fields`. */
  encodeInput(p: Record<string, unknown>, direction: Direction, where = 'msg.payload'): Buffer {
    let m: CompiledMessage;
    const name = p.message ?? p.Name;
    if (p.SIN !== undefined || p.MIN !== undefined) {
      const ok = (x: unknown) => Number.isInteger(x) && (x as number) >= 0 && (x as number) <= 255;
      if (!ok(p.SIN) || !ok(p.MIN)) throw badInput(`${where}.SIN`, `SIN and MIN must be whole numbers 0 to 255, not ${showValue(p.SIN)} and ${showValue(p.MIN)}`);
      const found = this.find(p.SIN as number, p.MIN as number, direction);
      if (!found) throw badInput(`${where}.SIN`, `SIN ${p.SIN} MIN ${p.MIN}: no ${direction} message of the definitions has it`);
      m = found;
    } else if (typeof name === 'string') m = this.named(name, direction, `${where}.message`);
    else throw badInput(`${where}.message`, `name the message (message: "<Name>") or give SIN and MIN, not ${describeType(name)}`);
    let fields: unknown = p.fields;
    if (fields === undefined && Array.isArray(p.Fields)) fields = decodeFields(p.Fields);
    if (fields === undefined || fields === null) fields = {};
    if (typeof fields !== 'object' || Array.isArray(fields)) throw badInput(`${where}.fields`, `must be an object {FieldName: value}, not ${describeType(fields)}`);
    return m.encode(fields as Fields);
  }

  summary(): DefinitionsSummary {
    const count = (fs: { fields: unknown[] }[]): number => fs.reduce((n, f) => n + 1 + count(f.fields as { fields: unknown[] }[]), 0);
    let forward = 0;
    let ret = 0;
    let fields = 0;
    for (const s of this.services) {
      forward += s.forward.length;
      ret += s.return.length;
      for (const m of [...s.forward, ...s.return]) fields += count(m.fields);
    }
    return { services: this.services.length, forward, return: ret, fields };
  }
}

/** Reads and compiles every source; throws a DefinitionsError (BAD_INPUT) naming the file, line and element. */
export function loadDefinitions(sources: DefinitionsSource[], options: DefinitionsOptions = {}): Definitions {
  return new Definitions(
    sources.flatMap((s) => readDefinitions(s.text, s.source)),
    options,
  );
}

/** The common message format of decoded fields, as the gateway writes it (src/lib/cmf). */
export function toCmf(message: CompiledMessage, fields: Fields): CmfMessage {
  const { def } = message;
  return { Name: def.name, SIN: def.sin, MIN: def.min, IsForward: def.direction === 'forward', Fields: message.cmfFields(fields) };
}
