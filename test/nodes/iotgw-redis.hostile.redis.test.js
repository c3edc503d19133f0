'use strict';
/**
 * Issue 34 (the `+OK` Redis) in a real Node-RED runtime: an `iotgw-redis` node pointed at a
 * fake Redis that answers `+OK` to everything (test/helpers/redis.js fakeRedis). Before,
 * request msgs were left without an answer for good (5 of 5 with a 5 s timeout, none in
 * 40 s) while the package sent about 1,400 commands a second to it. Now every msg ends with
 * SHARED_STATE naming the reply of the wrong type (not the wait for the timeout), the
 * status poller on the account stays quiet with one warning, and the commands that reach
 * the fake are few (a pause that doubles between tries).
 */
const assert = require('node:assert/strict');
const { helper, until, collect, simulatorPerSuite, recordWarnings, DEMO_CREDS, ALL_NODES } = require('../helpers/harness');
const { fakeRedis } = require('../helpers/redis');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

describe('iotgw-redis against a "Redis" that answers +OK to everything (real Node-RED, fake Redis)', function () {
  this.timeout(90000);
  let sim;
  let fake;
  simulatorPerSuite({ terminal: { rateLimitCalls: 5, rateLimitWindowMs: 1000, maxConcurrent: 3, acceptUnknownTerminals: true } }, (s) => (sim = s));
  after(async () => {
    if (fake) await fake.close();
  });

  it('5 msgs with a 5 s timeout: each ends with SHARED_STATE naming the wrong reply; nothing sent; the poller does not loop; one warning', async function () {
    fake = await fakeRedis();
    const flow = [
      { id: 'flow', type: 'tab', label: 'test' },
      { id: 'r', type: 'iotgw-redis', url: `redis://127.0.0.1:${fake.port}/0`, keyPrefix: 'ok:' },
      { id: 'gw', type: 'iotgw-gateway', baseUrl: sim.url, apiVersion: '1.0', rateLimitCalls: 5, rateLimitWindowSeconds: 1, maxConcurrent: 3, maxBatchSize: 1, timeoutSeconds: 5, maxRetries: 0, redis: 'r' },
      { id: 'mode', z: 'flow', type: 'iotgw-terminal-mode', gateway: 'gw', mode: 0, wakeupInterval: 0, family: 'any', wires: [['ok'], ['ok']] },
      { id: 'poller', z: 'flow', type: 'iotgw-status-poller', gateway: 'gw', intervalSeconds: 0.5, startFrom: '-1h', output: 'record', contextStore: '', autoStart: true, addNames: false, wires: [['records']] },
      { id: 'records', z: 'flow', type: 'helper' },
      { id: 'ok', z: 'flow', type: 'helper' },
      { id: 'catcher', z: 'flow', type: 'catch', scope: ['mode'], uncaught: false, wires: [['caught']] },
      { id: 'caught', z: 'flow', type: 'helper' },
    ];
    await helper.load(ALL_NODES, flow, { gw: DEMO_CREDS, r: {} });
    const warnings = recordWarnings(helper.getNode('r'));
    const ok = collect(helper.getNode('ok'));
    const caught = collect(helper.getNode('caught'));
    const records = collect(helper.getNode('records'));
    const sentBefore = sim.server.callsTo().length;
    for (let i = 0; i < 5; i++) helper.getNode('mode').receive({ payload: { DestinationID: '01000000SKYEE3D', Mode: 1, WakeupInterval: 2 } });
    await until(() => caught.length + ok.length >= 5, 60000, 'every msg to end');
    assert.equal(ok.length, 0, 'nothing answered as sent');
    for (const m of caught) {
      assert.equal(m.error.code, 'SHARED_STATE', m.error.message);
      assert.ok(/wrong type/.test(m.error.message) && !/could not be reached/.test(m.error.message), `refused for the reply, not at the timeout: ${m.error.message}`);
    }
    assert.equal(sim.server.callsTo().length - sentBefore, 0, 'no call reached the gateway (not even a token fetch)');
    // The poller and the requests against it: a pause between tries, not a loop.
    const before = fake.stats.commands;
    await sleep(5000);
    const commands = fake.stats.commands - before;
    console.log(`      [figures] ${JSON.stringify({ commandsIn5s: commands, connections: fake.stats.connections, warnings: warnings.length })}`);
    assert.ok(commands < 100, `no loop: ${commands} commands in 5 s (it was about 1,400 a second)`);
    assert.equal(records.length, 0, 'nothing emitted');
    assert.equal(warnings.filter((w) => /wrong type/.test(w)).length, 1, `one warning: ${warnings.join(' | ')}`);
  });
});
