'use strict';
/**
 * The message poller's `accounts` (issue 35) in a real Node-RED runtime against the
 * simulator: `all` reads get/subaccounts/re_messages (a super account: its own messages and
 * its subaccount's, each with AccountID); `own` (the default, and a flow without the
 * property) reads get/re_messages; an account that is not a super account gets 403, a
 * catchable FORBIDDEN that says what to do, and a red status.
 */
const assert = require('node:assert/strict');
const { simulatorPerTest, logged, load, until, collect, nodeFlow, messagePollerNode } = require('../helpers/harness');

const nowSec = () => Math.floor(Date.now() / 1000);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

describe('iotgw-message-poller accounts: own or all', function () {
  this.timeout(60000);
  let sim;
  simulatorPerTest({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 } }, (s) => (sim = s));

  /** 6 messages of a demo terminal and 4 of a terminal of the subaccount `sub`. */
  function seed() {
    let i = 0;
    while (sim.terminal.fleet.at(i).account !== 'sub') i++;
    const subTerminal = sim.terminal.fleet.primeId(i);
    sim.terminal.mobile.seed({ count: 6, perSecond: 3, startSec: nowSec() - 30, mobileId: '01000001SKYA001' });
    sim.terminal.mobile.seed({ count: 4, perSecond: 2, startSec: nowSec() - 30, mobileId: subTerminal });
    return subTerminal;
  }
  const withStatus = { extra: [{ id: 'st', type: 'status', scope: ['poller'], wires: [['statuses']] }, { id: 'statuses', type: 'helper' }] };

  it('all: the super account\'s messages and its subaccount\'s, each with AccountID, from get/subaccounts/re_messages', async function () {
    const subTerminal = seed();
    const n = await load(nodeFlow(sim, messagePollerNode({ autoStart: false, accounts: 'all' })));
    const out = collect(n.get('out'));
    n.get('poller').receive({ payload: 'poll' });
    await until(() => out.length >= 10, 10000, 'ten messages');
    await sleep(100);
    assert.equal(out.length, 10);
    assert.deepEqual(out.map((m) => m.payload.AccountID).sort(), [...Array(6).fill('demo'), ...Array(4).fill('sub')].sort());
    assert.equal(out.filter((m) => m.topic === subTerminal).length, 4);
    assert.ok(sim.server.callsTo('terminal/subaccount-re_messages').length >= 1);
    assert.equal(sim.server.callsTo('terminal/re_messages').length, 0);
  });

  for (const accounts of ['own', undefined]) {
    it(`${accounts ?? 'absent (an older flow)'}: the account's own messages only, from get/re_messages`, async function () {
      seed();
      const props = { autoStart: false };
      if (accounts) props.accounts = accounts;
      const n = await load(nodeFlow(sim, messagePollerNode(props)));
      const out = collect(n.get('out'));
      n.get('poller').receive({ payload: 'poll' });
      await until(() => out.length >= 6, 10000, 'six messages');
      await sleep(200);
      assert.equal(out.length, 6);
      assert.equal(sim.server.callsTo('terminal/subaccount-re_messages').length, 0);
    });
  }

  it('all on an account that is not a super account: 403 is one catchable FORBIDDEN saying so, red status, nothing emitted', async function () {
    seed();
    const n = await load(nodeFlow(sim, messagePollerNode({ autoStart: false, accounts: 'all' }), withStatus), { gw: { clientId: 'sub', clientSecret: 'sub-secret' } });
    const out = collect(n.get('out'));
    const caught = collect(n.get('caught'));
    const statuses = collect(n.get('statuses'));
    n.get('poller').receive({ payload: 'poll', topic: 'mine' });
    await until(() => caught.length === 1, 10000, 'the error');
    await until(() => statuses.some((s) => s.status.fill === 'red'), 5000, 'a red status');
    await sleep(200);
    assert.equal(caught.length, 1, 'one Catch message: the poll msg\'s');
    assert.equal(caught[0].error.code, 'FORBIDDEN');
    assert.equal(caught[0].topic, 'mine', 'the input msg ends with the error');
    assert.match(caught[0].error.message, /not a super account.*accounts: own/);
    assert.equal(out.length, 0);
  });

  it('an accounts value the node does not know stops it at deploy (one error naming accounts), nothing is requested', async function () {
    await load(nodeFlow(sim, messagePollerNode({ autoStart: true, intervalSeconds: 1, accounts: 'every' })));
    const errors = () => logged('poller');
    await until(() => errors().length >= 1, 5000, 'the error');
    await sleep(1500);
    assert.match(errors()[0], /accounts: must be "own" or "all"/);
    assert.equal(sim.server.callsTo('re_messages').length, 0);
  });
});
