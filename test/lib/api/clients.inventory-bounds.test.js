'use strict';
/**
 * TerminalClient.terminals() always ends (issue 43, finding 5), against the simulator's
 * hostile inventories (`inventoryLoop`): pages that go round, endless fresh pages, pages out
 * of keyset order: BAD_RESPONSE naming what happened, within the page cap.
 */
const assert = require('node:assert/strict');
const { refused, terminalClientPerTest } = require('../../helpers/clients');

describe('TerminalClient.terminals(): a walk always ends (issue 43)', function () {
  this.timeout(60000);
  let sim;
  let client;
  terminalClientPerTest((t) => ({ sim, client } = t));

  const walk = async (options) => {
    let count = 0;
    for await (const page of client.terminals(options)) count += page.length;
    return count;
  };
  const calls = () => sim.server.callsTo('terminal/inventory').length;

  it('pages that go round (A, B, A): BAD_RESPONSE naming the cycle at the third page', async function () {
    sim.terminal.configure({ inventoryLoop: 'cycle' });
    const err = await refused(walk({ pageSize: 1000 }), 'BAD_RESPONSE');
    assert.match(err.message, /page 3 ends with "\w+", a SinceID this walk already asked from: the pages go round in a cycle/);
    assert.equal(calls(), 3);
  });

  it('endless fresh pages: BAD_RESPONSE after maxPages calls, none past it; the default cap is 1000 pages', async function () {
    sim.terminal.configure({ inventoryLoop: 'endless' });
    const before = process.memoryUsage().rss;
    const err = await refused(walk({ pageSize: 1000, maxPages: 60 }), 'BAD_RESPONSE');
    assert.match(err.message, /the inventory did not end within 60 pages \(maxPages/);
    assert.equal(calls(), 60);
    const grown = (process.memoryUsage().rss - before) / 1048576;
    assert.ok(grown < 300, `memory bounded: RSS grew ${grown.toFixed(0)} MB for 60,000 terminals walked`);
    sim.server.calls.length = 0;
    await refused(walk({ pageSize: 1 }), 'BAD_RESPONSE');
    assert.equal(calls(), 1000, 'the default cap');
    await refused(client.terminals({ maxPages: 0 }).next(), 'BAD_INPUT');
  });

  it('a page out of keyset order, or one that starts at or before its SinceID: BAD_RESPONSE naming both PrimeIDs', async function () {
    sim.inject({ route: 'terminal/inventory', kind: 'wrong-types', patch: { 'Terminals.1.PrimeID': '00000000AAAAAAA' } });
    const err = await refused(walk({ pageSize: 5 }), 'BAD_RESPONSE');
    assert.match(err.message, /Terminals\.1 "00000000AAAAAAA" follows "\w+", not in keyset order/);
    const since = (await client.terminalsPage({ pageSize: 2 })).terminals[1].PrimeID;
    sim.inject({ route: 'terminal/inventory', status: 200, body: { ErrorID: 0, Terminals: [{ PrimeID: since }] } });
    const again = await refused(client.terminalsPage({ sinceId: since, pageSize: 2 }), 'BAD_RESPONSE');
    assert.ok(again.message.includes(`the page after SinceID "${since}" starts with "${since}", not in keyset order`), again.message);
  });
});
