'use strict';
/**
 * The TerminalClient's outbox in Redis (issue 45; nodes.md "A fleet"), against a real
 * redis-server and the bundled simulator: sends accepted during an outage by one client survive
 * its close and drain from a new client on a new connection, outcomes and all, each message
 * created once; two scripts on one outbox name: the one that does not drain accepts only
 * (`standby`), the one that drains sends its entries and gives their outcomes, in the order
 * they were accepted across the two (the drainer's own newer one waits for the other's).
 */
const assert = require('node:assert/strict');
const { describeRedis } = require('../../helpers/redis');
const { waitUntil } = require('../../helpers/wait');
const { clientOutboxPerTest, OUTBOX_DEST: DEST, outboxRaw: raw } = require('../../helpers/clients');

describeRedis('TerminalClient outbox, Redis store (issue 45, real redis-server)', function (ctx) {
  this.timeout(90000);
  let sim;
  let n = 0;
  let name;
  const { open, created } = clientOutboxPerTest(() => ({ redis: { url: ctx.server.url }, name }), (s) => (sim = s));

  beforeEach(async () => {
    name = `edge-${process.pid}-${++n}`;
  });

  it('accepted during an outage, closed: a new client on a new connection drains them and gives their outcomes, each created once', async function () {
    sim.server.link.refuse();
    const first = await open();
    const a = await first.ob.submitMessages([{ DestinationID: DEST, RawPayload: raw(1) }, { DestinationID: DEST, RawPayload: raw(2) }], { meta: { job: 'a' } });
    const b = await first.ob.cancel(123456789, { meta: { job: 'b' }, priority: 0 });
    assert.equal(first.ob.state().waiting, 3);
    await first.ob.close();
    await sim.server.link.up();

    const second = await open();
    await waitUntil(() => second.seen.length === 2, 60000, 'both outcomes', () => JSON.stringify(second.ob.state()));
    const of = (r) => second.seen.find((o) => o.key === r.key);
    assert.deepEqual(of(a).meta, { job: 'a' });
    assert.ok(of(a).results.every((r) => r.ErrorID === 0 && typeof r.ID === 'number'), JSON.stringify(of(a).results));
    assert.equal(of(b).results[0].ID, 123456789);
    assert.ok(of(b).results[0].ErrorID > 0, 'the gateway refused to cancel a message it does not know (an answer, not a retry)');
    assert.deepEqual([created(1), created(2)], [1, 1]);
    await second.ob.close();
    const third = await open();
    assert.equal(third.ob.state().waiting, 0, 'nothing left in Redis');
  });

  it('two scripts on one outbox: the one that does not drain accepts only (standby); the one that drains sends and gives the outcome', async function () {
    const a = await open();
    const first = await a.ob.submitMessages({ DestinationID: DEST, RawPayload: raw(10) });
    await waitUntil(() => a.seen.some((o) => o.key === first.key), 60000, 'the first script drains');
    const b = await open();
    const r = await b.ob.submitMessages({ DestinationID: DEST, RawPayload: raw(11) }, { meta: { from: 'b' } });
    assert.equal(r.standby, true);
    await waitUntil(() => a.seen.some((o) => o.key === r.key), 60000, 'the draining script gives the outcome of the other\'s send');
    assert.deepEqual(a.seen.find((o) => o.key === r.key).meta, { from: 'b' });
    assert.equal(b.seen.length, 0);
    assert.deepEqual([created(10), created(11)], [1, 1]);
  });

  it('acceptance order across the fleet: B accepts for a terminal, then the idle drainer A accepts a newer one for it at once: the gateway gets B\'s first', async function () {
    const a = await open();
    const first = await a.ob.submitMessages({ DestinationID: DEST, RawPayload: raw(20) });
    await waitUntil(() => a.seen.some((o) => o.key === first.key), 60000, 'A drains, and is idle');
    const b = await open();
    const older = await b.ob.submitMessages({ DestinationID: DEST, RawPayload: raw(21) });
    assert.equal(older.standby, true, 'B accepts only');
    const newer = await a.ob.submitMessages({ DestinationID: DEST, RawPayload: raw(22) });
    await waitUntil(() => [older, newer].every((r) => a.seen.some((o) => o.key === r.key)), 60000, 'both outcomes on A', () => JSON.stringify(a.ob.state()));
    assert.deepEqual([created(21), created(22)], [1, 1]);
    const idOf = (byte) => BigInt(sim.terminal.creations.list().find((c) => c.RawPayload && Buffer.from(c.RawPayload, 'base64').equals(Buffer.from(raw(byte), 'base64'))).ids[0]);
    assert.ok(idOf(21) < idOf(22), `B's entry (accepted first, id ${idOf(21)}) created before A's (id ${idOf(22)})`);
  });
});
