'use strict';
/**
 * A property of the outbox (issue 45): whatever the sequence of accepts, link states
 * (answered, refused, answer lost after the gateway created it, no answer and nothing
 * created) and crashes (the process frozen at once: every later write, send and event of
 * it never happens; a new outbox opens the same folder), every acknowledged entry is
 * created at the gateway exactly once, within a priority in acceptance order, and every
 * acknowledged msg gets its outcome (never twice from one process; again after a crash
 * only when the crash came between the outcome and its record).
 */
const assert = require('node:assert/strict');
const fsp = require('node:fs/promises');
const fc = require('fast-check');
const { waitUntil } = require('../../helpers/wait');
const { FakeGateway, tmpDir } = require('./fake-gateway');
const { Outbox } = require('../../../dist/lib/outbox/outbox');
const { FileOutboxStore } = require('../../../dist/lib/outbox/file-store');

const hang = () => new Promise(() => {});

/** One process's life: its store's writes, its sends and its events stop when it is killed. */
function generation(dir, gw, outcomes) {
  const life = { dead: false, handles: [] };
  const guard = (fn) => (...a) => (life.dead ? hang() : fn(...a));
  const fs = {
    mkdir: fsp.mkdir, readdir: fsp.readdir, rename: guard(fsp.rename), unlink: guard(fsp.unlink),
    open: guard(async (...a) => {
      const fh = await fsp.open(...a);
      life.handles.push(fh);
      for (const m of ['write', 'datasync', 'sync', 'truncate']) fh[m] = guard(fh[m].bind(fh));
      return fh;
    }),
  };
  const base = gw.sender();
  const sender = { send: guard((batch) => base.send(batch)) };
  const reconciler = { reconcile: guard(gw.reconciler().reconcile) };
  const ob = new Outbox({ name: 'p', store: new FileOutboxStore(dir, { fs, compactMinBytes: 4096 }), sender, reconciler, backoffMs: { first: 2, max: 10 }, reconcileEveryMs: 2 });
  ob.on('outcome', (o) => {
    if (!life.dead) outcomes.push({ ...o, life });
  });
  return { ob, life };
}

const command = fc.oneof(
  fc.record({ do: fc.constant('accept'), count: fc.integer({ min: 1, max: 3 }), priority: fc.integer({ min: 0, max: 2 }) }),
  fc.record({ do: fc.constant('mode'), mode: fc.constantFrom('ok', 'down', 'lost', 'unsent') }),
  fc.record({ do: fc.constant('wait'), ms: fc.integer({ min: 0, max: 15 }) }),
  fc.record({ do: fc.constant('crash') }),
);

async function run(commands) {
  const dir = tmpDir('prop');
  const gw = new FakeGateway();
  const outcomes = [];
  let gen = generation(dir, gw, outcomes);
  await gen.ob.open();
  const acked = []; // {key, ns, priority}
  let n = 0;
  let pending = [];
  for (const c of commands) {
    if (c.do === 'accept') {
      const items = Array.from({ length: c.count }, () => ({ kind: 'message', item: { n: ++n } }));
      const g = gen;
      // Not awaited: a crash may come while it is being written (then it is never acknowledged).
      pending.push(g.ob.accept('m', { n }, items, { priority: c.priority }).then(
        (r) => { if (!g.life.dead) acked.push({ key: r.key, ns: items.map((i) => i.item.n), priority: c.priority }); },
        () => undefined,
      ));
      await new Promise((r) => setImmediate(r));
    } else if (c.do === 'mode') gw.mode = c.mode;
    else if (c.do === 'wait') await new Promise((r) => setTimeout(r, c.ms));
    else {
      gen.life.dead = true;
      gen.ob.store.abandonLock(); // its lock stays, stale: the next life (same pid, another token) takes it over
      for (const fh of gen.life.handles) await fh.close().catch(() => undefined); // the system closes a dead process's files
      pending = []; // they never end: that process is gone
      gen = generation(dir, gw, outcomes);
      await gen.ob.open();
    }
  }
  gw.mode = 'ok';
  await Promise.all(pending);
  await waitUntil(() => acked.every((a) => outcomes.some((o) => o.key === a.key)) && gen.ob.state().waiting === 0, 30000, 'every acknowledged msg ended');
  await gen.ob.close();
  for (const a of acked) for (const x of a.ns) assert.equal(gw.created.get(x), 1, `entry ${x} created once`);
  for (const [x, times] of gw.created) assert.equal(times, 1, `entry ${x} created once`);
  for (const p of [0, 1, 2]) {
    const mine = new Set(acked.filter((a) => a.priority === p).flatMap((a) => a.ns));
    const order = gw.log.map((i) => i.n).filter((x) => mine.has(x));
    assert.deepEqual(order, [...order].sort((a, b) => a - b), `priority ${p} in acceptance order`);
  }
  for (const a of acked) {
    const mine = outcomes.filter((o) => o.key === a.key);
    assert.equal(new Set(mine.map((o) => o.life)).size, mine.length, 'never two outcomes of one msg from one process');
    for (const o of mine) assert.deepEqual(o.entries.map((e) => e.outcome.gatewayId), a.ns.map((x) => gw.ids.get(x)));
  }
}

describe('outbox property: random accepts, link states and crashes (issue 45)', function () {
  this.timeout(300000);
  it('each acknowledged entry is created exactly once, in order within its priority, and its msg ends', async function () {
    await fc.assert(fc.asyncProperty(fc.array(command, { minLength: 1, maxLength: 40 }), run), { numRuns: Number(process.env.OUTBOX_RUNS) || 40 });
  });
});
