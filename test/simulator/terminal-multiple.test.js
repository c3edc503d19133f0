'use strict';
/**
 * The simulator's submit/to_multiple over loopback HTTP: one entry per destination in order,
 * a rejected destination with its ErrorID, broadcast IDs ending in State 7, the destination
 * limit, the SEND group.
 */
const assert = require('node:assert/strict');
const { startSimulator } = require('../../dist/simulator');

const H = { authorization: 'Bearer demo-token', 'content-type': 'application/json' };
const RAW = Buffer.from([128, 5, 1, 2, 3]).toString('base64');

async function call(sim, method, path, body) {
  const r = await fetch(`${sim.url}/api/v1.0/${path}`, { method, headers: H, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
}

/** The first `n` PrimeIDs of the inventory. */
async function inventory(sim, n) {
  return (await call(sim, 'GET', `info/terminals?PageSize=${n}`)).body.Terminals.map((t) => t.PrimeID);
}

async function until(cond, what, ms = 20_000) {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('the simulator: submit/to_multiple', function () {
  let sim;
  afterEach(async () => sim && (await sim.close()));

  it('100 destinations in one call: one entry each, in order, the unknown one rejected with an ErrorID', async function () {
    sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0, sendingAfterMs: 20, receivedAfterMs: 60 }, fleet: { size: 2500 } });
    const dests = await inventory(sim, 99);
    dests.splice(42, 0, '01999999SKYFFFF');
    const r = await call(sim, 'POST', 'submit/to_multiple', { Message: { RawPayload: RAW, UserMessageID: 77 }, Destinations: dests });
    assert.equal(r.status, 200);
    assert.equal(r.body.ErrorID, 0);
    const s = r.body.Submissions;
    assert.equal(s.length, 100);
    assert.deepEqual(s.map((x) => x.DestinationID), dests, 'one entry per destination, in order');
    assert.ok(s.every((x) => x.UserMessageID === 77));
    assert.equal(s.filter((x) => x.ErrorID !== 0).length, 1);
    assert.equal(s[42].ErrorID, 101);
    assert.ok(!('ID' in s[42]) || s[42].ID === -1);
    const ids = s.filter((x) => x.ErrorID === 0).map((x) => x.ID);
    assert.equal(new Set(ids).size, 99, 'a message ID per accepted destination');
    assert.ok(s.filter((x) => x.ErrorID === 0).every((x) => x.OTAMessageSize === 5));
    // Each is a to-mobile message of the gateway, with its own status records.
    assert.ok(ids.every((id) => sim.terminal.messages.has(String(id))));
    assert.equal(sim.terminal.multiple.calls.length, 1);
  });

  it('a broadcast ID is a destination: its message ends in State 7 (BROADCAST_SUBMITTED)', async function () {
    sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0, sendingAfterMs: 20, receivedAfterMs: 60 }, fleet: { size: 10 } });
    const r = await call(sim, 'POST', 'submit/to_multiple', { Message: { Payload: { SIN: 128, MIN: 6, IsForward: true, Fields: [] } }, Destinations: ['12345678GRPAB12', '01000001SKYA001'] });
    assert.deepEqual(r.body.Submissions.map((x) => x.ErrorID), [0, 0]);
    const [b, t] = r.body.Submissions.map((x) => x.ID);
    const status = async (id) => (await call(sim, 'GET', `get/fw_statuses?IDList=${id}`)).body.Statuses[0];
    await until(async () => (await status(b)).State === 7, 'State 7');
    assert.equal((await status(b)).IsClosed, false, 'IsClosed is true for 1 to 5 only');
    await until(async () => (await status(t)).State === 1, 'the terminal message delivered');
    // A broadcast stays in State 7 (nothing moves it on).
    await new Promise((res) => setTimeout(res, 200));
    assert.equal((await status(b)).State, 7);
    sim.terminal.configure({ broadcastIsClosed: true });
    const r2 = await call(sim, 'POST', 'submit/to_multiple', { Message: { RawPayload: RAW }, Destinations: ['87654321GRPEU05'] });
    const id2 = r2.body.Submissions[0].ID;
    await until(async () => (await status(id2)).State === 7 && (await status(id2)).IsClosed === true, 'State 7 closed (option)');
  });

  it('refuses more destinations than the limit, none, and a message that is not one; a suspended terminal gets ErrorID 21786', async function () {
    sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 }, fleet: { size: 300 } });
    const dests = await inventory(sim, 101);
    const many = await call(sim, 'POST', 'submit/to_multiple', { Message: { RawPayload: RAW }, Destinations: dests });
    assert.equal(many.status, 200);
    assert.ok(many.body.ErrorID > 0);
    assert.equal(many.body.Submissions ?? null, null);
    assert.equal(sim.terminal.messages.size, 0, 'nothing was sent');
    sim.terminal.configure({ maxDestinations: 200 });
    assert.equal((await call(sim, 'POST', 'submit/to_multiple', { Message: { RawPayload: RAW }, Destinations: dests })).body.Submissions.length, 101, 'the limit is an option');
    for (const bad of [{ Message: { RawPayload: RAW }, Destinations: [] }, { Message: { RawPayload: RAW, Payload: { SIN: 1, MIN: 1, Fields: [] } }, Destinations: [dests[0]] }, { Destinations: [dests[0]] }]) {
      assert.equal((await call(sim, 'POST', 'submit/to_multiple', bad)).body.ErrorID, 105);
    }
    assert.equal((await call(sim, 'POST', 'submit/to_multiple', '[1,2]')).body.ErrorID, 105);
    const ctl = await fetch(`${sim.url}/_sim/fleet`, { method: 'POST', body: JSON.stringify({ suspend: [dests[3]] }) });
    assert.equal(ctl.status, 200);
    const r = await call(sim, 'POST', 'submit/to_multiple', { Message: { RawPayload: RAW }, Destinations: dests.slice(0, 5) });
    assert.deepEqual(r.body.Submissions.map((x) => x.ErrorID), [0, 0, 0, 21786, 0]);
    const catalogue = (await call(sim, 'GET', 'info/service?GetErrorCodes=true')).body.ErrorCodes;
    assert.ok(catalogue.find((e) => e.ID === 21786).Name, 'the live catalogue names it');
  });

  it('counts in the SEND group', async function () {
    sim = await startSimulator({ terminal: { rateLimitCalls: 1, maxConcurrent: 0 }, fleet: { size: 10 } });
    const body = { Message: { RawPayload: RAW }, Destinations: ['01000001SKYA001'] };
    assert.equal((await call(sim, 'POST', 'submit/to_multiple', body)).status, 200);
    const second = await call(sim, 'POST', 'terminal/mode', [{ DestinationID: '01000001SKYA001', Mode: 0 }]);
    assert.equal(second.status, 429);
    assert.equal(second.body.ErrorID, 24579);
  });
});
