'use strict';
/**
 * The TerminalClient's outbox (issue 45; nodes.md "Commands that survive the edge", docs/client.md
 * "An outbox for an edge script"), a file store against the bundled simulator over loopback:
 * accepted means durable (closed during an outage and opened again by a new client: the entries
 * drain and their outcomes come, each message created once); the link down then up; priority
 * order; TTL (EXPIRED, never sent); whenFull reject (OUTBOX_FULL, nothing kept); bad input
 * BAD_INPUT at once with nothing kept; an outcome no one took is given again at the next open,
 * one that was taken is not; modes and cancellations; one outbox per folder; client.close(); the example script runs.
 */
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { GatewayError } = require('../../..');
const { waitUntil } = require('../../helpers/wait');
const { refused, clientOutboxPerTest, OUTBOX_DEST: DEST, outboxRaw: raw } = require('../../helpers/clients');
const { execFile } = require('node:child_process');

/** The iterator's next outcome, or a failure that says which never came (within 30 s). */
async function nextOf(it, what) {
  let got;
  it.next().then((r) => (got = r));
  await waitUntil(() => got !== undefined, 30000, what);
  return got;
}

describe('TerminalClient outbox, file store (issue 45)', function () {
  this.timeout(90000);
  let sim;
  let dir;
  // Outboxes of new clients on the test's folder (the helper's clients and simulator are closed first).
  const { newClient, open, created } = clientOutboxPerTest(() => ({ file: dir }), (s) => (sim = s));

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iotgw-client-outbox-'));
  });
  afterEach(async () => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('accepted means durable: sent during an outage, closed, opened again by a new client: the entries drain, the outcomes come (keys, meta, IDs), each created once', async function () {
    sim.server.link.refuse();
    const first = await open();
    const a = await first.ob.submitMessages([{ DestinationID: DEST, RawPayload: raw(1) }, { DestinationID: DEST, RawPayload: raw(2) }], { meta: { order: 'a' } });
    const b = await first.ob.submitMessages({ DestinationID: DEST, RawPayload: raw(3) }, { meta: { order: 'b', n: 7n } });
    assert.deepEqual([a.entries, b.entries], [2, 1]);
    assert.match(a.key, /\S/);
    assert.equal(first.ob.state().waiting, 3);
    await first.ob.close();
    assert.equal(sim.terminal.creations.total, 0, 'nothing reached the gateway while the link was down');
    await sim.server.link.up();

    const second = await open();
    await waitUntil(() => second.seen.length === 2, 60000, 'both outcomes in the new life', () => JSON.stringify(second.ob.state()));
    const byKey = new Map(second.seen.map((o) => [o.key, o]));
    const oa = byKey.get(a.key);
    const ob = byKey.get(b.key);
    assert.deepEqual(oa.meta, { order: 'a' });
    assert.deepEqual(ob.meta, { order: 'b', n: '7' });
    assert.equal(oa.results.length, 2);
    for (const r of [...oa.results, ...ob.results]) {
      assert.equal(r.ErrorID, 0);
      assert.equal(typeof r.ID, 'number');
      assert.equal(r.DestinationID, DEST);
    }
    assert.equal(oa.error, undefined);
    assert.ok(oa.attempts >= 1 && typeof oa.sentAt === 'string' && typeof oa.acceptedAt === 'string', JSON.stringify(oa));
    assert.deepEqual([created(1), created(2), created(3), sim.terminal.creations.total], [1, 1, 1, 3]);
    await second.ob.close();

    // Taken outcomes are forgotten: a third life gives only the outcome of its own send.
    const third = await open();
    assert.equal(third.ob.state().waiting, 0);
    const c = await third.ob.submitMessages({ DestinationID: DEST, RawPayload: raw(4) });
    await waitUntil(() => third.seen.length >= 1, 60000, 'the third life\'s outcome');
    assert.deepEqual(third.seen.map((o) => o.key), [c.key]);
    assert.equal(sim.terminal.creations.total, 4);
  });

  it('an outcome no one took is given again at the next open; one taken by the iterator is not', async function () {
    const ob1 = await newClient().outbox({ file: dir });
    const once = [];
    ob1.once('outcome', (o) => once.push(o.key));
    const r0 = await ob1.submitMessages({ DestinationID: DEST, RawPayload: raw(9) });
    await waitUntil(() => once.length === 1, 60000, 'the once() listener took one outcome');
    assert.deepEqual(once, [r0.key]);
    const r1 = await ob1.submitMessages({ DestinationID: DEST, RawPayload: raw(10) });
    await waitUntil(() => created(10) === 1 && ob1.state().waiting === 0, 60000, 'sent, no listener');
    await ob1.close();

    const ob2 = await newClient().outbox({ file: dir });
    const it = ob2.outcomes();
    const { value } = await nextOf(it, 'the outcome of the earlier run, which no one took');
    assert.equal(value.key, r1.key);
    assert.equal(typeof value.results[0].ID, 'number');
    const r2 = await ob2.submitMessages({ DestinationID: DEST, RawPayload: raw(11) });
    const next = await nextOf(it, 'the outcome of this run\'s send'); // asking for it takes the one before
    assert.equal(next.value.key, r2.key);
    await it.return();
    await ob2.close();

    const third = await open();
    const r3 = await third.ob.submitMessages({ DestinationID: DEST, RawPayload: raw(12) });
    await waitUntil(() => third.seen.length >= 1, 60000, 'the third life\'s outcome');
    assert.deepEqual(third.seen.map((o) => o.key), [r3.key], 'the earlier outcomes were taken and forgotten');
    assert.deepEqual([created(10), created(11), created(12)], [1, 1, 1]);
  });

  it('the link down: entries wait (no error, state says why), then drain when it is back, priority 0 first, then in acceptance order', async function () {
    const { ob, seen } = await open();
    sim.server.link.refuse();
    const a = await ob.submitMessages({ DestinationID: DEST, RawPayload: raw(20) });
    const b = await ob.submitMessages({ DestinationID: DEST, RawPayload: raw(21) });
    const c = await ob.submitMessages({ DestinationID: DEST, RawPayload: raw(22) }, { priority: 0 });
    await waitUntil(() => ob.state().problem !== undefined, 60000, 'the state says the link is down', () => JSON.stringify(ob.state()));
    assert.equal(seen.length, 0);
    await sim.server.link.up();
    await waitUntil(() => seen.length === 3, 60000, 'three outcomes once the link is back', () => JSON.stringify(ob.state()));
    const id = (r) => seen.find((o) => o.key === r.key).results[0].ID;
    assert.ok(id(c) < id(a) && id(a) < id(b), `created in the order c, a, b: ${id(c)}, ${id(a)}, ${id(b)}`);
    assert.ok(seen.every((o) => !o.error));
    assert.deepEqual([created(20), created(21), created(22)], [1, 1, 1]);
  });

  it('an entry whose TTL ends waits no longer: EXPIRED (error and results say so), never sent after', async function () {
    const { ob, seen } = await open();
    sim.server.link.refuse();
    const r = await ob.submitMessages({ DestinationID: DEST, RawPayload: raw(30) }, { ttl: 1 });
    await waitUntil(() => seen.length === 1, 60000, 'the EXPIRED outcome');
    const [o] = seen;
    assert.equal(o.key, r.key);
    assert.ok(o.error instanceof GatewayError);
    assert.equal(o.error.code, 'EXPIRED');
    assert.equal(o.error.entries.length, 1);
    assert.equal(o.results[0].Outbox, 'EXPIRED');
    assert.equal(o.sentAt, null);
    await sim.server.link.up();
    const later = await ob.submitMessages({ DestinationID: DEST, RawPayload: raw(31) });
    await waitUntil(() => seen.length === 2, 60000, 'the next send\'s outcome');
    assert.equal(seen[1].key, later.key);
    assert.equal(created(30), 0, 'the expired entry was never sent');
  });

  it('whenFull reject: the send that does not fit is OUTBOX_FULL, nothing of it kept', async function () {
    sim.server.link.refuse();
    const { ob } = await open({ maxEntries: 2 });
    await ob.submitMessages([{ DestinationID: DEST, RawPayload: raw(40) }, { DestinationID: DEST, RawPayload: raw(41) }]);
    await refused(ob.submitMessages({ DestinationID: DEST, RawPayload: raw(42) }), 'OUTBOX_FULL');
    assert.equal(ob.state().waiting, 2);
    await ob.close();
    const again = await open({ maxEntries: 2 });
    assert.equal(again.ob.state().waiting, 2);
  });

  it('bad input is BAD_INPUT at once, naming the field, and nothing is kept or sent', async function () {
    const { ob } = await open();
    const cases = [
      [ob.submitMessages({ RawPayload: raw(1) }), 'items'],
      [ob.submitMessages([{ DestinationID: DEST, RawPayload: raw(1) }, { DestinationID: DEST }]), 'items[1]'],
      [ob.submitMessages({ DestinationID: DEST, RawPayload: raw(1) }, { priority: 10 }), 'priority'],
      [ob.submitMessages({ DestinationID: DEST, RawPayload: raw(1) }, { priority: 1.5 }), 'priority'],
      [ob.submitMessages({ DestinationID: DEST, RawPayload: raw(1) }, { ttl: 0 }), 'ttl'],
      [ob.submitMessages({ DestinationID: DEST, RawPayload: raw(1) }, { ttl: 'soon' }), 'ttl'],
      [ob.submitMessages({ DestinationID: DEST, RawPayload: raw(1) }, { meta: 'x' }), 'meta'],
      [ob.submitMessages({ DestinationID: DEST, RawPayload: raw(1) }, { query: { a: '1' } }), 'query'],
      [ob.submitModes({ DestinationID: DEST, Mode: 99 }), 'items'],
      [ob.cancel([]), 'ids'],
      [ob.submitToMultiple({ RawPayload: raw(1) }, []), 'message'],
    ];
    for (const [p, field] of cases) {
      const err = await refused(p, 'BAD_INPUT');
      assert.ok(String(err.field).startsWith(field), `field ${err.field}, expected ${field}: ${err.message}`);
    }
    await refused(newClient().outbox({ file: dir, ttlSeconds: 0 }), 'BAD_INPUT');
    for (const settleSeconds of [4, 601, '30']) assert.equal((await refused(newClient().outbox({ file: dir, settleSeconds }), 'BAD_INPUT')).field, 'settleSeconds');
    await refused(newClient().outbox({}), 'BAD_INPUT');
    await refused(newClient().outbox({ file: dir }), 'BAD_INPUT'); // open already in this process
    assert.equal(ob.state().waiting, 0);
    await ob.close();
    const again = await open();
    assert.equal(again.ob.state().waiting, 0, 'nothing was kept');
    assert.equal(sim.server.callsTo().filter((c) => c.method === 'POST' && !/token/.test(c.path)).length, 0, 'nothing was sent');
  });

  it('settleSeconds: a send reset before the gateway handled it is sent again once the feed is that far past it (5 s here, not 30), never sooner; created once', async function () {
    const { ob, seen } = await open({ settleSeconds: 5 });
    sim.inject({ route: 'terminal/messages', kind: 'reset', times: 1 });
    await ob.submitMessages({ DestinationID: DEST, RawPayload: raw(9) });
    // The default 30 s would not end it within this wait.
    await waitUntil(() => seen.length === 1, 25000, 'the entry sent again after the 5 s settle time', () => JSON.stringify(ob.state()));
    const calls = sim.server.callsTo('terminal/messages');
    assert.equal(calls.length, 2, 'the reset call, then one more');
    assert.ok(calls[1].at - calls[0].at >= 5000, `sent again ${calls[1].at - calls[0].at} ms after the lost one: not before the settle time`);
    assert.equal(seen[0].error, undefined);
    assert.equal(created(9), 1);
  });

  it('modes, cancellations and a message to many go through the outbox with the results their calls give', async function () {
    const client = newClient();
    const [sent] = await client.submitMessages({ DestinationID: DEST, RawPayload: raw(50) });
    const { ob, seen } = await open();
    const m = await ob.submitModes({ DestinationID: DEST, Mode: 1, WakeupInterval: 0 });
    const c = await ob.cancel(sent.ID);
    const x = await ob.submitToMultiple({ RawPayload: raw(51) }, [DEST, '01000002SKYA002']);
    await waitUntil(() => seen.length === 3, 60000, 'three outcomes');
    const of = (r) => seen.find((o) => o.key === r.key);
    assert.equal(of(m).results[0].ErrorID, 0);
    assert.equal(typeof of(m).results[0].ID, 'number');
    assert.deepEqual(Object.keys(of(c).results[0]).sort(), ['CancelRequestID', 'ErrorID', 'ID']);
    assert.equal(of(c).results[0].ID, sent.ID);
    assert.deepEqual(of(x).results.map((r) => r.DestinationID), [DEST, '01000002SKYA002']);
    assert.ok(of(x).results.every((r) => r.ErrorID === 0 && typeof r.ID === 'number'), JSON.stringify(of(x).results));
  });

  it('client.close() closes its outboxes first: the folder can be opened again, the entries still there', async function () {
    sim.server.link.refuse();
    const client = newClient();
    const ob = await client.outbox({ file: dir });
    await ob.submitMessages({ DestinationID: DEST, RawPayload: raw(60) });
    await client.close();
    await refused(ob.submitMessages({ DestinationID: DEST, RawPayload: raw(61) }), 'STORAGE');
    await refused(client.outbox({ file: dir }), 'BAD_INPUT'); // a closed client opens none (its sends would fail)
    const again = await open();
    assert.equal(again.ob.state().waiting, 1);
  });

  it('the example script (examples/scripts/edge-outbox.js) runs: accepted during an outage, run again, three outcomes, urgent first, nothing twice', async function () {
    const script = path.join(__dirname, '../../../examples/scripts/edge-outbox.js');
    const r = await new Promise((resolve) => {
      execFile(process.execPath, [script], { timeout: 60000 }, (err, stdout, stderr) => resolve({ code: err ? (err.code ?? 1) : 0, stdout, stderr }));
    });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /first run: accepted, waiting for the link: 3\noutcome: stop the pump \(urgent\): gateway ID \d+, ErrorID 0\n/);
    assert.equal((r.stdout.match(/^outcome: .*ErrorID 0$/gm) ?? []).length, 3, r.stdout);
    assert.match(r.stdout, /created at the gateway: 3, created twice: 0/);
  });
});
