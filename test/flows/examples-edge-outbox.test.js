'use strict';
/**
 * examples/edge-outbox.json in the real runtime against the simulator (issue 45): with the
 * link refused, a command and a mode change wait in their outboxes (the account status's
 * `outboxes` says so), and once the link is back each reaches the gateway once and comes
 * out on "accepted" / "mode accepted" with msg.outbox; nothing reaches "error".
 */
const assert = require('node:assert/strict');
const { outboxPerTest, until, collect, loadExample } = require('../helpers/harness');

const CORE = ['common/20-inject.js', 'common/90-comment.js', 'common/25-catch.js'].map((f) => require(`@node-red/nodes/core/${f}`));

describe('example flow: edge outbox', function () {
  this.timeout(120000);
  let sim;
  outboxPerTest({}, 'iotgw-edge-outbox-', (s) => (sim = s));

  it('commands wait while the link is refused, are seen in the account status, and go out once when it is back', async function () {
    const { flow, get } = await loadExample('edge-outbox.json', CORE, (c) => c.type === 'iotgw-gateway' && Object.assign(c, { baseUrl: sim.url, maxRetries: 0, timeoutSeconds: 3 }));
    const inject = (id) => flow.find((n) => n.id === id);
    const payload = (id) => JSON.parse(inject(id).payload);
    const accepted = collect(get('iotgw-ex-outbox-accepted'));
    const modes = collect(get('iotgw-ex-outbox-mode-accepted'));
    const outboxes = collect(get('iotgw-ex-outbox-outboxes'));
    const errors = collect(get('iotgw-ex-outbox-error'));
    const rejected = collect(get('iotgw-ex-outbox-rejected'));
    sim.server.link.refuse();
    get('iotgw-ex-outbox-send').receive({ payload: payload('iotgw-ex-outbox-cmd') });
    get('iotgw-ex-outbox-mode').receive({ payload: payload('iotgw-ex-outbox-wake') });
    let seen = [];
    await until(
      async () => {
        get('iotgw-ex-outbox-status').receive({ payload: Date.now() });
        await until(() => outboxes.length > 0, 30000, 'an account status');
        seen = outboxes.pop().payload.outboxes; // the debug node shows payload.outboxes: the msg is whole here
        return seen.length === 2 && seen.every((o) => o.waiting === 1 && o.state === 'waiting for the link');
      },
      60000,
      'both outboxes waiting for the link',
      () => JSON.stringify(seen),
    );
    assert.deepEqual(seen.map((o) => o.name), ['edge-commands', 'edge-modes']);
    assert.equal(accepted.length + modes.length, 0);
    await sim.server.link.up();
    await until(() => accepted.length === 1 && modes.length === 1, 60000, 'both outcomes once the link is back');
    assert.ok(accepted[0].payload[0].ID > 0);
    assert.ok(accepted[0].outbox.attempts >= 1);
    assert.ok(modes[0].outbox.attempts >= 1);
    assert.equal(sim.terminal.creations.total, 2, 'each created once');
    assert.deepEqual(errors.concat(rejected), []);
  });
});
