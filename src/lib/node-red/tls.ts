/**
 * TLS options from a core `tls-config` node, for any config node of the package.
 * Verification stays on unless that node turns it off, and then it is warned about
 * at every start: it is never off silently.
 */
import type { Node, NodeAPI } from 'node-red';
import type { TlsOptions } from '../transport/http';

interface TlsConfigNode extends Node {
  addTLSOptions(opts: Record<string, unknown>): void;
}

export function tlsFromConfigNode(RED: NodeAPI, owner: Node, tlsId: string | undefined, label: string): TlsOptions | undefined {
  if (!tlsId) return undefined;
  const tlsNode = RED.nodes.getNode(tlsId) as TlsConfigNode | null;
  if (!tlsNode || typeof tlsNode.addTLSOptions !== 'function') return undefined;
  const opts: Record<string, unknown> = {};
  tlsNode.addTLSOptions(opts);
  if (opts.rejectUnauthorized === false) {
    owner.warn(
      `${label}: the selected TLS configuration turns server certificate verification OFF. ` +
        'Anyone on the network path can read the credentials. Tick "Verify server certificate" in the TLS node.',
    );
  }
  return opts as TlsOptions;
}
