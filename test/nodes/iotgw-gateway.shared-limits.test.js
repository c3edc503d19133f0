'use strict';
const assert = require('node:assert/strict');
const { gatewayNode, load, until, collect, catchAll, simulatorPerTest } = require('../helpers/harness');

describe('broker, SMS and terminal nodes of one account share its concurrency cap', function () {
  let sim;
  // Before the harness's own afterEach: a held broker reply must not outlive its test.
  afterEach(() => sim?.areas.broker.release());
  simulatorPerTest({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 } }, (s) => (sim = s));

  function flow(maxConcurrent) {
    return [
      gatewayNode(sim, { maxConcurrent, token: undefined }),
      { id: 'devices', type: 'iotgw-lorawan-devices', gateway: 'gw', pageSize: 5, wires: [['out']] },
      { id: 'mode', type: 'iotgw-terminal-mode', gateway: 'gw', mode: 0, wakeupInterval: 0, family: 'any', wires: [['out'], ['out']] },
      { id: 'sms', type: 'iotgw-sms-request', gateway: 'gw', wires: [['out']] },
      { id: 'out', type: 'helper' },
      ...catchAll(),
    ];
  }

  const creds = { gw: { token: 'demo-token', brokerClientId: 'sim-client', brokerAccessToken: 'sim-access-token' } };

  async function saturate(n) {
    sim.areas.broker.hold();
    n.get('devices').receive({ payload: '' });
    n.get('devices').receive({ payload: '' });
    await until(() => sim.server.callsTo('broker/devices').length === 2, 5000, 'two device requests held in flight');
    assert.equal(n.get('gw').client().inFlight, 2);
  }

  it('with a cap of 2 held by device requests, terminal and SMS requests wait for a slot', async function () {
    const n = await load(flow(2), creds);
    const out = collect(n.get('out'));
    await saturate(n);
    n.get('mode').receive({ payload: '01000001SKYA001' });
    n.get('sms').receive({ payload: 1 });
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(sim.server.callsTo('terminal/mode').length, 0, 'the terminal request waited');
    assert.equal(sim.server.callsTo('sms/request').length, 0, 'the SMS request waited');
    assert.equal(out.length, 0);
    const released = Date.now();
    sim.areas.broker.release();
    await until(() => out.length === 4, 5000, 'all four outputs');
    for (const route of ['terminal/mode', 'sms/request']) {
      const calls = sim.server.callsTo(route);
      assert.equal(calls.length, 1);
      assert.ok(calls[0].at >= released, `${route} was sent only after a slot freed`);
    }
  });

  it('with a cap of 3 the same terminal request goes through while two device requests are held', async function () {
    const n = await load(flow(3), creds);
    const out = collect(n.get('out'));
    await saturate(n);
    n.get('mode').receive({ payload: '01000001SKYA001' });
    await until(() => out.length === 1, 5000, 'the terminal result');
    assert.ok(Array.isArray(out[0].payload) && out[0].payload[0].DestinationID === '01000001SKYA001');
    assert.equal(sim.server.callsTo('broker/devices').length, 2);
  });
});
