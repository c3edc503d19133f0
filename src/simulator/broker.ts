/**
 * Areas (b) and (c): the LoRaWAN broker and SMS API behind its API gateway.
 *
 * - Every route checks the `client_id` and `access_token` headers as the API gateway
 *   does, and answers 401 with the gateway's own body (a bare JSON string), not `{errors}`.
 *   The device list documents only Content-Type, but the same API gateway fronts it, so
 *   the simulator checks the headers there too (option `devicesRequireAuth`).
 * - Contracts: POST answers 201 `{message}` (Portuguese, as the real service); GET lists
 *   a plain array, filtered by name, customer and external ID, with paging.
 * - Referrals: DELETE by ID; a second delete of the same ID is a 404.
 * - Devices: an inventory of `deviceCount` devices generated on demand from their index
 *   (nothing per device is stored, so 100,000 cost no memory), served as Spring pages,
 *   wrapped in a one-element array (as the documentation shows) or bare (`wrapDevicePage`).
 * - SMS batches whose pending count falls over time.
 * - `{errors}` bodies: 400 missing or bad parameter, 403 another client's resource,
 *   404 missing resource, 500 internal error (inject it with a fault).
 *
 * Paging follows the sibling endpoints: `page` 1-based (option `firstPage`), `pageSize`;
 * the returned `pageable.pageNumber` and `number` are 0-based. Aliases users may send are
 * accepted for every parameter (see ALIASES).
 *
 * The area is cut by role: broker-model.ts (options, names, parameters), broker-access.ts
 * (headers, OAuth tokens), broker-contracts.ts (contracts, referrals), broker-devices.ts
 * (the inventory and its pages) and broker-sms.ts (SMS batches); this class wires them and
 * keeps the methods tests call.
 */
import type { SimServer, SimReply, SimRequest } from './server';
import { json } from './server';
import type { SimArea } from './area';
import { BrokerAccess } from './broker-access';
import { createContract, deleteReferral, listContracts, seedContracts, type Contract, type ContractStore } from './broker-contracts';
import { device, listDevices } from './broker-devices';
import { DEFAULT_BROKER_OPTIONS, type BrokerCounters, type BrokerOptions } from './broker-model';
import { SmsBatches } from './broker-sms';

export { ALIASES, DEFAULT_BROKER_OPTIONS, FOREIGN_CUSTOMER, FOREIGN_SMS_BATCH, STUCK_SMS_BATCH } from './broker-model';
export type { BrokerOptions } from './broker-model';

export class BrokerApi implements SimArea, ContractStore {
  options: BrokerOptions;
  contracts: Contract[] = [];
  deletedReferrals = new Set<number>();
  readonly counters: BrokerCounters = { unauthorized: 0, contractsCreated: 0, referralsDeleted: 0, devicePages: 0, smsLookups: 0 };
  now: () => number = Date.now;
  private readonly access = new BrokerAccess(this);
  private readonly smsBatches = new SmsBatches(this);
  /** While set, device list requests wait for it (tests use it to hold requests in flight). */
  private gate: Promise<void> | undefined;
  private openGate: (() => void) | undefined;

  constructor(options: Partial<BrokerOptions> = {}) {
    this.options = { ...DEFAULT_BROKER_OPTIONS, ...options };
    this.reset();
  }

  /** SMS batches by ID. */
  get sms(): SmsBatches['batches'] {
    return this.smsBatches.batches;
  }

  /** Tokens the OAuth endpoint issued and refused. */
  get tokenCounters(): BrokerAccess['tokenCounters'] {
    return this.access.tokenCounters;
  }

  configure(options: Partial<BrokerOptions>): void {
    this.options = { ...this.options, ...options };
  }

  /** Seeds contracts and SMS batches afresh. */
  reset(): void {
    this.contracts = seedContracts(this.options);
    this.deletedReferrals.clear();
    this.smsBatches.reset();
  }

  /** Adds an SMS batch; returns its ID. */
  addSmsBatch(b: { total: number; msPerMessage?: number; failEvery?: number; createdAt?: number; owner?: string }): number {
    return this.smsBatches.add(b);
  }

  /** Device i of the inventory, computed from its index. */
  device(i: number): Record<string, unknown> {
    return device(this.options, i);
  }

  /** Holds every device-list request until `release()`. */
  hold(): void {
    if (!this.gate) this.gate = new Promise((r) => (this.openGate = r));
  }

  release(): void {
    this.openGate?.();
    this.gate = undefined;
    this.openGate = undefined;
  }

  stop(): void {
    this.release();
  }

  state(): unknown {
    return { options: this.options, counters: this.counters, contracts: this.contracts.length, smsBatches: this.sms.size };
  }

  mount(sim: SimServer): void {
    // `(.*?)` before the route must be exactly `options.basePath` (strict, as the real host).
    const at = (method: string, rest: string, name: string, h: (r: SimRequest) => SimReply | Promise<SimReply>) =>
      sim.route(method, new RegExp(`^(.*?)/${rest}/?$`), name, (r) => {
        if ((r.params[0] ?? '') !== this.options.basePath.replace(/\/+$/, '')) return json(404, { errors: `Recurso ${r.path} não encontrado` });
        return h(r);
      });
    const guard = (h: (r: SimRequest) => SimReply | Promise<SimReply>) => (r: SimRequest) => this.access.guard(r, () => h(r));
    at('POST', 'oauth/access-token', 'broker/token', (r) => this.access.token(r));
    at('POST', 'lorawan/broker/contract', 'broker/contract-create', guard((r) => createContract(this, r)));
    at('GET', 'lorawan/broker/contract', 'broker/contract-list', guard((r) => listContracts(this, r)));
    at('DELETE', 'lorawan/broker/referrals', 'broker/referrals', guard((r) => deleteReferral(this, r)));
    at('GET', 'lorawan/broker/devices', 'broker/devices', (r) => (this.options.devicesRequireAuth ? guard((q) => this.devices(q))(r) : this.devices(r)));
    at('GET', 'sms/request', 'sms/request', guard((r) => this.smsBatches.request(r)));
    sim.route('POST', /^\/_sim\/sms-batches$/, '_sim/sms-batches', (r) => this.smsBatches.simAdd(r));
  }

  /** The device list, once the gate (if any) opens. */
  private async devices(r: SimRequest): Promise<SimReply> {
    if (this.gate) await this.gate;
    return listDevices(this, r);
  }
}
