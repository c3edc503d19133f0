'use strict';
/**
 * iotgw-account-status `outboxes` (issue 45, nodes.md "Commands that survive the edge":
 * Seen), in the real runtime against the simulator: entries waiting while the link is
 * refused show with their count, bytes, age and state 'waiting for the link'; once the link
 * is back they drain ('idle', counted in sentLastHour); an entry whose TTL ended counts in
 * expiredLastHour; an account without an outbox shows none.
 */
const assert = require('node:assert/strict');
const { outboxPerTest, OUTBOX_DEST: DEST, outboxRaw: raw, load, until, collect, sendMessageNode, nodeFlow } = require('../helpers/harness');

describe('iotgw-account-status: outboxes', function () {
  this.timeout(120000);
  let sim;
  outboxPerTest({}, 'iotgw-outbox-status-', (s) => (sim = s));

  const statusNode = { id: 'status', type: 'iotgw-account-status', account: 'gw', intervalSeconds: 0, wires: [['out']] };
  const flow = (props = {}) =>
    nodeFlow(sim, sendMessageNode({ name: 'to the pumps', outbox: 'on', outboxName: 'edge', ...props }), {
      gw: { timeoutMs: 3000, maxRetries: 0 },
      outs: ['ok', 'bad'],
      extra: [statusNode, { id: 'out', type: 'helper' }],
    });

  async function outboxes(n, out) {
    const before = out.length;
    n.get('status').receive({ payload: 'now' });
    await until(() => out.length > before, 30000, 'the status msg');
    return out[before].payload.outboxes;
  }

  it('entries waiting while the link is refused, then drained; a TTL that ended counts as expired', async function () {
    const n = await load(flow());
    const out = collect(n.get('out'));
    const ok = collect(n.get('ok'));
    const caught = collect(n.get('caught'));
    assert.deepEqual(await outboxes(n, out), [
      { name: 'edge', node: 'to the pumps', waiting: 0, bytes: 0, oldestSeconds: null, sentLastHour: 0, expiredLastHour: 0, state: 'idle' },
    ]);
    sim.server.link.refuse();
    n.get('send').receive({ payload: { DestinationID: DEST, RawPayload: raw(1) } });
    n.get('send').receive({ payload: { DestinationID: DEST, RawPayload: raw(2) } });
    n.get('send').receive({ payload: { DestinationID: DEST, RawPayload: raw(3) }, ttl: 1 });
    let seen;
    await until(
      async () => {
        seen = await outboxes(n, out);
        return seen.length === 1 && seen[0].state === 'waiting for the link' && seen[0].expiredLastHour === 1;
      },
      60000,
      'the outbox waiting for the link, the third entry expired',
    );
    const [w] = seen;
    assert.equal(w.name, 'edge');
    assert.equal(w.waiting, 2);
    assert.ok(w.bytes > 0, JSON.stringify(w));
    assert.equal(typeof w.oldestSeconds, 'number');
    assert.ok(w.oldestSeconds >= 0);
    assert.equal(w.sentLastHour, 0);
    assert.equal(caught.length, 1, 'the expired msg ended with its error');
    await sim.server.link.up();
    await until(() => ok.length === 2, 60000, 'both outcomes once the link is back');
    await until(
      async () => {
        seen = await outboxes(n, out);
        return seen[0].waiting === 0 && seen[0].state === 'idle';
      },
      30000,
      'the outbox idle',
    );
    assert.equal(seen[0].sentLastHour, 2);
    assert.equal(seen[0].expiredLastHour, 1);
    assert.equal(seen[0].oldestSeconds, null);
  });

  it('an account with no outbox on shows none', async function () {
    const n = await load(flow({ outbox: 'off' }));
    const out = collect(n.get('out'));
    assert.deepEqual(await outboxes(n, out), []);
  });
});
