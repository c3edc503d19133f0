'use strict';
/**
 * The outbox on iotgw-send-message (issue 45), in a real Node-RED runtime against the
 * simulator: accepted means durable (the store has the entry before anything is sent), a
 * link that is down keeps entries waiting and they drain when it is back (one outcome per
 * msg, each created once), a reply lost after the gateway created the message is reconciled
 * (never sent twice), a restart emits the outcomes of msgs accepted before, msg.ttl and
 * msg.priority are checked, TTL and both whenFull policies end entries with their codes, and
 * a folder that cannot be written is STORAGE at input, and so is a folder in use by another process.
 */
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { openOutboxes } = require('../../dist/lib/node-red/outbox-registry');
const { outboxPerTest, OUTBOX_DEST: DEST, outboxRaw: raw, recordStatuses, helper, load, until, collect, sendMessageNode, nodeFlow, logged } = require('../helpers/harness');

describe('iotgw-send-message: the outbox', function () {
  this.timeout(90000);
  let sim;
  let userDir;
  outboxPerTest({ sendingAfterMs: 100, receivedAfterMs: 300 }, 'iotgw-outbox-', (s, d) => ((sim = s), (userDir = d)));

  const flow = (props = {}) => nodeFlow(sim, sendMessageNode({ outbox: 'on', outboxName: 'edge', ...props }), { gw: { timeoutMs: 3000, maxRetries: 0 }, outs: ['ok', 'bad'] });
  const created = () => sim.terminal.creations.total;
  const logText = () => {
    const dir = path.join(userDir, 'iotgw-outbox', 'edge');
    return fs.existsSync(dir) ? fs.readdirSync(dir).map((f) => fs.readFileSync(path.join(dir, f), 'latin1')).join('') : '';
  };
  const creations = async () => (await (await fetch(`${sim.url}/_sim/creations`)).json());

  it('off (absent in older flows): no outbox folder, sent at once as before', async function () {
    const n = await load(nodeFlow(sim, sendMessageNode(), { outs: ['ok', 'bad'] }));
    const ok = collect(n.get('ok'));
    n.get('send').receive({ payload: { DestinationID: DEST, RawPayload: raw(1) } });
    await until(() => ok.length === 1, 30000, 'the output');
    assert.equal(ok[0].outbox, undefined);
    assert.equal(fs.existsSync(path.join(userDir, 'iotgw-outbox')), false);
  });

  it('accepted means durable: the entry is in the store while the link is down; sent once when it is back, with msg.outbox', async function () {
    const n = await load(flow());
    const ok = collect(n.get('ok'));
    const statuses = recordStatuses(n.get('send'));
    sim.server.link.refuse();
    n.get('send').receive({ payload: { DestinationID: DEST, RawPayload: raw(7) }, topic: 'kept' });
    await until(() => logText().includes(raw(7)), 30000, 'the entry in the store');
    await until(() => statuses.some((s) => /outbox: 1 waiting/.test(s.text ?? '')), 30000, 'the status saying what waits');
    assert.equal(ok.length, 0);
    await sim.server.link.up();
    await until(() => ok.length === 1, 60000, 'the outcome once the link is back');
    assert.equal(ok[0].topic, 'kept');
    assert.equal(ok[0].payload[0].DestinationID, DEST);
    assert.ok(ok[0].payload[0].ID > 0);
    assert.match(ok[0].outbox.acceptedAt, /^\d{4}-/);
    assert.ok(ok[0].outbox.attempts >= 1);
    assert.equal(created(), 1);
  });

  it('a reply lost after the gateway created the messages: reconciled with its records, each created once, one outcome per msg', async function () {
    const n = await load(flow({ outboxName: '' }));
    const ok = collect(n.get('ok'));
    sim.server.inject({ route: 'terminal/messages', kind: 'lost-reply', times: 1 });
    for (let i = 0; i < 3; i++) n.get('send').receive({ payload: [{ DestinationID: DEST, RawPayload: raw(100 + i) }], i });
    await until(() => ok.length === 3, 80000, 'three outcomes');
    const c = await creations();
    assert.deepEqual(c.duplicates, []);
    assert.equal(c.total, 3);
    assert.deepEqual(ok.map((m) => m.i).sort(), [0, 1, 2]);
    for (const m of ok) assert.ok(m.payload[0].ID > 0);
  });

  it('settings.js iotgwOutboxSettleSeconds: a send reset before the gateway handled it is sent again once the feed is that far past it (5 s here, not 30), never sooner; created once', async function () {
    // helper.settings replaces the last call's settings: the test's user directory given again.
    helper.settings({ userDir, iotgwOutboxSettleSeconds: 5 });
    try {
      const n = await load(flow());
      const ok = collect(n.get('ok'));
      sim.server.inject({ route: 'terminal/messages', kind: 'reset', times: 1 });
      n.get('send').receive({ payload: { DestinationID: DEST, RawPayload: raw(300) } });
      // The default 30 s would not end it within this wait.
      await until(() => ok.length === 1, 25000, 'the entry sent again after the 5 s settle time');
      const calls = sim.server.callsTo('terminal/messages');
      assert.equal(calls.length, 2, 'the reset call, then one more');
      assert.ok(calls[1].at - calls[0].at >= 5000, `sent again ${calls[1].at - calls[0].at} ms after the lost one: not before the settle time`);
      assert.equal(created(), 1);
    } finally {
      helper.settings({ userDir, iotgwOutboxSettleSeconds: undefined });
    }
  });

  it('a restart (the runtime loaded again on the same user directory) emits the outcomes of msgs accepted before, with their JSON properties', async function () {
    let n = await load(flow());
    sim.server.link.refuse();
    const req = { socket: {} };
    req.self = req;
    n.get('send').receive({ payload: { DestinationID: DEST, RawPayload: raw(1) }, topic: 'a', req });
    n.get('send').receive({ payload: { DestinationID: DEST, RawPayload: raw(2) }, topic: 'b' });
    await until(() => logText().includes(raw(2)), 30000, 'both in the store');
    await helper.unload();
    await sim.server.link.up();
    n = await load(flow());
    const ok = collect(n.get('ok'));
    await until(() => ok.length === 2, 60000, 'both outcomes after the restart');
    assert.deepEqual(ok.map((m) => m.topic).sort(), ['a', 'b']);
    assert.equal(ok[0].req, undefined);
    assert.equal(created(), 2);
  });

  it('msg.ttl and msg.priority out of range: BAD_INPUT at once, nothing kept', async function () {
    const n = await load(flow());
    const caught = collect(n.get('caught'));
    const bad = [{ ttl: 0 }, { ttl: 'x' }, { priority: 10 }, { priority: 1.5 }, { payload: { DestinationID: DEST } }];
    for (const b of bad) n.get('send').receive({ payload: { DestinationID: DEST, RawPayload: raw(3) }, ...b });
    await until(() => caught.length === bad.length, 30000, 'five errors');
    for (const m of caught) assert.equal(m.error.code ?? (/BAD_INPUT/.test(m.error.message) ? 'BAD_INPUT' : m.error.message), 'BAD_INPUT');
    assert.match(caught.map((m) => m.error.message).join('\n'), /msg\.ttl/);
    assert.match(caught.map((m) => m.error.message).join('\n'), /msg\.priority/);
    assert.equal(logText().includes(raw(3)), false);
    assert.equal(created(), 0);
  });

  it('a TTL that ends while the link is down: EXPIRED with err.entries (msg.failed at the Catch node), never sent', async function () {
    const n = await load(flow());
    const caught = collect(n.get('caught'));
    sim.server.link.refuse();
    n.get('send').receive({ payload: { DestinationID: DEST, RawPayload: raw(4) }, ttl: 1 });
    await until(() => caught.length === 1, 30000, 'the EXPIRED error');
    assert.match(caught[0].error.message, /EXPIRED|TTL ended/);
    // The entries reach the Catch node on msg.failed (msg.error keeps only message and code).
    assert.equal(caught[0].failed?.length, 1, JSON.stringify(caught[0].failed));
    assert.equal(caught[0].failed[0].outcome.result, 'EXPIRED');
    assert.equal(caught[0].failed[0].results[0].DestinationID, DEST);
    await sim.server.link.up();
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(created(), 0);
  });

  it('full: reject ends the new msg OUTBOX_FULL (nothing kept); drop-oldest ends the oldest', async function () {
    let n = await load(flow({ outboxMaxEntries: 2 }));
    let caught = collect(n.get('caught'));
    sim.server.link.refuse();
    for (let i = 0; i < 3; i++) n.get('send').receive({ payload: { DestinationID: DEST, RawPayload: raw(10 + i) }, i });
    await until(() => caught.length === 1, 30000, 'OUTBOX_FULL');
    assert.equal(caught[0].i, 2);
    assert.match(caught[0].error.message, /full/);
    assert.equal(logText().includes(raw(12)), false);
    await helper.unload();
    n = await load(flow({ outboxMaxEntries: 2, whenFull: 'drop-oldest' }));
    caught = collect(n.get('caught'));
    // Entries in a send are not dropped: the new msg comes once the refused send put them back.
    const statuses = recordStatuses(n.get('send'));
    await until(() => statuses.some((s) => s.fill === 'yellow'), 30000, 'the send refused, the entries waiting');
    n.get('send').receive({ payload: { DestinationID: DEST, RawPayload: raw(13) }, i: 3 });
    await until(() => caught.length === 1, 30000, 'the oldest dropped');
    assert.equal(caught[0].i, 0, caught[0].error.message);
    assert.match(caught[0].error.message, /full/);
    assert.equal(caught[0].i, 0);
  });

  it('msgs that arrive during a sync are accepted together under the next one (group commit), each acknowledged only after the sync that covers it', async function () {
    const n = await load(flow());
    sim.server.link.refuse();
    const shared = openOutboxes().find((o) => o.name === 'edge');
    await shared.opened;
    const store = shared.outbox.store;
    // Every fdatasync of the log is held until the test lets it go.
    const held = [];
    const fh = store.fh;
    const datasync = fh.datasync.bind(fh);
    fh.datasync = () => new Promise((r) => held.push(r)).then(datasync);
    const syncs0 = store.syncs;
    const waiting = () => shared.outbox.state().waiting;
    n.get('send').receive({ payload: { DestinationID: DEST, RawPayload: raw(1) }, i: 0 });
    await until(() => held.length === 1, 30000, "the first msg's sync");
    for (let i = 1; i < 50; i++) n.get('send').receive({ payload: { DestinationID: DEST, RawPayload: raw(1000 + i) }, i });
    await until(() => store.queue.length === 49, 30000, 'the 49 msgs that came during the sync handed to the store, waiting for the next');
    assert.equal(waiting(), 0, 'nothing acknowledged while its sync is held');
    held[0]();
    await until(() => held.length === 2, 30000, 'the second sync');
    await until(() => waiting() === 1, 30000, 'the first msg acknowledged');
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(waiting(), 1, 'the 49 not acknowledged before their sync');
    held[1]();
    await until(() => waiting() === 50, 30000, 'all 50 acknowledged');
    assert.equal(store.syncs - syncs0, 2, '50 msgs in 2 syncs');
    assert.ok(logText().includes(raw(1049)));
  });

  it('a folder in use by another process: the status and a logged error say so, each msg ends with STORAGE, nothing sent; once the holder dies the node takes the folder by itself', async function () {
    const folder = path.join(userDir, 'iotgw-outbox', 'edge');
    fs.mkdirSync(folder, { recursive: true });
    const holder = spawn(process.execPath, [path.join(__dirname, '../helpers/outbox-lock-child.js'), folder, '--now'], { stdio: ['pipe', 'pipe', 'inherit'] });
    try {
      let out = '';
      holder.stdout.on('data', (d) => (out += d));
      await until(() => /^held$/m.test(out), 30000, 'another process holding the folder', () => out);
      const status = { id: 'st', type: 'status', scope: ['send'], wires: [['stat']] };
      const n = await load(nodeFlow(sim, sendMessageNode({ outbox: 'on', outboxName: 'edge' }), { outs: ['ok', 'bad'], extra: [status, { id: 'stat', type: 'helper' }] }));
      const caught = collect(n.get('caught'));
      const stat = collect(n.get('stat'));
      const inUse = new RegExp(`^(STORAGE: )?the outbox is in use by another process \\(pid ${holder.pid}\\)`);
      for (let i = 0; i < 2; i++) n.get('send').receive({ payload: { DestinationID: DEST, RawPayload: raw(20 + i) }, i });
      await until(() => caught.length === 2, 30000, 'both msgs ending with the error');
      for (const c of caught) {
        assert.equal(c.error.source.id, 'send');
        assert.match(c.error.message, /^STORAGE: /);
        assert.match(c.error.message, inUse);
      }
      assert.ok(stat.some((m) => m.status.fill === 'red' && inUse.test(m.status.text)), JSON.stringify(stat.map((m) => m.status)));
      assert.ok(logged('send').some((t) => /could not be opened: the outbox is in use by another process/.test(t)), JSON.stringify(logged('send')));
      assert.equal(created(), 0);
      assert.equal(logText().includes(raw(20)), false, 'nothing kept');
      // The holder dies: the node tries the folder again by itself (no redeploy) and takes it.
      holder.kill('SIGKILL');
      const seen = stat.length;
      await until(() => stat.slice(seen).some((m) => m.status.fill !== 'red' && /^outbox/.test(m.status.text)), 30000, 'the outbox open once its holder is gone', () => JSON.stringify(stat.slice(seen).map((m) => m.status)));
      const ok = collect(n.get('ok'));
      n.get('send').receive({ payload: { DestinationID: DEST, RawPayload: raw(22) } });
      await until(() => ok.length === 1, 30000, 'the msg sent through the outbox');
      assert.equal(created(), 1);
      assert.equal(caught.length, 2, 'no error for the msg after the folder was taken');
    } finally {
      holder.kill('SIGKILL');
    }
  });

  it('a user directory whose outbox folder cannot be written: STORAGE at input', async function () {
    fs.writeFileSync(path.join(userDir, 'iotgw-outbox'), 'not a folder');
    const n = await load(flow());
    const caught = collect(n.get('caught'));
    n.get('send').receive({ payload: { DestinationID: DEST, RawPayload: raw(5) } });
    await until(() => caught.length === 1, 30000, 'the STORAGE error');
    assert.match(caught[0].error.message, /outbox could not/);
    assert.equal(created(), 0);
  });
});
