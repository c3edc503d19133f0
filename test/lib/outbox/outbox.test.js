'use strict';
/**
 * The outbox engine over a real file store (issue 45): order, priorities, batches, TTL,
 * both whenFull policies, the entries and bytes bounds, unknown sends reconciled before
 * anything is sent again, one outcome per msg (kept for the next open when no one takes it),
 * and a restart that finds every state.
 */
const assert = require('node:assert/strict');
const { waitUntil } = require('../../helpers/wait');
const { FakeGateway, tmpDir, openOutbox, entries } = require('./fake-gateway');
const { FileOutboxStore } = require('../../../dist/lib/outbox/file-store');

const ns = (items) => items.map((i) => i.n);
const outcomeOf = (ob, key) => ob.outcomes.filter((o) => o.key === key);

describe('outbox engine (issue 45)', function () {
  this.timeout(60000);
  const open = [];
  afterEach(async function () {
    for (const ob of open.splice(0)) await ob.close().catch(() => undefined);
  });
  const start = async (gw, options, storeOptions, dir = tmpDir()) => {
    const ob = await openOutbox(dir, gw, options, storeOptions);
    open.push(ob);
    ob.dir = dir;
    return ob;
  };

  it('sends in order: priority 0 first, then acceptance order; one kind per batch, at most batchMax', async function () {
    const gw = new FakeGateway();
    gw.mode = 'down';
    const ob = await start(gw, { batchMax: 2 });
    const a = entries(3);
    const b = entries(1, 'cancel');
    const c = entries(1);
    const d = entries(2);
    const e = entries(1);
    await ob.accept('m1', { topic: 'a' }, a);
    await ob.accept('m2', { topic: 'b' }, b);
    await ob.accept('m3', { topic: 'c' }, c, { priority: 9 });
    await ob.accept('m4', { topic: 'd' }, d, { priority: 0 });
    await ob.accept('m5', { topic: 'e' }, e);
    // A batch taken before m4 came (recorded as sending, its call not yet made: a slow sync on a
    // busy machine) goes first, as it should: two more calls that fail make sure the next is
    // taken with all five waiting.
    const calls = gw.calls.length;
    await waitUntil(() => gw.calls.length >= calls + 2, 30000, 'two sends after the last accept');
    gw.mode = 'ok';
    await waitUntil(() => ob.outcomes.length === 5, 30000, 'five outcomes');
    const order = [...d, ...a, ...b, ...e, ...c].map((x) => x.item.n);
    assert.deepEqual(ns(gw.log), order);
    for (const call of gw.calls) assert.ok(call.ns.length <= 2, `batch of ${call.ns.length}`);
    assert.ok(gw.calls.some((call) => call.kind === 'cancel' && call.ns.length === 1), 'the cancel went in a batch of its own');
    for (const o of ob.outcomes) {
      assert.equal(outcomeOf(ob, o.key).length, 1);
      for (const r of o.entries) assert.equal(r.outcome.result, 'accepted');
    }
    assert.deepEqual(ob.outcomes.find((o) => o.msgId === 'm4').json, { topic: 'd' });
    assert.equal(ob.state().waiting, 0);
  });

  it('an entry in the batch in flight still counts for the oldest (the state says 1 waiting and since when)', async function () {
    const gw = new FakeGateway();
    gw.mode = 'held';
    const ob = await start(gw);
    const before = Date.now();
    await ob.accept('m', { payload: 1 }, entries(1));
    await waitUntil(() => gw.held.length === 1, 30000, 'the send in flight');
    const s = ob.state();
    gw.mode = 'down';
    gw.release();
    assert.equal(s.waiting, 1);
    assert.ok(typeof s.oldestAt === 'number' && s.oldestAt >= before - 1000 && s.oldestAt <= Date.now(), `oldestAt ${s.oldestAt}`);
  });

  it('an outcome no one takes (deliver says no: the nodes on it close) is neither emitted nor forgotten: the next open emits it once', async function () {
    const gw = new FakeGateway();
    let reply;
    const held = { send: (batch) => gw.sender('ok').send(batch).then((out) => new Promise((r) => (reply = () => r(out)))) };
    let taking = true;
    const given = [];
    const deliver = (o) => taking && given.push(o.key) > 0;
    const ob = await start(gw, { sender: held, deliver });
    const [item] = entries(1);
    const { key } = await ob.accept('m', { topic: 'late' }, [item]);
    await waitUntil(() => reply !== undefined, 30000, 'the send in flight');
    taking = false; // the nodes close: the close waits for the send in flight
    const closed = ob.close();
    reply();
    await closed;
    assert.deepEqual([given, ob.outcomes], [[], []], 'not emitted');
    taking = true;
    const again = await start(gw, { deliver }, {}, ob.dir);
    await waitUntil(() => again.outcomes.length === 1, 30000, 'the outcome at the next open');
    assert.deepEqual(given, [key]);
    assert.equal(again.outcomes[0].entries[0].outcome.result, 'accepted');
    assert.equal(again.outcomes[0].json.topic, 'late');
    assert.equal(gw.created.get(item.item.n), 1, 'created once');
    await waitUntil(() => again.state().waiting === 0 && again.store.figures().entries === 0, 30000, 'forgotten once emitted');
  });

  it('a msg whose entries are accepted and rejected ends once, with each entry\'s outcome', async function () {
    const gw = new FakeGateway();
    const ob = await start(gw);
    const list = [...entries(1), ...entries(1, 'message', { reject: true })];
    const { key } = await ob.accept('m', { payload: 1 }, list);
    await waitUntil(() => ob.outcomes.length === 1, 30000, 'the outcome');
    const [o] = ob.outcomes;
    assert.equal(o.key, key);
    assert.deepEqual(o.entries.map((x) => x.outcome.result), ['accepted', 'rejected']);
    assert.equal(o.entries[1].outcome.errorName, 'BAD_DESTINATION');
    assert.equal(o.entries[0].attempts, 1);
    assert.ok(o.entries[0].sentAt >= o.acceptedAt);
    assert.equal(o.entries[0].item.n, list[0].item.n);
  });

  it('an entry whose TTL ends while the link is down ends EXPIRED by its own timer (no retry due for ten minutes), and is never sent after', async function () {
    const gw = new FakeGateway();
    gw.mode = 'down';
    // After the first refusal the next try is ten minutes away: only the TTL's timer can end the msg in this test.
    const ob = await start(gw, { backoffMs: { first: 600_000, max: 600_000 } });
    const list = entries(2);
    await ob.accept('m', {}, list, { ttlSeconds: 0.3 });
    await waitUntil(() => ob.outcomes.length === 1, 30000, 'the outcome', () => JSON.stringify(ob.state()));
    assert.deepEqual(ob.outcomes[0].entries.map((x) => x.outcome.result), ['EXPIRED', 'EXPIRED']);
    assert.equal(gw.calls.length, 1, 'tried once, refused, then ended by the timer and not by a retry');
    assert.equal(ob.state().phase, 'backoff', 'the retry is still waiting');
    for (const x of ob.outcomes[0].entries) assert.ok(x.outcome.at >= x.acceptedAt + 300, 'not before its TTL');
    // Reopened with the link up: what expired stays ended, a new msg goes out alone.
    await ob.close();
    gw.mode = 'ok';
    const again = await start(gw, {}, {}, ob.dir);
    await again.accept('m2', {}, entries(1));
    await waitUntil(() => again.outcomes.length === 1, 30000, 'the second outcome');
    assert.equal(again.outcomes[0].msgId, 'm2');
    assert.ok(gw.calls.slice(1).every((c) => !c.ns.includes(list[0].item.n) && !c.ns.includes(list[1].item.n)), 'never sent after it expired');
    assert.equal(gw.created.has(list[0].item.n), false);
  });

  it('whenFull reject: the msg over maxEntries or maxBytes is OUTBOX_FULL and nothing of it is kept', async function () {
    const gw = new FakeGateway();
    gw.mode = 'down';
    const ob = await start(gw, { maxEntries: 3, maxBytes: 2000 });
    await ob.accept('m1', {}, entries(2));
    await assert.rejects(ob.accept('m2', {}, entries(2)), (err) => err.code === 'OUTBOX_FULL');
    await ob.accept('m3', {}, entries(1));
    await assert.rejects(ob.accept('m4', {}, entries(1)), (err) => err.code === 'OUTBOX_FULL');
    await assert.rejects(ob.accept('m5', { big: 'x'.repeat(3000) }, entries(1)), (err) => err.code === 'OUTBOX_FULL' && /alone/.test(err.message));
    assert.equal(ob.state().waiting, 3);
    const small = await start(gw, { maxEntries: 100, maxBytes: 900 });
    await small.accept('b1', { pad: 'x'.repeat(300) }, entries(1));
    await assert.rejects(small.accept('b2', { pad: 'x'.repeat(300) }, entries(1)), (err) => err.code === 'OUTBOX_FULL');
    assert.ok(small.state().bytes <= 900);
    gw.mode = 'ok';
    await waitUntil(() => ob.outcomes.length === 2 && small.outcomes.length === 1, 30000, 'the kept msgs sent');
    await ob.close();
    const reopened = await start(gw, {}, {}, ob.dir);
    assert.equal(reopened.state().waiting, 0, 'nothing of a refused msg was kept');
    assert.equal(reopened.outcomes.length, 0);
  });

  it('whenFull drop-oldest: the oldest entries end OUTBOX_FULL (their msg once) to make room', async function () {
    const gw = new FakeGateway();
    gw.mode = 'down';
    const ob = await start(gw, { maxEntries: 3, whenFull: 'drop-oldest', backoffMs: { first: 60000, max: 60000 } });
    const first = await ob.accept('m1', {}, entries(2));
    await waitUntil(() => gw.calls.length === 1 && ob.state().phase === 'backoff', 30000, 'the first send refused');
    await ob.accept('m2', {}, entries(1), { priority: 0 });
    await ob.accept('m3', {}, entries(2));
    await waitUntil(() => ob.outcomes.length === 1, 30000, 'the dropped msg\'s outcome');
    assert.equal(ob.outcomes[0].key, first.key);
    assert.deepEqual(ob.outcomes[0].entries.map((x) => x.outcome.result), ['OUTBOX_FULL', 'OUTBOX_FULL']);
    assert.equal(ob.state().waiting, 3);
    await ob.close();
    gw.mode = 'ok';
    const re = await start(gw, { maxEntries: 3, whenFull: 'drop-oldest' }, {}, ob.dir);
    await waitUntil(() => re.outcomes.length === 2, 30000, 'the kept msgs sent after a restart');
    assert.equal(new Set([...ob.outcomes, ...re.outcomes].map((o) => o.key)).size, 3, 'one outcome per msg');
    assert.equal(gw.created.size, 3);
  });

  it('an unknown send is reconciled before anything else is sent: found ends it accepted, never created twice', async function () {
    const gw = new FakeGateway();
    gw.mode = 'lost';
    const ob = await start(gw);
    const list = entries(2);
    await ob.accept('m', {}, list);
    await waitUntil(() => gw.calls.length === 1, 30000, 'the first send');
    gw.mode = 'ok';
    await ob.accept('m2', {}, entries(1));
    await waitUntil(() => ob.outcomes.length === 2, 30000, 'both outcomes');
    for (const x of list) assert.equal(gw.created.get(x.item.n), 1);
    assert.equal(ob.outcomes[0].entries[0].outcome.gatewayId, gw.ids.get(list[0].item.n));
    assert.deepEqual(ns(gw.log).slice(0, 2), ns(list.map((x) => x.item)), 'the later msg waited for the reconciliation');
  });

  it('an unknown send that was not created (absent) is sent again in its place; not-yet asks again later', async function () {
    const gw = new FakeGateway();
    gw.mode = 'unsent';
    gw.reconcileMode = 'not-yet';
    const ob = await start(gw);
    const first = entries(1);
    await ob.accept('m1', {}, first);
    await waitUntil(() => gw.calls.length === 1, 30000, 'the first send');
    gw.mode = 'ok';
    const later = entries(1);
    await ob.accept('m2', {}, later, { priority: 9 });
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(gw.calls.length, 1, 'nothing sent while the outcome is unknown');
    assert.equal(ob.state().unknown, 1);
    gw.reconcileMode = 'look';
    await waitUntil(() => ob.outcomes.length === 2, 30000, 'both outcomes');
    assert.deepEqual(ns(gw.log), [first[0].item.n, later[0].item.n]);
    assert.equal(ob.outcomes[0].entries[0].attempts, 2);
  });

  it('an unknown send the gateway\'s records cannot tell ends with the code the sender gave (TIMEOUT), whatever its reason says; without one, NETWORK', async function () {
    const gw = new FakeGateway();
    const cannotTell = { reconcile: async (_attempt, list) => list.map(() => ({ result: 'unknown', why: 'the records cannot tell' })) };
    const timedOut = { send: async (batch) => batch.entries.map(() => ({ result: 'unknown', code: 'TIMEOUT', reason: 'no reply within 5 s' })) };
    const ob = await start(gw, { sender: timedOut, reconciler: cannotTell });
    await ob.accept('m1', {}, entries(1));
    await waitUntil(() => ob.outcomes.length === 1, 30000, 'the outcome');
    assert.deepEqual(ob.outcomes[0].entries.map((e) => [e.outcome.result, e.outcome.code]), [['unknown', 'TIMEOUT']]);
    const lost = { send: async (batch) => batch.entries.map(() => ({ result: 'unknown', reason: 'TIMEOUT: a reason is text, not a code' })) };
    const other = await start(gw, { sender: lost, reconciler: cannotTell });
    await other.accept('m2', {}, entries(1));
    await waitUntil(() => other.outcomes.length === 1, 30000, 'the outcome');
    assert.deepEqual(other.outcomes[0].entries.map((e) => [e.outcome.result, e.outcome.code]), [['unknown', 'NETWORK']]);
  });

  it('the reconciler is told when an unknown send\'s call ended (the settle time counts from it): its end, or the open\'s time after a restart', async function () {
    const gw = new FakeGateway();
    const seen = [];
    let answer = [{ result: 'not-yet' }];
    const reconciler = { reconcile: async (attempt, list, context) => (seen.push({ attempt, context }), answer) };
    const slowUnknown = { send: (batch) => new Promise((r) => setTimeout(r, 300)).then(() => batch.entries.map(() => ({ result: 'unknown', reason: 'TIMEOUT' }))) };
    const dir = tmpDir();
    const ob = await start(gw, { sender: slowUnknown, reconciler }, undefined, dir);
    await ob.accept('m1', {}, entries(1));
    await waitUntil(() => seen.length > 0, 30000, 'a reconciliation');
    const [{ attempt, context }] = seen;
    assert.ok(context?.unknownSince >= attempt.startedAt + 250, `unknownSince ${context?.unknownSince - attempt.startedAt} ms after the start: the call's end`);
    await ob.close();
    // A restart finds it sending: the request may have been in flight until the process died.
    const opening = Date.now();
    seen.length = 0;
    answer = [{ result: 'absent' }];
    const again = await start(gw, { sender: gw.sender('ok'), reconciler }, undefined, dir);
    await waitUntil(() => again.outcomes.length === 1, 30000, 'the outcome after the restart');
    assert.equal(seen[0].attempt.id, attempt.id, 'the same attempt, found at open');
    assert.ok(seen[0].context?.unknownSince >= opening, 'after a restart: the open\'s time');
  });

  it('a restart finds every state: waiting sent, sending reconciled, ended-not-emitted emitted once with the msg as accepted', async function () {
    const dir = tmpDir();
    const store = new FileOutboxStore(dir);
    await store.open();
    const mk = (key, n) => ({ key, msgId: key, json: { topic: key }, acceptedAt: Date.now(), entryIds: [`${key}/0`] , n });
    const entry = (key, n) => ({ id: `${key}/0`, msgKey: key, kind: 'message', item: { n }, priority: 4, seq: 0, acceptedAt: Date.now(), expiresAt: Date.now() + 60000, attempts: 0, state: { phase: 'waiting' } });
    for (const [key, n] of [['a', 9001], ['b', 9002], ['c', 9003], ['d', 9004]]) await store.accept(mk(key, n), [entry(key, n)]);
    await store.markSending(['b/0'], { id: 'att1', startedAt: Date.now() });
    await store.markSending(['c/0'], { id: 'att2', startedAt: Date.now() });
    await store.end([{ id: 'd/0', outcome: { result: 'accepted', gatewayId: '77', at: Date.now() } }]);
    // Killed here (every call above was synced: closing the file adds nothing). b was created at the gateway, c was not.
    await store.close();
    const gw = new FakeGateway();
    gw.create({ n: 9002 });
    const ob = await start(gw, {}, {}, dir);
    await waitUntil(() => ob.outcomes.length === 4, 30000, 'four outcomes');
    const by = Object.fromEntries(ob.outcomes.map((o) => [o.key, o]));
    assert.deepEqual(by.d.json, { topic: 'd' });
    assert.equal(by.d.entries[0].outcome.gatewayId, '77');
    assert.equal(by.b.entries[0].outcome.gatewayId, gw.ids.get(9002));
    for (const n of [9001, 9002, 9003]) assert.equal(gw.created.get(n), 1, `entry ${n} created once`);
    assert.equal(gw.created.has(9004), false);
    await ob.close();
    const again = await start(gw, {}, {}, dir);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(again.outcomes.length, 0, 'no outcome twice after a clean restart');
  });

  it('STORAGE when the folder cannot be made (a path under a file), and when a write fails (nothing kept)', async function () {
    const fs = require('node:fs');
    const path = require('node:path');
    const file = path.join(tmpDir(), 'a-file');
    fs.writeFileSync(file, 'x');
    const gw = new FakeGateway();
    await assert.rejects(openOutbox(path.join(file, 'sub'), gw), (err) => err.code === 'STORAGE' && /ENOTDIR/.test(err.message) && !err.message.includes(file));
    const dir = tmpDir();
    let failing = false;
    const fsp = require('node:fs/promises');
    const faulty = { ...fsp, mkdir: fsp.mkdir, readdir: fsp.readdir, rename: fsp.rename, unlink: fsp.unlink, open: async (...a) => {
      const fh = await fsp.open(...a);
      const write = fh.write.bind(fh);
      fh.write = (...w) => (failing ? Promise.reject(Object.assign(new Error('no space'), { code: 'ENOSPC' })) : write(...w));
      return fh;
    } };
    gw.mode = 'down';
    const ob = await start(gw, {}, { fs: faulty }, dir);
    await ob.accept('ok', {}, entries(1));
    failing = true;
    await assert.rejects(ob.accept('full', {}, entries(1)), (err) => err.code === 'STORAGE' && /ENOSPC/.test(err.message));
    assert.equal(ob.state().waiting, 1);
    failing = false;
    await ob.close();
    const re = await start(gw, {}, {}, dir);
    assert.equal(re.state().waiting, 1, 'the refused msg is not in the store');
  });

  it('BAD_INPUT for a priority or TTL out of range, nothing kept', async function () {
    const gw = new FakeGateway();
    const ob = await start(gw);
    await assert.rejects(ob.accept('m', {}, entries(1), { priority: 10 }), (err) => err.code === 'BAD_INPUT' && err.field === 'msg.priority');
    await assert.rejects(ob.accept('m', {}, entries(1), { ttlSeconds: 0 }), (err) => err.code === 'BAD_INPUT' && err.field === 'msg.ttl');
    await assert.rejects(ob.accept('m', {}, []), (err) => err.code === 'BAD_INPUT');
    assert.equal(ob.state().waiting, 0);
  });
});
