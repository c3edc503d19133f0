'use strict';
/**
 * Issue 5: every request node against every fault kind the simulator can inject (the chaos
 * run of random faults is in faults.chaos.test.js, so the two halves share the workers). Each
 * input msg must end in exactly one done() or done(err) (counted with a Complete and a
 * Catch node), with the error code the fault calls for, and the node must keep working
 * afterwards. A POST the gateway answered is never sent again; a POST refused with 429
 * is sent again only after the wait, with its items intact and in order.
 */
const assert = require('node:assert/strict');
const { gatewayNode, load, until, DEMO_CREDS } = require('../helpers/harness');
const { FAULT_KINDS } = require('../../dist/simulator/server');
const { landedSpecs, outcomeFor, ledgerFlow, Ledger, configNode, credsFor, useFaultSim, faultGwProps } = require('../helpers/faults');

// Every fault kind of the simulator but the plain 'status' and 'echo' (the secrets test's).
const KINDS = FAULT_KINDS.filter((k) => k !== 'status' && k !== 'echo');

describe('reliability: injected faults, per node type', function () {
  this.timeout(60000);
  const state = useFaultSim();
  const { figures } = state;
  const gwProps = faultGwProps;

  for (const spec of landedSpecs()) {
    it(`${spec.label ?? spec.type}: each fault kind ends each msg once with the right outcome, then the node still works`, async function () {
      const sim = state.sim;
      sim.terminal.seedBacklog(5);
      const n = await load(ledgerFlow(configNode(spec, sim, gatewayNode, gwProps()), spec), credsFor(spec, DEMO_CREDS));
      const ledger = new Ledger(n, spec.outputs);
      const dut = n.get('dut');
      const rids = [];
      let i = 0;
      const run = async (rid, msg) => {
        rids.push(rid);
        dut.receive({ ...msg, rid });
        await until(() => ledger.endedCount([rid]) >= 1, 20000, `msg ${rid} to end`);
        return ledger.assertEachEndedOnce([rid])[rid];
      };
      for (const kind of KINDS) {
        if (spec.type === 'iotgw-status-poller') await run(`${kind}-reset`, { payload: { fromUTC: '2000-01-01 00:00:00' } });
        const before = sim.server.callsTo(spec.route).length;
        const fault = sim.inject({ route: spec.route, kind, retryAfter: kind === 'rate-limit' ? 1 : undefined, sizeBytes: 40 * 1024 * 1024 });
        const got = await run(`${kind}-fault`, spec.validMsg(i++));
        assert.equal(got, outcomeFor(spec, kind), `${spec.type} under ${kind}: ended with ${got}`);
        assert.equal(fault.hits, 1, `${kind} was injected`);
        const calls = sim.server.callsTo(spec.route).slice(before);
        if (spec.method !== 'GET' && ['server-error', 'reset', 'slow', 'malformed-json', 'html', 'oversized'].includes(kind)) {
          assert.equal(calls.length, 1, `${kind}: a POST the gateway answered is not sent again`);
        }
        if (kind === 'rate-limit' || kind === 'unavailable') {
          assert.equal(calls.length, 2, `${kind}: sent again once`);
          assert.equal(calls[1].body, calls[0].body, `${kind}: the same items in the same order`);
          // Retry-After: 1 s; without it the group window (1 s) or, for calls outside any
          // throttle group, the first backoff step (1 s +-25 %).
          const least = kind === 'rate-limit' ? 990 : 740;
          assert.ok(calls[1].at - calls[0].at >= least, `${kind}: sent again only after the wait (${calls[1].at - calls[0].at} ms)`);
        }
        if (kind === 'int64-edges' && spec.type === 'iotgw-terminal-mode') {
          const ids = ledger.sent.filter((m) => m.rid === `${kind}-fault`).flatMap((m) => m.payload.map((r) => r.ID));
          assert.deepEqual(ids, ['9223372036854775807'], 'the int64 edge came out exact');
        }
        // The node keeps working after the fault.
        assert.equal(await run(`${kind}-after`, spec.validMsg(i++)), 'ok', `${spec.type} works again after ${kind}`);
      }
      if (spec.type === 'iotgw-status-poller') {
        // The records of the int64-edges poll came out with exact IDs.
        const edgeBatches = ledger.sent.filter((m) => Array.isArray(m.payload) && m.payload.some((r) => r.ID === '9223372036854775807'));
        assert.ok(edgeBatches.length >= 1, 'records with int64-edge IDs were emitted exactly');
        assert.deepEqual(edgeBatches[0].payload.map((r) => r.ID).slice(0, 3), ['9223372036854775807', '9223372036854775806', 9007199254740991]);
      }
      assert.equal(sim.server.faults.length, 0, 'every fault was used');
      ledger.assertEachEndedOnce(rids);
      figures.msgs += rids.length;
    });
  }

  it('iotgw-terminal-mode: 429 with and without Retry-After resends each batch after the wait, items intact and in order, each item accepted once', async function () {
    const sim = state.sim;
    sim.terminal.configure({ acceptUnknownTerminals: true });
    const spec = landedSpecs().find((s) => s.type === 'iotgw-terminal-mode');
    const n = await load(ledgerFlow(gatewayNode(sim, gwProps()), spec, { lingerMs: 30 }));
    const ledger = new Ledger(n, 2);
    const dut = n.get('dut');
    sim.inject({ route: 'terminal/mode', kind: 'rate-limit', retryAfter: 1 });
    sim.inject({ route: 'terminal/mode', kind: 'rate-limit', skip: 1 }); // the second call: no Retry-After
    sim.inject({ route: 'terminal/mode', kind: 'unavailable', skip: 2 });
    const dests = Array.from({ length: 250 }, (_, i) => `3${String(i).padStart(7, '0')}SKY${i.toString(16).toUpperCase().padStart(4, '0')}`);
    const rids = dests.map((d, i) => {
      dut.receive({ payload: { DestinationID: d, Mode: 0 }, rid: `m${i}` });
      return `m${i}`;
    });
    await until(() => ledger.endedCount(rids) === 250, 30000, '250 msgs');
    const outcomes = ledger.assertEachEndedOnce(rids);
    assert.ok(Object.values(outcomes).every((o) => o === 'ok'));
    const calls = sim.server.callsTo('terminal/mode');
    const refused = calls.filter((c) => c.status !== 200);
    const accepted = calls.filter((c) => c.status === 200);
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
