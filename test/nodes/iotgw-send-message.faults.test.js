'use strict';
/**
 * Bodies a node builds, and failures of ours (issue 25, point 6), in a real Node-RED runtime
 * against the simulator: a cyclic or 3,000-deep Payload is BAD_INPUT naming the field; the
 * Payload form is bounded like RawPayload; an unknown failure is INTERNAL, never NETWORK;
 * a Retry-After longer than the group's window delays only the call that received it.
 */
const assert = require('node:assert/strict');
const { simulatorPerTest, load, until, collect, sendMessageNode, nodeFlow } = require('../helpers/harness');

describe('iotgw-send-message: bodies and failures of ours', function () {
  this.timeout(60000);
  let sim;
  simulatorPerTest({ terminal: { rateLimitCalls: 0, maxConcurrent: 0, sendingAfterMs: 100, receivedAfterMs: 300 } }, (s) => (sim = s));

  const flow = (gw = {}, nodeProps = {}, extra = []) => nodeFlow(sim, sendMessageNode(nodeProps), { gw, outs: ['ok', 'bad'], extra });
  const sent = () => sim.server.callsTo('terminal/messages').length;
  /**
   * The errors a node reports (done(err) lands in node.error): read there, since a Catch
   * node would clone these msgs (a cycle, a throwing getter) on the way.
   */
  const errorsOf = (node) => {
    const errs = [];
    const orig = node.error.bind(node);
    node.error = (err, msg) => {
      errs.push(err);
      return orig(err, msg && { _msgid: msg._msgid, payload: null });
    };
    return errs;
  };
  const DEST = '01000001SKYA001';

  it('a cyclic or 3,000-deep Payload.Fields: BAD_INPUT naming the field, nothing sent', async function () {
    const n = await load(flow());
    const caught = errorsOf(n.get('send'));
    const cyclic = { a: 1 };
    cyclic.self = cyclic;
    let deep = { leaf: 1 };
    for (let i = 0; i < 3000; i++) deep = { m: deep };
    const arrayCycle = [{ Name: 'x', Type: 'array', Elements: [] }];
    arrayCycle[0].Elements.push({ Index: 0, Fields: arrayCycle });
    const cases = [
      [{ SIN: 128, MIN: 1, Fields: cyclic }, /msg\.payload\.Payload\.Fields\.self refers back to msg\.payload\.Payload\.Fields \(a cycle\)/],
      [{ SIN: 128, MIN: 1, Fields: deep }, /msg\.payload\.Payload\.Fields(\.m)+ is nested deeper than 64 levels/],
      [{ SIN: 128, MIN: 1, Fields: arrayCycle }, /msg\.payload\.Payload\.Fields\[0\]\.Elements\[0\]\.Fields refers back/],
    ];
    for (const [Payload] of cases) n.get('send').receive({ payload: { DestinationID: DEST, Payload } });
    await until(() => caught.length === cases.length, 60000, 'three errors');
    caught.forEach((err, i) => {
      assert.equal(err.code, 'BAD_INPUT', err.message);
      assert.match(err.message, cases[i][1]);
    });
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(sent(), 0);
  });

  it('the Payload form is bounded like RawPayload: a 5 MB field and 1,100 one-byte values refused, a 1,000-byte one sent', async function () {
    const n = await load(flow());
    const caught = collect(n.get('caught'));
    const ok = collect(n.get('ok'));
    const many = {};
    for (let i = 0; i < 1100; i++) many[`f${i}`] = i % 200;
    n.get('send').receive({ payload: { DestinationID: DEST, Payload: { SIN: 128, MIN: 1, Fields: { note: 'x'.repeat(5 * 1024 * 1024) } } } });
    n.get('send').receive({ payload: { DestinationID: DEST, Payload: { SIN: 128, MIN: 1, Fields: many } } });
    n.get('send').receive({ payload: { DestinationID: DEST, Payload: { SIN: 128, MIN: 1, Fields: [{ Name: 'blob', Type: 'data', Value: Buffer.alloc(1100).toString('base64') }] } } });
    await until(() => caught.length === 3, 60000, 'three errors');
    for (const m of caught) {
      assert.equal(m.error.code, 'BAD_INPUT');
      assert.match(m.error.message, /msg\.payload\.Payload: its values come to \d+ bytes or more encoded; at most 1023/);
    }
    assert.equal(sent(), 0);
    n.get('send').receive({ payload: { DestinationID: DEST, Payload: { SIN: 128, MIN: 1, Fields: { note: 'y'.repeat(1000) } } } });
    await until(() => ok.length === 1, 60000, 'the message that fits');
    assert.equal(sent(), 1);
  });

  it('an unknown failure is INTERNAL, never NETWORK', async function () {
    const n = await load(flow());
    const caught = errorsOf(n.get('send'));
    // A msg whose reading throws something that is no error of ours (a getter in a function node's object).
    const payload = { RawPayload: [128, 1] };
    Object.defineProperty(payload, 'DestinationID', { enumerable: true, get: () => { throw new TypeError('boom'); } });
    n.get('send').receive({ payload });
    await until(() => caught.length === 1, 60000, 'the error');
    assert.equal(caught[0].code, 'INTERNAL', caught[0].message);
    assert.match(caught[0].message, /unexpected TypeError/);
    assert.equal(sent(), 0);
  });

  it('a Retry-After longer than the window delays only the call that received it, not the account\'s other nodes', async function () {
    // SEND group: 5 calls in a 3 s window. The first submit gets 429 with Retry-After 600 s:
    // that call waits twice the window (6 s, the cap); another node's call goes after one window at most.
    const n = await load(
      flow({ rateLimitCalls: 5, rateLimitWindowSeconds: 3 }, { lingerMs: 0 }, [
        sendMessageNode({ id: 'send2', lingerMs: 0, wires: [['ok2'], []] }),
        { id: 'ok2', type: 'helper' },
      ]),
    );
    const ok = collect(n.get('ok'));
    const ok2 = collect(n.get('ok2'));
    sim.server.inject({ kind: 'rate-limit', route: 'terminal/messages', retryAfter: 600, times: 1 });
    const t0 = Date.now();
    n.get('send').receive({ payload: { DestinationID: DEST, RawPayload: [128, 1], UserMessageID: 1 } });
    await until(() => sent() === 1, 60000, 'the first call (429)');
    n.get('send2').receive({ payload: { DestinationID: DEST, RawPayload: [128, 2], UserMessageID: 2 } });
    await until(() => ok.length === 1 && ok2.length === 1, 60000, 'both sent');
    const calls = sim.server.callsTo('terminal/messages').map((c) => ({ at: c.at - t0, id: JSON.parse(c.body)[0].UserMessageID }));
    assert.equal(calls.length, 3, JSON.stringify(calls));
    assert.deepEqual(calls.map((c) => c.id), [1, 2, 1], `the other node's call went before the retry of the throttled one: ${JSON.stringify(calls)}`);
    assert.ok(calls[2].at >= 5500, `the throttled call waited its own capped Retry-After (${calls[2].at} ms)`);
  });
});
