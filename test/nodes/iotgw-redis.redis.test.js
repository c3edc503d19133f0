'use strict';
/** The `iotgw-redis` config node in a real Node-RED runtime, against a real redis-server. */
const assert = require('node:assert/strict');
const helper = require('node-red-node-test-helper');
const Redis = require('ioredis');
const { describeRedis } = require('../helpers/redis');
const { redisSettings } = require('../../dist/nodes/iotgw-redis');

helper.init(require.resolve(process.env.IOTGW_NODE_RED_PATH || 'node-red'));
const redisNode = require('../../nodes/iotgw-redis.js');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

describe('iotgw-redis settings (unit)', function () {
  it('defaults, ${ENV} and clear BAD_INPUT for a wrong URL or prefix', function () {
    assert.deepEqual(redisSettings({}), { url: 'redis://127.0.0.1:6379/0', keyPrefix: 'iotgw:' });
    assert.deepEqual(redisSettings({ url: '${R}', keyPrefix: 'a:' }, (v) => (v === '${R}' ? 'rediss://cache.example.com:6380/2' : v)), {
      url: 'rediss://cache.example.com:6380/2',
      keyPrefix: 'a:',
    });
    assert.throws(() => redisSettings({ url: 'http://127.0.0.1:6379' }), (e) => e.code === 'BAD_INPUT' && e.field === 'url' && /redis:\/\/ or rediss:\/\//.test(e.message));
    assert.throws(() => redisSettings({ url: 'redis://127.0.0.1:6379/x' }), (e) => e.code === 'BAD_INPUT' && e.field === 'url');
    assert.throws(() => redisSettings({ keyPrefix: 'a{b}' }), (e) => e.code === 'BAD_INPUT' && e.field === 'keyPrefix');
  });
});

describeRedis('iotgw-redis config node (real Node-RED, real redis-server)', function (ctx) {
  afterEach(async function () {
    await helper.unload();
    delete process.env.IOTGW_TEST_REDIS_URL;
  });

  it('one connection shared by every user, closed with its last user; ${ENV} in the URL', async function () {
    process.env.IOTGW_TEST_REDIS_URL = ctx.server.url;
    await helper.load(redisNode, [{ id: 'r', type: 'iotgw-redis', url: '${IOTGW_TEST_REDIS_URL}', keyPrefix: 'iotgw:' }], {});
    const r = helper.getNode('r');
    assert.equal(r.settings.url, ctx.server.url);
    const c1 = r.register({ id: 'gw1' });
    const c2 = r.register({ id: 'gw2' });
    assert.equal(c1, c2);
    assert.equal(await c1.run('test', (cl) => cl.ping(), { timeoutMs: 2000 }), 'PONG');
    await r.deregister({ id: 'gw1' });
    assert.equal(r.userCount(), 1);
    assert.equal(await c1.run('test', (cl) => cl.ping(), { timeoutMs: 2000 }), 'PONG');
    await r.deregister({ id: 'gw2' });
    for (let i = 0; i < 100 && c1.client.status !== 'end'; i++) await sleep(10);
    assert.equal(c1.client.status, 'end', 'the connection closes with its last user');
    const c3 = r.register({ id: 'gw3' });
    assert.notEqual(c3, c1, 'a new user opens a new connection');
    assert.equal(await c3.run('test', (cl) => cl.ping(), { timeoutMs: 2000 }), 'PONG');
  });

  it('username and password from credentials (ACL user); a wrong password is warned about without the password', async function () {
    const admin = new Redis(ctx.server.url);
    await admin.call('ACL', 'SETUSER', 'fleet', 'on', '>fleet-pass-123', '~*', '+@all');
    await admin.quit();
    await helper.load(
      redisNode,
      [
        { id: 'ok', type: 'iotgw-redis', url: ctx.server.url },
        { id: 'bad', type: 'iotgw-redis', url: ctx.server.url },
      ],
      { ok: { username: 'fleet', password: 'fleet-pass-123' }, bad: { username: 'fleet', password: 'wrong-pass-456' } },
    );
    const ok = helper.getNode('ok').register({ id: 'u' });
    assert.equal(await ok.run('test', (cl) => cl.call('ACL', 'WHOAMI'), { timeoutMs: 2000 }), 'fleet');
    const badNode = helper.getNode('bad');
    const warnings = [];
    const origWarn = badNode.warn.bind(badNode);
    badNode.warn = (m) => {
      warnings.push(String(m));
      origWarn(m);
    };
    const bad = badNode.register({ id: 'u' });
    await assert.rejects(bad.run('test', (cl) => cl.ping(), { timeoutMs: 700 }), (e) => e.code === 'SHARED_STATE' && !e.message.includes('wrong-pass'));
    await sleep(300);
    assert.equal(warnings.length, 1, `one warning per outage, got ${warnings.length}`);
    assert.ok(!warnings[0].includes('wrong-pass-456'));
  });
});
