/**
 * `iotgw-definitions` (config node): one Message Definition File (nodes.md, "Message
 * definitions"), pasted (`xml`) and/or read from `file` (absolute, or relative to the
 * Node-RED user directory), parsed and compiled once at deploy by src/lib/codec and shared
 * by every node that names it. A refused file is reported at deploy (file, line, element);
 * the nodes using it then refuse each msg with that same error.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Node, NodeAPI, NodeDef } from 'node-red';
import { GatewayError, badInput, toGatewayError } from '../lib/common/errors';
import { loadDefinitions, type Definitions, type DefinitionsSource } from '../lib/codec';

export interface DefinitionsConfig extends NodeDef {
  xml: string;
  file: string;
}

/** A larger definitions file is refused rather than read (the largest files seen are a few MB). */
const MAX_FILE_BYTES = 32 * 1024 * 1024;

/** The sources of a config: the pasted text and/or the file. Throws BAD_INPUT. */
export function definitionSources(config: { xml?: unknown; file?: unknown }, userDir: string): DefinitionsSource[] {
  const sources: DefinitionsSource[] = [];
  const xml = typeof config.xml === 'string' ? config.xml : '';
  const file = typeof config.file === 'string' ? config.file.trim() : '';
  if (xml.trim()) sources.push({ text: xml, source: 'pasted XML' });
  if (file) {
    const at = path.resolve(userDir, file);
    let size: number;
    try {
      size = fs.statSync(at).size;
    } catch (e) {
      throw badInput('file', `${at}: cannot be read (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
    }
    if (size > MAX_FILE_BYTES) throw badInput('file', `${at}: ${size} bytes; at most ${MAX_FILE_BYTES}`);
    sources.push({ text: fs.readFileSync(at, 'utf8'), source: at });
  }
  if (!sources.length) throw badInput('xml', 'no message definitions: paste a Message Definition File, or give the path of one');
  return sources;
}

export default function register(RED: NodeAPI): void {
  function IotgwDefinitionsNode(this: Node, config: DefinitionsConfig) {
    RED.nodes.createNode(this, config);
    const node = this;
    let loaded: Definitions | GatewayError;
    try {
      const userDir = (RED.settings as { userDir?: string }).userDir ?? process.cwd();
      loaded = loadDefinitions(definitionSources(config, userDir));
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
