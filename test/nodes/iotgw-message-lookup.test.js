'use strict';
/**
 * iotgw-message-lookup against the simulator (issue 35): 250 IDs looked up in 3 calls of at
 * most 100, joined back in input order, the 2 unknown ones in msg.unknown; whole messages;
 * IDs above 2^53 exact; bad IDs refused before anything is sent; one of the calls failing
 * keeps the other calls' records with the error, and which IDs to look up again (issue 43).
 */
const assert = require('node:assert/strict');
const { simulatorPerTest, gatewayNode, load, until, collect, catchAll } = require('../helpers/harness');
const { TerminalClient } = require('../../dist');

const RAW = Buffer.from([128, 5, 1, 2, 3]).toString('base64');

describe('iotgw-message-lookup against the simulator', function () {
  let sim;
  simulatorPerTest({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 }, fleet: { size: 2500 } }, (s) => (sim = s));

  const flow = (what = 'statuses', gw = {}) => [gatewayNode(sim, gw), { id: 'lookup', type: 'iotgw-message-lookup', gateway: 'gw', what, wires: [['out']] }, { id: 'out', type: 'helper' }, ...catchAll()];

  /** `n` to-mobile messages sent to fleet terminals: their IDs. */
  async function sent(n) {
    const client = new TerminalClient({ baseUrl: sim.url, token: 'demo-token', rateLimitCalls: 0 });
    try {
      const dests = (await client.terminalsPage({ pageSize: n })).terminals.map((t) => t.PrimeID);
      const results = await client.submitMessages(dests.map((d) => ({ DestinationID: d, RawPayload: RAW })));
      assert.ok(results.every((r) => r.ErrorID === 0));
      return results.map((r) => r.ID);
    } finally {
      await client.close();
      sim.server.clearCalls();
    }
  }

  it('250 IDs in 3 calls of at most 100, records in input order, the 2 unknown in msg.unknown', async function () {
    const known = await sent(248);
    // Input order: shuffled, with two IDs the gateway does not know among them.
    const ids = [...known].sort((a, b) => ((a * 7919) % 251) - ((b * 7919) % 251));
    ids.splice(17, 0, 99999999901);
    ids.splice(200, 0, '99999999902');
    const n = await load(flow());
    const out = collect(n.get('out'));
    n.get('lookup').receive({ payload: ids, keep: 'k' });
    await until(() => out.length === 1, 15000);
    const calls = sim.server.callsTo('terminal/fw_statuses');
    assert.deepEqual(calls.map((c) => new URLSearchParams(c.query).get('IDList').split(',').length).sort((a, b) => b - a), [100, 100, 50]);
    assert.deepEqual(out[0].payload.map((s) => s.ID), ids.filter((id) => id !== 99999999901 && id !== '99999999902'));
    assert.ok(out[0].payload.every((s) => typeof s.State === 'number' && typeof s.StateName === 'string'));
    assert.deepEqual(out[0].unknown, [99999999901, 99999999902]);
    assert.equal(out[0].keep, 'k');
  });

  it('whole messages (get/fw_messages) from result objects carrying ID, as cancel takes them', async function () {
    const known = await sent(3);
    const n = await load(flow('messages'));
    const out = collect(n.get('out'));
    n.get('lookup').receive({ payload: known.map((ID) => ({ ID, DestinationID: 'x' })) });
    await until(() => out.length === 1);
    assert.deepEqual(out[0].payload.map((m) => m.ID), known);
    assert.ok(out[0].payload.every((m) => m.RawPayload === RAW && typeof m.DestinationID === 'string'));
    assert.deepEqual(out[0].unknown, []);
    assert.equal(sim.server.callsTo('terminal/fw_messages').length, 1);
  });

  it('an ID above 2^53 goes out and comes back exact', async function () {
    sim.terminal.setNextId('9223372036854775000');
    const known = await sent(1);
    assert.equal(known[0], '9223372036854775000');
    const n = await load(flow());
    const out = collect(n.get('out'));
    n.get('lookup').receive({ payload: [9223372036854775000n, '9223372036854775001'] });
    await until(() => out.length === 1);
    assert.deepEqual(out[0].payload.map((s) => s.ID), ['9223372036854775000']);
    assert.deepEqual(out[0].unknown, ['9223372036854775001']);
    assert.equal(new URLSearchParams(sim.server.callsTo('terminal/fw_statuses')[0].query).get('IDList'), '9223372036854775000,9223372036854775001');
  });

  it('150 IDs, one of the two calls failing (HTTP 500): the error keeps the other call\'s records (msg.results), msg.failed the IDs to look up again', async function () {
    const ids = await sent(149);
    ids.splice(60, 0, 99999999901);
    const n = await load(flow('statuses', { maxRetries: 0 }));
    const out = collect(n.get('out'));
    const caught = collect(n.get('caught'));
    sim.server.inject({ route: 'terminal/fw_statuses', kind: 'server-error', times: 1 });
    n.get('lookup').receive({ payload: ids, keep: 'k' });
    await until(() => caught.length === 1, 30000, 'the look-up to fail');
    const calls = sim.server.callsTo('terminal/fw_statuses');
    assert.equal(calls.length, 2);
    const idsOf = (c) => new URLSearchParams(c.query).get('IDList').split(',');
    const failedCall = calls.find((c) => c.status === 500);
    const askedAgain = new Set(idsOf(failedCall));
    const c = caught[0];
    assert.equal(c.error.code, 'HTTP_ERROR');
    assert.equal(c.keep, 'k');
    assert.deepEqual(c.failed, ids.filter((id) => askedAgain.has(String(id))), 'the IDs of the failed call, in input order');
    const answered = ids.filter((id) => !askedAgain.has(String(id)));
    assert.deepEqual(c.results.map((s) => s.ID), answered.filter((id) => id !== 99999999901), 'the records of the answered call, in input order');
    assert.deepEqual(c.unknown, answered.includes(99999999901) ? [99999999901] : []);
    // A Catch flow looks up the failed part again: only those IDs are asked.
    n.get('lookup').receive({ payload: c.failed });
    await until(() => out.length === 1, 30000, 'the second look-up');
    assert.equal(idsOf(sim.server.callsTo('terminal/fw_statuses')[2]).length, askedAgain.size, 'only the failed IDs asked again');
    const all = [...c.results, ...out[0].payload].map((s) => String(s.ID)).sort();
    assert.deepEqual(all, ids.filter((id) => id !== 99999999901).map(String).sort(), 'every record found once across the two');
  });

  it('an ID that is not an int64 (and an empty list) is BAD_INPUT naming it; nothing is sent', async function () {
    const n = await load(flow());
    const caught = collect(n.get('caught'));
    n.get('lookup').receive({ payload: [1, 'x1', 1.5, 2 ** 60, '92233720368547758070'] });
    n.get('lookup').receive({ payload: [] });
    n.get('lookup').receive({ payload: { DestinationID: 'no ID' } });
    await until(() => caught.length === 3);
    assert.ok(caught.every((c) => c.error.code === 'BAD_INPUT'));
    for (const f of ['msg.payload[1]', 'msg.payload[2]', 'msg.payload[3]', 'msg.payload[4]']) assert.ok(caught[0].error.message.includes(f), f);
    assert.match(caught[1].error.message, /empty array/);
    assert.match(caught[2].error.message, /msg\.payload\.ID: missing/);
    assert.equal(sim.server.callsTo().length, 0, 'no request reached the simulator');
  });
});
