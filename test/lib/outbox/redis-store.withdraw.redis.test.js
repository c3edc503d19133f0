'use strict';
/**
 * Issue 45: an accept into the Redis outbox whose reply never reaches the client, while its
 * script ran on the server. A proxy of our own between the store's connection and a real
 * redis-server forwards the accept, drops its reply, then drops the connection and holds new
 * ones (Redis unreachable) past the store's timeout. Before the fix the accept failed with
 * SHARED_STATE and its entries stayed in Redis (sent later by a drainer: the msg ended twice).
 */
const assert = require('node:assert/strict');
const net = require('node:net');
const { describeRedis } = require('../../helpers/redis');
const { waitUntil } = require('../../helpers/wait');
const { RedisConnection, AccountKeys, RedisOutboxStore } = require('../../../dist/lib/account/redis');

const MARKER = 'lost-reply-marker';
const msg = (key, json = { topic: key }) => ({ key, msgId: `id-${key}`, json, acceptedAt: 1, entryIds: [`${key}/0`, `${key}/1`] });
const entries = (key) => [0, 1].map((i) => ({ id: `${key}/${i}`, msgKey: key, kind: 'message', item: { n: i }, priority: 4, seq: 0, acceptedAt: 1, expiresAt: 9e15, attempts: 0, state: { phase: 'waiting' } }));

/**
 * Forwards to Redis at `port`. Once a request holding MARKER passed, replies to that connection
 * are dropped; `cut()` then destroys every connection and holds new ones (nothing forwarded)
 * until `up()`.
 */
class LossyProxy {
  constructor(port) {
    this.port = port;
    this.socks = new Set();
    this.held = [];
    this.down = false;
    this.seen = false;
    this.server = net.createServer((client) => {
      this.socks.add(client);
      client.on('close', () => this.socks.delete(client));
      client.on('error', () => {});
      if (this.down) this.held.push(client);
      else this.pipe(client);
    });
  }

  pipe(client) {
    const up = net.connect(this.port, '127.0.0.1');
    this.socks.add(up);
    up.on('error', () => {});
    up.on('close', () => client.destroy());
    client.on('close', () => up.destroy());
    let dropping = false;
    client.on('data', (d) => {
      if (!this.seen && d.includes(MARKER)) this.seen = dropping = true;
      up.write(d);
    });
    up.on('data', (d) => {
      if (!dropping) client.write(d);
    });
  }

  listen() {
    return new Promise((resolve) => this.server.listen(0, '127.0.0.1', () => resolve(this.server.address().port)));
  }

  cut() {
    this.down = true;
    for (const s of this.socks) s.destroy();
  }

  up() {
    this.down = false;
    for (const client of this.held.splice(0)) {
      if (!client.destroyed) this.pipe(client);
    }
  }

  close() {
    this.up();
    for (const s of this.socks) s.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

describeRedis('outbox Redis store: an accept whose reply was lost (issue 45)', function (ctx) {
  this.timeout(120000);
  const conns = [];
  const stores = [];
  let proxy;
  let n = 0;
  let keys;
  const conn = (url, opts = {}) => {
    const c = new RedisConnection({ url, keyPrefix: 'iotgw:', ...opts });
    c.on('failure', () => {});
    conns.push(c);
    return c;
  };
  const store = (c, opts = {}) => {
    const s = new RedisOutboxStore(c, keys, 'lost', { timeoutMs: 5000, leaseMs: 1000, ...opts });
    stores.push(s);
    return s;
  };
  beforeEach(function () {
    keys = AccountKeys.of('iotgw:', { baseUrl: 'http://127.0.0.1:1', clientId: `withdraw-${++n}` });
    proxy = new LossyProxy(Number(new URL(ctx.server.url).port));
  });
  afterEach(async function () {
    for (const s of stores.splice(0)) await s.close().catch(() => undefined);
    await Promise.all(conns.splice(0).map((c) => c.close()));
    await proxy.close();
  });

  /** A store through the proxy (its scripts loaded by a first accept), its accept of `key` under way and run on the server, its reply lost and Redis unreachable. */
  async function lostAccept(key, timeoutMs) {
    const port = await proxy.listen();
    const c = conn(`redis://127.0.0.1:${port}`, { commandTimeoutMs: timeoutMs });
    const s = store(c, { timeoutMs });
    await s.accept(msg('warm'), entries('warm'));
    const direct = store(conn(ctx.server.url));
    const settled = { done: false };
    const accepting = s.accept(msg(key, { topic: MARKER }), entries(key)).then(
      (seq) => Object.assign(settled, { done: true, seq }),
      (err) => Object.assign(settled, { done: true, err }),
    );
    await waitUntil(async () => (await direct.openAfter(0)).msgs.some((m) => m.key === key), 30000, 'the accept script ran on the server');
    assert.equal(settled.done, false, 'the accept got no reply');
    proxy.cut();
    return { s, direct, settled, accepting };
  }

  /** Waits past the store's timeout (the accept's own call gave up: the outcome unknown), then Redis answers again. */
  const upAfter = (ms) => new Promise((resolve) => setTimeout(resolve, ms)).then(() => proxy.up());

  it('no drainer touched it: the accept fails with SHARED_STATE and nothing of the msg is left in Redis', async function () {
    const { direct, settled, accepting } = await lostAccept('k1', 2000);
    await upAfter(2500);
    await accepting;
    assert.ok(settled.err, `the accept failed (it resolved with ${settled.seq})`);
    assert.equal(settled.err.code, 'SHARED_STATE');
    const found = await direct.openAfter(0);
    assert.deepEqual(found.entries.filter((e) => e.msgKey === 'k1').map((e) => e.id), [], 'no entry of the failed msg is left for a drainer');
    assert.deepEqual(found.msgs.map((m) => m.key), ['warm']);
    assert.equal(found.entries.length, 2);
    assert.match(settled.err.message, /nothing of this msg was kept/);
  });

  it('a drainer marked it sending first: the accept resolves with its seq (the msg ends once, with its outcome)', async function () {
    const { direct, settled, accepting } = await lostAccept('k2', 2000);
    await direct.open();
    await direct.waitForLease();
    const mine = (await direct.openAfter(0)).entries.filter((e) => e.msgKey === 'k2');
    await direct.markSending(mine.map((e) => e.id), { id: 'a1', startedAt: 5 });
    await upAfter(2500);
    await accepting;
    assert.equal(settled.err, undefined, `the accept resolved (${settled.err && settled.err.message})`);
    assert.equal(settled.seq, mine[0].seq);
    const after = (await direct.openAfter(0)).entries.filter((e) => e.msgKey === 'k2');
    assert.deepEqual(after.map((e) => e.state.phase), ['sending', 'sending'], 'kept as the drainer marked them');
  });

  it('Redis stays unreachable: the error says the outcome is unknown and that the entries may still be sent', async function () {
    const { settled, accepting } = await lostAccept('k3', 1000);
    await accepting;
    proxy.up();
    assert.ok(settled.err, 'the accept failed');
    assert.equal(settled.err.code, 'SHARED_STATE');
    assert.match(settled.err.message, /the outcome is UNKNOWN: this msg may have been kept .* its entries may still be sent/);
    assert.equal(settled.err.outcome, 'unknown', "err.outcome, as an outbox entry whose send cannot be told");
  });
});
