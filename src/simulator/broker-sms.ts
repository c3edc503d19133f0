/**
 * Area (c), SMS batches: seeded batches (processed, draining, stuck, another client's) and
 * batches tests add, whose pending count falls over time; the status lookup by ID with
 * its query size limit (`{valueInBytes}`) and `{errors}` replies.
 */
import type { SimReply, SimRequest } from './server';
import { json } from './server';
import { intParam, type BrokerContext } from './broker-model';

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

export class SmsBatches {
  readonly batches = new Map<number, SmsBatch>();
  private nextId = 1;

  constructor(private readonly ctx: BrokerContext) {}

  /** Seeds the four batches afresh: 1 processed, 2 draining, 3 stuck, 4 another client's. */
  reset(): void {
    this.batches.clear();
    this.nextId = 1;
    const now = this.ctx.now();
    this.add({ total: 100, createdAt: now - 86_400_000, failEvery: 10 }); // 1: processed
    this.add({ total: 20, msPerMessage: this.ctx.options.smsMsPerMessage, failEvery: 5 }); // 2: draining
    this.add({ total: 50, msPerMessage: Infinity }); // 3: stuck
    this.add({ total: 5, createdAt: now - 86_400_000, owner: 'other-client' }); // 4: foreign
  }

  /** Adds an SMS batch; returns its ID. */
  add(b: { total: number; msPerMessage?: number; failEvery?: number; createdAt?: number; owner?: string }): number {
    const id = this.nextId++;
    this.batches.set(id, {
      id,
      total: b.total,
      createdAt: b.createdAt ?? this.ctx.now(),
      msPerMessage: b.msPerMessage ?? this.ctx.options.smsMsPerMessage,
      failEvery: b.failEvery ?? 0,
      owner: b.owner ?? this.ctx.options.clientId,
    });
    return id;
  }

  /** POST /_sim/sms-batches {total, msPerMessage, failEvery}: a batch for a test. */
  simAdd(r: SimRequest): SimReply {
    let b: Record<string, unknown>;
    try {
      b = (r.text.trim() ? r.json() : {}) as Record<string, unknown>;
    } catch {
      return json(400, { error: 'JSON body expected' });
    }
    const total = Number(b.total ?? 10);
    if (!Number.isInteger(total) || total < 0) return json(400, { error: 'total must be a non-negative integer' });
    const id = this.add({ total, msPerMessage: b.msPerMessage === undefined ? undefined : Number(b.msPerMessage), failEvery: Number(b.failEvery ?? 0) });
    return json(200, { id });
  }

  /** GET sms/request?id=: the batch's status and counts now. */
  request(r: SimRequest): SimReply {
    const qs = Buffer.byteLength(r.query.toString());
    if (qs > this.ctx.options.maxQueryBytes) return json(400, { valueInBytes: qs });
    const id = intParam(r, 'smsId', 1);
    if (typeof id === 'object') return id;
    if (id === undefined) return json(400, { errors: 'Parâmetro id não encontrado' });
    const b = this.batches.get(id);
    if (!b) return json(404, { errors: `Requisição de SMS ${id} não encontrada` });
    if (b.owner !== this.ctx.options.clientId) return json(403, { errors: 'Acesso negado ao recurso' });
    this.ctx.counters.smsLookups++;
    const now = this.ctx.now();
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
