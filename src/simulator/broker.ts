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
 */
import type { SimServer, SimReply, SimRequest } from './server';
import { json } from './server';
import type { SimArea } from './area';

export interface BrokerOptions {
  clientId: string;
  accessToken: string;
  /** Devices in the inventory (generated on demand). */
  deviceCount: number;
  /** Customers 1..customers own the devices, round robin. */
  customers: number;
  /** Wrap the device page in a one-element array, as the documentation shows. */
  wrapDevicePage: boolean;
  /** Check client_id / access_token on the device list too. */
  devicesRequireAuth: boolean;
  /** Number of the first page (1 as the sibling endpoints; 0 for zero-based). */
  firstPage: number;
  defaultPageSize: number;
  /** Larger page sizes are capped silently, as Spring does. */
  maxPageSize: number;
  contracts: number;
  referrals: number;
  /** Time for one SMS of the seeded draining batch to leave the pending state. */
  smsMsPerMessage: number;
  /** A query string longer than this is refused with `{valueInBytes}`. */
  maxQueryBytes: number;
}

export const DEFAULT_BROKER_OPTIONS: BrokerOptions = {
  clientId: 'sim-client',
  accessToken: 'sim-access-token',
  deviceCount: 2500,
  customers: 5,
  wrapDevicePage: true,
  devicesRequireAuth: true,
  firstPage: 1,
  defaultPageSize: 20,
  maxPageSize: 1000,
  contracts: 45,
  referrals: 500,
  smsMsPerMessage: 200,
  maxQueryBytes: 1024,
};

/** A customer that exists but belongs to another client (403). */
export const FOREIGN_CUSTOMER = 900;
/** An SMS batch of another client (403). */
export const FOREIGN_SMS_BATCH = 4;
/** An SMS batch whose pending count never falls. */
export const STUCK_SMS_BATCH = 3;

/** Accepted names of each parameter, ours first. */
export const ALIASES = {
  page: ['page', 'pageNumber', 'pagina'],
  pageSize: ['pageSize', 'size', 'perPage', 'per_page', 'limit'],
  customerId: ['customerId', 'customer', 'idCustomer', 'customer_id', 'clienteId'],
  planDesc: ['planDesc', 'name', 'contractName', 'plan'],
  externalId: ['externalId', 'external_id', 'idExternal'],
  receivable: ['receivable', 'isReceivable', 'receivableView', 'recebivel'],
  devEui: ['devEui', 'deveui', 'dev_eui', 'devEUI'],
  referralId: ['id', 'referralId', 'idReferral', 'referral_id', 'idEncaminhamento'],
  smsId: ['id', 'batchId', 'requestId', 'smsRequestId', 'idRequest'],
} as const;

const EUI_BASE = 0x70b3d5e75e000000n;
const CUSTOMER_NAMES = ['Cliente Alfa', 'Cliente Beta', 'Cliente Gama', 'Cliente Delta', 'Cliente Épsilon'];

interface Contract {
  id: number;
  customer: { id: number; name: string };
  planDesc: string;
  status: string;
  uplinkCount: number;
  downlinkCount: number;
  activationPrice: string;
  excessUplinkPrice: string;
  excessDownlinkPrice: string;
  loyaltyType: null;
  loyaltyTime: null;
  penalty: null;
  externalId: string;
  createdAt: string;
  createdBy: string;
  sharingType: number;
  monthlyFee: string;
  nbVirtualAccounts: number;
}

interface SmsBatch {
  id: number;
  total: number;
  createdAt: number;
  /** ms per message leaving pending; Infinity = never. */
  msPerMessage: number;
  /** Every n-th processed message fails (0 = none). */
  failEvery: number;
  owner: string;
}

function hex(n: bigint, digits: number): string {
  return n.toString(16).padStart(digits, '0').slice(-digits);
}

/** A deterministic 128-bit-looking key for device i (not random, not secret: a simulator). */
function sessionKey(i: number, salt: number): string {
  let x = BigInt(i + 1) * 0x9e3779b97f4a7c15n + BigInt(salt);
  let out = '';
  for (let k = 0; k < 2; k++) {
    x = (x ^ (x >> 31n)) * 0xbf58476d1ce4e5b9n;
    x &= (1n << 64n) - 1n;
    out += hex(x, 16);
  }
  return out;
}

function isoNoZone(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19);
}

export class BrokerApi implements SimArea {
  options: BrokerOptions;
  contracts: Contract[] = [];
  deletedReferrals = new Set<number>();
  sms = new Map<number, SmsBatch>();
  readonly counters = { unauthorized: 0, contractsCreated: 0, referralsDeleted: 0, devicePages: 0, smsLookups: 0 };
  now: () => number = Date.now;
  /** While set, device list requests wait for it (tests use it to hold requests in flight). */
  private gate: Promise<void> | undefined;
  private openGate: (() => void) | undefined;
  private nextSmsId = 1;

  constructor(options: Partial<BrokerOptions> = {}) {
    this.options = { ...DEFAULT_BROKER_OPTIONS, ...options };
    this.reset();
  }

  configure(options: Partial<BrokerOptions>): void {
    this.options = { ...this.options, ...options };
  }

  /** Seeds contracts and SMS batches afresh. */
  reset(): void {
    const o = this.options;
    const t0 = Date.UTC(2024, 10, 5, 16, 12, 27);
    this.contracts = [];
    for (let i = 1; i <= o.contracts; i++) {
      const c = ((i - 1) % 3) + 1;
      this.contracts.push({
        id: i,
        customer: { id: c, name: CUSTOMER_NAMES[c - 1]! },
        planDesc: `Plano LoRa ${i % 2 ? 'Básico' : 'Avançado'} ${i}`,
        status: 'ACTIVE',
        uplinkCount: 1000 * i,
        downlinkCount: 100 * i,
        activationPrice: '10.00',
        excessUplinkPrice: '0.01',
        excessDownlinkPrice: '0.05',
        loyaltyType: null,
        loyaltyTime: null,
        penalty: null,
        externalId: `EXT-${String(i).padStart(4, '0')}`,
        createdAt: isoNoZone(t0 + i * 86_400_000),
        createdBy: o.clientId,
        sharingType: i % 2,
        monthlyFee: (19.9 + i).toFixed(2),
        nbVirtualAccounts: i % 4,
      });
    }
    this.deletedReferrals.clear();
    this.sms.clear();
    this.nextSmsId = 1;
    const now = this.now();
    this.addSmsBatch({ total: 100, createdAt: now - 86_400_000, failEvery: 10 }); // 1: processed
    this.addSmsBatch({ total: 20, msPerMessage: o.smsMsPerMessage, failEvery: 5 }); // 2: draining
    this.addSmsBatch({ total: 50, msPerMessage: Infinity }); // 3: stuck
    this.addSmsBatch({ total: 5, createdAt: now - 86_400_000, owner: 'other-client' }); // 4: foreign
  }

  /** Adds an SMS batch; returns its ID. */
  addSmsBatch(b: { total: number; msPerMessage?: number; failEvery?: number; createdAt?: number; owner?: string }): number {
    const id = this.nextSmsId++;
    this.sms.set(id, {
      id,
      total: b.total,
      createdAt: b.createdAt ?? this.now(),
      msPerMessage: b.msPerMessage ?? this.options.smsMsPerMessage,
      failEvery: b.failEvery ?? 0,
      owner: b.owner ?? this.options.clientId,
    });
    return id;
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
    sim.route('POST', /^\/lorawan\/broker\/contract\/?$/, 'broker/contract-create', (r) => this.guard(r, () => this.createContract(r)));
    sim.route('GET', /^\/lorawan\/broker\/contract\/?$/, 'broker/contract-list', (r) => this.guard(r, () => this.listContracts(r)));
    sim.route('DELETE', /^\/lorawan\/broker\/referrals\/?$/, 'broker/referrals', (r) => this.guard(r, () => this.deleteReferral(r)));
    sim.route('GET', /^\/lorawan\/broker\/devices\/?$/, 'broker/devices', (r) =>
      this.options.devicesRequireAuth ? this.guard(r, () => this.listDevices(r)) : this.listDevices(r),
    );
    sim.route('GET', /^\/sms\/request\/?$/, 'sms/request', (r) => this.guard(r, () => this.smsRequest(r)));
    sim.route('POST', /^\/_sim\/sms-batches$/, '_sim/sms-batches', (r) => {
      let b: Record<string, unknown>;
      try {
        b = (r.text.trim() ? r.json() : {}) as Record<string, unknown>;
      } catch {
        return json(400, { error: 'JSON body expected' });
      }
      const total = Number(b.total ?? 10);
      if (!Number.isInteger(total) || total < 0) return json(400, { error: 'total must be a non-negative integer' });
      const id = this.addSmsBatch({ total, msPerMessage: b.msPerMessage === undefined ? undefined : Number(b.msPerMessage), failEvery: Number(b.failEvery ?? 0) });
      return json(200, { id });
    });
  }

  // ---- helpers ----

  private async guard(r: SimRequest, handle: () => SimReply | Promise<SimReply>): Promise<SimReply> {
    // The API gateway checks the client ID first, then the access token; its body is a bare JSON string.
    if (r.headers.client_id !== this.options.clientId) {
      this.counters.unauthorized++;
      return json(401, 'Client Id in the request, identified by HEADER client_id, is invalid. Check docs.sensedia.com');
    }
    if (r.headers.access_token !== this.options.accessToken) {
      this.counters.unauthorized++;
      return json(401, 'Access Token in the request, identified by HEADER access_token, is invalid. Check docs.sensedia.com');
    }
    return handle();
  }

  /** The first alias present, or undefined. */
  private param(r: SimRequest, name: keyof typeof ALIASES): string | undefined {
    for (const a of ALIASES[name]) {
      const v = r.query.get(a);
      if (v !== null) return v;
    }
    return undefined;
  }

  /** An integer parameter: undefined when absent, a reply when malformed. */
  private intParam(r: SimRequest, name: keyof typeof ALIASES, min: number): number | undefined | SimReply {
    const v = this.param(r, name);
    if (v === undefined || v === '') return undefined;
    if (!/^-?\d+$/.test(v.trim()) || Number(v) < min) return json(400, { errors: `Parâmetro ${name} inválido: ${v.slice(0, 40)}` });
    return Number(v);
  }

  private paging(r: SimRequest): { page: number; size: number } | SimReply {
    const page = this.intParam(r, 'page', this.options.firstPage);
    if (typeof page === 'object') return page;
    const size = this.intParam(r, 'pageSize', 1);
    if (typeof size === 'object') return size;
    return {
      page: (page ?? this.options.firstPage) - this.options.firstPage,
      size: Math.min(size ?? this.options.defaultPageSize, this.options.maxPageSize),
    };
  }

  private customerCheck(id: number): SimReply | undefined {
    if (id === FOREIGN_CUSTOMER) return json(403, { errors: `Acesso negado: o cliente ${id} não pertence a este client_id` });
    if (id < 1 || id > this.options.customers) return json(404, { errors: `Cliente ${id} não encontrado` });
    return undefined;
  }

  // ---- contracts ----

  private createContract(r: SimRequest): SimReply {
    let body: unknown;
    try {
      body = r.json();
    } catch {
      return json(400, { errors: 'Corpo da requisição inválido' });
    }
    if (!body || typeof body !== 'object' || Array.isArray(body)) return json(400, { errors: 'Corpo da requisição inválido' });
    const b = body as Record<string, unknown>;
    for (const k of ['customerId', 'planDesc']) {
      if (b[k] === undefined || b[k] === null || b[k] === '') return json(400, { errors: `Parâmetro ${k} não encontrado` });
    }
    const customerId = Number(b.customerId);
    const denied = this.customerCheck(customerId);
    if (denied) return denied;
    const id = this.contracts.length ? this.contracts[this.contracts.length - 1]!.id + 1 : 1;
    const money = (v: unknown) => Number(v ?? 0).toFixed(2);
    this.contracts.push({
      id,
      customer: { id: customerId, name: CUSTOMER_NAMES[customerId - 1] ?? `Cliente ${customerId}` },
      planDesc: String(b.planDesc),
      status: 'ACTIVE',
      uplinkCount: Number(b.uplinkCount ?? 0),
      downlinkCount: Number(b.downlinkCount ?? 0),
      activationPrice: money(b.activationPrice),
      excessUplinkPrice: money(b.excessUplinkPrice),
      excessDownlinkPrice: money(b.excessDownlinkPrice),
      loyaltyType: null,
      loyaltyTime: null,
      penalty: null,
      externalId: typeof b.externalId === 'string' ? b.externalId : `EXT-${String(id).padStart(4, '0')}`,
      createdAt: isoNoZone(this.now()),
      createdBy: this.options.clientId,
      sharingType: Number(b.sharingType ?? 0),
      monthlyFee: money(b.monthlyFee),
      nbVirtualAccounts: 0,
    });
    this.counters.contractsCreated++;
    return json(201, { message: `Contrato ${id} criado com sucesso` });
  }

  private listContracts(r: SimRequest): SimReply {
    const paging = this.paging(r);
    if ('status' in paging) return paging;
    const customer = this.intParam(r, 'customerId', 0);
    if (typeof customer === 'object') return customer;
    if (customer !== undefined) {
      const denied = this.customerCheck(customer);
      if (denied) return denied;
    }
    const name = this.param(r, 'planDesc')?.toLowerCase();
    const ext = this.param(r, 'externalId');
    const list = this.contracts.filter(
      (c) => (customer === undefined || c.customer.id === customer) && (!name || c.planDesc.toLowerCase().includes(name)) && (!ext || c.externalId === ext),
    );
    const start = paging.page * paging.size;
    return json(200, list.slice(start, start + paging.size));
  }

  // ---- referrals ----

  private deleteReferral(r: SimRequest): SimReply {
    const id = this.intParam(r, 'referralId', 1);
    if (typeof id === 'object') return id;
    if (id === undefined) return json(400, { errors: 'Parâmetro id não encontrado' });
    if (id > this.options.referrals || this.deletedReferrals.has(id)) return json(404, { errors: `Encaminhamento ${id} não encontrado` });
    this.deletedReferrals.add(id);
    this.counters.referralsDeleted++;
    return json(200, { message: `Encaminhamento ${id} removido com sucesso` });
  }

  // ---- devices ----

  /** Device i of the inventory, computed from its index. */
  device(i: number): Record<string, unknown> {
    const o = this.options;
    const c = (i % o.customers) + 1;
    const customer = { id: c, parentId: 0, name: CUSTOMER_NAMES[c - 1] ?? `Cliente ${c}` };
    const activated = Date.UTC(2024, 10, 5, 16, 12, 27) + i * 60_000;
    const otaa = i % 4 !== 3;
    return {
      id: 100_000 + i,
      idTerminal: 500_000 + i,
      devEui: hex(EUI_BASE + BigInt(i), 16),
      appEui: otaa ? hex(0x70b3d57ed0000000n + BigInt(c), 16) : null,
      tags: i % 3 === 0 ? ['sensor', `lote-${Math.floor(i / 100)}`] : [],
      activationType: otaa ? 'OTTA' : 'ABP',
      encryptionType: 'NS',
      devAddr: hex(0x26000000n + BigInt(i), 8),
      nwkskey: sessionKey(i, 1),
      appskey: sessionKey(i, 2),
      adrMode: 'ON',
      adrTxPower: 14,
      adrDatarate: i % 6,
      blockUplink: false,
      blockDownlink: i % 50 === 49,
      devClass: i % 10 === 0 ? 'C' : 'A',
      countersSize: 32,
      status: 'ACTIVE',
      activationDate: isoNoZone(activated),
      cancellationDate: null,
      customer,
      contract: `Plano LoRa ${c}`,
      virtualAccount: { id: 10 + c, idRMS: 7000 + c, name: `Conta virtual ${c}`, customer, uplinkCount: 1000, downlinkCount: 100 },
      virtualAccountId: 10 + c,
      uplinksConsumed: (i * 37) % 1000,
      downlinksConsumed: (i * 7) % 100,
      updatedAt: new Date(activated + 86_400_000).toISOString().slice(0, 10),
      product: 'Sensor LoRaWAN',
      description: `Dispositivo ${i + 1}`,
      dailyUplinkConsumption: (i * 13) % 144,
      dailyDownlinkConsumption: i % 5,
    };
  }

  /**
   * The filtered inventory as an index sequence: `count` devices, the k-th being device
   * `nth(k)`. Customer c owns devices i with i % C == c - 1; the payable view holds the
   * devices i with floor(i / C) even. Both are arithmetic, so no list is ever built.
   */
  private sequence(customer: number | undefined, payable: boolean): { count: number; nth: (k: number) => number } {
    const N = this.options.deviceCount;
    const C = this.options.customers;
    if (customer !== undefined) {
      const first = customer - 1;
      const owned = first < N ? Math.floor((N - 1 - first) / C) + 1 : 0;
      if (!payable) return { count: owned, nth: (k) => first + k * C };
      return { count: Math.ceil(owned / 2), nth: (k) => first + 2 * k * C };
    }
    if (!payable) return { count: N, nth: (k) => k };
    const count = Math.floor(N / (2 * C)) * C + Math.min(C, N % (2 * C));
    return { count, nth: (k) => Math.floor(k / C) * 2 * C + (k % C) };
  }

  private async listDevices(r: SimRequest): Promise<SimReply> {
    if (this.gate) await this.gate;
    const paging = this.paging(r);
    if ('status' in paging) return paging;
    const customer = this.intParam(r, 'customerId', 0);
    if (typeof customer === 'object') return customer;
    if (customer !== undefined) {
      const denied = this.customerCheck(customer);
      if (denied) return denied;
    }
    const view = this.param(r, 'receivable');
    if (view !== undefined && view !== 'true' && view !== 'false') return json(400, { errors: `Parâmetro receivable inválido: ${view.slice(0, 20)} (true ou false)` });
    const payable = view === 'false';
    const eui = this.param(r, 'devEui');
    let content: Array<Record<string, unknown>>;
    let total: number;
    if (eui !== undefined && eui !== '') {
      if (!/^[0-9a-fA-F]{16}$/.test(eui)) return json(400, { errors: `Parâmetro devEui inválido: ${eui.slice(0, 20)}` });
      const idx = Number(BigInt(`0x${eui}`) - EUI_BASE);
      const ok =
        idx >= 0 &&
        idx < this.options.deviceCount &&
        (customer === undefined || idx % this.options.customers === customer - 1) &&
        (!payable || Math.floor(idx / this.options.customers) % 2 === 0);
      if (!ok) return json(404, { errors: `Dispositivo ${eui.toLowerCase()} não encontrado` });
      total = 1;
      content = paging.page === 0 ? [this.device(idx)] : [];
    } else {
      const seq = this.sequence(customer, payable);
      total = seq.count;
      content = [];
      const start = paging.page * paging.size;
      for (let k = start; k < Math.min(total, start + paging.size); k++) content.push(this.device(seq.nth(k)));
    }
    this.counters.devicePages++;
    const totalPages = Math.ceil(total / paging.size);
    const sort = { sorted: false, unsorted: true, empty: true };
    const page = {
      content,
      pageable: { sort, pageNumber: paging.page, pageSize: paging.size, offset: paging.page * paging.size, paged: true, unpaged: false },
      totalElements: total,
      totalPages,
      last: paging.page >= totalPages - 1,
      sort,
      first: paging.page === 0,
      numberOfElements: content.length,
      size: paging.size,
      number: paging.page,
      empty: content.length === 0,
    };
    return json(200, this.options.wrapDevicePage ? [page] : page);
  }

  // ---- SMS ----

  private smsRequest(r: SimRequest): SimReply {
    const qs = Buffer.byteLength(r.query.toString());
    if (qs > this.options.maxQueryBytes) return json(400, { valueInBytes: qs });
    const id = this.intParam(r, 'smsId', 1);
    if (typeof id === 'object') return id;
    if (id === undefined) return json(400, { errors: 'Parâmetro id não encontrado' });
    const b = this.sms.get(id);
    if (!b) return json(404, { errors: `Requisição de SMS ${id} não encontrada` });
    if (b.owner !== this.options.clientId) return json(403, { errors: 'Acesso negado ao recurso' });
    this.counters.smsLookups++;
    const now = this.now();
    const done = Number.isFinite(b.msPerMessage) ? Math.min(b.total, b.msPerMessage <= 0 ? b.total : Math.floor((now - b.createdAt) / b.msPerMessage)) : 0;
    const pending = b.total - done;
    const errors = b.failEvery > 0 ? Math.floor(done / b.failEvery) : 0;
    const iso = (ms: number) => new Date(ms).toISOString();
    return json(200, {
      sendSmsRequest: {
        id: b.id,
        from: 'SIM',
        message: `Mensagem de teste do lote ${b.id}`,
        status: pending === 0 ? 'PROCESSED' : 'PROCESSING',
        errorLog: errors ? `${errors} mensagens não entregues` : '',
        flash: false,
        sendAt: iso(b.createdAt),
        processedAt: pending === 0 ? iso(b.createdAt + (Number.isFinite(b.msPerMessage) ? b.msPerMessage * b.total : 0)) : null,
        validityMinutes: 1440,
        deliveryTimeWindowDays: 1,
        deliveryTimeWindowFrom: 8,
        deliveryTimeWindowTo: 20,
        createdBy: b.owner,
        createdAt: iso(b.createdAt),
      },
      successCount: done - errors,
      errorCount: errors,
      pendingCount: pending,
    });
  }
}
