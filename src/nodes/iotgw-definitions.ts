/**
 * `iotgw-definitions` (config node): one Message Definition File (nodes.md, "Message
 * definitions"), pasted (`xml`) and/or read from `file` (absolute, or relative to the
 * Node-RED user directory), parsed and compiled once at deploy by src/lib/codec and shared
 * by every node that names it. Its settings give the largest message of each direction:
 * a larger one is refused before decoding (src/lib/codec/limits.ts). A refused file is reported at deploy (file, line, element);
 * the nodes using it then refuse each msg with that same error.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Node, NodeAPI, NodeDef } from 'node-red';
import { GatewayError, badInput, toGatewayError } from '../lib/common/errors';
import { numberSetting } from '../lib/node-red/node-kit';
import { DEFAULT_MAX_BYTES, MAX_BYTES_RANGE, MAX_DEFINITIONS_BYTES, loadDefinitions, type Definitions, type DefinitionsSource, type MaxBytes } from '../lib/codec';

export interface DefinitionsConfig extends NodeDef {
  xml: string;
  file: string;
  /** The largest from-mobile (return) message in bytes; absent in older flows: 6,400. */
  maxFromMobileBytes?: number | string;
  /** The largest to-mobile (forward) message in bytes; absent in older flows: 10,000. */
  maxToMobileBytes?: number | string;
}

const MAX = MAX_DEFINITIONS_BYTES;

/**
 * The text of the regular file `at`, read only if it is one and at most MAX bytes. Opened
 * without blocking (a FIFO with no writer would block the open, and so the deploy, for
 * ever) and checked on the open file (a device such as /dev/zero has a size of 0 and
 * never ends); read to at most MAX + 1 bytes, so a file that grows is refused too.
 */
function readRegularFile(at: string): string {
  let fd: number;
  try {
    fd = fs.openSync(at, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  } catch (e) {
    throw badInput('file', `${at}: cannot be read (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) throw badInput('file', `${at}: not a regular file (a ${st.isDirectory() ? 'directory' : st.isFIFO() ? 'FIFO' : st.isSocket() ? 'socket' : 'device'}); give the path of a Message Definition File`);
    if (st.size > MAX) throw badInput('file', `${at}: ${st.size} bytes; a definitions file may hold at most ${MAX} bytes`);
    const buf = Buffer.alloc(Math.min(st.size, MAX) + 1);
    let n = 0;
    for (let got = -1; got !== 0 && n < buf.length; n += got) got = fs.readSync(fd, buf, n, buf.length - n, null);
    if (n > MAX) throw badInput('file', `${at}: more than ${MAX} bytes (it grew while read); a definitions file may hold at most ${MAX} bytes`);
    return buf.toString('utf8', 0, n);
  } finally {
    fs.closeSync(fd);
  }
}

/** The sources of a config: the pasted text and/or the file. Throws BAD_INPUT. */
export function definitionSources(config: { xml?: unknown; file?: unknown }, userDir: string): DefinitionsSource[] {
  const sources: DefinitionsSource[] = [];
  const xml = typeof config.xml === 'string' ? config.xml : '';
  const file = typeof config.file === 'string' ? config.file.trim() : '';
  if (xml.length > MAX || Buffer.byteLength(xml) > MAX) throw badInput('xml', `${Buffer.byteLength(xml)} bytes of pasted XML; at most ${MAX} bytes (as for a file)`);
  if (xml.trim()) sources.push({ text: xml, source: 'pasted XML' });
  if (file) {
    const at = path.resolve(userDir, file);
    sources.push({ text: readRegularFile(at), source: at });
  }
  if (!sources.length) throw badInput('xml', 'no message definitions: paste a Message Definition File, or give the path of one');
  return sources;
}

/** The largest message of each direction, from the settings (absent: the defaults; out of range: clamped). */
export function maxBytesSettings(config: { maxFromMobileBytes?: unknown; maxToMobileBytes?: unknown }): MaxBytes {
  const [lo, hi] = MAX_BYTES_RANGE;
  return {
    return: Math.round(numberSetting(config.maxFromMobileBytes, DEFAULT_MAX_BYTES.return, lo, hi)),
    forward: Math.round(numberSetting(config.maxToMobileBytes, DEFAULT_MAX_BYTES.forward, lo, hi)),
  };
}

export default function register(RED: NodeAPI): void {
  function IotgwDefinitionsNode(this: Node, config: DefinitionsConfig) {
    RED.nodes.createNode(this, config);
    const node = this;
    let loaded: Definitions | GatewayError;
    try {
      const userDir = (RED.settings as { userDir?: string }).userDir ?? process.cwd();
      loaded = loadDefinitions(definitionSources(config, userDir), { maxBytes: maxBytesSettings(config) });
      const s = loaded.summary();
      node.log(`${s.services} services, ${s.return} return and ${s.forward} forward messages, ${s.fields} fields`);
    } catch (e) {
      loaded = toGatewayError(e);
      node.error(`message definitions refused: ${loaded.message}`);
    }
    const result = loaded;
    (node as Node & { definitions(): Definitions }).definitions = () => {
      if (result instanceof GatewayError) throw result;
      return result;
    };
  }

  RED.nodes.registerType('iotgw-definitions', IotgwDefinitionsNode as unknown as (this: Node, c: NodeDef) => void);
}
