/**
 * What the config dialogs' "test connection" buttons share (issue 26): the dialog's values
 * as the runtime reads them, and one result, timed, that never carries a credential.
 *
 * Who may borrow what (issue 34): a posted field left as it is (`__PWRD__`, a password
 * field the user did not touch) stands for a stored secret only of a deployed node of the
 * route's own type, and only when the test goes to that node's deployed base URL with its
 * deployed TLS setting: any other address needs the secret typed again. `${VAR}` in a
 * posted field resolves only for a user who may deploy (permission `flows.write`).
 */
import type { Node, NodeAPI } from 'node-red';
import { GatewayError, MESSAGE_MAX, quote, toGatewayError } from '../common/errors';
import { redactText } from '../transport/redact';
import { resolveCredential } from './node-kit';
import { CALLER, type TestCaller } from './test-caller';

export { CALLER, type TestCaller } from './test-caller';

/** What a test answers to the dialog. */
export interface TestConnectionResult {
  ok: boolean;
  /** The error code when not ok (BAD_INPUT, UNAUTHORIZED, NOT_FOUND, NETWORK, INTERNAL, ...). */
  code?: string;
  /** What happened, credential-free. */
  message: string;
  ms: number;
}

/** What a dialog posts: the config node's id (its stored credentials) and the values shown. */
export interface DialogValues<K extends string> {
  id?: unknown;
  tls?: unknown;
  credentials?: Partial<Record<K, unknown>> | unknown;
  [CALLER]?: TestCaller;
}

/** What a password field of the editor holds when the user left the stored value as it is. */
const UNCHANGED = '__PWRD__';
const ENV_VALUE = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/;
/** The longest posted value read (a URL, a token, a password); a longer one is refused, never quoted. */
export const VALUE_MAX = 8192;

/** A deployed value as the node reads it: trimmed text, `${ENV_VAR}` from the environment. */
function deployedValue(v: unknown): string {
  const s = typeof v === 'string' ? v.trim() : typeof v === 'number' || typeof v === 'boolean' ? String(v) : '';
  const m = ENV_VALUE.exec(s);
  return m ? (process.env[m[1]!] ?? '') : s;
}

/** Reads the values of one posted dialog, under the caller's rights (none without a caller). */
export class Dialog<K extends string> {
  private readonly caller: TestCaller | undefined;

  constructor(
    private readonly RED: NodeAPI,
    private readonly req: DialogValues<K>,
  ) {
    this.caller = req[CALLER];
  }

  /** Posted field `field` as the runtime would read it: text, trimmed, `${VAR}` only for a user who may deploy. */
  value(field: string): string {
    return this.env(field, this.text(field, (this.req as Record<string, unknown>)[field]).trim());
  }

  /**
   * The dialog's credential reader for a test of `postedBase`. A field posted as __PWRD__ is
   * the stored secret of the posted node, when that node is a deployed node of the route's
   * type and `baseOf` (the node type's settings, over a reader of its deployed values) gives
   * `postedBase`, and the TLS setting is the deployed one; otherwise BAD_INPUT naming the field.
   */
  credentials(postedBase: string, baseOf: (deployed: (key: string) => string) => string): (k: K) => string {
    const posted = this.req.credentials;
    if (posted !== undefined && posted !== null && (typeof posted !== 'object' || Array.isArray(posted))) {
      throw new GatewayError('BAD_INPUT', 'credentials: must be an object of text fields', { field: 'credentials' });
    }
    const creds = (posted ?? {}) as Record<string, unknown>;
    let stored: ((k: K) => string) | undefined;
    return (k) => {
      const field = `credentials.${k}`;
      const v = this.text(field, Object.prototype.hasOwnProperty.call(creds, k) ? creds[k] : undefined);
      if (v !== UNCHANGED) return this.env(field, v.trim());
      stored ??= this.stored(field, postedBase, baseOf);
      return stored(k);
    };
  }

  private text(field: string, v: unknown): string {
    if (v === undefined || v === null) return '';
    if (typeof v === 'number' || typeof v === 'boolean') return String(v);
    if (typeof v !== 'string') {
      throw new GatewayError('BAD_INPUT', `${field}: must be text, not ${Array.isArray(v) ? 'an array' : typeof v}`, { field });
    }
    if (v.length > VALUE_MAX) throw new GatewayError('BAD_INPUT', `${field}: ${v.length} characters, at most ${VALUE_MAX} are read`, { field });
    return v;
  }

  private env(field: string, s: string): string {
    const m = ENV_VALUE.exec(s);
    if (!m) return s;
    if (!this.caller?.mayDeploy) {
      throw new GatewayError('FORBIDDEN', `${field}: \${${m[1]}} is resolved only for a user who may deploy (permission flows.write); type the value itself to test it`, { field });
    }
    return process.env[m[1]!] ?? '';
  }

  /** The stored credentials of the posted node, when this test may use them (see credentials()). */
  private stored(field: string, postedBase: string, baseOf: (deployed: (key: string) => string) => string): (k: K) => string {
    const type = this.caller?.type ?? 'config';
    const id = typeof this.req.id === 'string' ? this.req.id : '';
    const again = 'type the secret again to test';
    let raw: Record<string, unknown> | undefined;
    if (id && this.caller) this.RED.nodes.eachNode((n) => void (n.id === id && (raw = n as unknown as Record<string, unknown>)));
    const live = raw ? (this.RED.nodes.getNode(id) as (Node & { settings?: { baseUrl?: unknown } }) | null) : null;
    if (!raw || !live || raw.type !== type || live.type !== type) {
      throw new GatewayError('BAD_INPUT', `${field}: left as it is, but no deployed ${type} node with this id holds a stored secret; ${again}`, { field });
    }
    const deployed = raw;
    let base: string | undefined;
    try {
      base = baseOf((key) => deployedValue(deployed[key]));
    } catch {
      base = undefined;
    }
    if (base === undefined || base !== live.settings?.baseUrl || base !== postedBase) {
      throw new GatewayError('BAD_INPUT', `${field}: left as it is, but the base URL is not the deployed one; a stored secret goes only to the deployed base URL: ${again} this address`, { field });
    }
    if (deployedValue(deployed.tls) !== this.value('tls')) {
      throw new GatewayError('BAD_INPUT', `${field}: left as it is, but the TLS setting is not the deployed one; a stored secret goes only with the deployed TLS setting: ${again} with this one`, { field });
    }
    const creds = (this.RED.nodes.getCredentials(id) ?? {}) as Record<string, unknown>;
    return (k) => resolveCredential(this.RED, live, creds[k]);
  }
}

/** One test's result: timed from its start, every secret given cut out of the text once more. */
export class ConnectionTest {
  private readonly started = Date.now();
  private secrets: string[] = [];

  /** Secrets to cut out of the result (those shorter than 4 characters cannot be told from text). */
  hide(...secrets: string[]): void {
    this.secrets = [...this.secrets, ...secrets].filter((x) => x.length >= 4).sort((a, b) => b.length - a.length);
  }

  result(ok: boolean, message: string, code?: string): TestConnectionResult {
    return { ok, ...(code ? { code } : {}), message: quote(redactText(message, this.secrets), MESSAGE_MAX), ms: Date.now() - this.started };
  }

  /** A failure as the nodes report it: its code and message; what is not a GatewayError is INTERNAL. */
  failed(err: unknown): TestConnectionResult {
    const ge = toGatewayError(err);
    return this.result(false, ge.message, ge.code);
  }
}
