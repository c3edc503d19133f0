'use strict';
/**
 * The simulator's look-ups by ID (get/fw_messages, get/fw_statuses), the subaccounts'
 * from-mobile messages, and terminal/reset, sysreset and mute, over loopback HTTP.
 */
const assert = require('node:assert/strict');
const { startSimulator } = require('../../dist/simulator');

const DEMO = { authorization: 'Bearer demo-token', 'content-type': 'application/json' };
const SUB = { authorization: 'Bearer sub-token' };
const RAW = Buffer.from([128, 9, 4, 2]).toString('base64');

async function call(sim, method, path, body, headers = DEMO) {
  const r = await fetch(`${sim.url}/api/v1.0/${path}`, { method, headers, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
  const text = await r.text();
  return { status: r.status, text, body: text ? JSON.parse(text) : undefined };
}

describe('the simulator: look-ups by ID, subaccount messages, terminal commands', function () {
  let sim;
  afterEach(async () => sim && (await sim.close()));

  /** `n` messages sent to the first terminals of the inventory: their IDs. */
  async function send(n) {
    const dests = (await call(sim, 'GET', `info/terminals?PageSize=${n}`)).body.Terminals.map((t) => t.PrimeID);
    const r = await call(sim, 'POST', 'submit/to_multiple', { Message: { RawPayload: RAW }, Destinations: dests });
    return r.body.Submissions.map((s) => String(s.ID));
  }

  it('get/fw_messages and get/fw_statuses: IDList as one value or repeated, in input order, unknown IDs with an ErrorID', async function () {
    sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 }, fleet: { size: 200 } });
    const ids = [...(await send(100)), ...(await send(100))].slice(0, 98);
    ids.splice(10, 0, '999999999999');
    ids.push('9223372036854775807');
    const comma = await call(sim, 'GET', `get/fw_messages?IDList=${ids.join(',')}`);
    assert.equal(comma.status, 200);
    assert.equal(comma.body.ErrorID, 0);
    const m = comma.body.Messages;
    assert.equal(m.length, 100);
    assert.deepEqual(m.map((x) => String(x.ID)).slice(0, 99), ids.slice(0, 99));
    assert.ok(comma.text.includes('"ID":9223372036854775807'), 'the int64 ID exactly');
    assert.deepEqual(Object.keys(m[10]).sort(), ['ErrorID', 'ID']);
    assert.ok(m[10].ErrorID > 0 && m[99].ErrorID > 0);
    const known = m[0];
    for (const f of ['DestinationID', 'CreateUTC', 'StatusUTC', 'State', 'IsClosed', 'ReferenceNumber', 'Transport']) assert.ok(f in known, f);
    assert.equal(known.RawPayload, RAW, 'what was sent');
    assert.equal(known.ErrorID, 0);
    const repeated = await call(sim, 'GET', `get/fw_statuses?${ids.map((i) => `IDList=${i}`).join('&')}`);
    assert.equal(repeated.body.ErrorID, 0);
    assert.equal(repeated.body.Statuses.length, 100);
    assert.deepEqual(repeated.body.Statuses.map((x) => String(x.ID)).slice(0, 99), ids.slice(0, 99));
    assert.equal(repeated.body.Statuses[0].State, 0);
    assert.deepEqual(Object.keys(repeated.body.Statuses[10]).sort(), ['ErrorID', 'ID']);
    // Both forms mixed.
    const mixed = await call(sim, 'GET', `get/fw_statuses?IDList=${ids[0]},${ids[1]}&IDList=${ids[2]}`);
    assert.deepEqual(mixed.body.Statuses.map((x) => String(x.ID)), ids.slice(0, 3));
  });

  it('refuses more than 100 IDs, an ID that is no int64, and none; another account\'s message is unknown', async function () {
    sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 }, fleet: { size: 200 } });
    const ids = [...(await send(100)), ...(await send(1))];
    for (const path of ['get/fw_messages', 'get/fw_statuses']) {
      const r = await call(sim, 'GET', `${path}?IDList=${ids.join(',')}`);
      assert.equal(r.status, 200);
      assert.equal(r.body.ErrorID, 112, path);
      assert.equal(r.body.Messages ?? r.body.Statuses ?? null, null);
      for (const bad of ['abc', '1.5', '9223372036854775808', '']) assert.equal((await call(sim, 'GET', `${path}?IDList=${bad}`)).body.ErrorID, 105, `${path} ${bad}`);
    }
    sim.terminal.configure({ maxIds: 101 });
    assert.equal((await call(sim, 'GET', `get/fw_statuses?IDList=${ids.join(',')}`)).body.Statuses.length, 101, 'the limit is an option');
    const fromDemo = ids.find((id) => sim.terminal.messages.get(id).account === 'demo');
    assert.ok((await call(sim, 'GET', `get/fw_statuses?IDList=${fromDemo}`, undefined, SUB)).body.Statuses[0].ErrorID > 0);
  });

  it('get/subaccounts/re_messages: the messages of every subaccount with AccountID; 403 for an account that is not a super account', async function () {
    sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 }, fleet: { size: 10 } });
    sim.terminal.addTerminal({ id: '01000099SKY0099', account: 'sub' });
    const seeded = await (await fetch(`${sim.url}/_sim/from-mobile`, { method: 'POST', body: JSON.stringify({ count: 4, mobileId: '01000099SKY0099' }) })).json();
    await fetch(`${sim.url}/_sim/from-mobile`, { method: 'POST', body: JSON.stringify({ count: 2, mobileId: '01000001SKYA001', startSec: seeded.firstSec }) });
    const from = new Date(seeded.firstSec * 1000).toISOString().slice(0, 19).replace('T', ' ');
    const all = await call(sim, 'GET', `get/subaccounts/re_messages?FromUTC=${encodeURIComponent(from)}`);
    assert.equal(all.status, 200);
    assert.equal(all.body.Messages.length, 6);
    assert.deepEqual(new Set(all.body.Messages.map((m) => m.AccountID)), new Set(['demo', 'sub']));
    const own = await call(sim, 'GET', `get/re_messages?FromUTC=${encodeURIComponent(from)}`);
    assert.equal(own.body.Messages.length, 2, 'get/re_messages: the account\'s own only');
    assert.equal((await call(sim, 'GET', `get/subaccounts/re_messages?FromUTC=${encodeURIComponent(from)}`, undefined, SUB)).status, 403);
  });

  it('terminal/reset, sysreset and mute: accepted, and the simulator records the body it got', async function () {
    sim = await startSimulator({ terminal: { rateLimitCalls: 3, maxConcurrent: 0 }, fleet: { size: 10 } });
    const big = '{"DestinationID":"01000001SKYA001","Token":9007199254740993}';
    assert.deepEqual((await call(sim, 'POST', 'terminal/reset', big)).body, { ErrorID: 0 });
    assert.equal((await call(sim, 'POST', 'terminal/sysreset', { DestinationID: '01000003SKYB003' })).status, 200);
    assert.equal((await call(sim, 'POST', 'terminal/mute', 'mute please', { ...DEMO, 'content-type': 'text/plain' })).status, 200);
    const c = sim.terminal.commands.commands;
    assert.deepEqual(c.map((x) => x.command), ['reset', 'sysreset', 'mute']);
    assert.equal(c[0].text, big);
    assert.equal(String(c[0].body.Token), '9007199254740993', 'exact int64');
    assert.deepEqual(c[1].body, { DestinationID: '01000003SKYB003' });
    assert.equal(c[2].text, 'mute please');
    assert.equal(c[2].account, 'demo');
    const ctl = await (await fetch(`${sim.url}/_sim/terminal-commands`)).json();
    assert.equal(ctl.commands.length, 3);
    assert.equal((await call(sim, 'POST', 'terminal/reset', '{}')).status, 429, 'in the SEND group');
    assert.equal(sim.terminal.commands.commands.length, 3, 'a throttled call is not recorded');
  });
});
