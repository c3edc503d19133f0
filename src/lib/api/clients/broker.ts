/**
 * The LoRaWAN broker and SMS API (areas b, c) without Node-RED: `BrokerClient`, built on an
 * account of its own, through the same request path (`brokerRequest`), input checks and
 * reply schemas as the broker nodes.
 */
import { badInput } from '../../common/errors';
import { showValue } from '../../common/int64';
import { checkBaseUrl, type ApiClient, type AuthProvider, type Query } from '../../transport/http';
import { trimBase } from '../../transport/endpoints';
import { StaticHeaders, TokenHeaders, oauthClientCredentials, type CachedToken } from '../../account/auth';
import type { Account } from '../../account/account';
import {
  PATHS,
  brokerRequest,
  checkContractBody,
  checkDevEui,
  checkView,
  contractList,
  contractListQuery,
  defined,
  devicePageReply,
  messageReply,
  optionalInt,
  paramName,
  positiveId,
  redactDevice,
  smsEnvelope,
  type BrokerContext,
  type ContractCreate,
  type ContractFilters,
  type DevicePage,
  type SmsEnvelope,
} from '../broker';
import { parseReply } from '../terminal';
import type { Infer } from '../../common/schema';
import { clientAccount, closedError, commonLimits, optionsObject, requiredText, textOption, type CommonClientOptions } from './options';

/** Options of a BrokerClient: the broker's base URL (the gateway's, or the API gateway's) and its credentials. */
export interface BrokerClientOptions extends Omit<CommonClientOptions, 'rateLimitCalls' | 'rateLimitWindowMs'> {
  /** The broker client ID (`client_id` header). */
  clientId: string;
  /** An access token as issued (`access_token` header)... */
  accessToken?: string;
  /** ...or a client secret and the OAuth token URL to fetch (and renew) it from. */
  clientSecret?: string;
  tokenUrl?: string;
}

export type Contract = Infer<typeof contractList>[number];
export type BrokerMessage = Infer<typeof messageReply>;
export type { ContractCreate, ContractFilters, DevicePage, SmsEnvelope };

/** Filters and paging of the device list (endpoint 8). */
export interface DeviceQuery {
  customerId?: number | string;
  /** 16 hex digits. */
  devEui?: string;
  /** true: the receivable view, false: the payable view. */
  receivable?: boolean;
  /** The page as the service numbers it (default 1). */
  page?: number | string;
  pageSize?: number | string;
  /** Keep the devices' session keys (default: removed). */
  includeKeys?: boolean;
  /** The names of the paging parameters (default `page`, `pageSize`). */
  pageParam?: string;
  pageSizeParam?: string;
  query?: Query;
  signal?: AbortSignal;
}

interface CallOpts {
  query?: Query;
  signal?: AbortSignal;
}

/**
 * The LoRaWAN broker and SMS API for Node.js: contracts, referrals, the device inventory and
 * SMS send requests. Inputs are checked before any request (GatewayError BAD_INPUT naming
 * the field); replies are checked (BAD_RESPONSE); device session keys are removed unless
 * asked for. Call `close()` when done.
 */
export class BrokerClient implements BrokerContext {
  private readonly account: Account;
  private token: CachedToken | undefined;
  private closed = false;

  constructor(options: BrokerClientOptions) {
    const opts = optionsObject(options, 'BrokerClient');
    const baseUrl = trimBase(requiredText(opts, 'baseUrl', 'the broker address (https://host)'));
    const limits = commonLimits({ ...opts, rateLimitCalls: 0 }, { timeoutMs: 65_000, rateLimitCalls: 0, rateLimitWindowMs: 0, maxConcurrent: 3 });
    const clientId = requiredText(opts, 'clientId', 'the broker client ID');
    const accessToken = textOption(opts, 'accessToken');
    const secret = textOption(opts, 'clientSecret');
    const tokenUrl = textOption(opts, 'tokenUrl');
    if (!accessToken && !(secret && tokenUrl)) throw badInput('credentials', 'give accessToken, or clientSecret and tokenUrl');
    if (tokenUrl) checkBaseUrl(tokenUrl, 'tokenUrl'); // a bad URL fails here, not at the first request
    this.account = clientAccount({
      kind: 'gateway',
      label: `broker ${new URL(baseUrl).host}`,
      baseUrl,
      ...limits,
      principal: clientId,
      auth: {
        broker: (): AuthProvider => {
          if (secret && tokenUrl) {
            this.token ??= oauthClientCredentials({ tokenUrl, clientId, clientSecret: secret, timeoutMs: limits.timeoutMs, tls: limits.tls });
            return new TokenHeaders(this.token, (t) => ({ client_id: clientId, access_token: t }), (h) => h.access_token, 'Check the broker client ID, client secret and token URL.');
          }
          return new StaticHeaders({ client_id: clientId, access_token: accessToken! }, 'Check the broker client ID and access token.');
        },
      },
    });
  }

  brokerClient(): ApiClient {
    if (this.closed) throw closedError('BrokerClient');
    return this.account.client();
  }

  brokerAuth(): AuthProvider {
    return this.account.auth('broker');
  }

  /** Creates a contract (endpoint 4); every bad field of `body` is reported at once, before any request. */
  async createContract(body: ContractCreate, o: CallOpts = {}): Promise<BrokerMessage> {
    const checked = checkContractBody(body, 'body');
    const res = await brokerRequest(this, { method: 'POST', path: PATHS.contract, body: checked, query: o.query, idempotent: false, signal: o.signal });
    return parseReply(messageReply, res.body, `POST ${PATHS.contract}`);
  }

  /** Lists contracts (endpoint 5), filtered and paged. */
  async listContracts(filters: ContractFilters = {}, o: CallOpts = {}): Promise<Contract[]> {
    const query = { ...defined(contractListQuery(filters, undefined)), ...o.query };
    const res = await brokerRequest(this, { method: 'GET', path: PATHS.contract, query, idempotent: true, signal: o.signal });
    return parseReply(contractList, res.body, `GET ${PATHS.contract}`);
  }

  /** Removes a forwarding action (referral) by ID (endpoint 7); `idParam` names its query parameter (default `id`). */
  async removeReferral(id: number | string | bigint, o: CallOpts & { idParam?: string } = {}): Promise<BrokerMessage> {
    const query = { [paramName(o.idParam, 'id', 'idParam')]: positiveId(id, 'id', 'the referral ID'), ...o.query };
    const res = await brokerRequest(this, { method: 'DELETE', path: PATHS.referrals, query, idempotent: false, signal: o.signal });
    return parseReply(messageReply, res.body, `DELETE ${PATHS.referrals}`);
  }

  /** One page of the device inventory (endpoint 8), the documented array or bare page accepted. */
  async devices(q: DeviceQuery = {}): Promise<DevicePage> {
    if (q.receivable !== undefined && typeof q.receivable !== 'boolean') throw badInput('receivable', `must be true or false, not ${showValue(q.receivable)}`);
    const query = {
      ...defined({
        customerId: optionalInt(q.customerId, 'customerId', 1),
        devEui: checkDevEui(q.devEui, 'devEui'),
        receivable: checkView(q.receivable, 'receivable'),
      }),
      [paramName(q.pageParam, 'page', 'pageParam')]: optionalInt(q.page, 'page', 0) ?? 1,
      [paramName(q.pageSizeParam, 'pageSize', 'pageSizeParam')]: optionalInt(q.pageSize, 'pageSize', 1, 100000) ?? 100,
      ...q.query,
    };
    const res = await brokerRequest(this, { method: 'GET', path: PATHS.devices, query, idempotent: true, signal: q.signal });
    const page = parseReply(devicePageReply, res.body, `GET ${PATHS.devices}`);
    return q.includeKeys ? page : { ...page, content: page.content.map(redactDevice) };
  }

  /** An SMS send request (batch) with its counters (endpoint 6); `idParam` names the ID's parameter (default `id`). */
  async smsRequest(id: number | string | bigint, o: CallOpts & { idParam?: string } = {}): Promise<SmsEnvelope> {
    const query = { [paramName(o.idParam, 'id', 'idParam')]: positiveId(id, 'id', 'the SMS batch ID'), ...o.query };
    const res = await brokerRequest(this, { method: 'GET', path: PATHS.sms, query, idempotent: true, signal: o.signal });
    return parseReply(smsEnvelope, res.body, `GET ${PATHS.sms}`);
  }

  /** Ends the client's connections (and its token endpoint's); the client refuses requests after. */
  async close(): Promise<void> {
    this.closed = true;
    const token = this.token;
    this.token = undefined;
    await Promise.allSettled([this.account.close(), token?.close()]);
  }
}
