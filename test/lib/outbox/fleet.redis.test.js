'use strict';
/**
 * An outbox shared by a fleet (issue 45; nodes.md "A fleet"), two engines on one Redis
 * outbox through two connections (two instances), real redis-server: only the lease holder
 * drains; msgs accepted by the other are sent by the holder once and their outcomes emitted
 * once, there; when the holder's connection is cut during a send whose reply never comes,
 * the other takes the lease, reconciles that send and drains the rest, nothing twice; a
 * non-holder never ends EXPIRED an entry the holder sent, and its state follows what the
 * fleet's outbox holds; a holder that stalled after the mark and lost the lease lets no
 * request leave; one that stalled past its lease during a send emits nothing when the late
 * reply comes (the new holder reconciled and emitted that msg); an accept of the holder still on its way is not overtaken by a newer one of
 * the other instance (acceptance order across the fleet).
 */
const assert = require('node:assert/strict');
const { describeRedis } = require('../../helpers/redis');
const { waitUntil } = require('../../helpers/wait');
const { RedisConnection, AccountKeys, RedisOutboxStore } = require('../../../dist/lib/account/redis');
const { Outbox } = require('../../../dist/lib/outbox/outbox');
const { FakeGateway, entries: newEntries } = require('./fake-gateway');

describeRedis('outbox in a fleet (issue 45, real redis-server)', function (ctx) {
  this.timeout(120000);
  const conns = [];
  const engines = [];
  let n = 0;
  let keys;
  let name;
  let gw;
  beforeEach(function () {
    keys = AccountKeys.of('iotgw:', { baseUrl: 'http://127.0.0.1:1', clientId: `fleet-${++n}` });
    name = `fleet-${n}`;
    gw = new FakeGateway();
  });
  afterEach(async function () {
    for (const ob of engines.splice(0)) await Promise.race([ob.close().catch(() => undefined), new Promise((r) => setTimeout(r, 3000))]);
    await Promise.all(conns.splice(0).map((c) => c.close().catch(() => undefined)));
  });

  /** One instance: its connection, store and engine (outcomes, warnings and the gateway calls it made recorded). */
  const instance = (label, { sender, ...opts } = {}) => {
    const conn = new RedisConnection({ url: ctx.server.url, keyPrefix: 'iotgw:' });
    conn.on('failure', () => {});
    conns.push(conn);
    const store = new RedisOutboxStore(conn, keys, name, { timeoutMs: 3000, leaseMs: 1000, instanceId: label });
    const calls = [];
    const base = sender ?? gw.sender('ok');
    const ob = new Outbox({
      name, store, reconciler: gw.reconciler(), backoffMs: { first: 5, max: 40 }, reconcileEveryMs: 10, batchMax: 10, refreshMs: 100,
      sender: { ...(base.gatewayTime ? { gatewayTime: () => base.gatewayTime() } : {}), send: (batch) => (calls.push(batch.entries.map((e) => e.item.n)), base.send(batch)) },
      ...opts,
    });
    Object.assign(ob, { conn, st: store, calls, outcomes: [], warnings: [] });
    ob.on('outcome', (o) => ob.outcomes.push(o));
    ob.on('warning', (w) => ob.warnings.push(w.message));
    engines.push(ob);
    return ob;
  };
  /** Holds the lease and drains (an engine without the fleet layer: holds the lease). */
  const drains = (ob) => ob.st.holds() && (!ob.fleet || ob.fleet.active);
  /** Instance A (instance()'s `opts`), open, once it holds the lease and drains. */
  const drainingA = async (opts) => {
    const a = instance('a', opts);
    await a.open();
    await waitUntil(() => drains(a), 30000, 'A holds the lease and drains');
    return a;
  };
  /**
   * Instance A draining, whose sends, once `held.on` is set, reach the gateway (created) while
   * their replies wait in `late` until the test gives them.
   */
  const drainingHeldA = async (held) => {
    const late = [];
    const a = await drainingA({
      sender: { send: (batch) => (held.on ? gw.sender('ok').send(batch).then((out) => new Promise((r) => late.push(() => r(out)))) : gw.sender('ok').send(batch)) },
    });
    return { a, late };
  };
  /** Instance B, open. */
  const openB = async () => {
    const b = instance('b');
    await b.open();
    return b;
  };
  const accept = async (ob, i, count = 1, opts) => {
    const e = newEntries(count);
    await ob.accept(`m${i}`, { topic: `t${i}` }, e, opts);
    return e.map((x) => x.item.n);
  };
  const createdOnce = (items) => {
    for (const x of items) assert.equal(gw.created.get(x), 1, `item ${x} created once (${gw.created.get(x) ?? 0})`);
  };

  it('msgs accepted on an instance that does not hold the lease are sent by the holder once, and their outcomes emitted once, there', async function () {
    const a = await drainingA();
    const b = await openB();
    const items = [];
    const fromB = [];
    for (let i = 0; i < 20; i++) {
      const ob = i % 4 === 3 ? a : b;
      const got = await accept(ob, i, 2);
      items.push(...got);
      if (ob === b) fromB.push(`t${i}`);
    }
    await waitUntil(() => a.outcomes.length === 20, 30000, () => `A emits all twenty outcomes (${a.outcomes.length})`);
    await new Promise((r) => setTimeout(r, 500)); // a second outcome would come within a few refreshes
    assert.equal(a.outcomes.length, 20, 'each msg once');
    assert.equal(new Set(a.outcomes.map((o) => o.key)).size, 20);
    assert.deepEqual(b.outcomes, [], 'B sent nothing, so it emits nothing');
    assert.deepEqual(b.calls, [], 'B made no gateway call');
    createdOnce(items);
    const byTopic = new Map(a.outcomes.map((o) => [o.json.topic, o]));
    for (const t of fromB) assert.ok(byTopic.get(t).entries.every((e) => e.outcome.result === 'accepted'), `${t} accepted on B, its outcome from its JSON on A`);
  });

  // Skipped until 2026-11-27 as a KNOWN DEFECT of issue 45 ("A sends, and hangs" timed out in about
  // half the runs): the test's set-up, not the outbox. It waited for more than 5 gateway calls, so it
  // assumed the first ten msgs went in 5 batches or more; the holder batches what waits (B's msgs are
  // read every refresh), 3 or 4 batches as often, and then the one hung send made 4 or 5 calls.
  it('the holder\'s connection cut during a send whose reply never comes: the other instance takes the lease, reconciles that send and drains the rest, nothing twice; the reply that comes late to the cut instance ends nothing again', async function () {
    const held = {};
    const { a, late } = await drainingHeldA(held);
    const b = await openB();
    const items = [];
    for (let i = 0; i < 10; i++) items.push(...(await accept(i % 2 ? b : a, i, 2)));
    await waitUntil(() => a.outcomes.length === 10, 30000, 'the first ten through A');
    const before = a.calls.length; // every entry so far ended: no send in flight
    held.on = true; // the next send reaches the gateway (created), its reply does not come
    for (let i = 10; i < 30; i++) items.push(...(await accept(i % 2 ? b : a, i, 2)));
    await waitUntil(() => a.calls.length > before && late.length === 1, 30000, 'A sends, and hangs', { detail: () => `calls ${JSON.stringify(a.calls)}, ${before} before the hang` });
    assert.ok(!drains(b), 'B only accepted so far');
    a.conn.client.disconnect(); // A is cut off from Redis (as if dead)
    await waitUntil(() => b.outcomes.length + a.outcomes.length - 10 === 20, 60000, 'the other twenty through B', { detail: () => `${b.outcomes.length} on B` });
    await waitUntil(() => !a.st.holds() && !drains(a), 30000, 'A knows it lost the lease');
    late.splice(0).forEach((reply) => reply()); // the gateway's reply reaches A at last
    await new Promise((r) => setTimeout(r, 500));
    createdOnce(items);
    const keysOf = (ob) => ob.outcomes.map((o) => o.key);
    const all = [...keysOf(a), ...keysOf(b)];
    assert.equal(all.length, 30, 'thirty outcomes');
    assert.equal(new Set(all).size, 30, 'each msg once, on one instance');
    for (const o of b.outcomes) for (const r of o.entries) assert.equal(r.outcome.result, 'accepted', `${o.json.topic}`);
    assert.equal(b.st.figures().entries, 0);
    let closed = false;
    void a.close().then(() => (closed = true));
    await waitUntil(() => closed, 30000, 'the cut instance closes');
    assert.equal(a.outcomes.length, 10, 'A emitted nothing after the cut');
  });

  it('the state of an instance that does not drain follows the fleet\'s outbox (what waits, the oldest), read from Redis: its status and account status', async function () {
    let link = 'down';
    const a = await drainingA({ sender: gw.sender(() => link) });
    const b = instance('b');
    const states = [];
    b.on('state', (s) => states.push(s));
    await b.open();
    const last = () => states[states.length - 1];
    const t0 = Date.now();
    await accept(a, 0, 2); // accepted on the holder: B never took part
    await accept(a, 1, 1);
    await waitUntil(() => last()?.waiting === 3 && last().oldestAt !== undefined, 30000, 'B\'s state says 3 waiting and the oldest', { detail: () => JSON.stringify(last()) });
    assert.ok(last().oldestAt >= t0 - 5 && last().oldestAt <= Date.now(), 'the oldest is when the first was accepted');
    assert.ok(last().bytes > 0);
    assert.deepEqual(b.state(), last(), 'state() says the same');
    link = 'ok';
    await waitUntil(() => a.outcomes.length === 2, 30000, 'A drains');
    await waitUntil(() => last()?.waiting === 0 && last().oldestAt === undefined, 30000, 'B\'s state follows: empty', { detail: () => JSON.stringify(last()) });
    assert.ok(!drains(b));
  });

  it('an instance that does not hold the lease never ends EXPIRED an entry that the holder sent', async function () {
    // The holder marks the send after 0.5 s (B opens meanwhile, the entries waiting); the
    // gateway answers 2 s later, past the entries' TTL (1 s).
    const slow = { gatewayTime: () => new Promise((r) => setTimeout(r, 500)), send: (batch) => new Promise((r) => setTimeout(r, 2000)).then(() => gw.sender('ok').send(batch)) };
    const a = await drainingA({ sender: slow });
    const items = await accept(a, 0, 4, { ttlSeconds: 1 }); // one batch
    const b = instance('b');
    await b.open(); // it opens before A's mark; A's send is in flight when the TTL runs out
    await waitUntil(() => a.outcomes.length === 1, 30000, 'A emits the outcome');
    await new Promise((r) => setTimeout(r, 2500)); // B's TTL timer has had its chances
    assert.deepEqual(b.outcomes.map((o) => o.entries.map((e) => e.outcome.result)), [], 'B emits no outcome (no second, wrong one)');
    for (const o of a.outcomes) for (const r of o.entries) assert.equal(r.outcome.result, 'accepted');
    createdOnce(items);
  });

  it('a holder that stalled after marking a send and lost the lease meanwhile lets no request leave; the new holder sends it once', async function () {
    const a = await drainingA();
    const b = await openB();
    // A stalls right after its mark (a long GC, a frozen VM) until its lease has run out.
    const mark = a.st.markSending.bind(a.st);
    a.st.markSending = async (...args) => {
      await mark(...args);
      a.conn.client.disconnect();
      await waitUntil(() => !a.st.holds(), 30000, 'A\'s lease ran out');
    };
    const items = await accept(b, 0, 3);
    await waitUntil(() => b.outcomes.length === 1, 60000, 'B takes over and emits the msg');
    assert.deepEqual(a.calls, [], 'no request left A after its lease ended');
    assert.deepEqual(b.outcomes[0].entries.map((e) => e.outcome.result), ['accepted', 'accepted', 'accepted']);
    createdOnce(items);
  });

  it('a holder that stalled past its lease during a send (its connection up) ends nothing and emits nothing when the late reply comes: the new holder reconciled, ended and emitted that msg, once', async function () {
    const held = {};
    const { a, late } = await drainingHeldA(held);
    const b = await openB();
    const first = await accept(a, 0, 2);
    await waitUntil(() => a.outcomes.length === 1, 30000, 'the first msg through A');
    held.on = true; // the next send reaches the gateway (created), its reply waits
    const items = await accept(b, 1, 2);
    await waitUntil(() => late.length === 1, 30000, 'A sends, its reply held');
    // A stalls (a busy machine): its timers do not run, so its lease is not renewed and lapses; its connection stays up.
    clearInterval(a.st.lease.holds.get(a.st.feed).timer);
    await waitUntil(() => b.outcomes.length === 1, 60000, 'B takes the lease, reconciles A\'s send (found) and emits the msg');
    await waitUntil(() => !a.st.holds(), 30000, 'A\'s lease ran out');
    late.splice(0).forEach((reply) => reply()); // A wakes: the gateway's reply reaches it at last
    await new Promise((r) => setTimeout(r, 1000));
    const keys = [...a.outcomes, ...b.outcomes].map((o) => o.key);
    assert.equal(keys.length, 2, `two outcomes in all (A ${a.outcomes.length}, B ${b.outcomes.length})`);
    assert.equal(new Set(keys).size, 2, 'each msg once');
    assert.deepEqual(b.outcomes[0].entries.map((e) => e.outcome.result), ['accepted', 'accepted']);
    createdOnce([...first, ...items]);
  });

  it('a holder that ended a msg\'s entries and stalled past its lease before emitting its outcome: the msg ends once, on one instance', async function () {
    const a = await drainingA();
    const b = await openB();
    const first = await accept(a, 0, 1);
    await waitUntil(() => a.outcomes.length === 1, 30000, 'the first msg through A');
    let stalled = false;
    const read = a.st.msgJson.bind(a.st);
    a.st.msgJson = async (key) => {
      if (!stalled) {
        // A stalls between the end of the msg's entries and its outcome (a busy machine): no renewal, its lease lapses.
        stalled = true;
        clearInterval(a.st.lease.holds.get(a.st.feed).timer);
        await waitUntil(() => !a.st.holds(), 30000, 'A\'s lease ran out');
        await waitUntil(() => b.outcomes.length > 0, 10000, 'B emits it meanwhile').catch(() => undefined);
      }
      return read(key);
    };
    const items = await accept(b, 1, 2);
    await waitUntil(() => stalled, 30000, 'A ended the msg and stalls');
    await waitUntil(() => a.outcomes.length + b.outcomes.length >= 2, 60000, 'the msg ends');
    await new Promise((r) => setTimeout(r, 2000));
    const keys = [...a.outcomes, ...b.outcomes].map((o) => o.key);
    assert.equal(keys.length, 2, `two outcomes in all (A ${a.outcomes.length}, B ${b.outcomes.length})`);
    assert.equal(new Set(keys).size, 2, 'each msg once');
    createdOnce([...first, ...items]);
  });

  it('acceptance order across the fleet: the holder\'s own accept whose reply is still on its way (its seq given in Redis) is not overtaken by a newer one of another instance that the holder read meanwhile', async function () {
    const a = instance('a');
    await a.open();
    await waitUntil(() => drains(a), 30000, 'A holds the lease and drains');
    const b = instance('b');
    await b.open();
    let release;
    const gate = new Promise((r) => (release = r));
    let ran = false;
    const acceptNow = a.st.accept.bind(a.st);
    a.st.accept = async (...args) => {
      const seq = await acceptNow(...args);
      ran = true;
      await gate; // the script ran in Redis; its reply (the WAIT of a replica, say) is slow
      return seq;
    };
    let refused = 0;
    const mark = a.st.markSending.bind(a.st);
    a.st.markSending = (...args) => mark(...args).catch((err) => {
      if (err.reason === 'unseen') refused++;
      throw err;
    });
    const mine = accept(a, 0, 1);
    await waitUntil(() => ran, 30000, 'A\'s accept ran in Redis');
    const theirs = await accept(b, 1, 1);
    await waitUntil(() => a.fleet.readThrough >= 2 && (a.calls.length > 0 || refused > 0), 30000, 'A read B\'s accept and tried to send it', { detail: () => `readThrough ${a.fleet.readThrough}, calls ${JSON.stringify(a.calls)}` });
    release();
    const first = await mine;
    await waitUntil(() => a.outcomes.length === 2, 30000, () => `both outcomes on A (${a.outcomes.length})`);
    assert.deepEqual(a.calls.flat(), [...first, ...theirs], 'A\'s (accepted first) sent before B\'s');
    createdOnce([...first, ...theirs]);
  });
});
