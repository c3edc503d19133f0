'use strict';
/**
 * Issue 5, the chaos half of the fault tests (the per-kind half is faults.test.js): each
 * request node under random faults on 40% of its calls, the node types side by side, each
 * against a simulator of its own (sideBySide in helpers/faults.js).
 * Every msg ends in exactly one done() or done(err) with an allowed outcome, the node works
 * afterwards, and no POST the gateway answered is sent again. The run goes on until the
 * simulator has injected enough faults (not a hope that a fixed number of waves will do).
 */
const assert = require('node:assert/strict');
const { until } = require('../helpers/harness');
const { landedSpecs, Ledger, sideBySide, useFaultRuntime, faultGwProps } = require('../helpers/faults');

describe('reliability: a chaos run of random faults, per node type', function () {
  this.timeout(60000);
  const figures = useFaultRuntime();

  describe('every node type side by side', function () {
    const title = (spec) => `${spec.label ?? spec.type}: a chaos run with random faults on 40% of calls accounts for every msg`;
    // No injected kind holds a call open, so the calls' timeout only measures the machine: 15 s,
    // not the fault runs' 2 s (one core shared with other work timed calls out: TIMEOUT, issue 44).
    sideBySide(landedSpecs(), { title, figures, configProps: { ...faultGwProps(), maxRetries: 2, timeoutSeconds: 15 } }, async ({ sim, n, spec }) => {
      const allowed = new Set(['ok', 'HTTP_ERROR', 'NETWORK', 'BAD_RESPONSE', 'RATE_LIMITED']);
      const ledger = new Ledger(n, spec.outputs);
      const dut = n.get('dut');
      sim.inject({
        route: spec.route,
        times: Infinity,
        probability: 0.4,
        seed: 5,
        retryAfter: 0,
        kinds: ['rate-limit', 'unavailable', 'server-error', 'reset', 'malformed-json', 'truncated-json', 'html', 'content-type', 'wrong-types', 'extra-fields', 'token-expiry'],
      });
      const rids = [];
      // Waves of 3 msgs, so that most msgs get a call of their own. GETs retry 5xx and
      // resets with a backoff of 1 s and more, so their run is shorter.
      const waves = spec.method === 'GET' ? 12 : 50;
      // How many calls the waves make depends on how msgs batch (a loaded machine batches
      // more): more waves are sent until the simulator has injected the faults the run needs
      // (it keeps its own count), so the run never depends on how many calls it happened to make.
      const wanted = spec.method === 'GET' ? 8 : 15;
      for (let wave = 0; wave < waves || (sim.server.injectedTotal < wanted && wave < waves * 4); wave++) {
        const ridsOfWave = [];
        for (let k = 0; k < 3; k++) {
          const rid = `c${wave}-${k}`;
          ridsOfWave.push(rid);
          dut.receive({ ...spec.validMsg(wave * 3 + k), rid });
        }
        rids.push(...ridsOfWave);
        await until(() => ledger.endedCount(ridsOfWave) >= ridsOfWave.length, 30000, `${spec.label ?? spec.type}: wave ${wave} to end`);
      }
      const outcomes = ledger.assertEachEndedOnce(rids);
      const tally = {};
      for (const o of Object.values(outcomes)) tally[o] = (tally[o] ?? 0) + 1;
      for (const o of Object.keys(tally)) assert.ok(allowed.has(o), `unexpected outcome ${o}`);
      assert.ok(sim.server.injectedTotal >= wanted, `faults were injected (${sim.server.injectedTotal})`);
      assert.ok(tally.ok > 0, 'some msgs got through');
      // After the chaos the node works.
      sim.server.clearFaults();
      dut.receive({ ...spec.validMsg(400), rid: 'calm' });
      await until(() => ledger.endedCount(['calm']) === 1, 30000, `${spec.label ?? spec.type}: the calm msg`);
      assert.equal(ledger.assertEachEndedOnce(['calm']).calm, 'ok');
      if (spec.method !== 'GET') {
        // No POST the gateway handled was sent twice: every handled item ID is unique.
        const bodies = sim.server.callsTo(spec.route).filter((c) => c.status >= 200 && c.status < 300).map((c) => c.rawUrl + ' ' + c.body);
        assert.equal(new Set(bodies).size, bodies.length, 'no answered POST body was sent again');
      }
      figures.msgs += rids.length + 1;
    });
  });
});
