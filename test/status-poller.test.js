'use strict';
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { simulatorPerTest, helper, gatewayNode, load, until, collect, catchAll, useFileContext, stopRuntime } = require('./helpers/harness');

describe('iotgw-status-poller against the simulator', function () {
  let sim;
  simulatorPerTest({ terminal: { rateLimitCalls: 0, maxConcurrent: 0, sendingAfterMs: 50, receivedAfterMs: 100 } }, (s) => (sim = s));

  const poller = (props = {}) => ({
    id: 'poller',
    type: 'iotgw-status-poller',
    gateway: 'gw',
    intervalSeconds: 3600,
    startFrom: '-1h',
    output: 'record',
    contextStore: '',
    autoStart: false,
    fullAt: 500,
    addNames: true,
    wires: [['out']],
    ...props,
  });

  it('drains a backlog larger than one reply, passing NextFromUTC back, with no loss or repeat', async function () {
    sim.terminal.seedBacklog(1250);
    const n = await load([gatewayNode(sim), poller(), { id: 'out', type: 'helper' }, ...catchAll()]);
    const out = collect(n.get('out'));
    const caught = collect(n.get('caught'));
    n.get('poller').receive({ payload: 'poll' });
    await until(() => out.length >= 1250, 10000, '1250 records');
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(out.length, 1250);
    assert.equal(new Set(out.map((m) => m.topic)).size, 1250, 'no record repeated');
    const calls = sim.server.callsTo('terminal/status');
    assert.equal(calls.length, 3, '500 + 500 + 250: the drain stops after a reply that is not full');
    const froms = calls.map((c) => new URLSearchParams(c.query).get('FromUTC'));
    assert.equal(new Set(froms).size, 3, 'each full reply moved the mark; the last poll used the final mark');
    assert.equal(out[0].payload.StateName, 'RECEIVED');
    assert.equal(out[0].payload.TransportName, 'SATELLITE');
    assert.match(out[0].payload.StatusUTC, /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    assert.equal(caught.length, 0);
  });

  it('emits state changes of a submitted message over time, with names', async function () {
    this.timeout(20000);
    const n = await load([
      gatewayNode(sim),
      { id: 'mode', type: 'iotgw-terminal-mode', gateway: 'gw', mode: 0, wakeupInterval: 0, family: 'any', wires: [['ok'], []] },
      { id: 'ok', type: 'helper' },
      poller({ startFrom: '' }),
      { id: 'out', type: 'helper' },
    ]);
    const ok = collect(n.get('ok'));
    const out = collect(n.get('out'));
    n.get('mode').receive({ payload: { DestinationID: '01000001SKYA001', Mode: 1, WakeupInterval: 2 } });
    await until(() => ok.length === 1);
    const id = ok[0].payload[0].ID;
    // Records are served once their second is complete.
    await until(async () => {
      n.get('poller').receive({ payload: 'poll' });
      await new Promise((r) => setTimeout(r, 300));
      return out.some((m) => m.payload.StateName === 'RECEIVED');
    }, 15000, 'the RECEIVED record');
    const states = out.filter((m) => m.payload.ID === id).map((m) => m.payload.StateName);
    assert.deepEqual(states, ['SUBMITTED', 'SENDING_IN_PROGRESS', 'RECEIVED']);
    assert.equal(out.find((m) => m.payload.StateName === 'RECEIVED').payload.IsClosed, true);
  });

  it('"start from now" means the node\'s start: an update before the first poll is not skipped', async function () {
    const n = await load([
      gatewayNode(sim),
      { id: 'mode', type: 'iotgw-terminal-mode', gateway: 'gw', mode: 0, wakeupInterval: 0, family: 'any', lingerMs: 0, wires: [[], []] },
      poller({ startFrom: '' }),
      { id: 'out', type: 'helper' },
    ]);
    const out = collect(n.get('out'));
    n.get('mode').receive({ payload: { DestinationID: '01000001SKYA001', Mode: 0 } });
    await until(() => sim.terminal.counters.submitted === 1);
    // Let a second boundary pass before the first poll.
    await new Promise((r) => setTimeout(r, 1200));
    n.get('poller').receive({ payload: 'poll' });
    await until(() => out.some((m) => m.payload.StateName === 'SUBMITTED'), 5000, 'the SUBMITTED record');
  });

  it('sends one msg per poll in batch mode, with fromUTC and nextFromUTC', async function () {
    sim.terminal.seedBacklog(30);
    const n = await load([gatewayNode(sim), poller({ output: 'batch' }), { id: 'out', type: 'helper' }]);
    const out = collect(n.get('out'));
    n.get('poller').receive({ payload: 'poll' });
    await until(() => out.length === 1);
    assert.equal(out[0].payload.length, 30);
    assert.match(out[0].nextFromUTC, /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    assert.notEqual(out[0].nextFromUTC, out[0].fromUTC);
  });

  it('resumes from the persisted mark after a runtime restart: no record lost, none repeated', async function () {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iotgw-ctx-'));
    useFileContext(dir);
    sim.terminal.seedBacklog(1500);
    const flow = () => [gatewayNode(sim), poller({ contextStore: 'file' }), { id: 'out', type: 'helper' }];
    let n = await load(flow());
    const first = collect(n.get('out'));
    // Stop after the first full reply: the node drains on its own, so stop the runtime
    // as soon as the first 500 arrived.
    n.get('poller').receive({ payload: 'poll' });
    await until(() => first.length >= 500);
    await stopRuntime();
    const seen = first.length;
    assert.ok(seen >= 500 && seen < 1500, `stopped mid-drain (${seen})`);
    assert.ok(fs.readdirSync(dir).length > 0, 'the file store wrote to disk');

    n = await load(flow());
    const second = collect(n.get('out'));
    n.get('poller').receive({ payload: 'poll' });
    await until(() => seen + second.length >= 1500, 10000, 'the rest of the backlog');
    await new Promise((r) => setTimeout(r, 100));
    const all = [...first, ...second].map((m) => m.topic);
    assert.equal(all.length, 1500, 'no record repeated');
    assert.equal(new Set(all).size, 1500, 'no record lost');
    await stopRuntime();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('reports a failing gateway once, keeps quiet while it keeps failing, and recovers', async function () {
    const n = await load([gatewayNode(sim, { maxRetries: 0 }), poller({ intervalSeconds: 1, autoStart: true, startFrom: '' }), { id: 'out', type: 'helper' }, ...catchAll()]);
    const caught = collect(n.get('caught'));
    sim.inject({ route: 'terminal/status', status: 500, body: { Message: 'down' }, times: Infinity });
    await until(() => sim.server.callsTo('terminal/status').length >= 3, 8000, 'three failing polls');
    assert.equal(caught.length, 1, 'the first failure only');
    assert.equal(caught[0].error.code, 'HTTP_ERROR');
    sim.server.clearFaults();
    const before = sim.server.callsTo('terminal/status').length;
    await until(() => sim.server.callsTo('terminal/status').filter((c) => c.status === 200).length >= 1 && sim.server.callsTo('terminal/status').length > before, 5000, 'a good poll');
    sim.inject({ route: 'terminal/status', status: 401, times: Infinity });
    await until(() => caught.length === 2, 5000, 'a new failure state is reported');
    assert.equal(caught[1].error.code, 'UNAUTHORIZED');
  });

  it('403 for an account that is not a super account user is FORBIDDEN', async function () {
    const n = await load([gatewayNode(sim), poller(), { id: 'out', type: 'helper' }, ...catchAll()], { gw: { clientId: 'sub', clientSecret: 'sub-secret' } });
    const caught = collect(n.get('caught'));
    n.get('poller').receive({ payload: 'poll', _msgid: 'p1' });
    await until(() => caught.length >= 1);
    assert.equal(caught[0].error.code, 'FORBIDDEN');
    assert.match(caught[0].error.message, /403/);
  });

  it('obeys its control input: fromUTC resets the mark; bad control input is BAD_INPUT', async function () {
    sim.terminal.seedBacklog(10);
    const n = await load([gatewayNode(sim), poller({ startFrom: '' }), { id: 'out', type: 'helper' }, ...catchAll()]);
    const out = collect(n.get('out'));
    const caught = collect(n.get('caught'));
    n.get('poller').receive({ payload: 'poll' });
    await until(() => sim.server.callsTo('terminal/status').length === 1);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(out.length, 0, 'the backlog is older than "now"');
    n.get('poller').receive({ payload: { fromUTC: '2000-01-01 00:00:00' } });
    n.get('poller').receive({ payload: 'poll' });
    await until(() => out.length === 10);
    assert.equal(new URLSearchParams(sim.server.callsTo('terminal/status')[1].query).get('FromUTC'), '2000-01-01 00:00:00');
    n.get('poller').receive({ payload: { fromUTC: '2000-01-01T00:00:00Z' } });
    n.get('poller').receive({ payload: 42 });
    await until(() => caught.length === 2);
    assert.deepEqual(caught.map((c) => c.error.code), ['BAD_INPUT', 'BAD_INPUT']);
    assert.match(caught[0].error.message, /msg\.payload\.fromUTC/);
    assert.equal(sim.server.callsTo('terminal/status').length, 2, 'bad control input sent nothing');
  });

  it('a redeploy during a poll leaves no timer or request behind and ends the control msg', async function () {
    sim.inject({ route: 'terminal/status', delayMs: 1500, phase: 'after' });
    const n = await load([gatewayNode(sim), poller({ intervalSeconds: 1, autoStart: true }), { id: 'out', type: 'helper' }, ...catchAll()]);
    const caught = collect(n.get('caught'));
    n.get('poller').receive({ payload: 'poll' });
    await until(() => sim.server.callsTo('terminal/status').length >= 1);
    await helper.unload();
    const calls = sim.server.callsTo('terminal/status').length;
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(sim.server.callsTo('terminal/status').length, calls, 'no poll after close');
    assert.ok(caught.length <= 1);
  });
});
