'use strict';
/**
 * The outbox's Redis store (issue 45; nodes.md "A fleet") against a real redis-server: the
 * file store's behaviours (all-or-nothing accepts, states that a new connection finds,
 * bounds, end and forget with their figures), the drain lease (only its holder's sends are
 * recorded; another instance takes over when it ends and finds the sends left unknown; a mark
 * never overtakes an older entry another instance accepted that the drainer has not read), a
 * Redis killed during accepts (SHARED_STATE, nothing half written), pages within the reply
 * bound with 100,000 entries, the summary an instance that does not drain shows, and the
 * engine draining through it exactly once.
 */
const assert = require('node:assert/strict');
const { describeRedis, RedisServer, findRedisServer } = require('../../helpers/redis');
const { waitUntil } = require('../../helpers/wait');
const { RedisConnection, AccountKeys, RedisOutboxStore, redisSharedState } = require('../../../dist/lib/account/redis');
const { Outbox } = require('../../../dist/lib/outbox/outbox');
const { FakeGateway, entries: newEntries } = require('./fake-gateway');

const msg = (key, n = 1, json = { topic: key }) => ({ key, msgId: `id-${key}`, json, acceptedAt: 1, entryIds: Array.from({ length: n }, (_, i) => `${key}/${i}`) });
const entry = (key, i, item = { n: i }, priority = 4) => ({ id: `${key}/${i}`, msgKey: key, kind: 'message', item, priority, seq: 0, acceptedAt: 1, expiresAt: 9e15, attempts: 0, state: { phase: 'waiting' } });
const entriesOf = (key, n, item) => Array.from({ length: n }, (_, i) => entry(key, i, item ? item(i) : { n: i }));

describeRedis('outbox Redis store (issue 45, real redis-server)', function (ctx) {
  this.timeout(120000);
  const conns = [];
  const stores = [];
  let n = 0;
  let keys;
  let name;
  const conn = (opts = {}) => {
    const c = new RedisConnection({ url: ctx.server.url, keyPrefix: 'iotgw:', ...opts });
    c.on('failure', () => {});
    conns.push(c);
    return c;
  };
  const store = (opts = {}, c = conn()) => {
    const s = new RedisOutboxStore(c, keys, name, { timeoutMs: 5000, leaseMs: 1000, ...opts });
    stores.push(s);
    return s;
  };
  beforeEach(function () {
    keys = AccountKeys.of('iotgw:', { baseUrl: 'http://127.0.0.1:1', clientId: `outbox-${++n}` });
    name = `ob-${n}`;
  });
  afterEach(async function () {
    for (const s of stores.splice(0)) await s.close().catch(() => undefined);
    await Promise.all(conns.splice(0).map((c) => c.close()));
  });
  /** What a new store on a new connection finds (then closed). */
  const reopen = async () => {
    const s = store();
    return s.open();
  };
  const outboxKeys = async () => (await conn().run('keys', (r) => r.keys(`iotgw:{${keys.hash}}:outbox:*`), { timeoutMs: 5000 })).sort();

  it('accepts a msg whole with its seqs and items; a new connection finds it; a msg over the bounds is refused with nothing kept', async function () {
    const s = store({ maxEntries: 5, maxBytes: 100000 });
    await s.open();
    assert.equal(await s.accept(msg('a', 3, { topic: 'a', deep: { x: [1, 'é'] } }), entriesOf('a', 3)), 1);
    assert.equal(await s.accept(msg('b', 2), entriesOf('b', 2)), 4);
    assert.equal(await s.accept(msg('a', 3), entriesOf('a', 3)), 1, 'the same msg again (a reply lost, run twice): its first seq, nothing added');
    await assert.rejects(s.accept(msg('c', 1), entriesOf('c', 1)), (e) => e.code === 'OUTBOX_FULL');
    const before = await outboxKeys();
    const bytesBefore = s.figures().bytes;
    const opened = await reopen();
    assert.deepEqual(opened.entries.map((e) => [e.id, e.seq, e.state.phase]), [['a/0', 1, 'waiting'], ['a/1', 2, 'waiting'], ['a/2', 3, 'waiting'], ['b/0', 4, 'waiting'], ['b/1', 5, 'waiting']]);
    assert.deepEqual(opened.msgs.map((m) => [m.key, m.msgId, m.entryIds.length]), [['a', 'id-a', 3], ['b', 'id-b', 2]]);
    assert.equal(opened.nextSeq, 6);
    assert.equal(opened.msgs.reduce((t, m) => t + m.bytes, 0), bytesBefore);
    const s2 = stores[stores.length - 1];
    assert.deepEqual(await s2.msgJson('a'), { topic: 'a', deep: { x: [1, 'é'] } });
    assert.deepEqual([...(await s2.load(['b/1', 'a/0', 'gone/0']))], [['b/1', { n: 1 }], ['a/0', { n: 0 }]]);
    const big = store({ maxBytes: 2000 });
    await big.open();
    await assert.rejects(big.accept(msg('d', 1), entriesOf('d', 1, () => ({ pad: 'x'.repeat(5000) }))), (e) => e.code === 'OUTBOX_FULL');
    assert.deepEqual(await outboxKeys(), before, 'nothing of the refused msgs was written');
  });

  it('a new connection finds sending, ended and waiting-again entries with attempts; end and forget bring the figures back to nothing', async function () {
    const s = store();
    await s.open();
    for (const k of ['a', 'b', 'c', 'd']) await s.accept(msg(k), [entry(k, 0, { n: k })]);
    await s.waitForLease();
    const attempt = { id: 'x1', startedAt: 5, gatewayTime: '2026-01-01 00:00:00' };
    await s.markSending(['a/0', 'b/0', 'c/0'], attempt);
    await s.markSending(['a/0', 'b/0', 'c/0'], attempt); // run twice (a lost reply): once
    await s.end([{ id: 'a/0', outcome: { result: 'accepted', gatewayId: '9223372036854775807', at: 6 } }]);
    await s.backToWaiting(['b/0']);
    await s.forget(['d']);
    assert.deepEqual(s.figures(), { entries: 2, bytes: s.figures().bytes, storedBytes: s.figures().bytes });
    const opened = await reopen();
    const by = Object.fromEntries(opened.entries.map((e) => [e.id, e]));
    assert.deepEqual(Object.keys(by), ['a/0', 'b/0', 'c/0']);
    assert.deepEqual(by['a/0'].state, { phase: 'ended', outcome: { result: 'accepted', gatewayId: '9223372036854775807', at: 6 } });
    assert.equal(by['a/0'].sentAt, 5);
    assert.deepEqual([by['b/0'].state.phase, by['b/0'].attempts], ['waiting', 1]);
    assert.deepEqual([by['c/0'].state, by['c/0'].attempts], [{ phase: 'sending', attempt }, 1]);
    await s.end([{ id: 'b/0', outcome: { result: 'EXPIRED', at: 7 } }, { id: 'c/0', outcome: { result: 'rejected', errorId: 5, errorName: 'X', at: 7 } }]);
    await s.forget(['a', 'b', 'c']);
    assert.deepEqual(s.figures(), { entries: 0, bytes: 0, storedBytes: 0 });
    assert.deepEqual(await outboxKeys(), [`iotgw:{${keys.hash}}:outbox:${name}:meta`, `iotgw:{${keys.hash}}:outbox:${name}:seq`], 'only the counter and the figures are left');
    assert.equal((await reopen()).nextSeq, 5, 'seqs never go back');
  });

  it('summary: the figures and the oldest entry not ended (sending counts, ended ones are passed over), read by a store that took no part', async function () {
    const s = store();
    await s.open();
    const at = (e, t, p = 4) => ({ ...e, acceptedAt: t, priority: p });
    await s.accept({ ...msg('a', 2), acceptedAt: 10 }, [at(entry('a', 0), 10), at(entry('a', 1), 10)]);
    await s.accept({ ...msg('b'), acceptedAt: 20 }, [at(entry('b', 0), 20)]);
    await s.accept({ ...msg('c'), acceptedAt: 30 }, [at(entry('c', 0), 30, 0)]);
    const other = store(); // another instance: it never accepted, never opened
    assert.deepEqual(await other.summary(), { entries: 4, bytes: s.figures().bytes, oldestAt: 10 });
    await s.waitForLease();
    await s.end([{ id: 'a/0', outcome: { result: 'EXPIRED', at: 11 } }]);
    assert.equal((await other.summary()).oldestAt, 10, 'a/1 still waits');
    await s.markSending(['a/1', 'b/0'], { id: 'x', startedAt: 12 });
    assert.equal((await other.summary()).oldestAt, 10, 'a/1 is being sent: not ended');
    await s.end([{ id: 'a/1', outcome: { result: 'accepted', gatewayId: '1', at: 13 } }]);
    assert.deepEqual(await other.summary(), { entries: 2, bytes: s.figures().bytes, oldestAt: 20 }, 'a ended (not forgotten yet): b, being sent');
    const narrow = store({ pageEntries: 1 }); // looks at one entry of the seq order: the ended a/0, then the waiting ones by priority
    assert.equal((await narrow.summary()).oldestAt, 30);
    await s.end([{ id: 'b/0', outcome: { result: 'accepted', gatewayId: '2', at: 14 } }, { id: 'c/0', outcome: { result: 'EXPIRED', at: 14 } }]);
    assert.deepEqual(await other.summary(), { entries: 0, bytes: s.figures().bytes }, 'nothing waits: no oldest');
    assert.deepEqual(other.figures().entries, 0, 'its figures follow');
  });

  it('two instances on one outbox: only the lease holder records sends; the other takes over when its lease ends and finds its unknown send', async function () {
    const cA = conn();
    const a = store({ timeoutMs: 1000 }, cA);
    const b = store();
    await a.open();
    await a.waitForLease();
    await b.open();
    await a.accept(msg('m1', 2), entriesOf('m1', 2));
    await b.accept(msg('m2', 1), entriesOf('m2', 1));
    assert.equal(b.holds(), false);
    await assert.rejects(b.markSending(['m2/0'], { id: 'b1', startedAt: 1 }), (e) => e.code === 'SHARED_STATE' && e.reason === 'fenced');
    await a.markSending(['m1/0', 'm1/1'], { id: 'a1', startedAt: 2 });
    await assert.rejects(b.end([{ id: 'm1/0', outcome: { result: 'accepted', gatewayId: '1', at: 3 } }]), (e) => e.reason === 'fenced', 'a send of the holder ends only by the holder');
    await assert.rejects(b.backToWaiting(['m1/0']), (e) => e.reason === 'fenced');
    await b.end([{ id: 'm2/0', outcome: { result: 'EXPIRED', at: 3 } }]); // a waiting entry: anyone
    // The holder dies: its connection is cut, its lease is not released and lapses.
    cA.client.disconnect();
    await waitUntil(() => b.holds(), 30000, 'b takes the lease over');
    await assert.rejects(a.markSending(['m1/0'], { id: 'a2', startedAt: 4 }), (e) => e.code === 'SHARED_STATE');
    const opened = await b.open();
    const sending = opened.entries.filter((e) => e.state.phase === 'sending');
    assert.deepEqual(sending.map((e) => [e.id, e.state.attempt.id, e.attempts]), [['m1/0', 'a1', 1], ['m1/1', 'a1', 1]]);
    await assert.rejects(b.markSending(['m1/0'], { id: 'b2', startedAt: 5 }), (e) => e.reason === 'stale', 'an entry being sent is never marked again before its reconciliation');
    await b.backToWaiting(['m1/0']);
    await b.markSending(['m1/0'], { id: 'b3', startedAt: 6 });
    assert.equal((await reopen()).entries.find((e) => e.id === 'm1/0').attempts, 2);
  });

  it('one writer ends an entry: an end of an entry another writer ended otherwise, or forgot, changes nothing and says it was taken; the same end run again is the same end', async function () {
    const s = store();
    await s.open();
    await s.waitForLease();
    await s.accept(msg('m1', 2), entriesOf('m1', 2));
    await s.markSending(['m1/0', 'm1/1'], { id: 'a1', startedAt: 2 });
    const mine = { id: 'm1/0', outcome: { result: 'accepted', gatewayId: '7', at: 3 } };
    assert.deepEqual(await s.end([mine]), { taken: [] });
    assert.deepEqual(await s.end([mine]), { taken: [] }, 'run again (its reply lost): the same end');
    assert.equal(s.figures().entries, 1, 'ended once');
    // The lease's next holder ended it otherwise (a late answer of the one that lost the lease):
    assert.deepEqual(await s.end([{ id: 'm1/0', outcome: { result: 'accepted', gatewayId: '7', at: 9 } }, { id: 'm1/1', outcome: { result: 'accepted', gatewayId: '8', at: 9 } }]), { taken: ['m1/0'] });
    const found = (await reopen()).entries.map((e) => [e.id, e.state.outcome.at]);
    assert.deepEqual(found, [['m1/0', 3], ['m1/1', 9]], 'm1/0 kept its first end; m1/1 ended');
    assert.equal(s.figures().entries, 0);
    await s.forget(['m1']);
    assert.deepEqual(await s.end([{ id: 'm1/1', outcome: { result: 'accepted', gatewayId: '8', at: 10 } }]), { taken: ['m1/1'] }, 'forgotten: taken');
    assert.equal(s.figures().entries, 0);
  });

  it('one instance emits a msg\'s outcome: the claim of the lease holder; the next holder waits out a fresh claim of the last one (a lease time, here 5 s), then takes it; none once the msg is forgotten, none without the lease', async function () {
    const cA = conn();
    const a = store({ claimGraceMs: 5000 }, cA);
    const b = store({ claimGraceMs: 5000 });
    await a.open();
    await a.waitForLease();
    await b.open();
    await a.accept(msg('m1'), entriesOf('m1', 1));
    await a.accept(msg('m2'), entriesOf('m2', 1));
    assert.equal(await b.claim('m1'), -1, 'not the holder');
    assert.equal(await a.claim('m1'), 0);
    assert.equal(await a.claim('m1'), 0, 'its own claim again');
    cA.client.disconnect(); // A dies before it forgot m1
    await waitUntil(() => b.holds(), 30000, 'b takes the lease over');
    const wait = await b.claim('m1');
    assert.ok(wait > 0 && wait <= 5000, `A's fresh claim is waited out (${wait} ms)`);
    await new Promise((r) => setTimeout(r, wait + 50));
    assert.equal(await b.claim('m1'), 0, 'then taken: the outcome given again, as after a kill');
    assert.equal(await b.claim('m2'), 0, 'a msg no one claimed: at once');
    await b.forget(['m1']);
    assert.equal(await b.claim('m1'), -1, 'forgotten: emitted');
    assert.deepEqual((await outboxKeys()).filter((k) => k.endsWith(':mo')), [`iotgw:{${keys.hash}}:outbox:${name}:mo`], 'm2\'s claim is kept with it');
    await b.forget(['m2']);
    assert.deepEqual((await outboxKeys()).filter((k) => k.endsWith(':mo')), [], 'and forgotten with it');
  });

  it('a mark that would overtake an older waiting entry of its priority the drainer has not read (another instance\'s accept) is refused, unseen, with nothing marked; read, or of another priority, it is not', async function () {
    const a = store();
    const b = store();
    await a.open();
    await a.waitForLease();
    await b.open();
    await a.accept(msg('m1'), entriesOf('m1', 1)); // seq 1: the drainer read through it
    await b.accept(msg('m2'), entriesOf('m2', 1)); // seq 2, another instance's, not read
    await a.accept(msg('m3'), entriesOf('m3', 1)); // seq 3, the drainer's own
    await a.accept(msg('m4'), [entry('m4', 0, { n: 0 }, 0)]); // seq 4, priority 0
    await assert.rejects(a.markSending(['m3/0'], { id: 'x1', startedAt: 1 }, 1), (e) => e.code === 'SHARED_STATE' && e.reason === 'unseen' && /another instance/.test(e.message));
    assert.equal((await reopen()).entries.find((e) => e.id === 'm3/0').state.phase, 'waiting', 'nothing marked');
    await a.markSending(['m4/0'], { id: 'x2', startedAt: 2 }, 1); // priority 0: nothing older waits there
    await a.markSending(['m1/0'], { id: 'x3', startedAt: 3 }, 1); // read
    await a.markSending(['m2/0', 'm3/0'], { id: 'x4', startedAt: 4 }, 1); // the older one goes with it
    await a.markSending(['m2/0', 'm3/0'], { id: 'x4', startedAt: 4 }, 1); // run twice (a reply lost)
    const found = await reopen();
    assert.deepEqual(['m1/0', 'm2/0', 'm3/0', 'm4/0'].map((id) => found.entries.find((e) => e.id === id).state.attempt.id), ['x3', 'x4', 'x4', 'x2']);
  });

  it("the account's shared state gives each instance a store of the same outbox, with the bounds it is given", async function () {
    const account = { kind: 'gateway', id: 'gw1', baseUrl: 'http://127.0.0.1:1', principal: `client-${n}` };
    const settings = () => ({ groups: {}, maxConcurrent: 0, timeoutMs: 5000, leaseMs: 1000 });
    const one = redisSharedState(conn(), settings, 'instance-1').outboxStore(account, name, { maxEntries: 2 });
    const two = redisSharedState(conn(), settings, 'instance-2').outboxStore(account, name, { maxEntries: 2 });
    stores.push(one, two);
    await one.open();
    await two.open();
    await one.accept(msg('a'), entriesOf('a', 1));
    await two.accept(msg('b'), entriesOf('b', 1));
    await assert.rejects(one.accept(msg('c'), entriesOf('c', 1)), (e) => e.code === 'OUTBOX_FULL', 'the bound counts the fleet');
    assert.deepEqual((await two.open()).msgs.map((m) => m.key), ['a', 'b']);
    await waitUntil(() => one.holds() !== two.holds(), 30000, 'one of them drains');
    assert.match(one.lease.instanceId, /instance-1/);
  });

  it('pages stay within the reply bound: 100,000 entries waiting are read by a connection whose bound is 2 MiB, and a 3 MiB item in slices', async function () {
    const s = store({}, conn({ maxReplyBytes: 2 * 1024 * 1024 }));
    await s.open();
    const per = 2000;
    for (let m = 0; m < 50; m++) await s.accept(msg(`k${m}`, per), entriesOf(`k${m}`, per, (i) => ({ n: i, DestinationID: `D${i % 50}`, RawPayload: [1, 2, 3, 4, 5, 6, 7, 8] })));
    await s.accept(msg('big', 1), [entry('big', 0, { pad: 'é'.repeat(1.5 * 1024 * 1024) })]);
    const small = store({}, conn({ maxReplyBytes: 2 * 1024 * 1024 }));
    const opened = await small.open();
    assert.equal(opened.entries.length, 100001);
    assert.equal(opened.msgs.length, 51);
    assert.ok(opened.msgs.reduce((t, m) => t + m.bytes, 0) > 10 * 1024 * 1024, 'more than the bound in all');
    const items = await small.load(opened.msgs[0].entryIds);
    assert.equal(items.size, per);
    assert.equal((await small.load(['big/0'])).get('big/0').pad.length, 1.5 * 1024 * 1024);
  });

  it('the engine drains through it exactly once, and a second instance takes over a dead drainer\'s unknown sends', async function () {
    const gw = new FakeGateway();
    let hang = false;
    const sender = { send: (batch) => (hang ? gw.sender('ok').send(batch).then(() => new Promise(() => {})) : gw.sender('ok').send(batch)) };
    const cA = conn();
    const sa = store({}, cA);
    const engine = (st) => {
      const ob = new Outbox({ name, store: st, sender, reconciler: gw.reconciler(), backoffMs: { first: 5, max: 40 }, reconcileEveryMs: 10, batchMax: 10 });
      ob.outcomes = [];
      ob.on('outcome', (o) => ob.outcomes.push(o));
      return ob;
    };
    const a = engine(sa);
    await a.open();
    await sa.waitForLease();
    const list = [];
    for (let i = 0; i < 30; i++) {
      const e = newEntries(2);
      list.push(...e.map((x) => x.item));
      await a.accept(`m${i}`, { topic: `t${i}` }, e);
    }
    await waitUntil(() => a.outcomes.length === 30, 30000, 'thirty outcomes from the first instance');
    hang = true; // the next send reaches the gateway, and its instance dies before the answer
    for (let i = 30; i < 40; i++) {
      const e = newEntries(2);
      list.push(...e.map((x) => x.item));
      await a.accept(`m${i}`, { topic: `t${i}` }, e);
    }
    await waitUntil(() => gw.calls.length > 6, 30000, 'a send that never answers');
    cA.client.disconnect();
    hang = false;
    const sb = store();
    await sb.open();
    await sb.waitForLease();
    const b = engine(sb);
    await b.open();
    await waitUntil(() => b.outcomes.length === 10, 30000, 'the second instance emits the other ten');
    for (const item of list) assert.equal(gw.created.get(item.n), 1, `item ${item.n} created once`);
    assert.deepEqual(b.outcomes.map((o) => o.json.topic).sort(), Array.from({ length: 10 }, (_, i) => `t${i + 30}`).sort(), 'from each msg as accepted');
    for (const o of b.outcomes) for (const r of o.entries) assert.equal(r.outcome.result, 'accepted');
    assert.deepEqual(sb.figures().entries, 0);
    await b.close();
  });
});

describe('outbox Redis store: Redis killed during accepts (issue 45)', function () {
  this.timeout(120000);
  const bin = findRedisServer();
  if (!bin) return it('needs redis-server');
  const server = new RedisServer(bin, { args: ['--appendonly', 'yes', '--appendfsync', 'always'] });
  after(() => server.destroy());

  it('an accept under way when Redis dies ends SHARED_STATE; after the restart each msg is whole or absent, and every acknowledged one is there', async function () {
    await server.start();
    const keys = AccountKeys.of('iotgw:', { baseUrl: 'http://127.0.0.1:1', clientId: 'kill' });
    const c = new RedisConnection({ url: server.url, keyPrefix: 'iotgw:' });
    c.on('failure', () => {});
    const s = new RedisOutboxStore(c, keys, 'k', { timeoutMs: 1500, leaseMs: 1000 });
    try {
      await s.open();
      const acked = [];
      const failed = [];
      let i = 0;
      const loop = (async () => {
        for (;;) {
          const k = `m${i++}`;
          try {
            await s.accept(msg(k, 50), entriesOf(k, 50, (j) => ({ n: j, pad: 'x'.repeat(200) })));
            acked.push(k);
          } catch (err) {
            failed.push(err);
            return;
          }
        }
      })();
      await waitUntil(() => acked.length >= 20, 30000, 'accepts under way');
      await server.stop('SIGKILL');
      await loop;
      assert.equal(failed[0].code, 'SHARED_STATE', String(failed[0]));
      await server.start();
      const s2 = new RedisOutboxStore(c, keys, 'k', { timeoutMs: 10000, leaseMs: 1000 });
      const opened = await s2.open();
      await s2.close();
      const byMsg = new Map();
      for (const e of opened.entries) byMsg.set(e.msgKey, (byMsg.get(e.msgKey) ?? 0) + 1);
      for (const m of opened.msgs) assert.equal(byMsg.get(m.key), 50, `msg ${m.key} whole`);
      assert.equal(byMsg.size, opened.msgs.length, 'no entry without its msg');
      for (const k of acked) assert.ok(byMsg.has(k), `acknowledged ${k} kept`);
      assert.ok(opened.msgs.length <= acked.length + 1);
    } finally {
      await s.close().catch(() => undefined);
      await c.close();
    }
  });
});
