'use strict';
/**
 * A gateway for the outbox's unit tests: it creates what it is sent (counting creations by
 * the item's `n`, so a duplicate is seen), answers as `mode` says, and reconciles from
 * what it created. A real gateway's part is played by the simulator in the node tests.
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Outbox } = require('../../../dist/lib/outbox/outbox');
const { FileOutboxStore } = require('../../../dist/lib/outbox/file-store');

class FakeGateway {
  constructor() {
    /** item.n -> times created */
    this.created = new Map();
    /** items in creation order */
    this.log = [];
    this.calls = [];
    /** 'ok' | 'down' (retry, nothing created) | 'lost' (created, answer lost: unknown) | 'unsent' (unknown, nothing created) | 'hang' | 'held' (until release(), then refused) */
    this.mode = 'ok';
    /** The sends held by mode 'held' (release() lets them end). */
    this.held = [];
    this.reconcileMode = 'look';
    this.nextId = 1000;
    this.ids = new Map();
  }

  create(item) {
    this.created.set(item.n, (this.created.get(item.n) ?? 0) + 1);
    this.log.push(item);
    const id = String(this.nextId++);
    this.ids.set(item.n, id);
    return id;
  }

  release() {
    for (const end of this.held.splice(0)) end();
  }

  sender(mode = () => this.mode) {
    return {
      send: async (batch) => {
        this.calls.push({ kind: batch.kind, ns: batch.entries.map((e) => e.item.n), attempt: batch.attempt });
        const m = typeof mode === 'function' ? mode(batch) : mode;
        if (m === 'hang') return new Promise(() => {});
        // In flight until release(), then refused (nothing created).
        if (m === 'held') return new Promise((resolve) => this.held.push(() => resolve(batch.entries.map(() => ({ result: 'retry', reason: 'NETWORK: connection refused' })))));
        if (m === 'down') return batch.entries.map(() => ({ result: 'retry', reason: 'NETWORK: connection refused' }));
        if (m === 'unsent') return batch.entries.map(() => ({ result: 'unknown', code: 'TIMEOUT', reason: 'TIMEOUT: no reply' }));
        const out = batch.entries.map((e) => (e.item.reject ? { result: 'rejected', errorId: 5, errorName: 'BAD_DESTINATION' } : { result: 'accepted', gatewayId: this.create(e.item) }));
        if (m === 'lost') return batch.entries.map(() => ({ result: 'unknown', reason: 'NETWORK: reset after the request left' }));
        return out;
      },
    };
  }

  reconciler() {
    return {
      reconcile: async (attempt, entries) => {
        if (this.reconcileMode === 'not-yet') return entries.map(() => ({ result: 'not-yet', retryAfterMs: 20 }));
        if (this.reconcileMode === 'hang') return new Promise(() => {});
        return entries.map((e) => (this.ids.has(e.item.n) ? { result: 'found', gatewayId: this.ids.get(e.item.n) } : { result: 'absent' }));
      },
    };
  }
}

function tmpDir(t = 'outbox') {
  return fs.mkdtempSync(path.join(os.tmpdir(), `iotgw-${t}-`));
}

/** An outbox over a file store in `dir`, recording its outcomes, states and warnings. */
async function openOutbox(dir, gw, options = {}, storeOptions = {}) {
  const store = new FileOutboxStore(dir, storeOptions);
  const ob = new Outbox({
    name: 'test', store, sender: options.sender ?? gw.sender(), reconciler: options.reconciler ?? gw.reconciler(),
    backoffMs: { first: 5, max: 40 }, reconcileEveryMs: 10, ...options,
  });
  ob.outcomes = [];
  ob.warnings = [];
  ob.on('outcome', (o) => ob.outcomes.push(o));
  ob.on('warning', (w) => ob.warnings.push(w));
  await ob.open();
  return ob;
}

let n = 0;
/** A msg of `count` message entries, items numbered. */
function entries(count = 1, kind = 'message', extra = {}) {
  return Array.from({ length: count }, () => ({ kind, item: { n: ++n, DestinationID: 'D1', RawPayload: [1, 2, 3], ...extra } }));
}

module.exports = { FakeGateway, tmpDir, openOutbox, entries };
