'use strict';
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { simulatorPerTest, helper, gatewayNode, load, until, collect, catchAll, useFileContext, stopRuntime } = require('../helpers/harness');
const { formatUtc } = require('../../dist/simulator');

const nowSec = () => Math.floor(Date.now() / 1000);
/** Warnings the runtime logged for node `id` (node.warn). */
const warnings = (id) =>
  helper
    .log()
    .args.map((a) => a[0])
    .filter((e) => e && e.level === 30 && e.id === id)
    .map((e) => String(e.msg));

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

  /**
   * A backlog of 1,500 drained across a runtime restart: the runtime stops as soon as the
   * first full reply (500) arrived (the node drains on its own), `atStop()` checks what
   * reached the disk, then the flow loads again: every record once in all.
   */
  async function drainAcrossRestart(pollerProps, atStop) {
    sim.terminal.seedBacklog(1500);
    const flow = () => [gatewayNode(sim), poller(pollerProps), { id: 'out', type: 'helper' }];
    let n = await load(flow());
    const first = collect(n.get('out'));
    n.get('poller').receive({ payload: 'poll' });
    await until(() => first.length >= 500);
    await stopRuntime();
    const seen = first.length;
    assert.ok(seen >= 500 && seen < 1500, `stopped mid-drain (${seen})`);
    atStop();
    n = await load(flow());
    const second = collect(n.get('out'));
    n.get('poller').receive({ payload: 'poll' });
    await until(() => seen + second.length >= 1500, 10000, 'the rest of the backlog');
    await new Promise((r) => setTimeout(r, 100));
    const all = [...first, ...second].map((m) => m.topic);
    assert.equal(all.length, 1500, 'no record repeated');
    assert.equal(new Set(all).size, 1500, 'no record lost');
  }

  it('1,200-record backlog against the strict simulator: every record once, 0 repeats', async function () {
    sim.terminal.seedBacklog(1200);
    const n = await load([gatewayNode(sim), poller(), { id: 'out', type: 'helper' }, ...catchAll()]);
    const out = collect(n.get('out'));
    const caught = collect(n.get('caught'));
    n.get('poller').receive({ payload: 'poll' });
    await until(() => out.length >= 1200, 10000, '1200 records');
    await new Promise((r) => setTimeout(r, 200));
    n.get('poller').receive({ payload: 'poll' }); // one more poll: the last second comes again, nothing new
    await until(() => sim.server.callsTo('terminal/status').filter((c) => c.status === 200).length >= 4);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(out.length, 1200, 'no record repeated');
    assert.equal(new Set(out.map((m) => `${m.topic}|${m.payload.State}|${m.payload.StatusUTC}`)).size, 1200, 'no record lost');
    const froms = sim.server.callsTo('terminal/status').map((c) => new URLSearchParams(c.query).get('FromUTC'));
    // 100 a second: each full reply's last second is asked for again (FromUTC is inclusive).
    assert.equal(froms.length, 4);
    assert.equal(new Set(froms.slice(0, 3)).size, 3, 'each full reply moved the mark');
    assert.equal(froms[3], out[out.length - 1].payload.StatusUTC, 'the last poll asked from the last record\'s second again');
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
    await drainAcrossRestart({ contextStore: 'file' }, () => assert.ok(fs.readdirSync(dir).length > 0, 'the file store wrote to disk'));
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

  it('msg.query.FromUTC on a "poll" msg (any case) is BAD_INPUT naming it, nothing fetched; the mark then sends every record (issue 43)', async function () {
    const sec = Math.floor(Date.now() / 1000) - 600;
    sim.terminal.addStatusRecords(3, sec);
    sim.terminal.addStatusRecords(7, sec + 60);
    const n = await load([gatewayNode(sim), poller({ startFrom: formatUtc(sec - 1), autoStart: false }), { id: 'out', type: 'helper' }, ...catchAll()]);
    const out = collect(n.get('out'));
    const caught = collect(n.get('caught'));
    // Before: this FromUTC replaced the mark for the request; 3 of 10 were sent and the mark moved past the other 7.
    n.get('poller').receive({ payload: 'poll', query: { FromUTC: formatUtc(sec + 60) } });
    n.get('poller').receive({ payload: 'poll', query: { fromutc: formatUtc(sec + 60), Extra: 'x' } });
    await until(() => caught.length === 2);
    assert.deepEqual(caught.map((c) => c.error.code), ['BAD_INPUT', 'BAD_INPUT']);
    assert.match(caught[0].error.message, /msg\.query\.FromUTC/);
    assert.match(caught[1].error.message, /msg\.query\.fromutc/);
    assert.equal(sim.server.callsTo('terminal/status').length, 0, 'nothing fetched');
    n.get('poller').receive({ payload: 'poll', query: { Extra: 'x' } });
    await until(() => out.length === 10);
    assert.equal(new URLSearchParams(sim.server.callsTo('terminal/status')[0].query).get('Extra'), 'x', 'other parameters are added');
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

  describe('the strict FromUTC feed (issue 20)', function () {
    it('700 records in one second and 60 after it: 0 repeats, >= 500 of the 700, all 60, no loop, one warning', async function () {
      this.timeout(90000);
      const crowded = nowSec() - 30;
      sim.terminal.addStatusRecords(700, crowded);
      sim.terminal.addStatusRecords(20, crowded + 1);
      sim.terminal.addStatusRecords(20, crowded + 2);
      sim.terminal.addStatusRecords(20, crowded + 3);
      const n = await load([gatewayNode(sim), poller({ startFrom: '-1h', intervalSeconds: 1, autoStart: true }), { id: 'out', type: 'helper' }, ...catchAll()]);
      const out = collect(n.get('out'));
      const caught = collect(n.get('caught'));
      const calls = () => sim.server.callsTo('terminal/status');
      await until(() => out.filter((m) => m.payload.StatusUTC > formatUtc(crowded)).length >= 60, 30000, 'the 60 later records');
      const callsAtDrain = calls().length;
      // The timer's next two polls answered: anything more would have come with them.
      await until(() => calls().slice(callsAtDrain).filter((c) => c.status !== 0).length >= 2, 30000, 'two more polls answered');
      const keys = out.map((m) => `${m.topic}|${m.payload.State}|${m.payload.StatusUTC}`);
      assert.equal(new Set(keys).size, keys.length, '0 repeats');
      const inCrowded = out.filter((m) => m.payload.StatusUTC === formatUtc(crowded)).length;
      assert.ok(inCrowded >= 500 && inCrowded <= 700, `>= 500 of the 700 (${inCrowded})`);
      assert.equal(out.filter((m) => m.payload.StatusUTC > formatUtc(crowded)).length, 60, 'all 60 later records');
      // No loop: the crowded second asked for once, then stepped past; after the drain only the
      // timer polls, each an interval (1 s) after the one before, from a second after it.
      const froms = calls().map((c) => new URLSearchParams(c.query).get('FromUTC'));
      assert.ok(froms.filter((f) => f === formatUtc(crowded)).length <= 1, `the crowded second asked for once: ${froms.join(', ')}`);
      assert.ok(froms.slice(callsAtDrain).every((f) => f > formatUtc(crowded)), `past the crowded second: ${froms.join(', ')}`);
      const timed = calls().slice(callsAtDrain - 1);
      for (let i = 1; i < timed.length; i++) assert.ok(timed[i].at - timed[i - 1].at >= 900, `a timer poll, not a loop (${timed[i].at - timed[i - 1].at} ms after the one before)`);
      const w = warnings('poller').filter((t) => t.includes(formatUtc(crowded)));
      assert.equal(w.length, 1, `one warning naming the crowded second: ${JSON.stringify(warnings('poller'))}`);
      assert.match(w[0], /500/, 'the warning says how many of its records were fetched');
      assert.equal(caught.length, 0);
    });

    it('a full reply with a null NextFromUTC does not loop: emits what is new, steps past the second, warns once', async function () {
      this.timeout(60000);
      const sec = nowSec() - 20;
      sim.terminal.addStatusRecords(10, sec);
      const statuses = Array.from({ length: 10 }, (_, i) => ({ ID: 500 + i, State: 1, IsClosed: true, StatusUTC: formatUtc(sec), CreateUTC: formatUtc(sec - 60), Transport: 1 }));
      sim.inject({ route: 'terminal/status', status: 200, body: { ErrorID: 0, NextFromUTC: null, Statuses: statuses }, times: Infinity });
      const n = await load([gatewayNode(sim), poller({ startFrom: formatUtc(sec), fullAt: 10, intervalSeconds: 1, autoStart: true }), { id: 'out', type: 'helper' }]);
      const out = collect(n.get('out'));
      // Four requests answered: the first poll's two (its full reply, then the page past the
      // second) and two polls of the timer.
      const answered = () => sim.server.callsTo('terminal/status').filter((c) => c.status !== 0);
      await until(() => answered().length >= 4, 30000, 'four requests answered');
      assert.equal(out.length, 10, 'each record once');
      const timed = answered();
      const calls = timed.map((c) => new URLSearchParams(c.query).get('FromUTC'));
      // No loop: past the second, the first poll ended; each request after is a timer poll, an interval (1 s) after the one before.
      for (let i = 2; i < timed.length; i++) assert.ok(timed[i].at - timed[i - 1].at >= 900, `a timer poll, not a loop (${timed[i].at - timed[i - 1].at} ms after the one before)`);
      assert.equal(calls[0], formatUtc(sec));
      assert.equal(calls[1], formatUtc(sec + 1), 'stepped past the second');
      assert.equal(warnings('poller').filter((t) => t.includes(formatUtc(sec))).length, 1);
    });

    it('records arriving late into a second already read still come out, once', async function () {
      this.timeout(15000);
      sim.terminal.configure({ lateBySeconds: 0 });
      const n = await load([gatewayNode(sim), poller({ startFrom: '-10s' }), { id: 'out', type: 'helper' }]);
      const out = collect(n.get('out'));
      const sec = nowSec() - 2;
      sim.terminal.addStatusRecords(3, sec);
      n.get('poller').receive({ payload: 'poll' });
      await until(() => out.length === 3);
      sim.terminal.addStatusRecords(2, sec); // late: into the second the poll just read
      n.get('poller').receive({ payload: 'poll' });
      await until(() => out.length === 5, 3000, 'the late records');
      await new Promise((r) => setTimeout(r, 200));
      n.get('poller').receive({ payload: 'poll' });
      await until(() => sim.server.callsTo('terminal/status').length === 3);
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(out.length, 5);
      assert.equal(new Set(out.map((m) => m.topic)).size, 5);
    });

    it('an empty reply with a null or empty NextFromUTC keeps the mark; a malformed one is BAD_RESPONSE and keeps it', async function () {
      const sec = nowSec() - 100;
      sim.terminal.addStatusRecords(2, sec);
      const start = formatUtc(sec - 50);
      const n = await load([gatewayNode(sim), poller({ startFrom: start }), { id: 'out', type: 'helper' }, ...catchAll()]);
      const out = collect(n.get('out'));
      const caught = collect(n.get('caught'));
      sim.inject({ route: 'terminal/status', status: 200, body: { ErrorID: 0, NextFromUTC: null, Statuses: [] } });
      sim.inject({ route: 'terminal/status', status: 200, body: { ErrorID: 0, NextFromUTC: '', Statuses: [] } });
      sim.inject({ route: 'terminal/status', status: 200, body: { ErrorID: 0, NextFromUTC: '2026-13-45 99:00:00', Statuses: [{ ID: 1, State: 1, StatusUTC: formatUtc(sec) }] } });
      for (let i = 0; i < 3; i++) {
        n.get('poller').receive({ payload: 'poll', _msgid: `p${i}` });
        await until(() => sim.server.callsTo('terminal/status').length === i + 1);
        await new Promise((r) => setTimeout(r, 50));
      }
      await until(() => caught.length === 1);
      assert.equal(caught[0].error.code, 'BAD_RESPONSE');
      assert.match(caught[0].error.message, /NextFromUTC/);
      assert.equal(out.length, 0, 'nothing from the malformed reply');
      n.get('poller').receive({ payload: 'poll' });
      await until(() => out.length === 2);
      const froms = sim.server.callsTo('terminal/status').map((c) => new URLSearchParams(c.query).get('FromUTC'));
      assert.deepEqual(froms, [start, start, start, start], 'the mark stayed');
    });

    it('{fromUTC} during an in-flight poll wins: that reply is neither emitted nor written', async function () {
      this.timeout(15000);
      const sec = nowSec() - 100;
      sim.terminal.addStatusRecords(20, sec);
      sim.inject({ route: 'terminal/status', delayMs: 800, phase: 'after' });
      const n = await load([gatewayNode(sim), poller({ startFrom: '-1h' }), { id: 'out', type: 'helper' }, ...catchAll()]);
      const out = collect(n.get('out'));
      const caught = collect(n.get('caught'));
      n.get('poller').receive({ payload: 'poll' });
      await until(() => sim.server.callsTo('terminal/status').length === 1);
      const reset = formatUtc(sec + 10);
      n.get('poller').receive({ payload: { fromUTC: reset } });
      await until(() => sim.server.callsTo('terminal/status').length === 2, 5000, 'a request from the reset mark');
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(new URLSearchParams(sim.server.callsTo('terminal/status')[1].query).get('FromUTC'), reset);
      assert.equal(out.length, 0, 'the reply begun before the reset was not emitted');
      sim.terminal.addStatusRecords(3, sec + 20);
      n.get('poller').receive({ payload: 'poll' });
      await until(() => out.length === 3);
      assert.equal(new URLSearchParams(sim.server.callsTo('terminal/status')[2].query).get('FromUTC'), reset, 'the reply before the reset did not write the mark');
      assert.equal(caught.length, 0);
    });

    it('one failed "poll" gives exactly one Catch message', async function () {
      const n = await load([gatewayNode(sim, { maxRetries: 0 }), poller(), { id: 'out', type: 'helper' }, ...catchAll()]);
      const caught = collect(n.get('caught'));
      sim.inject({ route: 'terminal/status', status: 500, body: { Message: 'down' } });
      n.get('poller').receive({ payload: 'poll', _msgid: 'one' });
      await until(() => caught.length >= 1);
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(caught.length, 1);
      assert.equal(caught[0].error.code, 'HTTP_ERROR');
    });

    it('a "poll" that comes during a poll in flight ends with the poll after it, the one it asked for (not with the one begun before it)', async function () {
      this.timeout(30000);
      sim.terminal.addStatusRecords(2, nowSec() - 100);
      const ended = [{ id: 'ender', type: 'complete', scope: ['poller'], uncaught: false, wires: [['completed']] }, { id: 'completed', type: 'helper' }];
      const n = await load([gatewayNode(sim, { maxRetries: 0 }), poller(), { id: 'out', type: 'helper' }, ...catchAll(), ...ended]);
      const caught = collect(n.get('caught'));
      const completed = collect(n.get('completed'));
      const out = collect(n.get('out'));
      // The first poll's request fails, 1.5 s after it came; the second msg comes meanwhile.
      sim.inject({ route: 'terminal/status', status: 500, body: { Message: 'down' }, delayMs: 1500 });
      n.get('poller').receive({ payload: 'poll', _msgid: 'first' });
      await until(() => sim.server.callsTo('terminal/status').length === 1, 10000, "the first poll's request");
      n.get('poller').receive({ payload: 'poll', _msgid: 'second' });
      await until(() => caught.length + completed.length === 2, 20000, 'both msgs to end');
      assert.deepEqual(caught.map((m) => [m._msgid, m.error.code]), [['first', 'HTTP_ERROR']]);
      assert.deepEqual(completed.map((m) => m._msgid), ['second']);
      assert.equal(sim.server.callsTo('terminal/status').length, 2, 'one more poll, for the second msg');
      assert.equal(out.length, 2, 'that poll emitted the records');
    });

    it('a timer poll that fails while a "poll" msg waits for the next one still gives its own Catch message', async function () {
      this.timeout(30000);
      const ended = [{ id: 'ender', type: 'complete', scope: ['poller'], uncaught: false, wires: [['completed']] }, { id: 'completed', type: 'helper' }];
      sim.inject({ route: 'terminal/status', status: 500, body: { Message: 'down' }, delayMs: 1500 });
      // autoStart: the first timer poll comes 250 ms after the start, and fails 1.5 s after its request.
      const n = await load([gatewayNode(sim, { maxRetries: 0 }), poller({ autoStart: true }), { id: 'out', type: 'helper' }, ...catchAll(), ...ended]);
      const caught = collect(n.get('caught'));
      const completed = collect(n.get('completed'));
      await until(() => sim.server.callsTo('terminal/status').length === 1, 10000, "the timer poll's request");
      n.get('poller').receive({ payload: 'poll', _msgid: 'during' });
      await until(() => completed.length === 1 && caught.length >= 1, 20000, 'the msg to end and the timer poll to be reported');
      assert.deepEqual(completed.map((m) => m._msgid), ['during']);
      assert.deepEqual(caught.map((m) => [m._msgid === 'during', m.error.code]), [[false, 'HTTP_ERROR']], 'one Catch message, of the timer poll');
    });

    it('a startFrom that is no real date is refused at runtime', async function () {
      const n = await load([gatewayNode(sim), poller({ startFrom: '2026-13-45 99:00:00' }), { id: 'out', type: 'helper' }, ...catchAll()]);
      const caught = collect(n.get('caught'));
      n.get('poller').receive({ payload: 'poll' });
      await until(() => caught.length >= 1);
      assert.equal(caught[0].error.code, 'BAD_INPUT');
      assert.match(caught[0].error.message, /startFrom/);
      assert.equal(sim.server.callsTo('terminal/status').length, 0, 'no request');
      const { startMark } = require('../../dist/lib/feed');
      assert.throws(() => startMark('2026-02-30 00:00:00'), /startFrom/);
      assert.equal(startMark('2026-02-28 23:59:59'), '2026-02-28 23:59:59');
    });

    it('a context store this Node-RED lacks: yellow status and one warning at deploy', async function () {
      const n = await load([gatewayNode(sim), poller({ contextStore: 'nosuchstore' }), { id: 'out', type: 'helper' }]);
      const p = n.get('poller');
      await new Promise((r) => setTimeout(r, 100));
      const statuses = p.status.args.map((a) => a[0]);
      assert.ok(statuses.some((s) => s.fill === 'yellow' && /nosuchstore/.test(s.text)), JSON.stringify(statuses));
      assert.equal(warnings('poller').filter((t) => t.includes('nosuchstore')).length, 1);
    });

    it('the status shows the mark and how far behind now it is', async function () {
      sim.terminal.addStatusRecords(2, nowSec() - 7200);
      const n = await load([gatewayNode(sim), poller({ startFrom: '-3h' }), { id: 'out', type: 'helper' }]);
      const out = collect(n.get('out'));
      n.get('poller').receive({ payload: 'poll' });
      await until(() => out.length === 2);
      await new Promise((r) => setTimeout(r, 100));
      const last = n.get('poller').status.lastCall.args[0];
      assert.equal(last.fill, 'green');
      assert.match(last.text, new RegExp(`${formatUtc(nowSec() - 7200).slice(0, 13)}.*\\b2 h\\b`), last.text);
    });

    it('with no context store configured, the mark lives in a file under the user directory and survives a restart', async function () {
      const userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'iotgw-user-'));
      try {
        helper.settings({ userDir });
        await drainAcrossRestart({}, () => {
          const files = fs.readdirSync(path.join(userDir, 'iotgw-feeds'));
          assert.deepEqual(files, ['status-poller-poller.json']);
          const mark = JSON.parse(fs.readFileSync(path.join(userDir, 'iotgw-feeds', files[0]), 'utf8'));
          assert.match(mark.fromUtc, /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
          assert.ok(Array.isArray(mark.seen) && mark.seen.length > 0, 'the keys of the mark\'s second are kept with it');
        });
      } finally {
        helper.settings({});
        fs.rmSync(userDir, { recursive: true, force: true });
      }
    });
  });
});
