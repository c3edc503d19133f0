'use strict';
/**
 * Redis stopped (SIGKILL) and restarted on the same port during traffic, with real parts:
 * two accounts on one Node-RED runtime sharing a gateway account through a real
 * redis-server, against the simulator's sliding window. Request nodes keep going after the
 * restart; each item is accepted once at the simulator; every input msg ends exactly once;
 * the msgs that waited past their timeout while Redis was down fail with SHARED_STATE and
 * are not sent. A status poller on the same account shows red with ONE logged problem while Redis
 * is down, however long (its poll and its lease both notice: whichever first tells it), and polls
 * again after.
 */
const assert = require('node:assert/strict');
const { simulatorPerTest, helper, until, collect, DEMO_CREDS, ALL_NODES } = require('../helpers/harness');
const { describeRedis, cli } = require('../helpers/redis');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

describeRedis('Redis stopped and restarted during traffic (simulator, real redis-server)', function (ctx) {
  let sim;
  simulatorPerTest({ terminal: { rateLimitCalls: 5, rateLimitWindowMs: 1000, maxConcurrent: 3 } }, (s) => (sim = s));
  // Leases of 3 s (settings.js iotgwRedisLeaseSeconds; 10 s by default): the lease notices within
  // two renewals (a third of it each), and the poller that finds its mark gone after the restart
  // waits one lease for the others' before it polls. These tests are about one logged problem and
  // polling again, not about the lease's length (the fleet and Redis unit tests take the default).
  // (each test: the simulator's hooks put the helper's settings back after each.)
  beforeEach(() => helper.settings({ iotgwRedisLeaseSeconds: 3 }));
  afterEach(async () => {
    await helper.unload();
    if (!ctx.server.proc) await ctx.server.start();
  });

  function flow(timeoutSeconds = 1.5) {
    const gw = (id) => ({
      id,
      type: 'iotgw-gateway',
      baseUrl: sim.url,
      apiVersion: '1.0',
      rateLimitCalls: 5,
      rateLimitWindowSeconds: 1,
      maxConcurrent: 3,
      maxBatchSize: 1,
      timeoutSeconds,
      maxRetries: 0,
      redis: 'r',
    });
    return [
      { id: 'flow', type: 'tab', label: 'test' },
      { id: 'r', type: 'iotgw-redis', url: ctx.server.url, keyPrefix: `rs${Date.now()}:` },
      gw('gwA'),
      gw('gwB'),
      { id: 'modeA', z: 'flow', type: 'iotgw-terminal-mode', gateway: 'gwA', mode: 0, wakeupInterval: 0, family: 'any', wires: [['ok'], ['bad']] },
      { id: 'modeB', z: 'flow', type: 'iotgw-terminal-mode', gateway: 'gwB', mode: 0, wakeupInterval: 0, family: 'any', wires: [['ok'], ['bad']] },
      { id: 'poller', z: 'flow', type: 'iotgw-status-poller', gateway: 'gwA', intervalSeconds: 0.5, startFrom: '-1h', output: 'record', contextStore: '', autoStart: true, addNames: false, wires: [['records']] },
      { id: 'records', z: 'flow', type: 'helper' },
      { id: 'ok', z: 'flow', type: 'helper' },
      { id: 'bad', z: 'flow', type: 'helper' },
      { id: 'catcher', z: 'flow', type: 'catch', scope: ['modeA', 'modeB'], uncaught: false, wires: [['caught']] },
      { id: 'caught', z: 'flow', type: 'helper' },
    ];
  }

  /** What the poller shows ({t, s}) and logs (errors as "ERROR <err>", warnings as they are). */
  function watchPoller() {
    const poller = helper.getNode('poller');
    const statuses = [];
    const logged = [];
    const origStatus = poller.status.bind(poller);
    poller.status = (s) => {
      statuses.push({ t: Date.now(), s });
      return origStatus(s);
    };
    const origWarn = poller.warn.bind(poller);
    const origError = poller.error.bind(poller);
    poller.error = (e, m) => {
      logged.push('ERROR ' + String(e));
      return origError(e, m);
    };
    poller.warn = (w) => {
      logged.push(String(w));
      return origWarn(w);
    };
    return { statuses, logged };
  }
  const UNREACHABLE = /shared state \(Redis\) unreachable/;
  /** The lease noticed (its renewal failed): the poller shows "unreachable: not polling". */
  const leaseDown = (statuses, since) => statuses.some((x) => x.t >= since && UNREACHABLE.test(x.s.text));

  it('request nodes go on after the restart: each item accepted once, every msg ends once, the ones past their timeout fail SHARED_STATE unsent; the poller is red with one logged problem (node.error SHARED_STATE), then polls again', async function () {
    this.timeout(60000);
    sim.terminal.configure({ acceptUnknownTerminals: true });
    await helper.load(ALL_NODES, flow(), { gwA: DEMO_CREDS, gwB: DEMO_CREDS, r: {} });
    const ok = collect(helper.getNode('ok'));
    const bad = collect(helper.getNode('bad'));
    const caught = collect(helper.getNode('caught'));
    const { statuses, logged } = watchPoller();
    const dest = (i) => `3${String(i).padStart(7, '0')}SKY${(i % 65536).toString(16).toUpperCase().padStart(4, '0')}`;
    let n = 0;
    const submit = (count) => {
      for (let i = 0; i < count; i++) {
        const node = n % 2 ? 'modeB' : 'modeA';
        helper.getNode(node).receive({ payload: { DestinationID: dest(n), Mode: 1, WakeupInterval: 2 }, n });
        n++;
      }
    };
    // Before: traffic goes through, the poller polls.
    submit(4);
    await until(() => ok.length === 4, 20000, 'the first four sent');
    await until(() => sim.server.callsTo('terminal/status').length > 0, 10000, 'the poller to poll');

    // Redis goes down during traffic.
    await ctx.server.stop('SIGKILL');
    const downAt = Date.now();
    submit(4); // these wait longer than their 1.5 s timeout: SHARED_STATE, not sent
    await until(() => caught.length === 4, 20000, 'the four that waited past their timeout to fail');
    const sentWhileDown = sim.server.callsTo('terminal/mode').length;
    assert.equal(sentWhileDown, 4, 'nothing was sent while Redis was down');
    for (const c of caught) assert.equal(c.error.code, 'SHARED_STATE', c.error.message);
    await until(() => statuses.some((x) => x.t >= downAt && x.s.fill === 'red'), 10000, 'the poller to show red');
    // Down until both paths have noticed: the poll (its mark read, 1.5 s) and the lease (its renewal, a third of 3 s).
    await until(() => leaseDown(statuses, downAt), 30000, 'the lease to notice too');
    assert.equal(logged.filter((w) => /Redis|shared/i.test(w)).length, 1, `one logged problem while down: ${JSON.stringify(logged)} ${JSON.stringify(statuses.filter((x) => x.t >= downAt))}`);

    // Restarted on the same port (no persistence: empty): submitted just before, they wait and go.
    submit(2);
    await sleep(300);
    await ctx.server.start();
    const upAt = Date.now();
    submit(4);
    await until(() => ok.length + bad.length + caught.length === n, 30000, 'every msg ended');
    assert.equal(bad.length, 0);
    assert.equal(caught.length, 4, caught.map((c) => c.error && c.error.message).join('; '));
    assert.equal(ok.length, 10);
    assert.equal(new Set(ok.map((m) => m.n)).size, 10, 'no msg sent twice');
    const calls = sim.server.callsTo('terminal/mode');
    assert.equal(calls.length, 10, 'each item sent once (the failed four never)');
    assert.equal(sim.terminal.counters.throttled, 0, 'no 429');
    // The poller polls again after the restart.
    const pollsAtUp = sim.server.callsTo('terminal/status').length;
    await until(() => sim.server.callsTo('terminal/status').length > pollsAtUp, 15000, 'the poller to poll again');
    await until(() => statuses.some((x) => x.t >= upAt && x.s.fill !== 'red'), 10000, 'the poller status to leave red');
    assert.equal(logged.filter((w) => /Redis|shared/i.test(w)).length, 1, 'still one logged problem');
    // The poll noticed first (its mark read): its node.error; on a machine so loaded that the lease noticed first, its warning.
    assert.match(logged[0], /^ERROR SHARED_STATE|^shared state \(Redis\) unreachable/);
  });

  it('settings.js iotgwRedisLeaseSeconds is the lifetime of the feed lease in Redis (3 s here; 10 s without it)', async function () {
    this.timeout(60000);
    const leaseTtl = async (prefix) => {
      const pattern = `${prefix}*lease*`;
      let ttl = -2;
      await until(() => {
        const key = cli(ctx.server.port, '--scan', '--pattern', pattern).split('\n').find(Boolean);
        ttl = key ? Number(cli(ctx.server.port, 'pttl', key)) : -2;
        return ttl > 0;
      }, 20000, 'the poller to take its feed lease', () => `pttl ${ttl}`);
      return ttl;
    };
    const f = flow();
    await helper.load(ALL_NODES, f, { gwA: DEMO_CREDS, gwB: DEMO_CREDS, r: {} });
    const short = await leaseTtl(f[1].keyPrefix);
    assert.ok(short <= 3000, `the lease lives at most 3 s (pttl ${short})`);
    await helper.unload();
    helper.settings({ iotgwRedisLeaseSeconds: undefined });
    await sleep(5);
    const g = flow();
    await helper.load(ALL_NODES, g, { gwA: DEMO_CREDS, gwB: DEMO_CREDS, r: {} });
    const long = await leaseTtl(g[1].keyPrefix);
    assert.ok(long > 3000 && long <= 10000, `without the setting, 10 s (pttl ${long})`);
  });

  // The other order, arranged: a poll held at the simulator while Redis goes down, let go once the
  // lease has noticed (warned); the held poll then fails too (the lease is gone: SHARED_STATE).
  it('Redis down while a poll is in flight, the lease noticing first: one logged problem (the warning), not a second from the poll; polls again after', async function () {
    this.timeout(60000);
    // Long enough for the held reply (the lease notices within 2 x 1 s of the kill).
    await helper.load(ALL_NODES, flow(30), { gwA: DEMO_CREDS, gwB: DEMO_CREDS, r: {} });
    const { statuses, logged } = watchPoller();
    await until(() => statuses.some((x) => x.s.fill === 'green'), 20000, 'the poller to poll');
    let open;
    const gate = new Promise((r) => (open = r));
    let held = 0;
    const reply = sim.terminal.statusUpdates.bind(sim.terminal);
    sim.terminal.statusUpdates = async (r, account) => {
      held++;
      await gate;
      return reply(r, account);
    };
    await until(() => held > 0, 10000, 'a poll to be held');
    await ctx.server.stop('SIGKILL');
    const downAt = Date.now();
    await until(() => leaseDown(statuses, downAt), 30000, 'the lease to notice');
    const openAt = Date.now();
    open();
    await until(() => statuses.some((x) => x.t >= openAt && x.s.fill === 'red' && !UNREACHABLE.test(x.s.text)), 20000, 'the held poll to fail');
    assert.deepEqual(logged, ['shared state (Redis) unreachable: not polling'], 'one logged problem while down');
    sim.terminal.statusUpdates = reply;
    await ctx.server.start();
    const upAt = Date.now();
    await until(() => statuses.some((x) => x.t >= upAt && x.s.fill === 'green'), 30000, 'the poller to poll again');
    assert.equal(logged.length, 1, `still one logged problem: ${JSON.stringify(logged)}`);
  });
});
