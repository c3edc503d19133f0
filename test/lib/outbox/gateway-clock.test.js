'use strict';
/**
 * The gateway's clock an outbox send records (issue 45: the chaos run saw two mode messages
 * created twice after a kill). GatewaySender.gatewayTime() takes the gateway's offset from
 * ServerUTC of info/service; taken against the moment the call started, an info/service call
 * held several seconds (a 429's retries, a busy link, a machine pinned to one core) made the
 * gateway's clock look that much ahead. The attempt's time was then after the message's
 * creation, the reconciliation's feed read (from that time less the 5 s of skew) began after
 * it, found nothing and said "absent" once settled: the entry was sent again. Against the
 * simulator over loopback, its info/service held by a `slow` fault.
 */
const assert = require('node:assert/strict');
const { startSimulator, parseUtc } = require('../../../dist/simulator');
const { TerminalClient } = require('../../../dist/lib/api/clients');
const { GatewaySender, toJsonItem } = require('../../../dist/lib/outbox/gateway-sender');
const { GatewayReconciler } = require('../../../dist/lib/outbox/gateway-adapter');
const { modePayload } = require('../../../dist/simulator/terminal-creations');
const { tmpDir, openOutbox } = require('./fake-gateway');
const { waitUntil } = require('../../helpers/wait');

const DEST = '01000001SKYA001';

describe('outbox: the gateway time of a send (issue 45)', function () {
  this.timeout(90000);
  let sim;
  let client;

  beforeEach(async () => {
    sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 } });
    client = new TerminalClient({ baseUrl: sim.url, token: 'demo-token', rateLimitCalls: 0 });
  });
  afterEach(async () => {
    await client.close();
    await sim.close();
  });

  /** info/service answers after `ms` (its ServerUTC read at the end, as a gateway slow to answer). */
  const slowInfo = (ms) => sim.inject({ route: 'terminal/info', kind: 'slow', phase: 'before', delayMs: ms, times: 1 });
  const gatewaySec = () => Math.floor(sim.terminal.now() / 1000);

  it('an info/service call held 3 s: the time given is before the gateway\'s clock, never ahead of it (an hour ahead of ours, too)', async function () {
    for (const aheadMs of [0, 3_600_000]) {
      sim.terminal.now = () => Date.now() + aheadMs;
      const sender = new GatewaySender({ context: () => client });
      slowInfo(3000);
      const t0 = gatewaySec();
      const sec = parseUtc(await sender.gatewayTime());
      const now = gatewaySec();
      assert.ok(sec < now, `gateway time ${sec - now} s from the gateway's clock (ahead ${aheadMs} ms): must be before it`);
      assert.ok(sec >= t0 - 2, `gateway time ${sec - t0} s from the call's start: early by the call at most`);
    }
  });

  it('the chaos run\'s sequence: info/service held 8 s, then a mode send whose reply is lost: reconciled as found, created once', async function () {
    slowInfo(8000);
    sim.inject({ route: 'terminal/mode', kind: 'lost-reply', times: 1 });
    const context = () => client;
    const ob = await openOutbox(tmpDir(), null, {
      sender: new GatewaySender({ context }),
      reconciler: new GatewayReconciler({ context, reconcile: { settleSeconds: 3 } }),
      reconcileEveryMs: 300,
    });
    try {
      await ob.accept('m1', { job: 1 }, [{ kind: 'mode', item: toJsonItem({ DestinationID: DEST, Mode: 1, WakeupInterval: 2 }) }]);
      // Before the fix the attempt's time was about 7 s ahead: "absent" once the gateway's clock
      // passed it by the settle time, sent again (created twice), then accepted.
      await waitUntil(() => ob.outcomes.length === 1, 60000, 'the msg\'s outcome');
      assert.equal(sim.server.injected['lost-reply'], 1, 'the reply was lost');
      const created = sim.terminal.creations.list();
      assert.equal(sim.terminal.creations.count(DEST, modePayload(1, 2)), 1, `created once: ${JSON.stringify(created)}`);
      const [entry] = ob.outcomes[0].entries;
      assert.deepEqual([entry.outcome.result, entry.outcome.gatewayId, entry.attempts], ['accepted', created[0].ids[0], 1]);
    } finally {
      await ob.close();
    }
  });
});
