'use strict';
/**
 * TerminalClient's calls of "More of the gateway" (issue 35) from plain Node.js against the
 * simulator: the inventory page by page, one terminal, look-ups by ID, service information,
 * one message to many, any call; BAD_INPUT before any request; the INFO group of the client.
 */
const assert = require('node:assert/strict');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..', '..');
const { TerminalClient } = require(ROOT);
const { refused, terminalClientPerTest } = require('../../helpers/clients');

describe('TerminalClient: inventory, look-ups, service information, many destinations, any call', function () {
  this.timeout(60000);
  let sim;
  let client;
  terminalClientPerTest((t) => ({ sim, client } = t));

  it('terminals() walks the inventory page by page; terminalsPage() one page; terminal() one, NOT_FOUND when unknown', async function () {
    const sizes = [];
    let count = 0;
    for await (const page of client.terminals({ pageSize: 1000 })) {
      sizes.push(page.length);
      count += page.length;
    }
    assert.deepEqual(sizes, [1000, 1000, 500]);
    assert.equal(count, 2500);
    assert.equal(sim.server.callsTo('terminal/inventory').length, 4);
    const p = await client.terminalsPage({ pageSize: 2 });
    assert.equal(p.terminals.length, 2);
    assert.equal(p.nextSinceId, p.terminals[1].PrimeID);
    assert.equal((await client.terminal('01000001SKYA001')).PrimeID, '01000001SKYA001');
    await refused(client.terminal('99999999SKYZZZZ'), 'NOT_FOUND');
  });

  it('serviceInfo(), broadcastIds(), subaccounts() and call()', async function () {
    const info = await client.serviceInfo();
    assert.ok(info.ErrorCodes.some((e) => e.ID === 21786));
    assert.ok((await client.broadcastIds()).length > 0);
    assert.deepEqual(await client.subaccounts(), [{ AccountID: 10002, AccountName: 'sub' }]);
    const body = await client.call({ method: 'GET', path: 'info/service' });
    assert.equal(typeof body.Version, 'string');
    const e = await refused(client.call({ method: 'GET', path: 'info/terminals', query: { PageSize: 5000 } }), 'GATEWAY_ERROR');
    assert.equal(e.errorName, 'INVALID_PAGE_SIZE', 'named from the live catalogue');
  });

  it('lookupStatuses() and lookupMessages() join calls of 100 in input order; submitToMultiple() one entry per destination', async function () {
    const dests = (await client.terminalsPage({ pageSize: 150 })).terminals.map((t) => t.PrimeID);
    const first = await client.submitToMultiple({ RawPayload: [128, 1, 2] }, dests.slice(0, 100));
    const second = await client.submitToMultiple({ RawPayload: [128, 1, 2] }, [...dests.slice(100), '01999999SKYFFFF']);
    assert.deepEqual([...first, ...second].map((r) => r.DestinationID), [...dests, '01999999SKYFFFF']);
    assert.ok(second.at(-1).ErrorID > 0 && typeof second.at(-1).ErrorName === 'string');
    const ids = [...first, ...second].filter((r) => r.ErrorID === 0).map((r) => r.ID).reverse();
    const st = await client.lookupStatuses([...ids, 99999999901]);
    assert.deepEqual(st.records.map((r) => r.ID), ids);
    assert.deepEqual(st.unknown, [99999999901]);
    assert.equal(st.calls, 2);
    const msgs = await client.lookupMessages(ids.slice(0, 2));
    assert.ok(msgs.records.every((m) => typeof m.RawPayload === 'string'));
  });

  it('bad input is BAD_INPUT naming the field; nothing is sent', async function () {
    sim.server.clearCalls();
    assert.equal((await refused(client.terminal(42), 'BAD_INPUT')).field, 'primeId');
    assert.equal((await refused(client.terminalsPage({ pageSize: 1001 }), 'BAD_INPUT')).field, 'pageSize');
    await refused(client.terminals({ pageSize: 0 }).next(), 'BAD_INPUT');
    assert.equal((await refused(client.lookupStatuses(['x1']), 'BAD_INPUT')).field, 'ids[0]');
    assert.equal((await refused(client.lookupMessages([]), 'BAD_INPUT')).field, 'ids');
    assert.equal((await refused(client.call({ method: 'DELETE', path: 'info/service' }), 'BAD_INPUT')).field, 'method');
    assert.equal((await refused(client.call({ method: 'GET', path: '../auth/token' }), 'BAD_INPUT')).field, 'path');
    assert.equal((await refused(client.call({ method: 'GET', path: 'https://evil.example/' }), 'BAD_INPUT')).field, 'path');
    const e = await refused(client.submitToMultiple({ RawPayload: [128, 1] }, []), 'BAD_INPUT');
    assert.equal(e.field, 'message.Destinations');
    await refused(client.submitToMultiple({ RawPayload: [128, 1] }, Array.from({ length: 101 }, (_, i) => `0100${String(i).padStart(4, '0')}SKYA001`)), 'BAD_INPUT');
    await refused(client.submitToMultiple({ RawPayload: [128, 1] }, ['01000001SKYA001', 7]), 'BAD_INPUT');
    assert.equal(sim.server.callsTo().length, 0, 'no request reached the simulator');
  });

  it('the INFO group: infoRateLimitCalls paces info/* calls apart from SEND and GET', async function () {
    await client.close();
    client = new TerminalClient({ baseUrl: sim.url, token: 'demo-token', rateLimitCalls: 0, infoRateLimitCalls: 1, rateLimitWindowMs: 60_000 });
    await client.serviceInfo();
    let second = false;
    const p = client.broadcastIds().then(
      () => (second = true),
      () => {},
    );
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(second, false, 'the second info call waits for the INFO window');
    await client.close();
    await p;
  });
});
