'use strict';
/**
 * Issue 34: the status poller checks each record of a reply on its own. Before, one
 * malformed status record (`ID: 1.5`, a string `State`) made the whole reply BAD_RESPONSE,
 * and since FromUTC is inclusive the same reply came back at every poll: the feed was
 * blocked. Now that record is one Catch message with the record as received, and the rest
 * of the reply goes out, in a real Node-RED runtime against the simulator.
 */
const assert = require('node:assert/strict');
const { simulatorPerTest, load, until, collect, nodeFlow } = require('../helpers/harness');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

describe('iotgw-status-poller: each record checked on its own (issue 34)', function () {
  this.timeout(60000);
  let sim;
  simulatorPerTest({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 } }, (s) => (sim = s));
  const calls = () => sim.server.callsTo('terminal/status').length;
  const poller = { id: 'poller', type: 'iotgw-status-poller', intervalSeconds: 3600, startFrom: '-1h', output: 'record', contextStore: '', autoStart: false, fullAt: 500, addNames: true };

  const run = async (patch, times) => {
    sim.terminal.seedBacklog(600); // two replies or more
    sim.server.inject({ kind: 'wrong-types', route: 'terminal/status', patch, times });
    const n = await load(nodeFlow(sim, poller));
    const out = collect(n.get('out'));
    const caught = collect(n.get('caught'));
    n.get('poller').receive({ payload: 'poll' });
    // The last record of the backlog (ID 10,000,000,599) comes out: the feed was not blocked.
    await until(() => out.some((m) => m.topic === '10000000599'), 20000, 'the end of the backlog');
    const polls = calls();
    n.get('poller').receive({ payload: 'poll' });
    await until(() => calls() > polls, 10000, 'one more poll');
    await sleep(200);
    assert.equal(new Set(out.map((m) => m.topic)).size, out.length, 'none twice');
    assert.ok(out.every((m) => typeof m.payload.StateName === 'string'));
    assert.ok(caught.every((m) => m.error.code === 'BAD_RESPONSE'), caught.map((m) => m.error.message).join(' | '));
    return { out, caught };
  };

  for (const [field, value] of [
    ['ID', 1.5],
    ['State', 'RECEIVED'],
  ]) {
    it(`a record with ${field} ${JSON.stringify(value)}: one Catch with the raw record, every other record once`, async function () {
      const { out, caught } = await run({ [`Statuses.3.${field}`]: value }, 1);
      assert.equal(caught.length, 1);
      assert.match(caught[0].error.message, new RegExp(`a status record of the reply is malformed \\(${field}: `));
      assert.equal(caught[0].payload[field], value, 'msg.payload is the record as received');
      assert.equal(out.length, 599, 'every other record once');
      assert.ok(!out.some((m) => m.topic === '10000000003'), 'the malformed record is not emitted as well');
    });
  }

  it('a malformed record in every reply never blocks the feed: each reported once, the rest goes out to the end', async function () {
    const { out, caught } = await run({ 'Statuses.3.State': 'x' }, Infinity);
    const polls = calls();
    assert.ok(caught.length >= 2 && caught.length <= polls, `one per reply at most (${caught.length} for ${polls} calls)`);
    assert.ok(out.length >= 600 - caught.length, `${out.length} emitted, ${caught.length} reported`);
  });
});
