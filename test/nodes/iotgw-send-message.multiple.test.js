'use strict';
/**
 * iotgw-send-message with `Destinations` (issue 35): one message to many terminals through
 * submit/to_multiple, one call per such message, one entry per destination on the outputs in
 * the order given; a rejected destination named from the gateway's live error catalogue; bad
 * input refused before anything is sent.
 */
const assert = require('node:assert/strict');
const { simulatorPerTest, gatewayNode, sendMessageNode, load, until, collect, catchAll } = require('../helpers/harness');

const RAW = [128, 5, 1, 2, 3];
const RAW64 = Buffer.from(RAW).toString('base64');

describe('iotgw-send-message: one message to many destinations (submit/to_multiple)', function () {
  let sim;
  simulatorPerTest({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 }, fleet: { size: 2500 } }, (s) => (sim = s));

  const flow = (props = {}) => [gatewayNode(sim), sendMessageNode({ wires: [['ok'], ['rejected']], ...props }), { id: 'ok', type: 'helper' }, { id: 'rejected', type: 'helper' }, ...catchAll()];

  async function fleet(n) {
    const r = await fetch(`${sim.url}/api/v1.0/info/terminals?PageSize=${n}`, { headers: { authorization: 'Bearer demo-token' } });
    const ids = (await r.json()).Terminals.map((t) => t.PrimeID);
    sim.server.clearCalls();
    return ids;
  }

  it('100 destinations in one call, one suspended: 99 accepted and 1 rejected in order, its ErrorID named from the live catalogue', async function () {
    const dests = await fleet(100);
    assert.ok(sim.terminal.suspend(dests[41]));
    const n = await load(flow());
    const ok = collect(n.get('ok'));
    const rejected = collect(n.get('rejected'));
    n.get('send').receive({ payload: { Destinations: dests, RawPayload: RAW, UserMessageID: 77 }, keep: 1 });
    await until(() => ok.length === 1 && rejected.length === 1, 15000);
    const calls = sim.server.callsTo('terminal/to_multiple');
    assert.equal(calls.length, 1);
    assert.deepEqual(JSON.parse(calls[0].body), { Message: { UserMessageID: 77, RawPayload: RAW64 }, Destinations: dests });
    assert.deepEqual(ok[0].payload.map((r) => r.DestinationID), dests.filter((_, i) => i !== 41));
    assert.ok(ok[0].payload.every((r) => r.ErrorID === 0 && r.ID > 0 && r.UserMessageID === 77));
    assert.equal(rejected[0].payload.length, 1);
    assert.equal(rejected[0].payload[0].DestinationID, dests[41]);
    assert.equal(rejected[0].payload[0].ErrorID, 21786);
    assert.equal(rejected[0].payload[0].ErrorName, 'TERMINAL_SERVICE_SUSPENDED', 'a name only the live catalogue has');
    assert.equal(sim.server.callsTo('terminal/info').length, 1, 'the catalogue asked once');
    assert.equal(ok[0].keep, 1);
  });

  it('a catalogue name and description of 1 MB with HTML, ESC and CRLF reach output 2 bounded, control characters escaped (issue 43)', async function () {
    const dests = await fleet(2);
    assert.ok(sim.terminal.suspend(dests[1]));
    const big = '<script>alert(1)</script>\u001b]0;owned\u0007\r\nSet-Cookie: x\r\n' + 'B'.repeat(1024 * 1024);
    sim.server.inject({ route: 'terminal/info', status: 200, body: { ErrorID: 0, Version: '1', ErrorCodes: [{ ID: 21786, Name: big, Description: big }] } });
    const n = await load(flow());
    const rejected = collect(n.get('rejected'));
    n.get('send').receive({ payload: { Destinations: dests, RawPayload: RAW } });
    await until(() => rejected.length === 1, 30000);
    const r = rejected[0].payload[0];
    assert.equal(r.ErrorID, 21786);
    for (const k of ['ErrorName', 'ErrorDescription']) {
      assert.ok(r[k].length < 2000, `${k}: ${r[k].length} chars`);
      assert.ok(![...r[k]].some((ch) => ch < ' ' || ch === '\u007f'), `${k}: no control character`);
      assert.ok(r[k].startsWith('<script>alert(1)</script>\\u001b]0;owned\\u0007\\r\\nSet-Cookie: x\\r\\nBBB'), `${k}: the text as sent, its escapes visible: ${r[k].slice(0, 80)}`);
      assert.match(r[k], /\.\.\. \(1048\d{3} chars\)$/, `${k}: says how long it was`);
    }
  });

  it('messages to one and to many in one msg: one to_multiple call per such message, entries in input order (a broadcast ID too)', async function () {
    const dests = await fleet(4);
    const n = await load(flow());
    const ok = collect(n.get('ok'));
    n.get('send').receive({
      payload: [
        { DestinationID: dests[0], RawPayload: RAW },
        { Destinations: [dests[1], '12345678GRPAB12'], RawPayload: RAW },
        { DestinationID: dests[2], RawPayload: RAW },
        { Destinations: [dests[3]], Payload: { SIN: 128, MIN: 1, Fields: [{ Name: 'a', Type: 'unsignedint', Value: '5' }] } },
      ],
    });
    await until(() => ok.length === 1, 15000);
    assert.deepEqual(ok[0].payload.map((r) => r.DestinationID), [dests[0], dests[1], '12345678GRPAB12', dests[2], dests[3]]);
    assert.equal(sim.server.callsTo('terminal/to_multiple').length, 2);
    // The two messages to one terminal go out batched, in one submit/messages call.
    assert.deepEqual(JSON.parse(sim.server.callsTo('terminal/messages')[0].body).map((m) => m.DestinationID), [dests[0], dests[2]]);
  });

  it('bad Destinations (empty, more than the limit, an ID that is not text, with DestinationID) are BAD_INPUT; nothing of the msg is sent', async function () {
    const dests = await fleet(3);
    const n = await load(flow({ maxDestinations: 2 }));
    const caught = collect(n.get('caught'));
    const bad = [
      [{ Destinations: [], RawPayload: RAW }, 'msg.payload.Destinations: an empty array'],
      [{ Destinations: dests, RawPayload: RAW }, 'msg.payload.Destinations: 3 destinations; at most 2'],
      [{ Destinations: [dests[0], 7], RawPayload: RAW }, 'msg.payload.Destinations[1]'],
      [{ Destinations: 'x', RawPayload: RAW }, 'msg.payload.Destinations: must be an array'],
      [{ Destinations: [dests[0]], DestinationID: dests[1], RawPayload: RAW }, 'msg.payload.DestinationID: give either'],
      [{ Destinations: [dests[0]] }, 'msg.payload.RawPayload: required'],
    ];
    for (const [p] of bad) n.get('send').receive({ payload: [{ DestinationID: dests[0], RawPayload: RAW }, p] });
    await until(() => caught.length === bad.length);
    caught.forEach((c, i) => {
      assert.equal(c.error.code, 'BAD_INPUT');
      assert.ok(c.error.message.includes(bad[i][1].replace('msg.payload', 'msg.payload[1]')), `${c.error.message} / ${bad[i][1]}`);
    });
    assert.equal(sim.server.callsTo().length, 0, 'no request reached the simulator');
  });
});
