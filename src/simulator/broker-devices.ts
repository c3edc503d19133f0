/**
 * Area (b), the device list: an inventory of `deviceCount` devices generated on demand
 * from their index (nothing per device is stored, so 100,000 cost no memory), filtered by
 * customer, payable view and DevEUI, served as Spring pages, wrapped in a one-element
 * array (as the documentation shows) or bare (`wrapDevicePage`), with or without their
 * end fields (`pageEnd`).
 */
import type { SimReply, SimRequest } from './server';
import { json } from './server';
import { CUSTOMER_NAMES, customerFilter, hex, isoNoZone, paging, param, type BrokerContext, type BrokerOptions } from './broker-model';

const EUI_BASE = 0x70b3d5e75e000000n;

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

/** Device i of the inventory, computed from its index. */
export function device(o: BrokerOptions, i: number): Record<string, unknown> {
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
function sequence(o: BrokerOptions, customer: number | undefined, payable: boolean): { count: number; nth: (k: number) => number } {
  const N = o.deviceCount;
  const C = o.customers;
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

/** The one device a DevEUI names, if it is in the filtered inventory: its page content, or the 400/404 reply. */
function byEui(o: BrokerOptions, eui: string, customer: number | undefined, payable: boolean, page: number): Array<Record<string, unknown>> | SimReply {
  if (!/^[0-9a-fA-F]{16}$/.test(eui)) return json(400, { errors: `Parâmetro devEui inválido: ${eui.slice(0, 20)}` });
  const idx = Number(BigInt(`0x${eui}`) - EUI_BASE);
  const ok =
    idx >= 0 && idx < o.deviceCount && (customer === undefined || idx % o.customers === customer - 1) && (!payable || Math.floor(idx / o.customers) % 2 === 0);
  if (!ok) return json(404, { errors: `Dispositivo ${eui.toLowerCase()} não encontrado` });
  return page === 0 ? [device(o, idx)] : [];
}

/** A Spring page of `content`, as the options shape it (wrapped or bare, with or without its end fields). */
function springPage(o: BrokerOptions, content: Array<Record<string, unknown>>, total: number, at: { page: number; size: number }): SimReply {
  const totalPages = Math.ceil(total / at.size);
  const sort = { sorted: false, unsorted: true, empty: true };
  const page = {
    content,
    pageable: { sort, pageNumber: at.page, pageSize: at.size, offset: at.page * at.size, paged: true, unpaged: false },
    totalElements: total,
    totalPages,
    last: at.page >= totalPages - 1,
    sort,
    first: at.page === 0,
    numberOfElements: content.length,
    size: at.size,
    number: at.page,
    empty: content.length === 0,
  };
  if (o.pageEnd === 'no-last') {
    const bare: Record<string, unknown> = { ...page };
    delete bare.last;
    delete bare.totalPages;
    delete bare.totalElements;
    return json(200, o.wrapDevicePage ? [bare] : bare);
  }
  return json(200, o.wrapDevicePage ? [page] : page);
}

export function listDevices(ctx: BrokerContext, r: SimRequest): SimReply {
  const o = ctx.options;
  const at = paging(r, o);
  if ('status' in at) return at;
  const customer = customerFilter(r, o);
  if (typeof customer === 'object') return customer;
  const view = param(r, 'receivable');
  if (view !== undefined && view !== 'true' && view !== 'false') return json(400, { errors: `Parâmetro receivable inválido: ${view.slice(0, 20)} (true ou false)` });
  const payable = view === 'false';
  const eui = param(r, 'devEui');
  let content: Array<Record<string, unknown>>;
  let total: number;
  if (eui !== undefined && eui !== '') {
    const found = byEui(o, eui, customer, payable, at.page);
    if (!Array.isArray(found)) return found;
    total = 1;
    content = found;
  } else {
    const seq = sequence(o, customer, payable);
    total = seq.count;
    content = [];
    const start = at.page * at.size;
    for (let k = start; k < Math.min(total, start + at.size); k++) content.push(device(o, seq.nth(k)));
  }
  ctx.counters.devicePages++;
  return springPage(o, content, total, at);
}
