'use strict';
/**
 * The typed TerminalClient's feed calls give the nodes' reply guarantees (issue 34): a reply
 * the pollers refuse (10,000 records, a NextFromUTC of year 9999 or no time at all) is
 * BAD_RESPONSE here too, nothing returned; a malformed record is left out of `records` and
 * listed in `malformed`. And its terminal changes feed (issue 35), against the simulator.
 */
const assert = require('node:assert/strict');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..', '..');
const { TerminalClient } = require(ROOT);
const { refused, terminalClientPerTest, utc, nowSec, hourAgo: from, serveOnce } = require('../../helpers/clients');



describe('TerminalClient feeds: the nodes\' reply guarantees, and terminal updates', function () {
  this.timeout(60000);
  let sim;
  let client;
  terminalClientPerTest((t) => ({ sim, client } = t), { fleetSize: 800, timeoutMs: 10000 });

  const record = (i, sec) => ({ ID: 10_000_000_000 + i, State: 1, IsClosed: true, StatusUTC: utc(sec), CreateUTC: utc(sec - 60), Transport: 1 });
  const serve = (route, body) => serveOnce(sim, route, body);

  it('statusUpdates and messages: a reply of 10,000 records is BAD_RESPONSE, nothing returned', async function () {
    const sec = nowSec() - 60;
    serve('terminal/status', { ErrorID: 0, NextFromUTC: utc(sec), Statuses: Array.from({ length: 10000 }, (_, i) => record(i, sec)) });
    await refused(client.statusUpdates(from()), 'BAD_RESPONSE', /fw_status_updates: the reply holds 10000 records, more than the 500 a reply may hold; nothing returned/);
    serve('terminal/re_messages', { ErrorID: 0, NextFromUTC: utc(sec), Messages: Array.from({ length: 10000 }, (_, i) => ({ ID: i + 1, MessageUTC: utc(sec), ReceiveUTC: utc(sec), SIN: 128, MobileID: '01000001SKYA001' })) });
    await refused(client.messages(from()), 'BAD_RESPONSE', /10000 records/);
  });

  it('a NextFromUTC of year 9999, or one that is no time: BAD_RESPONSE on each feed call', async function () {
    serve('terminal/status', { ErrorID: 0, NextFromUTC: '9999-12-31 23:59:59', Statuses: [record(1, nowSec() - 60)] });
    await refused(client.statusUpdates(from()), 'BAD_RESPONSE', /9999-12-31 23:59:59 is \d+ h ahead of this machine's clock; nothing returned/);
    serve('terminal/re_messages', { ErrorID: 0, NextFromUTC: 'tomorrow', Messages: [] });
    await refused(client.messages(from()), 'BAD_RESPONSE', /NextFromUTC "tomorrow" is not a UTC time/);
    serve('terminal/terminal-updates', { ErrorID: 0, NextFromUTC: '9999-12-31 23:59:59', Terminals: [] });
    await refused(client.terminalUpdates(from()), 'BAD_RESPONSE', /info\/terminal_updates: NextFromUTC 9999-12-31/);
    // A record more than a day ahead (no NextFromUTC) is refused as well.
    serve('terminal/status', { ErrorID: 0, Statuses: [record(2, nowSec() + 3 * 86400)] });
    await refused(client.statusUpdates(from()), 'BAD_RESPONSE', /ahead of this machine's clock/);
  });

  it('a malformed status record is listed in malformed, the others are returned (as the poller emits them)', async function () {
    const sec = nowSec() - 60;
    serve('terminal/status', { ErrorID: 0, NextFromUTC: utc(sec), Statuses: [record(1, sec), { ...record(2, sec), ID: 1.5 }, record(3, sec)] });
    const page = await client.statusUpdates(from());
    assert.deepEqual(page.records.map((r) => r.ID), [10_000_000_001, 10_000_000_003]);
    assert.equal(page.records[0].StateName, 'RECEIVED');
    assert.equal(page.malformed.length, 1);
    assert.equal(page.malformed[0].raw.ID, 1.5);
    assert.match(page.malformed[0].why, /^ID: /);
  });

  it('terminalUpdates: pages of the fleet by FromUTC (inclusive), TerminalInfo with exact IDs, INFO group', async function () {
    const seen = new Map();
    let fromUtc = utc(nowSec() - 31 * 86400);
    for (let i = 0; i < 10; i++) {
      const page = await client.terminalUpdates(fromUtc);
      for (const t of page.records) seen.set(`${t.PrimeID}|${t.UpdateUTC}`, t);
      if (page.records.length < 500) break;
      fromUtc = page.nextFromUtc;
    }
    assert.equal(seen.size, 800, 'every terminal of the fleet');
    const ids = [...seen.values()].map((t) => t.LastRegistrationMessageID).filter((v) => v !== null && v !== undefined);
    assert.ok(ids.every((v) => (typeof v === 'number' ? Number.isSafeInteger(v) : BigInt(v) > BigInt(Number.MAX_SAFE_INTEGER))), 'a number up to 2^53, else an exact decimal string');
    await refused(client.terminalUpdates('yesterday'), 'BAD_INPUT', /fromUtc/);
  });

  it('terminalUpdates: a malformed terminal record is listed in malformed', async function () {
    sim.server.inject({ kind: 'wrong-types', route: 'terminal/terminal-updates', patch: { 'Terminals.1.PrimeID': 7 }, times: 1 });
    const page = await client.terminalUpdates(utc(nowSec() - 31 * 86400));
    assert.equal(page.records.length, 499);
    assert.equal(page.malformed.length, 1);
    assert.equal(page.malformed[0].raw.PrimeID, 7);
  });

  it('messages with accounts "all": the subaccounts\' too, with AccountID; 403 for an account that is not a super account; a bad value is BAD_INPUT', async function () {
    let i = 0;
    while (sim.terminal.fleet.at(i).account !== 'sub') i++;
    sim.terminal.mobile.seed({ count: 3, perSecond: 3, startSec: nowSec() - 30, mobileId: '01000001SKYA001' });
    sim.terminal.mobile.seed({ count: 2, perSecond: 2, startSec: nowSec() - 30, mobileId: sim.terminal.fleet.primeId(i) });
    const all = await client.messages(from(), { accounts: 'all' });
    assert.deepEqual(all.records.map((m) => m.AccountID).sort(), ['demo', 'demo', 'demo', 'sub', 'sub']);
    assert.equal((await client.messages(from())).records.length, 3);
    await refused(client.messages(from(), { accounts: 'every' }), 'BAD_INPUT', /accounts/);
    const sub = new TerminalClient({ baseUrl: sim.url, clientId: 'sub', clientSecret: 'sub-secret', rateLimitCalls: 0, timeoutMs: 10000 });
    try {
      await refused(sub.messages(from(), { accounts: 'all' }), 'FORBIDDEN', /not a super account/);
    } finally {
      await sub.close();
    }
  });
});
