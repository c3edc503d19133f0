/**
 * What the config dialogs' "test connection" buttons share (issue 26): the dialog's values
 * as the runtime reads them (`${ENV_VAR}` substituted, a password field left as it is
 * standing for the deployed node's stored credential), and one result, timed, that never
 * carries a credential.
 */
import type { NodeAPI } from 'node-red';
import { GatewayError } from '../common/errors';
import { redactText } from '../transport/redact';

/** What a test answers to the dialog. */
export interface TestConnectionResult {
  ok: boolean;
  /** The error code when not ok (BAD_INPUT, UNAUTHORIZED, NOT_FOUND, NETWORK, ...). */
  code?: string;
  /** What happened, credential-free. */
  message: string;
  ms: number;
}

/** What a dialog posts: the config node's id (its stored credentials) and the values shown. */
export interface DialogValues<K extends string> {
  id?: string;
  tls?: string;
  credentials?: Partial<Record<K, string>>;
}

/** What a password field of the editor holds when the user left the stored value as it is. */
const UNCHANGED = '__PWRD__';
const ENV_VALUE = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/;

/** A dialog value as the runtime would read it: trimmed, `${ENV_VAR}` from the environment. */
export function envValue(v: unknown): string {
  const s = typeof v === 'string' ? v.trim() : v === undefined || v === null ? '' : String(v);
  const m = ENV_VALUE.exec(s);
  return m ? process.env[m[1]!] ?? '' : s;
}

/** Reads credential `k` of the dialog: `__PWRD__` is the stored one of node `req.id` (none without an id). */
export function dialogCredentials<K extends string>(RED: NodeAPI, req: DialogValues<K>): (k: K) => string {
  const stored: Partial<Record<K, string>> = (req.id ? (RED.nodes.getCredentials(req.id) as Partial<Record<K, string>> | undefined) : undefined) ?? {};
  return (k) => {
    const v = req.credentials?.[k];
    return envValue(v === UNCHANGED ? stored[k] : v);
  };
}

/** One test's result: timed from its start, every secret given cut out of the text once more. */
export class ConnectionTest {
  private readonly started = Date.now();
  private readonly secrets: string[];

  constructor(secrets: string[]) {
    this.secrets = secrets.filter((x) => x.length >= 4).sort((a, b) => b.length - a.length);
  }

  result(ok: boolean, message: string, code?: string): TestConnectionResult {
    return { ok, ...(code ? { code } : {}), message: redactText(message, this.secrets), ms: Date.now() - this.started };
  }

  /** A failure as the nodes report it: its code and message. */
  failed(err: unknown): TestConnectionResult {
    const ge = err instanceof GatewayError ? err : new GatewayError('NETWORK', String((err as Error)?.message ?? err));
    return this.result(false, ge.message, ge.code);
  }
}
