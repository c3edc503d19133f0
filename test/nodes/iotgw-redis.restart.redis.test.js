'use strict';
/**
 * Redis stopped (SIGKILL) and restarted on the same port during traffic, with real parts:
 * two accounts on one Node-RED runtime sharing a gateway account through a real
 * redis-server, against the simulator's sliding window. Request nodes keep going after the
 * restart; each item is accepted once at the simulator; every input msg ends exactly once;
 * the msgs that waited past their timeout while Redis was down fail with SHARED_STATE and
 * are not sent. A status poller on the same account shows red with ONE logged problem (node.error, not node.warn) while Redis
 * is down and polls again after.
 */
const assert = require('node:assert/strict');
const { simulatorPerTest, helper, until, collect, DEMO_CREDS, ALL_NODES } = require('../helpers/harness');
const { describeRedis } = require('../helpers/redis');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

describeRedis('Redis stopped and restarted during traffic (simulator, real redis-server)', function (ctx) {
  let sim;
  simulatorPerTest({ terminal: { rateLimitCalls: 5, rateLimitWindowMs: 1000, maxConcurrent: 3 } }, (s) => (sim = s));
  afterEach(async () => {
    await helper.unload();
    if (!ctx.server.proc) await ctx.server.start();
  });

  function flow() {
    const gw = (id) => ({
      id,
      type: 'iotgw-gateway',
      baseUrl: sim.url,
      apiVersion: '1.0',
      rateLimitCalls: 5,
      rateLimitWindowSeconds: 1,
      maxConcurrent: 3,
      maxBatchSize: 1,
      timeoutSeconds: 1.5,
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

  it('request nodes go on after the restart: each item accepted once, every msg ends once, the ones past their timeout fail SHARED_STATE unsent; the poller is red with one logged problem (node.error SHARED_STATE), then polls again', async function () {
    this.timeout(60000);
    sim.terminal.configure({ acceptUnknownTerminals: true });
    await helper.load(ALL_NODES, flow(), { gwA: DEMO_CREDS, gwB: DEMO_CREDS, r: {} });
    const ok = collect(helper.getNode('ok'));
    const bad = collect(helper.getNode('bad'));
    const caught = collect(helper.getNode('caught'));
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
      logged.push("ERROR " + String(e));
      return origError(e, m);
    };
    poller.warn = (w) => {
      logged.push(String(w));
      return origWarn(w);
    };
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
    await sleep(1500);
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
    assert.match(logged[0], /^ERROR SHARED_STATE/);
  });
});
