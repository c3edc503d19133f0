'use strict';
/**
 * `iotgw-terminal-updates` (issue 35) in a real Node-RED runtime against the simulator's
 * `info/terminal_updates` (FromUTC inclusive, 500 a reply, each terminal once at its current
 * UpdateUTC, a fleet of terminals generated over 30 days): the whole fleet once, a crowded
 * second, a change after the drain, late arrivals into a second already read (the
 * simulator's `lateCount`, and `lateUpdatesBySeconds` for every change), a restart mid-drain, batch mode, a malformed record,
 * the control input and a bad feed name.
 */
const assert = require('node:assert/strict');
const { simulatorPerTest, helper, logged, load, until, collect, nodeFlow, stopRuntime, recordWarnings } = require('../helpers/harness');

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const nowSec = () => Math.floor(Date.now() / 1000);
const utc = (sec) => new Date(sec * 1000).toISOString().slice(0, 19).replace('T', ' ');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const FLEET = 1200;

const updatesNode = (props = {}) => ({
  id: 'tu',
  type: 'iotgw-terminal-updates',
  intervalSeconds: 3600,
  startFrom: '-31d',
  output: 'record',
  contextStore: '',
  autoStart: false,
  fullAt: 500,
  feedName: '',
  ...props,
});

describe('iotgw-terminal-updates against the simulator', function () {
  this.timeout(60000);
  let sim;
  simulatorPerTest({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 }, fleet: { size: FLEET } }, (s) => (sim = s));
  const calls = () => sim.server.callsTo('terminal/terminal-updates');
  afterEach(function () {
    this.currentTest.cleanup?.();
  });
  const fleetIds = () => Array.from({ length: FLEET }, (_, i) => sim.terminal.fleet.primeId(i));
  /** One "poll" msg to the node of flow `n`, until its call has reached the simulator. */
  const poll = async (n, what) => {
    const before = calls().length;
    n.get('tu').receive({ payload: 'poll' });
    await until(() => calls().length > before, 30000, what);
    await sleep(100);
  };

  it('the whole fleet once, each msg a terminal by PrimeID; a poll after it emits nothing again', async function () {
    const n = await load(nodeFlow(sim, updatesNode()));
    const out = collect(n.get('out'));
    const caught = collect(n.get('caught'));
    n.get('tu').receive({ payload: 'poll' });
    await until(() => out.length >= FLEET, 30000, 'the fleet');
    n.get('tu').receive({ payload: 'poll' });
    const before = calls().length;
    await until(() => calls().length > before, 10000, 'one more poll');
    await sleep(200);
    assert.equal(out.length, FLEET, 'no terminal repeated');
    assert.deepEqual(new Set(out.map((m) => m.topic)), new Set(fleetIds()), 'every terminal, msg.topic its PrimeID');
    for (const m of out) assert.equal(m.payload.PrimeID, m.topic);
    const big = out.find((m) => typeof m.payload.LastRegistrationMessageID === 'string');
    if (big) assert.ok(BigInt(big.payload.LastRegistrationMessageID) > BigInt(Number.MAX_SAFE_INTEGER), 'a string only above 2^53');
    assert.ok(out.every((m) => /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/.test(m.payload.UpdateUTC)));
    assert.ok(calls().every((c) => new URLSearchParams(c.query).get('FromUTC')), 'every call asks FromUTC');
    assert.equal(caught.length, 0);
  });

  it('a crowded second (700 changes, 500 a reply) and 60 after it: none twice, 500 of the 700, all 60, no loop, one warning', async function () {
    const crowdSec = nowSec() - 120;
    const n = await load(nodeFlow(sim, updatesNode({ startFrom: '-1h' })));
    const crowd = sim.terminal.fleet.crowd(700, crowdSec, 0);
    const after = Array.from({ length: 60 }, (_, k) => sim.terminal.fleet.primeId(700 + k));
    after.forEach((id, k) => sim.terminal.fleet.register(id, crowdSec + 1 + Math.floor(k / 10)));
    const warns = recordWarnings(n.get('tu'));
    const out = collect(n.get('out'));
    const keys = () => out.map((m) => `${m.topic}|${m.payload.UpdateUTC}`);
    for (let i = 0; i < 4; i++) {
      const before = calls().length;
      n.get('tu').receive({ payload: 'poll' });
      await until(() => calls().length > before, 10000, `poll ${i + 1}`);
      await sleep(100);
    }
    await until(() => after.every((id) => out.some((m) => m.topic === id)), 10000, 'the 60 after the crowded second');
    assert.equal(new Set(keys()).size, out.length, 'no update emitted twice');
    const fromCrowd = out.filter((m) => crowd.includes(m.topic));
    assert.ok(fromCrowd.length >= 500, `the reply's worth of the crowded second (${fromCrowd.length})`);
    assert.ok(calls().length < 12, `no loop on the crowded second (${calls().length} calls)`);
    assert.equal(warns.filter((w) => /filled a whole reply/.test(w)).length, 1, warns.join(' | '));
  });

  it('a terminal that changes again after the drain comes out again, once, with its new state', async function () {
    // The fleet's own updates are all at least a minute old: from 40 s back, only this one.
    const n = await load(nodeFlow(sim, updatesNode({ startFrom: utc(nowSec() - 40) })));
    const out = collect(n.get('out'));
    const id = sim.terminal.fleet.primeId(5);
    sim.terminal.fleet.register(id, nowSec() - 30);
    n.get('tu').receive({ payload: 'poll' });
    await until(() => out.length === 1, 10000, 'the registration');
    sim.terminal.fleet.update(id, { mode: 1, wakeCode: 2 }, nowSec());
    for (let i = 0; i < 2; i++) {
      const before = calls().length;
      n.get('tu').receive({ payload: 'poll' });
      await until(() => calls().length > before, 10000, 'a poll');
    }
    await until(() => out.length === 2, 10000, 'the mode change');
    await sleep(200);
    assert.equal(out.length, 2);
    assert.equal(out[1].topic, id);
    assert.equal(out[1].payload.LastOperationMode, 1);
    assert.ok(out[1].payload.UpdateUTC >= out[0].payload.UpdateUTC);
  });

  it('late arrivals into the second already read (simulator lateCount over /_sim): each update once, the late ones too', async function () {
    const ctl = async (b) => {
      const r = await fetch(`${sim.url}/_sim/terminal-updates`, { method: 'POST', body: JSON.stringify(b) });
      assert.equal(r.status, 200, JSON.stringify(b));
      return r.json();
    };
    // The fleet's own updates are all at least a minute old: from 40 s back, only these.
    const n = await load(nodeFlow(sim, updatesNode({ startFrom: utc(nowSec() - 40) })));
    const out = collect(n.get('out'));
    const caught = collect(n.get('caught'));
    const sec = nowSec() - 10;
    // 300 in the second before and 300 in `sec`: two replies, the second of them all `sec`.
    await ctl({ count: 300, sec: sec - 1, from: 0 });
    const seeded = await ctl({ count: 300, sec, from: 300, lateCount: 7, lateAfterMs: 600_000 });
    const late = seeded.late;
    assert.equal(late.length, 7);
    await poll(n, 'the first poll');
    await until(() => out.length === 600, 20000, 'the 600 on time');
    await poll(n, 'a poll with nothing new');
    assert.equal(out.length, 600, 'nothing again');
    assert.ok(!out.some((m) => late.includes(m.topic)), 'the late ones were not visible yet');
    const lastFrom = new URLSearchParams(calls().at(-1).query).get('FromUTC');
    assert.equal(lastFrom, utc(sec), 'the mark is on the second the late ones land in');
    assert.equal((await ctl({ release: true })).released, 7);
    await poll(n, 'the poll after the late arrivals');
    await until(() => out.length === 607, 10000, 'the 7 late updates');
    await poll(n, 'one more poll');
    await sleep(200);
    const keys = out.map((m) => `${m.topic}|${m.payload.UpdateUTC}`);
    assert.equal(out.length, 607, 'each update once');
    assert.equal(new Set(keys).size, 607, 'none twice');
    assert.deepEqual(out.slice(600).map((m) => m.topic), late, 'the late ones after the others');
    assert.ok(out.slice(600).every((m) => m.payload.UpdateUTC === utc(sec) && m.payload.IsRegistered === 1), 'in the second already read');
    assert.equal(caught.length, 0);
  });

  it('late updates for every change (simulator lateUpdatesBySeconds, --late-update-seconds): one landing in a second already served comes out, once', async function () {
    const LATE = 40;
    // The fleet's own updates are all at least a minute old: from 50 s back, only these two.
    const n = await load(nodeFlow(sim, updatesNode({ startFrom: utc(nowSec() - 50) })));
    const out = collect(n.get('out'));
    const caught = collect(n.get('caught'));
    sim.terminal.configure({ lateUpdatesBySeconds: LATE });
    const [a, b] = [sim.terminal.fleet.primeId(5), sim.terminal.fleet.primeId(6)];
    sim.terminal.fleetChange(a, { mode: 1, wakeCode: 2 });
    const served = nowSec();
    await poll(n, 'the first poll');
    await until(() => out.length === 1, 30000, 'the first change');
    // The poll went out after `served`: the feed has served every second up to it.
    sim.terminal.fleetChange(b, { mode: 1, wakeCode: 2 });
    await poll(n, 'the poll after the late change');
    await until(() => out.length === 2, 30000, 'the late change');
    await poll(n, 'one more poll');
    await sleep(200);
    assert.deepEqual(out.map((m) => m.topic), [a, b], 'each change once, the late one too');
    const [first, late] = out.map((m) => m.payload);
    assert.ok(late.UpdateUTC <= utc(served), `the late one landed in a second already served (${late.UpdateUTC}, served up to ${utc(served)})`);
    assert.ok(late.UpdateUTC >= first.UpdateUTC, 'at or after the mark');
    assert.ok(first.LastOperationMode === 1 && late.LastOperationMode === 1, 'with their new mode');
    assert.equal(caught.length, 0);
  });

  it('a runtime restart mid-drain (the mark in its file under the user directory): every terminal once in all', async function () {
    const userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'iotgw-tu-'));
    helper.settings({ userDir });
    this.test.cleanup = () => {
      helper.settings({});
      fs.rmSync(userDir, { recursive: true, force: true });
    };
    // The second request waits until the runtime has stopped: the stop is surely mid-drain.
    const route = sim.server.routes.find((r) => r.name === 'terminal/terminal-updates');
    const real = route.handler;
    let release;
    const gate = new Promise((r) => (release = r));
    let n2 = 0;
    route.handler = async (req) => {
      if (++n2 === 2) await gate;
      return real(req);
    };
    const flow = () => nodeFlow(sim, updatesNode());
    let n = await load(flow());
    const first = collect(n.get('out'));
    n.get('tu').receive({ payload: 'poll' });
    await until(() => first.length >= 500 && n2 >= 2, 10000, 'the first reply');
    await stopRuntime();
    release();
    const seen = first.length;
    assert.ok(seen < FLEET, `stopped mid-drain (${seen})`);
    n = await load(flow());
    const second = collect(n.get('out'));
    n.get('tu').receive({ payload: 'poll' });
    await until(() => seen + second.length >= FLEET, 20000, 'the rest of the fleet');
    await sleep(200);
    const all = [...first, ...second].map((m) => m.topic);
    assert.equal(all.length, FLEET, 'none repeated');
    assert.equal(new Set(all).size, FLEET, 'none lost');
    assert.ok(fs.existsSync(path.join(userDir, 'iotgw-feeds', 'terminal-updates-tu.json')), 'the mark file is named after the feed');
  });

  it('batch mode: one msg per reply with fromUTC and nextFromUTC', async function () {
    const n = await load(nodeFlow(sim, updatesNode({ output: 'batch' })));
    const out = collect(n.get('out'));
    n.get('tu').receive({ payload: 'poll' });
    await until(() => out.reduce((s, m) => s + m.payload.length, 0) >= FLEET, 20000, 'the fleet in batches');
    assert.ok(out.length >= 3 && out.every((m) => m.topic === 'terminalUpdates' && Array.isArray(m.payload) && m.payload.length <= 500));
    assert.ok(out.every((m) => /^\d{4}-/.test(m.fromUTC) && m.nextFromUTC >= m.fromUTC));
  });

  it('a malformed record (PrimeID 5): one Catch with the raw record, the rest of the reply goes out, never again', async function () {
    sim.server.inject({ kind: 'wrong-types', route: 'terminal/terminal-updates', patch: { 'Terminals.2.PrimeID': 5 }, times: Infinity });
    const n = await load(nodeFlow(sim, updatesNode({ startFrom: utc(nowSec() - 40) })));
    const ids = Array.from({ length: 5 }, (_, k) => sim.terminal.fleet.primeId(k));
    ids.forEach((id) => sim.terminal.fleet.register(id, nowSec() - 10));
    const out = collect(n.get('out'));
    const caught = collect(n.get('caught'));
    for (let i = 0; i < 3; i++) {
      const before = calls().length;
      n.get('tu').receive({ payload: 'poll' });
      await until(() => calls().length > before, 10000, 'a poll');
      await sleep(100);
    }
    assert.equal(out.length, 4, 'the four good records');
    assert.equal(caught.length, 1, 'one Catch in three polls');
    assert.equal(caught[0].error.code, 'BAD_RESPONSE');
    assert.match(caught[0].error.message, /info\/terminal_updates: a terminal record of the reply is malformed \(PrimeID: /);
    assert.equal(caught[0].payload.PrimeID, 5, 'the raw record');
  });

  it('bad control input is BAD_INPUT naming the field; nothing is requested', async function () {
    const n = await load(nodeFlow(sim, updatesNode()));
    const caught = collect(n.get('caught'));
    n.get('tu').receive({ payload: { fromUTC: '2026-13-45 00:00:00' } });
    n.get('tu').receive({ payload: 42 });
    await until(() => caught.length === 2, 5000, 'two errors');
    assert.deepEqual(caught.map((m) => m.error.code), ['BAD_INPUT', 'BAD_INPUT']);
    assert.match(caught[0].error.message, /msg\.payload\.fromUTC/);
    assert.equal(calls().length, 0);
  });

  it('a feed name with a space is refused at start (one error naming feedName), nothing is requested', async function () {
    await load(nodeFlow(sim, updatesNode({ feedName: 'my feed', autoStart: true, intervalSeconds: 1 })));
    const errors = () => logged('tu');
    await until(() => errors().length >= 1, 5000, 'the error');
    await sleep(1500);
    assert.match(errors()[0], /feedName "my feed"/);
    assert.equal(errors().length, 1);
    assert.equal(calls().length, 0);
  });
});
