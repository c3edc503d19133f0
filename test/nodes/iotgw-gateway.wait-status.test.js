'use strict';
/**
 * A node waiting for a rate-limit slot says so, with the limiter's estimate (issue 15):
 * "waiting for a SEND slot (3 s)" instead of only "requesting". Real runtime, real simulator.
 */
const assert = require('node:assert/strict');
const { recordStatuses, simulatorPerTest, load, until, collect, modeNode, nodeFlow } = require('../helpers/harness');

describe('status while waiting for a rate-limit slot', function () {
  let sim;
  simulatorPerTest({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 } }, (s) => (sim = s));

  it('terminal-mode shows "waiting for a SEND slot (N s)", then finishes', async function () {
    this.timeout(30000);
    const n = await load(nodeFlow(sim, modeNode({ lingerMs: 0 }), { gw: { rateLimitCalls: 1, rateLimitWindowSeconds: 4, maxBatchSize: 1 }, outs: ['ok', null] }));
    const mode = n.get('mode');
    const statuses = recordStatuses(mode);
    const ok = collect(n.get('ok'));
    const caught = collect(n.get('caught'));
    mode.receive({ payload: { DestinationID: '01000001SKYA001', Mode: 0 } });
    await until(() => ok.length === 1, 5000);
    mode.receive({ payload: { DestinationID: '01000002SKYA002', Mode: 0 } });
    await until(() => statuses.some((s) => /^waiting for a SEND slot \(\d s\)$/.test(s.text ?? '')), 3000, 'a waiting status');
    const shown = statuses.find((s) => /waiting/.test(s.text ?? ''));
    const secs = Number(/\((\d) s\)/.exec(shown.text)[1]);
    assert.ok(secs >= 1 && secs <= 4, shown.text);
    await until(() => ok.length === 2, 10000);
    assert.deepEqual(caught, []);
    // After the wait: no waiting status left behind.
    await until(() => !/waiting/.test(statuses.at(-1)?.text ?? ''), 2000, 'the waiting status to go');
  });
});
