/**
 * A Message Definition File's XML as a small element tree, read with saxes (a strict,
 * well-kept streaming parser, required here and only here, so it loads with the first
 * iotgw-definitions node, never at Node-RED start).
 *
 * Hostile input: a DOCTYPE is refused (so no entity can be declared: no external entity,
 * no expansion bomb); saxes itself refuses every entity but the five of XML and character
 * references. Each element keeps the line where it opens, for error texts.
 */
import type { SaxesParser } from 'saxes';

export interface XmlElement {
  /** Local name (a prefix such as `xsi:` cut off). */
  name: string;
  /** Attributes by local name. */
  attrs: Record<string, string>;
  children: XmlElement[];
  /** The element's own text, trimmed. */
  text: string;
  line: number;
}

const local = (n: string): string => {
  const i = n.indexOf(':');
  return i < 0 ? n : n.slice(i + 1);
};

/** An XML problem: its text, and the line where the parser was. */
export class XmlError extends Error {
  constructor(
    message: string,
    readonly line?: number,
  ) {
    super(message);
  }
}

/** Parses `xml`; throws XmlError on anything not well formed, a DOCTYPE, or an unknown entity. */
export function parseXml(xml: string): XmlElement {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { SaxesParser: Parser } = require('saxes') as typeof import('saxes');
  const parser: SaxesParser = new Parser({ position: true });
  const stack: XmlElement[] = [];
  let root: XmlElement | undefined;
  let failure: XmlError | undefined;
  const fail = (message: string) => {
    failure ??= new XmlError(message, parser.line);
  };
  parser.on('doctype', () => fail('a DOCTYPE is not allowed (no entity declarations in a message definition file)'));
  parser.on('error', (e) => fail(e.message.replace(/^[^:]*:\d+:\d+: /, '')));
  parser.on('opentag', (tag) => {
    const attrs: Record<string, string> = {};
    for (const [k, v] of Object.entries(tag.attributes)) attrs[local(k)] = String(v);
    const el: XmlElement = { name: local(tag.name), attrs, children: [], text: '', line: parser.line };
    if (stack.length) stack[stack.length - 1]!.children.push(el);
    else root = el;
    stack.push(el);
  });
  const text = (t: string) => {
    const top = stack[stack.length - 1];
    if (top) top.text += t;
  };
  parser.on('text', text);
  parser.on('cdata', text);
  parser.on('closetag', () => {
    const el = stack.pop();
    if (el) el.text = el.text.trim();
  });
  try {
    parser.write(xml);
    if (!failure) parser.close();
  } catch (e) {
    fail(e instanceof Error ? e.message.replace(/^[^:]*:\d+:\d+: /, '') : String(e));
  }
  if (failure) throw failure;
  if (!root) throw new XmlError('no root element', 1);
  return root;
}
