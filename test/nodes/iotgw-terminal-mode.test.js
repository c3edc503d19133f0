'use strict';
const assert = require('node:assert/strict');
const { simulatorPerTest, helper, gatewayNode, load, until, collect, DEMO_CREDS, ALL_NODES, modeNode, nodeFlow } = require('../helpers/harness');

describe('iotgw-terminal-mode against the simulator', function () {
  let sim;
  simulatorPerTest({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 } }, (s) => (sim = s));

  const flow = (gw, nodeProps = {}) => nodeFlow(sim, modeNode(nodeProps), { gw, outs: ['ok', 'bad'] });

  it('sends one ModeMessage and emits the accepted result with the gateway ID', async function () {
    const n = await load(flow());
    const ok = collect(n.get('ok'));
    n.get('mode').receive({ payload: { DestinationID: '01000001SKYA001', Mode: 1, WakeupInterval: 3, UserMessageID: 42 }, keep: 'me' });
    await until(() => ok.length === 1);
    assert.equal(ok[0].keep, 'me');
    assert.equal(ok[0].statusCode, 200);
    assert.equal(ok[0].payload.length, 1);
    assert.equal(ok[0].payload[0].DestinationID, '01000001SKYA001');
    assert.equal(ok[0].payload[0].UserMessageID, 42);
    assert.equal(typeof ok[0].payload[0].ID, 'number');
    const calls = sim.server.callsTo('terminal/mode');
    assert.equal(calls.length, 1);
    assert.deepEqual(JSON.parse(calls[0].body), [{ DestinationID: '01000001SKYA001', Mode: 1, WakeupInterval: 3, UserMessageID: 42 }]);
  });

  it('batches 250 items from 250 messages into 3 calls and gives every message its own result', async function () {
    sim.terminal.configure({ acceptUnknownTerminals: true });
    const n = await load(flow({ rateLimitCalls: 5, rateLimitWindowSeconds: 60 }));
    const ok = collect(n.get('ok'));
    const mode = n.get('mode');
    const dests = Array.from({ length: 250 }, (_, i) => `2${String(i).padStart(7, '0')}SKY${(i % 65536).toString(16).toUpperCase().padStart(4, '0')}`);
    dests.forEach((d, i) => mode.receive({ payload: { DestinationID: d, Mode: 1, WakeupInterval: 2 }, n: i }));
    await until(() => ok.length === 250, 10000, '250 results');
    assert.equal(sim.server.callsTo('terminal/mode').length, 3);
    // The three calls leave together (three slots free); the log is in order of completion.
    const sizes = sim.server.callsTo('terminal/mode').map((c) => JSON.parse(c.body).length);
    assert.deepEqual(sizes.sort((a, b) => b - a), [100, 100, 50]);
    for (const m of ok) {
      assert.equal(m.payload.length, 1);
      assert.equal(m.payload[0].DestinationID, dests[m.n], `msg ${m.n} got the result of its own item`);
    }
    const ids = new Set(ok.map((m) => m.payload[0].ID));
    assert.equal(ids.size, 250);
  });

  it('maps results back under partial rejection, in input order, to the two outputs', async function () {
    const n = await load(flow());
    const ok = collect(n.get('ok'));
    const bad = collect(n.get('bad'));
    n.get('mode').receive({
      payload: [
        { DestinationID: '01000001SKYA001', Mode: 1, WakeupInterval: 3, UserMessageID: 1 },
        { DestinationID: '01000001SKYA001', Mode: 2, UserMessageID: 2 },
        { DestinationID: '01000003SKYB003', Mode: 3, WakeupInterval: 13, UserMessageID: 3 },
        { DestinationID: '99999999SKYZZZZ', Mode: 0, UserMessageID: 4 },
      ],
    });
    await until(() => ok.length === 1 && bad.length === 1);
    assert.deepEqual(ok[0].payload.map((r) => r.UserMessageID), [1, 3]);
    assert.deepEqual(bad[0].payload.map((r) => r.UserMessageID), [2, 4]);
    assert.deepEqual(bad[0].payload.map((r) => r.ErrorName), ['MODE_NOT_SUPPORTED', 'INVALID_DESTINATION']);
    assert.ok(bad[0].payload.every((r) => r.ID === undefined || r.ID === null));
    assert.notEqual(ok[0], bad[0], 'two distinct msg objects');
  });

  it('refuses bad items before sending anything and names every bad field', async function () {
    const n = await load(flow({}, { family: 'IDP' }));
    const caught = collect(n.get('caught'));
    n.get('mode').receive({ payload: [{ DestinationID: '', Mode: 7 }, { DestinationID: '01000001SKYA001', Mode: 2 }, { DestinationID: 'x', mode: 1 }] });
    await until(() => caught.length === 1);
    const e = caught[0].error;
    assert.equal(e.code, 'BAD_INPUT');
    assert.match(e.message, /msg\.payload\[0\]\.DestinationID: required/);
    assert.match(e.message, /msg\.payload\[0\]\.Mode: must be an integer 0 to 3/);
    assert.match(e.message, /msg\.payload\[1\]\.Mode: RECEIVE_ON_SEND is OGx only/);
    assert.match(e.message, /msg\.payload\[2\]\.mode: unknown field \(did you mean Mode\?\)/);
    assert.equal(sim.server.callsTo('terminal/mode').length, 0, 'no request was sent');
    assert.equal(sim.server.calls.length, 0);
  });

  it('takes a destination ID string with mode and interval from the settings', async function () {
    const n = await load(flow({}, { mode: 1, wakeupInterval: 5 }));
    const ok = collect(n.get('ok'));
    n.get('mode').receive({ payload: '01000003SKYB003' });
    await until(() => ok.length === 1);
    assert.deepEqual(JSON.parse(sim.server.callsTo('terminal/mode')[0].body), [{ DestinationID: '01000003SKYB003', Mode: 1, WakeupInterval: 5 }]);
  });

  it('round-trips IDs above 2^53 exactly as decimal strings', async function () {
    sim.terminal.setNextId('9223372036854775806');
    const n = await load(flow());
    const ok = collect(n.get('ok'));
    n.get('mode').receive({ payload: [{ DestinationID: '01000001SKYA001', Mode: 0, UserMessageID: '9223372036854775807' }, { DestinationID: '01000001SKYA001', Mode: 0, UserMessageID: 9007199254740991n }] });
    await until(() => ok.length === 1);
    assert.deepEqual(ok[0].payload.map((r) => r.ID), ['9223372036854775806', '9223372036854775807']);
    assert.equal(ok[0].payload[0].UserMessageID, '9223372036854775807');
    assert.equal(ok[0].payload[1].UserMessageID, 9007199254740991);
    assert.match(sim.server.callsTo('terminal/mode')[0].body, /"UserMessageID":9223372036854775807[,}]/);
  });

  it('refuses an unsafe JS number as UserMessageID', async function () {
    const n = await load(flow());
    const caught = collect(n.get('caught'));
    n.get('mode').receive({ payload: { DestinationID: '01000001SKYA001', Mode: 0, UserMessageID: 2 ** 60 } });
    await until(() => caught.length === 1);
    assert.equal(caught[0].error.code, 'BAD_INPUT');
    assert.match(caught[0].error.message, /UserMessageID: is above 2\^53/);
    assert.equal(sim.server.calls.length, 0);
  });
});

describe('messages built in a function node (another realm)', function () {
  let sim;
  simulatorPerTest({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 } }, (s) => (sim = s));

  it('accepts a ModeMessage object literal made in a function node, and msg.query made there', async function () {
    const fn = require('@node-red/nodes/core/function/10-function.js');
    const nodes = [
      { id: 'flow', type: 'tab' },
      gatewayNode(sim),
      {
        id: 'fn',
        z: 'flow',
        type: 'function',
        func: "msg.payload = { DestinationID: '01000001SKYA001', Mode: 1, WakeupInterval: 2 }; msg.query = { trace: 'yes' }; return msg;",
        outputs: 1,
        wires: [['mode']],
      },
      { id: 'mode', z: 'flow', type: 'iotgw-terminal-mode', gateway: 'gw', mode: 0, wakeupInterval: 0, family: 'any', wires: [['ok'], []] },
      { id: 'ok', z: 'flow', type: 'helper' },
    ];
    await helper.load([...ALL_NODES, fn], nodes, { gw: DEMO_CREDS });
    const ok = collect(helper.getNode('ok'));
    helper.getNode('fn').receive({ payload: 'go' });
    await until(() => ok.length === 1);
    assert.equal(ok[0].payload[0].DestinationID, '01000001SKYA001');
    assert.equal(new URLSearchParams(sim.server.callsTo('terminal/mode')[0].query).get('trace'), 'yes');
  });
});
