'use strict';
/**
 * The outbox across a redeploy (issue 45; nodes.md "One outcome per msg", "Restarts and
 * redeploys"), in a real Node-RED runtime against the simulator, the editor's default deploy
 * (Modified Nodes: the sending node closed and started again, its Complete and Catch nodes
 * not): each msg accepted before the redeploy ends once, by the new node, as it would have
 * ended without the redeploy: its outputs and a Complete node, or a Catch node; never a
 * Complete at the redeploy and then a Catch. A send whose reply comes while the old node
 * closes gives its outcome once, from the new node.
 */
const assert = require('node:assert/strict');
const { outboxPerTest, OUTBOX_DEST: DEST, outboxRaw: raw, helper, load, redeploy, until, collect, sendMessageNode, nodeFlow } = require('../helpers/harness');

describe('iotgw-send-message: the outbox across a redeploy', function () {
  this.timeout(120000);
  let sim;
  outboxPerTest({ sendingAfterMs: 100, receivedAfterMs: 300 }, 'iotgw-outbox-redeploy-', (s) => (sim = s));

  /** The send node (its `name` marks a new version: a Modified Nodes deploy restarts it alone), its outputs, a Catch and a Complete node. */
  const flow = (version) => nodeFlow(sim, sendMessageNode({ outbox: 'on', outboxName: 'edge', name: `send v${version}` }), {
    gw: { timeoutMs: 10000, maxRetries: 0 },
    outs: ['ok', 'bad'],
    extra: [{ id: 'ender', type: 'complete', scope: ['send'], uncaught: false, wires: [['completed']] }, { id: 'completed', type: 'helper' }],
  });
  /** Every end of every msg (Complete, Catch) and every output, by _msgid. */
  const watch = (n) => {
    const seen = { ok: collect(n.get('ok')), bad: collect(n.get('bad')), completed: collect(n.get('completed')), caught: collect(n.get('caught')) };
    seen.of = (id) => Object.fromEntries(Object.entries(seen).filter(([k]) => k !== 'of').map(([k, list]) => [k, list.filter((m) => m._msgid === id).length]));
    return seen;
  };
  const newNode = async (old) => until(() => helper.getNode('send') && helper.getNode('send') !== old, 30000, 'the new send node');

  it('msgs waiting at the redeploy end once each, from the new node: accepted on output 1 and at the Complete node, EXPIRED at the Catch node alone', async function () {
    const n = await load(flow(1));
    const seen = watch(n);
    sim.server.link.refuse();
    const old = n.get('send');
    old.receive({ _msgid: 'sent', payload: { DestinationID: DEST, RawPayload: raw(1) }, topic: 'sent' });
    old.receive({ _msgid: 'expires', payload: { DestinationID: DEST, RawPayload: raw(2) }, topic: 'expires', ttl: 12 });
    await until(async () => (await outboxWaiting()) === 2, 30000, 'both msgs in the outbox');
    await redeploy(flow(2));
    await newNode(old);
    assert.equal(seen.completed.length, 0, 'the redeploy ends neither msg');
    await until(() => seen.caught.length === 1, 60000, 'the EXPIRED msg at the Catch node');
    await sim.server.link.up();
    await until(() => seen.ok.length === 1 && seen.completed.length === 1, 60000, 'the sent msg on output 1 and at the Complete node', () => JSON.stringify({ sent: seen.of('sent'), expires: seen.of('expires') }));
    await new Promise((r) => setTimeout(r, 1000)); // a second end would come by now
    assert.deepEqual(seen.of('sent'), { ok: 1, bad: 0, completed: 1, caught: 0 });
    assert.deepEqual(seen.of('expires'), { ok: 0, bad: 0, completed: 0, caught: 1 });
    assert.equal(seen.ok[0].topic, 'sent');
    assert.ok(seen.completed[0].outbox?.key, 'the Complete node sees the msg as it ended (with msg.outbox), not as it was at the redeploy');
    assert.equal(seen.caught[0].error.code ?? seen.caught[0].error.message.match(/EXPIRED/)?.[0], 'EXPIRED');
    assert.equal(sim.terminal.creations.total, 1);
  });

  it('a send whose reply comes while the old node closes: its outcome once, from the new node (never lost)', async function () {
    const n = await load(flow(1));
    const seen = watch(n);
    sim.server.inject({ route: 'terminal/messages', kind: 'hold', delayMs: 2000, times: 1 });
    const old = n.get('send');
    old.receive({ _msgid: 'held', payload: { DestinationID: DEST, RawPayload: raw(3) }, topic: 'held' });
    await until(() => sim.server.callsTo('terminal/messages').length === 1, 30000, 'the request at the gateway, its reply held');
    await redeploy(flow(2)); // the old node closes while the send is in flight (the close waits for it)
    await newNode(old);
    await until(() => seen.ok.length === 1, 60000, 'the outcome on output 1', () => JSON.stringify(seen.of('held')));
    await new Promise((r) => setTimeout(r, 1000));
    assert.deepEqual(seen.of('held'), { ok: 1, bad: 0, completed: 1, caught: 0 });
    assert.equal(sim.terminal.creations.total, 1);
  });

  /** Entries waiting in the file outbox `edge`, as the new node's status says. */
  async function outboxWaiting() {
    const { openOutboxes } = require('../../dist/lib/node-red/outbox-registry');
    const ob = openOutboxes().find((s) => s.name === 'edge');
    return ob ? ob.outbox.state().waiting : -1;
  }
});
