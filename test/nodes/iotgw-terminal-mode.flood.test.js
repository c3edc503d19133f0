'use strict';
/**
 * Issue 5: bounded queues. 100,000 mode messages at once: each is either processed under
 * the account's rate limit or refused at once with RATE_LIMITED (queue full); the heap
 * comes back to where it was; nothing vanishes (every msg's done is counted through
 * Node-RED's onComplete hook).
 */
const assert = require('node:assert/strict');
const v8 = require('node:v8');
const vm = require('node:vm');
const { hooks } = require('@node-red/util');
const { helper, startSimulator, gatewayNode, load, until, useRuntime } = require('../helpers/harness');

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc');

function heapMB() {
  gc();
  gc();
  return process.memoryUsage().heapUsed / 1048576;
}

const FLOOD = 100000;

describe('reliability: a flood of 100,000 mode messages', function () {
  this.timeout(90000);
  let sim;
  useRuntime();
  beforeEach(async function () {
    // The simulator enforces the same limit as the config node: any excess would be a 429.
    sim = await startSimulator({ terminal: { rateLimitCalls: 10, rateLimitWindowMs: 1000, maxConcurrent: 3, acceptUnknownTerminals: true } });
  });
  afterEach(async function () {
    hooks.remove('onComplete.flood');
    await helper.unload();
    await sim.close();
  });

  it('is processed under the rate limit or refused msg by msg with RATE_LIMITED; memory bounded; every msg accounted for', async function () {
    const maxQueue = 2000;
    const n = await load([
      gatewayNode(sim, { rateLimitCalls: 10, rateLimitWindowSeconds: 1, maxQueue, maxBatchSize: 100, timeoutSeconds: 10 }),
      { id: 'mode', type: 'iotgw-terminal-mode', gateway: 'gw', mode: 0, wakeupInterval: 0, family: 'any', lingerMs: 20, wires: [['ok'], ['bad']] },
      { id: 'ok', type: 'helper' },
      { id: 'bad', type: 'helper' },
    ]);
    // The test helper records every call of node methods (sinon spies): drop them, so that
    // the heap measures the nodes, not the test's recorder.
    helper._sandbox.restore();

    const ended = new Uint8Array(FLOOD);
    const codes = {};
    let doneCalls = 0;
    hooks.add('onComplete.flood', (evt) => {
      if (evt.node.id !== 'mode' || typeof evt.msg.i !== 'number') return;
      doneCalls++;
      ended[evt.msg.i]++;
      const c = evt.error ? evt.error.code : 'ok';
      codes[c] = (codes[c] ?? 0) + 1;
    });
    let sentOk = 0;
    n.get('ok').on('input', (m) => (sentOk += m.payload.length));

    const base = heapMB();
    let peak = 0;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().heapUsed / 1048576)), 20);
    const mode = n.get('mode');
    for (let i = 0; i < FLOOD; i++) {
      const d = `4${String(i).padStart(7, '0')}SKY${(i % 65536).toString(16).toUpperCase().padStart(4, '0')}`;
      mode.receive({ payload: { DestinationID: d, Mode: 0 }, i });
    }
    await until(() => doneCalls >= FLOOD, 80000, 'every msg to end');
    clearInterval(sampler);
    await new Promise((r) => setTimeout(r, 200));
    const after = heapMB();

    // Nothing vanished, nothing ended twice.
    assert.equal(doneCalls, FLOOD);
    assert.ok(ended.every((c) => c === 1), 'each msg ended exactly once');
    assert.deepEqual(Object.keys(codes).sort(), ['RATE_LIMITED', 'ok'], `outcomes: ${JSON.stringify(codes)}`);
    assert.equal(codes.ok + codes.RATE_LIMITED, FLOOD);
    // What was accepted into the queue was sent; the rest was refused at once.
    assert.ok(codes.ok >= maxQueue && codes.ok <= maxQueue + 200, `accepted ${codes.ok} (queue bound ${maxQueue} + a call in flight)`);
    assert.equal(sentOk, codes.ok, 'each accepted msg came out with its result');
    assert.equal(sim.terminal.counters.submitted, codes.ok, 'each accepted item reached the gateway once');
    // Under the rate limit: the simulator (same limit) never had to refuse a call.
    assert.equal(sim.terminal.counters.throttled, 0, 'no 429 from the gateway');
    const calls = sim.server.callsTo('terminal/mode');
    for (let k = 10; k < calls.length; k++) {
      assert.ok(calls[k].at - calls[k - 10].at >= 1000, 'at most 10 calls in any 1 s window');
    }
    // Memory: the heap returns to its level before the flood.
    const figures = { baseMB: +base.toFixed(1), peakMB: +peak.toFixed(1), afterMB: +after.toFixed(1), calls: calls.length, ...codes };
    console.log(`      [figures] ${JSON.stringify(figures)}`);
    assert.ok(after - base < 20, `heap after the flood ${after.toFixed(1)} MB vs ${base.toFixed(1)} MB before`);
    // The peak holds the 100,000 msgs this test created at once and their errors on the way
    // to done(err): a budget of 6 KB per msg, far below what an unbounded queue of pending
    // requests (each with its body, promise and timers) would take.
    assert.ok(peak - base < (FLOOD * 6) / 1024, `heap peak ${peak.toFixed(1)} MB during the flood (base ${base.toFixed(1)} MB)`);
  });
});
