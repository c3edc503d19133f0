'use strict';
/**
 * Issue 25 (points 3 and 4) with real parts: the Redis keys follow the account's
 * credentials, not the config node's id; the shared token is bound to the secret that
 * fetched it; a wrong Redis password is SHARED_STATE naming the refused login, with
 * back-off; a password in the URL is refused at deploy; and a fake Redis (a loopback TCP
 * server) streaming a 2 GB bulk reply leaves a child Node-RED's RSS within 50 MB of its start.
 */
const assert = require('node:assert/strict');
const fs = require('node:fs');
const net = require('node:net');
const { helper, until, collect, simulatorPerSuite, startSimulator, DEMO_CREDS, ALL_NODES } = require('../helpers/harness');
const { describeRedis, RedisServer, findRedisServer, cli, streamBulk } = require('../helpers/redis');
const { RedFleet, childGateway, statusPoller, waitFor } = require('../helpers/child-red');
const { redisSettings } = require('../../dist/nodes/iotgw-redis');

function gw(id, sim, redis = 'r') {
  return { id, type: 'iotgw-gateway', baseUrl: sim.url, apiVersion: '1.0', rateLimitCalls: 5, rateLimitWindowSeconds: 1, maxConcurrent: 3, timeoutSeconds: 5, maxRetries: 0, redis };
}

function flow(redis, gateways) {
  const nodes = [
    { id: 'flow', type: 'tab', label: 'test' },
    { id: 'r', type: 'iotgw-redis', ...redis },
    { id: 'catcher', z: 'flow', type: 'catch', scope: null, uncaught: false, wires: [['caught']] },
    { id: 'caught', z: 'flow', type: 'helper' },
    { id: 'ok', z: 'flow', type: 'helper' },
  ];
  for (const g of gateways) {
    nodes.push(g);
    nodes.push({ id: `mode-${g.id}`, z: 'flow', type: 'iotgw-terminal-mode', gateway: g.id, mode: 0, wakeupInterval: 0, family: 'any', wires: [['ok'], ['ok']] });
  }
  return nodes;
}

/** Sends one item through the terminal-mode node of `gwId`; resolves with the ok msg or the caught error. */
async function send(gwId, ok, caught) {
  const [okBefore, caughtBefore] = [ok.length, caught.length];
  helper.getNode(`mode-${gwId}`).receive({ payload: { DestinationID: '01000000SKYEE3D', Mode: 1, WakeupInterval: 2 } });
  await until(() => ok.length + caught.length > okBefore + caughtBefore, 20000, 'the msg to end');
  return caught.length > caughtBefore ? caught[caught.length - 1].error : ok[ok.length - 1];
}

/** The account hash tags among the keys under `prefix`. */
const tags = (port, prefix) => new Set(cli(port, '--scan', '--pattern', `${prefix}*`).split('\n').filter(Boolean).map((k) => /\{([0-9a-f]+)\}/.exec(k)?.[1]));

describeRedis('iotgw-redis faults (issue 25): keys, token binding, password, reply bound', function (ctx) {
  this.timeout(60000);
  let sim;
  simulatorPerSuite({ terminal: { rateLimitCalls: 5, rateLimitWindowMs: 1000, maxConcurrent: 3, acceptUnknownTerminals: true } }, (s) => (sim = s));
  afterEach(() => helper.unload());

  it('two static-token accounts whose config nodes share an id get separate keys', async function () {
    const prefix = `same-id-${Date.now()}:`;
    for (const token of ['token-of-customer-one', 'token-of-customer-two']) {
      await helper.load(ALL_NODES, flow({ url: ctx.server.url, keyPrefix: prefix }, [gw('gw', sim)]), { gw: { token }, r: {} });
      const ok = collect(helper.getNode('ok'));
      const caught = collect(helper.getNode('caught'));
      await send('gw', ok, caught); // the simulator refuses the token: the budget's keys are written anyway
      await helper.unload();
    }
    const t = tags(ctx.server.port, prefix);
    assert.equal(t.size, 2, `two accounts, two hash tags: ${[...t].join(', ')}`);
    const keys = cli(ctx.server.port, '--scan', '--pattern', `${prefix}*`);
    assert.ok(!/customer/.test(keys), 'no token in clear in a key');
  });

  it('one static-token account under two node ids shares one budget', async function () {
    const prefix = `two-ids-${Date.now()}:`;
    await helper.load(ALL_NODES, flow({ url: ctx.server.url, keyPrefix: prefix }, [gw('gwX', sim), gw('gwY', sim)]), { gwX: { token: 'one-token' }, gwY: { token: 'one-token' }, r: {} });
    const ok = collect(helper.getNode('ok'));
    const caught = collect(helper.getNode('caught'));
    await send('gwX', ok, caught);
    await send('gwY', ok, caught);
    const t = tags(ctx.server.port, prefix);
    assert.equal(t.size, 1, `one account, one hash tag: ${[...t].join(', ')}`);
    assert.ok(cli(ctx.server.port, '--scan', '--pattern', `${prefix}*`).split('\n').some((k) => /:rate:/.test(k)), 'the budget lives under it');
  });

  it('a wrong client secret fails UNAUTHORIZED while another node of the client ID holds the shared token', async function () {
    const prefix = `bind-${Date.now()}:`;
    await helper.load(ALL_NODES, flow({ url: ctx.server.url, keyPrefix: prefix }, [gw('good', sim), gw('bad', sim)]), {
      good: DEMO_CREDS,
      bad: { ...DEMO_CREDS, clientSecret: 'not-the-secret' },
      r: {},
    });
    const ok = collect(helper.getNode('ok'));
    const caught = collect(helper.getNode('caught'));
    const first = await send('good', ok, caught);
    assert.ok(first.payload, `the right secret works: ${first.message || ''}`);
    const t = tags(ctx.server.port, prefix);
    assert.equal(t.size, 1, 'one account (one client ID)');
    const second = await send('bad', ok, caught);
    assert.equal(second.code, 'UNAUTHORIZED', `the wrong secret is refused: ${second.message}`);
    const third = await send('good', ok, caught);
    assert.ok(third.payload, 'the right secret still works');
    assert.ok(!/demo-secret|not-the-secret/.test(cli(ctx.server.port, '--scan', '--pattern', `${prefix}*`)), 'no secret in a key');
  });

  it('a password in the URL is refused at deploy, pointing at the password field', async function () {
    assert.throws(() => redisSettings({ url: 'redis://:s3cret@127.0.0.1:6379/0' }), (e) => e.code === 'BAD_INPUT' && e.field === 'url' && /Password field/.test(e.message) && !/s3cret/.test(e.message));
    assert.throws(() => redisSettings({ url: 'redis://user:s3cret@127.0.0.1:6379/0' }), (e) => e.code === 'BAD_INPUT');
    assert.doesNotThrow(() => redisSettings({ url: 'redis://user@127.0.0.1:6379/0' }), 'a user name alone is fine');
    await helper.load(ALL_NODES, flow({ url: `redis://:s3cret@127.0.0.1:${ctx.server.port}/0`, keyPrefix: 'x:' }, [gw('gw', sim)]), { gw: DEMO_CREDS, r: {} });
    const ok = collect(helper.getNode('ok'));
    const caught = collect(helper.getNode('caught'));
    const err = await send('gw', ok, caught);
    assert.equal(err.code, 'BAD_INPUT', err.message);
    assert.ok(/Password field/.test(err.message) && !/s3cret/.test(err.message), err.message);
  });

  it('a wrong Redis password is SHARED_STATE naming the refused login (not the timeout), with back-off (no reconnect storm)', async function () {
    const locked = new RedisServer(findRedisServer(), { args: ['--requirepass', 'the-right-one'] });
    await locked.start();
    try {
      await helper.load(ALL_NODES, flow({ url: locked.url, keyPrefix: 'pw:' }, [gw('gw', sim)]), { gw: DEMO_CREDS, r: { password: 'a-wrong-one' } });
      const ok = collect(helper.getNode('ok'));
      const caught = collect(helper.getNode('caught'));
      const t0 = Date.now();
      const err = await send('gw', ok, caught);
      const ms = Date.now() - t0;
      assert.equal(err.code, 'SHARED_STATE', err.message);
      // The refusal, not the wait for the 5 s timeout (that one says "could not be reached within").
      assert.ok(/refused the login \((WRONGPASS|NOAUTH)/.test(err.message), err.message);
      assert.ok(!/a-wrong-one|the-right-one/.test(err.message), 'no password in the message');
      const conns = () => Number(/total_connections_received:(\d+)/.exec(cli(locked.port, '-a', 'the-right-one', '--no-auth-warning', 'info', 'stats'))[1]);
      const c0 = conns();
      await new Promise((r) => setTimeout(r, 8000));
      const attempts = conns() - c0 - 1; // less our own info call
      console.log(`      [figures] ${JSON.stringify({ failMs: ms, reconnectsIn8s: attempts })}`);
      assert.ok(attempts <= 6, `back-off, not a reconnect storm: ${attempts} logins in 8 s`);
    } finally {
      await helper.unload();
      await locked.destroy();
    }
  });
});

/** A fake Redis: answers the first command of every connection with a 2 GB bulk string, streamed. */
function hugeReplyServer() {
  const stats = { connections: 0, sentBytes: 0 };
  const server = net.createServer((sock) => {
    stats.connections++;
    let started = false;
    sock.on('error', () => {});
    sock.on('data', () => {
      if (started) return;
      started = true;
      streamBulk(sock, stats);
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, stats, port: server.address().port })));
}

const rssOf = (pid) => Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) * 1024;

describe('iotgw-redis faults (issue 25): a fake Redis streaming a 2 GB bulk reply (child Node-RED)', function () {
  this.timeout(90000);
  let fake;
  let sim;
  let fleet;
  after(async () => {
    if (fleet) await fleet.close();
    if (fake) fake.server.close();
    if (sim) await sim.close();
  });

  it('the connection is closed past the bound with one warning; RSS stays within 50 MB of its start', async function () {
    sim = await startSimulator({});
    fake = await hugeReplyServer();
    fleet = new RedFleet('iotgw-fake-', { defaultContext: false });
    const red = await fleet.start();
    // Settle, then the start figure.
    await new Promise((r) => setTimeout(r, 2000));
    const start = rssOf(red.proc.pid);
    await red.deploy([
      { id: 'tab1', type: 'tab', label: 'fake' },
      { id: 'r', type: 'iotgw-redis', url: `redis://127.0.0.1:${fake.port}/0`, keyPrefix: 'fake:' },
      childGateway(sim, { redis: 'r' }),
      statusPoller('nothing'),
      { id: 'nothing', z: 'tab1', type: 'debug', active: false },
    ]);
    let peak = start;
    const sample = setInterval(() => {
      try {
        peak = Math.max(peak, rssOf(red.proc.pid));
      } catch {
        /* gone */
      }
    }, 50);
    try {
      await waitFor(() => fake.stats.connections >= 4, 60000, 'several connections cut and made again');
    } finally {
      clearInterval(sample);
    }
    const warnings = (red.output.match(/a reply larger than/g) || []).length;
    console.log(`      [figures] ${JSON.stringify({ startMB: Math.round(start / 1048576), peakMB: Math.round(peak / 1048576), growthMB: Math.round((peak - start) / 1048576), connections: fake.stats.connections, sentMB: Math.round(fake.stats.sentBytes / 1048576), warnings })}`);
    assert.ok(peak - start <= 50 * 1024 * 1024, `RSS grew ${Math.round((peak - start) / 1048576)} MB`);
    assert.equal(warnings, 1, 'one clear warning');
    assert.ok(fake.stats.sentBytes < 2_000_000_000, 'the reply was not taken whole');
  });
});
