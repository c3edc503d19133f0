'use strict';
/** The two codec examples, imported as a user would, against the simulator: decoded fields come out, a command is delivered. */
const assert = require('node:assert/strict');
const { simulatorPerTest, until, collect, DEMO_CREDS, loadExample } = require('../helpers/harness');
const { demoText } = require('../helpers/codec');

const CORE = ['common/20-inject.js', 'common/90-comment.js'].map((f) => require(`@node-red/nodes/core/${f}`));

/** A codec example against the test's simulator (the demo account's credentials; its definitions checked as shipped). */
async function loadCodecExample(file, sim) {
  const { get } = await loadExample(file, CORE, (c) => {
    if (c.type === 'iotgw-gateway') Object.assign(c, { credentials: DEMO_CREDS, baseUrl: sim.url });
    if (c.type === 'iotgw-definitions') assert.equal(c.xml, demoText(), 'the example pastes examples/definitions/demo.idpmsg');
  });
  return get;
}

describe('codec examples', function () {
  let sim;
  simulatorPerTest({ terminal: { rateLimitCalls: 0, maxConcurrent: 0, sendingAfterMs: 50, receivedAfterMs: 100 } }, (s) => (sim = s));

  it('decode-terminal-messages: the poller and the codec give SatelliteTelemetry fields', async function () {
    const now = Math.floor(Date.now() / 1000);
    sim.terminal.mobile.seed({ count: 4, perSecond: 4, startSec: now - 30, kind: 'telemetry' });
    const get = await loadCodecExample('decode-terminal-messages.json', sim);
    const polled = collect(get('dec-debug-poller'));
    const fields = collect(get('dec-debug-codec'));
    get('dec-inject').receive({});
    await until(() => polled.length === 4 && fields.length === 1);
    assert.ok(polled.every((m) => m.topic && typeof m.fields.timestamp === 'number'));
    assert.equal(fields[0].fields.snr, 294);
  });

  it('send-command-from-fields: SetReporting is sent as its bytes and tracked to delivery; the bad one is refused', async function () {
    const get = await loadCodecExample('send-command-from-fields.json', sim);
    const delivered = collect(get('cmd-debug-delivered'));
    const refused = collect(get('cmd-debug-error'));
    const bytes = collect(get('cmd-debug-bytes'));
    get('cmd-inject').receive({});
    get('cmd-inject-bad').receive({});
    get('cmd-inject-enc').receive({});
    await until(() => refused.length === 1 && bytes.length === 1);
    assert.match(refused[0].error.message, /SetReporting\.mode: "turbo"/);
    assert.equal(bytes[0].payload.toString('hex'), 'ff01000fa0');
    // The status poller of the example polls every 15 s: ask it now.
    await until(() => sim.terminal.mobile.toMobile.length === 1);
    await new Promise((r) => setTimeout(r, 300));
    get('cmd-poller').receive({ payload: 'poll' });
    await until(() => delivered.length === 1, 10000, 'delivery');
    // 15 -> 00 0F | mode "fast" 10 | includeGnss (default) 1 | note present 1 | prefix 0 0001101 (13 bytes), so the 5th byte is 1011 0000 = B0.
    assert.equal(Buffer.from(sim.terminal.mobile.toMobile[0].item.RawPayload, 'base64').subarray(0, 5).toString('hex'), 'ff01000fb0');
  });
});
