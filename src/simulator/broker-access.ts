/**
 * Areas (b) and (c), who may call: the API gateway's `client_id` and `access_token` checks
 * (401 with its bare JSON string body) and its OAuth token endpoint (client credentials,
 * the client authenticated by Basic or in the form; tokens that may end before they say).
 */
import type { SimReply, SimRequest } from './server';
import { json } from './server';
import type { BrokerContext } from './broker-model';

export class BrokerAccess {
  /** Tokens issued by the OAuth endpoint, with the time they really end. */
  private issued = new Map<string, number>();
  readonly tokenCounters = { issued: 0, refused: 0 };

  constructor(private readonly ctx: BrokerContext) {}

  async guard(r: SimRequest, handle: () => SimReply | Promise<SimReply>): Promise<SimReply> {
    const o = this.ctx.options;
    // The API gateway checks the client ID first, then the access token; its body is a bare JSON string.
    if (r.headers.client_id !== o.clientId) {
      this.ctx.counters.unauthorized++;
      return json(401, 'Client Id in the request, identified by HEADER client_id, is invalid. Check docs.sensedia.com');
    }
    const tok = String(r.headers.access_token ?? '');
    const issued = this.issued.get(tok);
    const valid = (o.staticTokenValid && tok === o.accessToken) || (issued !== undefined && issued > this.ctx.now());
    if (!valid) {
      this.ctx.counters.unauthorized++;
      return json(401, 'Access Token in the request, identified by HEADER access_token, is invalid. Check docs.sensedia.com');
    }
    return handle();
  }

  /** The API gateway's OAuth endpoint: client_credentials, client authenticated by Basic or in the form. */
  token(r: SimRequest): SimReply {
    const o = this.ctx.options;
    const ct = String(r.headers['content-type'] ?? '');
    if (!ct.startsWith('application/x-www-form-urlencoded')) return json(400, { error: 'invalid_request', error_description: 'form-encoded body expected' });
    const form = new URLSearchParams(r.text);
    if (form.get('grant_type') !== 'client_credentials') return json(400, { error: 'unsupported_grant_type' });
    let id = form.get('client_id') ?? '';
    let secret = form.get('client_secret') ?? '';
    const basic = /^Basic\s+(\S+)$/i.exec(String(r.headers.authorization ?? ''));
    if (basic) {
      const [u, ...p] = Buffer.from(basic[1]!, 'base64').toString('utf8').split(':');
      id = decodeURIComponent(u ?? '');
      secret = decodeURIComponent(p.join(':'));
    }
    if (id !== o.clientId || secret !== o.clientSecret) {
      this.tokenCounters.refused++;
      return json(401, { error: 'invalid_client' });
    }
    const token = `brk_${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
    const life = o.tokenLifetimeMs > 0 ? o.tokenLifetimeMs : o.tokenExpiresIn * 1000;
    this.issued.set(token, this.ctx.now() + life);
    this.tokenCounters.issued++;
    return json(201, { access_token: token, token_type: 'access_token', expires_in: o.tokenExpiresIn });
  }
}
