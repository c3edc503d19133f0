'use strict';
const assert = require('node:assert/strict');
const { startSimulator } = require('../../dist/simulator');
const { decodeFields } = require('../../dist/lib/api/cmf');
const { parseJson } = require('../../dist/lib/common/int64');

describe('simulator: from-mobile and general messages (messages.ts)', function () {
  let sim;
  beforeEach(async () => {
    sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 } });
  });
  afterEach(() => sim.close());

  const H = { Authorization: 'Bearer demo-token' };
  async function get(from) {
    const res = await fetch(`${sim.url}/api/v1.0/get/re_messages?FromUTC=${encodeURIComponent(from)}`, { headers: H });
    return { status: res.status, body: parseJson(await res.text()) };
  }
  async function submit(items) {
    const res = await fetch(`${sim.url}/api/v1.0/submit/messages`, { method: 'POST', headers: { ...H, 'content-type': 'application/json' }, body: JSON.stringify(items) });
    return { status: res.status, body: parseJson(await res.text()) };
  }
  const utc = (sec) => new Date(sec * 1000).toISOString().slice(0, 19).replace('T', ' ');

  it('FromUTC is inclusive with one-second resolution, at most 500, NextFromUTC = last second; a crowded second', async function () {
    const { firstSec } = sim.terminal.mobile.seed({ count: 1000, perSecond: 600 });
    const r1 = await get(utc(firstSec));
    assert.equal(r1.body.Messages.length, 500, 'capped at 500');
    assert.equal(r1.body.NextFromUTC, utc(firstSec), 'the crowded second is not done: NextFromUTC stays on it');
    const r2 = await get(r1.body.NextFromUTC);
    assert.deepEqual(r2.body.Messages.map((m) => m.ID), r1.body.Messages.map((m) => m.ID), 'same FromUTC, same records');
    const r3 = await get(utc(firstSec + 1));
    assert.equal(r3.body.Messages.length, 400);
    assert.equal(r3.body.NextFromUTC, utc(firstSec + 1), 'inclusive: the last second comes again');
    const again = await get(r3.body.NextFromUTC);
    assert.equal(again.body.Messages.length, 400);
    const empty = await get(utc(firstSec + 10));
    assert.deepEqual(empty.body.Messages, []);
    assert.equal(empty.body.NextFromUTC, null);
    assert.equal((await get('yesterday')).body.ErrorID, 108);
  });

  it('a late arrival becomes visible after its time, in a second an earlier poll already read', async function () {
    const { firstSec } = sim.terminal.mobile.seed({ count: 10, perSecond: 5, lateCount: 1, lateAfterMs: 300 });
    const before = await get(utc(firstSec));
    assert.equal(before.body.Messages.length, 10);
    await new Promise((r) => setTimeout(r, 400));
    const after = await get(utc(firstSec));
    assert.equal(after.body.Messages.length, 11);
    const late = after.body.Messages.find((m) => !before.body.Messages.some((b) => b.ID === m.ID));
    assert.equal(late.ReceiveUTC, utc(firstSec), 'in the first second, read before');
    assert.equal(after.body.NextFromUTC, utc(firstSec + 1));
  });

  it('a message carries Payload fields and the matching RawPayload; the GET window is shared with status updates', async function () {
    await sim.close();
    sim = await startSimulator({ terminal: { rateLimitCalls: 2, maxConcurrent: 0 } });
    const { firstSec } = sim.terminal.mobile.seed({ count: 2, perSecond: 2 });
    const r = await get(utc(firstSec));
    const [pos, sensor] = r.body.Messages;
    assert.equal(pos.MobileID, '01000001SKYA001');
    assert.equal(typeof pos.ID, 'number');
    const raw = Buffer.from(pos.RawPayload, 'base64');
    assert.equal(raw[0], pos.Payload.SIN);
    assert.equal(raw[1], pos.Payload.MIN);
    const f = decodeFields(pos.Payload.Fields);
    assert.equal(raw.readInt32BE(2), f.latitude);
    assert.equal(raw.readInt32BE(6), f.longitude);
    const s = decodeFields(sensor.Payload.Fields);
    assert.equal(Buffer.from(sensor.RawPayload, 'base64')[2], s.battery);
    assert.ok(Array.isArray(s.temperatures) && Buffer.isBuffer(s.blob) && typeof s.diagnostics === 'object');
    await fetch(`${sim.url}/api/v1.0/get/subaccounts/fw_status_updates?FromUTC=${encodeURIComponent(utc(firstSec))}`, { headers: H });
    assert.equal((await get(utc(firstSec))).status, 429, 'the third GET-group call in the window is throttled');
  });

  it('submit/messages: RawPayload or Payload, at most 100, status records like mode messages', async function () {
    const raw = Buffer.from([128, 5, 1, 2, 3]).toString('base64');
    const r = await submit([
      { DestinationID: '01000001SKYA001', UserMessageID: 7, RawPayload: raw },
      { DestinationID: '01000003SKYB003', Payload: { SIN: 128, MIN: 6, IsForward: true, Fields: [{ Name: 'x', Type: 'unsignedint', Value: '1' }] }, MessageClass: 2 },
      { DestinationID: 'nope', RawPayload: raw },
      { DestinationID: '01000001SKYA001', RawPayload: raw, Payload: { SIN: 1, MIN: 1, Fields: [] } },
      { DestinationID: '01000001SKYA001', RawPayload: Buffer.alloc(1024).toString('base64') },
    ]);
    assert.equal(r.status, 200);
    const s = r.body.Submissions;
    assert.deepEqual(s.map((x) => x.ErrorID), [0, 0, 101, 105, 105]);
    assert.equal(s[0].UserMessageID, 7);
    assert.equal(s[0].OTAMessageSize, 5);
    assert.ok(sim.terminal.messages.has(String(s[0].ID)), 'a to-mobile message of the gateway, with status records');
    const big = await submit(Array.from({ length: 101 }, () => ({ DestinationID: '01000001SKYA001', RawPayload: raw })));
    assert.equal(big.body.ErrorID, 104);
  });
});
