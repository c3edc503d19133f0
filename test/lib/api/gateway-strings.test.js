'use strict';
/**
 * Issue 43 (finding 3): the strings the gateway defines are checked for their form where they
 * are read. A MobileID, PrimeID or DestinationID is 1 to 32 letters and digits (a PrimeID such
 * as 01000005SKYCD96, a broadcast ID such as 12345678GRPAB12); a UTC time is
 * `yyyy-MM-dd HH:mm:ss` or empty. In a feed (from-mobile messages, status records, terminal
 * updates) an ill-formed record is a malformed record (the pollers report it as BAD_RESPONSE
 * and leave it out; the client lists it in `malformed`); the inventory, one terminal and the
 * look-ups refuse the reply as BAD_RESPONSE naming the field. Before, any string passed: a
 * MobileID `<img src=x onerror=...>` reached the dashboard example's map.
 */
const assert = require('node:assert/strict');
const { isTerminalId, isUtcField } = require('../../../dist/lib/api/records');
const { readMessage, MalformedMessage } = require('../../../dist/lib/api/terminal');
const { refused: refusedAs, terminalClientPerTest, utc, nowSec, hourAgo: from, serveOnce } = require('../../helpers/clients');

const refused = async (promise, code, re) => assert.match((await refusedAs(promise, code)).message, re);

const IMG = '<img src=x onerror=console.log("xss")>';
const SCRIPT = '<script>console.log("xss")</script>';
const HOSTILE_IDS = [IMG, SCRIPT, '', ' 01000001SKYA001', '01000001SKYA001 ', '01000001SKY&001', "0100'001SKYA001", '0100"001SKYA001', '01000001SKYÄ001', '0'.repeat(33), '${name}', '0100-001'];
const HOSTILE_TIMES = [IMG, SCRIPT, '2026-11-23T13:26:15Z', '2026-11-23 13:26:15.5', '2026-13-45 99:00:00', '2026-11-23 13:26:15<b>', '23/11/2026 13:26:15'];

describe('gateway strings checked for their form (issue 43)', function () {
  it('terminal IDs: real PrimeIDs, MobileIDs and broadcast IDs pass; HTML, spaces, quotes, other letters and over 32 characters do not', function () {
    for (const id of ['01000005SKYCD96', '01000001SKYA001', '12345678GRPAB12', '87654321GRPEU05', '01999999SKYFFFF', 'a', 'X'.repeat(32)]) assert.ok(isTerminalId(id), id);
    for (const id of [...HOSTILE_IDS, 15, null, undefined, ['01000001SKYA001']]) assert.ok(!isTerminalId(id), JSON.stringify(id));
  });

  it('UTC times: yyyy-MM-dd HH:mm:ss of a real second, or empty; nothing else', function () {
    for (const t of ['2026-11-23 13:26:15', '1970-01-01 00:00:00', '2028-02-29 23:59:59', '']) assert.ok(isUtcField(t), t);
    for (const t of [...HOSTILE_TIMES, 5, null]) assert.ok(!isUtcField(t), JSON.stringify(t));
  });

  it('a from-mobile message with an ill-formed MobileID, MessageUTC or ReceiveUTC is a malformed message naming the field', function () {
    const good = { ID: 1, MessageUTC: '2026-11-23 13:26:15', ReceiveUTC: '2026-11-23 13:26:16', SIN: 128, MobileID: '01000001SKYA001', RawPayload: 'gAE=' };
    assert.ok(!(readMessage(good) instanceof MalformedMessage));
    assert.ok(!(readMessage({ ...good, MobileID: null, MessageUTC: '' }) instanceof MalformedMessage), 'null and empty stand for none');
    for (const [field, values] of [['MobileID', HOSTILE_IDS], ['MessageUTC', HOSTILE_TIMES], ['ReceiveUTC', HOSTILE_TIMES]]) {
      for (const v of values) {
        const m = readMessage({ ...good, [field]: v });
        assert.ok(m instanceof MalformedMessage, `${field} ${JSON.stringify(v)}`);
        assert.match(m.why, new RegExp(`^"?${field}"?: `), m.why);
        assert.equal(m.raw[field], v, 'the record is kept as received');
      }
    }
  });

  describe('through the client, against the simulator', function () {
    this.timeout(60000);
    let sim;
    let client;
    terminalClientPerTest((t) => ({ sim, client } = t), { fleetSize: 50, timeoutMs: 10000 });
    const serve = (route, body) => serveOnce(sim, route, body);

    it('from-mobile messages: a MobileID holding HTML is listed in malformed, the others are returned', async function () {
      const sec = nowSec() - 60;
      const msg = (i, over = {}) => ({ ID: 100 + i, MessageUTC: utc(sec), ReceiveUTC: utc(sec), SIN: 128, MobileID: '01000001SKYA001', RawPayload: 'gAE=', ...over });
      serve('terminal/re_messages', { ErrorID: 0, NextFromUTC: utc(sec), Messages: [msg(1), msg(2, { MobileID: IMG }), msg(3, { ReceiveUTC: SCRIPT }), msg(4)] });
      const page = await client.messages(from());
      assert.deepEqual(page.records.map((m) => m.ID), [101, 104]);
      assert.deepEqual(page.malformed.map((m) => m.raw.ID), [102, 103]);
      assert.match(page.malformed[0].why, /MobileID.*terminal ID/);
      assert.match(page.malformed[1].why, /ReceiveUTC.*yyyy-MM-dd HH:mm:ss/);
    });

    it('status records: a CreateUTC or StatusUTC that is no UTC time is listed in malformed', async function () {
      const sec = nowSec() - 60;
      const rec = (i, over = {}) => ({ ID: 10_000_000_000 + i, State: 1, IsClosed: true, StatusUTC: utc(sec), CreateUTC: utc(sec - 60), Transport: 1, ...over });
      serve('terminal/status', { ErrorID: 0, NextFromUTC: utc(sec), Statuses: [rec(1, { CreateUTC: IMG }), rec(2), rec(3, { StatusUTC: '2026-11-23T13:26:15Z' })] });
      const page = await client.statusUpdates(from());
      assert.deepEqual(page.records.map((r) => r.ID), [10_000_000_002]);
      assert.deepEqual(page.malformed.map((m) => m.raw.ID), [10_000_000_001, 10_000_000_003]);
    });

    it('terminal updates: a PrimeID or UpdateUTC holding HTML is listed in malformed', async function () {
      sim.server.inject({ kind: 'wrong-types', route: 'terminal/terminal-updates', patch: { 'Terminals.1.PrimeID': IMG, 'Terminals.2.LastRegistrationUTC': SCRIPT }, times: 1 });
      const page = await client.terminalUpdates(utc(nowSec() - 31 * 86400));
      assert.equal(page.records.length, 48);
      assert.deepEqual(page.malformed.map((m) => m.raw.PrimeID !== IMG && m.raw.LastRegistrationUTC), [false, SCRIPT]);
      assert.ok(page.records.every((t) => isTerminalId(t.PrimeID)));
    });

    it('the inventory, one terminal and the look-ups refuse an ill-formed PrimeID, time or DestinationID as BAD_RESPONSE naming the field', async function () {
      sim.server.inject({ kind: 'wrong-types', route: 'terminal/inventory', patch: { 'Terminals.3.PrimeID': IMG }, times: 1 });
      await refused(client.terminalsPage({ pageSize: 10 }), 'BAD_RESPONSE', /Terminals\.3\.PrimeID: expected a terminal ID/);
      sim.server.inject({ kind: 'wrong-types', route: 'terminal/inventory', patch: { 'Terminals.0.UpdateUTC': SCRIPT }, times: 1 });
      await refused(client.terminalsPage({ pageSize: 10 }), 'BAD_RESPONSE', /Terminals\.0\.UpdateUTC: expected a UTC time/);
      assert.equal((await client.terminalsPage({ pageSize: 10 })).terminals.length, 10, 'the next page read as usual');
      sim.server.inject({ kind: 'wrong-types', route: 'terminal/terminal-info', patch: { 'Terminal.PrimeID': SCRIPT }, times: 1 });
      await refused(client.terminal('01000001SKYA001'), 'BAD_RESPONSE', /Terminal\.PrimeID/);
      const [sent] = await client.submitToMultiple({ RawPayload: [128, 1, 2] }, ['01000001SKYA001']);
      sim.server.inject({ kind: 'wrong-types', route: 'terminal/fw_messages', patch: { 'Messages.0.DestinationID': IMG }, times: 1 });
      await refused(client.lookupMessages([sent.ID]), 'BAD_RESPONSE', /Messages\.0\.DestinationID/);
      assert.equal((await client.lookupMessages([sent.ID])).records[0].DestinationID, '01000001SKYA001');
    });
  });
});
