'use strict';
/**
 * iotgw-gateway-info against the simulator (issue 35): service information with the live
 * error catalogue, broadcast IDs and subaccounts in both reply forms, 403 for an account that
 * is not a super account, and the INFO throttle group (infoRateLimitCalls) of the account.
 */
const assert = require('node:assert/strict');
const { simulatorPerTest, gatewayNode, load, until, collect, catchAll, recordStatuses } = require('../helpers/harness');

describe('iotgw-gateway-info against the simulator', function () {
  let sim;
  simulatorPerTest({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 } }, (s) => (sim = s));

  const flow = (what, gw = {}) => [gatewayNode(sim, gw), { id: 'info', type: 'iotgw-gateway-info', gateway: 'gw', what, wires: [['out']] }, { id: 'out', type: 'helper' }, ...catchAll()];

  it('service: Version, ServerUTC and the whole error catalogue, names the package does not carry included', async function () {
    const n = await load(flow('service'));
    const out = collect(n.get('out'));
    n.get('info').receive({ payload: 1, keep: 'x' });
    await until(() => out.length === 1);
    const p = out[0].payload;
    assert.equal(typeof p.Version, 'string');
    assert.match(p.ServerUTC, /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    assert.ok(p.ErrorCodes.some((e) => e.ID === 21786 && e.Name === 'TERMINAL_SERVICE_SUSPENDED'));
    assert.equal(out[0].keep, 'x');
    assert.equal(new URLSearchParams(sim.server.callsTo('terminal/info')[0].query).get('GetErrorCodes'), 'true');
  });

  for (const form of ['current', 'predecessor']) {
    it(`broadcast IDs and subaccounts in the ${form} form`, async function () {
      sim.terminal.configure({ infoForm: form });
      const n = await load([...flow('broadcast'), { id: 'subs', type: 'iotgw-gateway-info', gateway: 'gw', what: 'subaccounts', wires: [['out2']] }, { id: 'out2', type: 'helper' }]);
      const out = collect(n.get('out'));
      const out2 = collect(n.get('out2'));
      n.get('info').receive({});
      n.get('subs').receive({});
      await until(() => out.length === 1 && out2.length === 1);
      assert.ok(Array.isArray(out[0].payload) && out[0].payload.length > 0);
      assert.ok(out[0].payload.every((b) => /^\d{8}GRP[0-9A-Z]{4}$/.test(b.ID)));
      assert.deepEqual(out2[0].payload, [{ AccountID: 10002, AccountName: 'sub' }]);
    });
  }

  it('subaccounts of an account that is not a super account: FORBIDDEN', async function () {
    const n = await load(flow('subaccounts'), { gw: { clientId: 'sub', clientSecret: 'sub-secret' } });
    const caught = collect(n.get('caught'));
    n.get('info').receive({});
    await until(() => caught.length === 1);
    assert.equal(caught[0].error.code, 'FORBIDDEN');
  });

  it('counts in the INFO group: infoRateLimitCalls paces info/* calls on their own', async function () {
    this.timeout(30000);
    const n = await load(flow('broadcast', { rateLimitCalls: 0, infoRateLimitCalls: 1, rateLimitWindowSeconds: 3 }));
    const out = collect(n.get('out'));
    const statuses = recordStatuses(n.get('info'));
    n.get('info').receive({});
    n.get('info').receive({});
    await until(() => statuses.some((s) => /^waiting for an? INFO slot/.test(s.text ?? '')), 5000, 'a waiting status for the INFO group');
    assert.equal(out.length, 1, 'the second call waits for the INFO window');
    await until(() => out.length === 2, 10000);
    assert.equal(sim.server.callsTo('terminal/broadcast-ids').length, 2);
  });

  it('a what other than service, broadcast or subaccounts is BAD_INPUT; nothing is sent', async function () {
    const n = await load(flow('everything'));
    const caught = collect(n.get('caught'));
    n.get('info').receive({});
    await until(() => caught.length === 1);
    assert.equal(caught[0].error.code, 'BAD_INPUT');
    assert.match(caught[0].error.message, /what: must be "service", "broadcast" or "subaccounts"/);
    assert.equal(sim.server.callsTo().length, 0);
  });
});
