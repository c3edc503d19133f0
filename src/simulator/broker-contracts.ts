/**
 * Area (b), contracts and referrals: contracts seeded per customer, created with POST
 * (201 `{message}` in Portuguese, as the real service), listed as a plain array filtered
 * by name, customer and external ID with paging; referrals deleted by ID (a second delete
 * of the same ID is a 404).
 */
import type { SimReply, SimRequest } from './server';
import { json } from './server';
import { CUSTOMER_NAMES, customerCheck, customerFilter, intParam, isoNoZone, paging, param, type BrokerContext, type BrokerOptions } from './broker-model';

export interface Contract {
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

/** The area's contracts and deleted referrals (the BrokerApi is one). */
export interface ContractStore extends BrokerContext {
  readonly contracts: Contract[];
  readonly deletedReferrals: Set<number>;
}

/** The seeded contracts: `o.contracts` of them, over customers 1 to 3. */
export function seedContracts(o: BrokerOptions): Contract[] {
  const t0 = Date.UTC(2024, 10, 5, 16, 12, 27);
  const contracts: Contract[] = [];
  for (let i = 1; i <= o.contracts; i++) {
    const c = ((i - 1) % 3) + 1;
    contracts.push({
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
  return contracts;
}

export function createContract(s: ContractStore, r: SimRequest): SimReply {
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
  const denied = customerCheck(customerId, s.options);
  if (denied) return denied;
  const id = s.contracts.length ? s.contracts[s.contracts.length - 1]!.id + 1 : 1;
  const money = (v: unknown) => Number(v ?? 0).toFixed(2);
  s.contracts.push({
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
    createdAt: isoNoZone(s.now()),
    createdBy: s.options.clientId,
    sharingType: Number(b.sharingType ?? 0),
    monthlyFee: money(b.monthlyFee),
    nbVirtualAccounts: 0,
  });
  s.counters.contractsCreated++;
  return json(201, { message: `Contrato ${id} criado com sucesso` });
}

export function listContracts(s: ContractStore, r: SimRequest): SimReply {
  const page = paging(r, s.options);
  if ('status' in page) return page;
  const customer = customerFilter(r, s.options);
  if (typeof customer === 'object') return customer;
  const name = param(r, 'planDesc')?.toLowerCase();
  const ext = param(r, 'externalId');
  const list = s.contracts.filter(
    (c) => (customer === undefined || c.customer.id === customer) && (!name || c.planDesc.toLowerCase().includes(name)) && (!ext || c.externalId === ext),
  );
  const start = page.page * page.size;
  return json(200, list.slice(start, start + page.size));
}

export function deleteReferral(s: ContractStore, r: SimRequest): SimReply {
  const id = intParam(r, 'referralId', 1);
  if (typeof id === 'object') return id;
  if (id === undefined) return json(400, { errors: 'Parâmetro id não encontrado' });
  if (id > s.options.referrals || s.deletedReferrals.has(id)) return json(404, { errors: `Encaminhamento ${id} não encontrado` });
  s.deletedReferrals.add(id);
  s.counters.referralsDeleted++;
  return json(200, { message: `Encaminhamento ${id} removido com sucesso` });
}
