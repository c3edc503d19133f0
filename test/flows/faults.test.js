'use strict';
/**
 * Issue 5: every request node against every fault kind the simulator can inject (the node
 * types side by side, each against a simulator of its own: sideBySide in helpers/faults.js;
 * the chaos run of random faults is in faults.chaos.test.js). Each
 * input msg must end in exactly one done() or done(err) (counted with a Complete and a
 * Catch node), with the error code the fault calls for, and the node must keep working
 * afterwards. A POST the gateway answered (a 503 included: issue 43) is never sent again; a
 * POST refused with 429 or a throttling ErrorID is sent again only after the wait, with its
 * items intact and in order.
 */
const assert = require('node:assert/strict');
const { gatewayNode, load, until } = require('../helpers/harness');
const { landedSpecs, ledgerFlow, Ledger, useFaultRuntime, useFaultSim, faultGwProps, faultKindsTests } = require('../helpers/faults');

describe('reliability: injected faults, per node type', function () {
  this.timeout(60000);
  const figures = useFaultRuntime();

  describe('every node type side by side', function () {
    faultKindsTests(figures);
  });

  describe('resending a refused POST, never an answered one', function () {
    const state = useFaultSim({ figures });
    const gwProps = faultGwProps;

    it('iotgw-terminal-mode: 429 with and without Retry-After and a throttling ErrorID resend each batch after the wait, items intact and in order, each item accepted once', async function () {
      const sim = state.sim;
      sim.terminal.configure({ acceptUnknownTerminals: true });
      const spec = landedSpecs().find((s) => s.type === 'iotgw-terminal-mode');
      const n = await load(ledgerFlow(gatewayNode(sim, gwProps()), spec, { lingerMs: 30 }));
      const ledger = new Ledger(n, 2);
      const dut = n.get('dut');
      sim.inject({ route: 'terminal/mode', kind: 'rate-limit', retryAfter: 1 });
      sim.inject({ route: 'terminal/mode', kind: 'rate-limit', skip: 1 }); // the second call: no Retry-After
      // HTTP 200 with ErrorID 24579 (submit rate exceeded): nothing was done, as for a 429.
      sim.inject({ route: 'terminal/mode', status: 200, body: { ErrorID: 24579, Submissions: null }, skip: 2 });
      const dests = Array.from({ length: 250 }, (_, i) => `3${String(i).padStart(7, '0')}SKY${i.toString(16).toUpperCase().padStart(4, '0')}`);
      const rids = dests.map((d, i) => {
        dut.receive({ payload: { DestinationID: d, Mode: 0 }, rid: `m${i}` });
        return `m${i}`;
      });
      await until(() => ledger.endedCount(rids) === 250, 30000, '250 msgs');
      const outcomes = ledger.assertEachEndedOnce(rids);
      assert.ok(Object.values(outcomes).every((o) => o === 'ok'));
      const calls = sim.server.callsTo('terminal/mode');
      const refused = calls.filter((c) => c.fault);
      const accepted = calls.filter((c) => !c.fault);
      assert.equal(refused.length, 3);
      // Each refused body went out again, unchanged, after at least the wait (1 s Retry-After, or the 1 s window).
      for (const r of refused) {
        const again = accepted.find((c) => c.body === r.body && c.at > r.at);
        assert.ok(again, 'the refused batch was sent again with the same items in the same order');
        assert.ok(again.at - r.at >= 990, `resent after ${again.at - r.at} ms`);
      }
      const batches = accepted.map((c) => JSON.parse(c.body).map((it) => it.DestinationID));
      // Within each call the items keep their input order. (A refused batch waits behind the
      // batches already queued for the SEND slot, so calls may complete in another order.)
      for (const b of batches) assert.deepEqual(b, [...b].sort((x, y) => dests.indexOf(x) - dests.indexOf(y)), 'items in input order within a call');
      assert.deepEqual(batches.flat().sort(), [...dests].sort(), 'every item accepted exactly once');
      for (const m of ledger.sent) assert.equal(m.payload[0].DestinationID, dests[Number(m.rid.slice(1))], 'each msg got its own result');
      assert.equal(sim.terminal.counters.submitted, 250);
      figures.msgs += 250;
    });

    it('iotgw-cancel: a POST answered then cut (reset after handling, 500 after handling, reply slower than the timeout) is never sent again', async function () {
      const sim = state.sim;
      const spec = landedSpecs().find((s) => s.type === 'iotgw-cancel');
      const n = await load(ledgerFlow(gatewayNode(sim, gwProps()), spec));
      const ledger = new Ledger(n, 1);
      const dut = n.get('dut');
      const cases = [
        { kind: 'reset', phase: 'after', code: 'NETWORK' },
        { kind: 'server-error', phase: 'after', status: 500, code: 'HTTP_ERROR' },
        { kind: 'slow', phase: 'after', code: 'TIMEOUT' },
        { kind: 'truncated-json', code: 'BAD_RESPONSE' },
      ];
      for (const [k, c] of cases.entries()) {
        const before = sim.terminal.counters.cancelled;
        sim.inject({ route: 'terminal/cancel', ...c, body: c.kind === 'server-error' ? { Message: 'boom' } : undefined });
        // Cancel a message that exists, so that handling it changes the gateway's state.
        sim.terminal.messages.set(String(5000 + k), { id: BigInt(5000 + k), account: 'demo', terminal: '01000001SKYA001', mode: 0, wakeup: 0, createdAt: Date.now(), createSec: 0, state: 0, closed: false });
        const calls0 = sim.server.callsTo('terminal/cancel').length;
        dut.receive({ payload: 5000 + k, rid: `x${k}` });
        await until(() => ledger.endedCount([`x${k}`]) === 1, 10000);
        assert.equal(ledger.assertEachEndedOnce([`x${k}`])[`x${k}`], c.code, c.kind);
        assert.equal(sim.server.callsTo('terminal/cancel').length - calls0, 1, `${c.kind}: sent once`);
        assert.equal(sim.terminal.counters.cancelled - before, 1, `${c.kind}: the gateway handled it once`);
      }
      figures.msgs += cases.length;
    });
  });
});
