'use strict';
/**
 * Faults of disk and gateway on the from-mobile feed (issue 25), in a real Node-RED runtime
 * against the simulator: a mark that cannot be written or read, and a gateway that breaks
 * the API's rules (too many records, always full, repeats, a malformed message, a
 * NextFromUTC far ahead, bad base64). A hostile reply is played by swapping the
 * simulator's own re_messages handler for the test's (the loopback server stays real).
 */
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { simulatorPerTest, helper, load, until, collect, recordStatuses, stopRuntime, messagePollerNode, nodeFlow } = require('../helpers/harness');

const v8 = require('node:v8');
const vm = require('node:vm');

// A real garbage collection before each heap reading (mocha runs without --expose-gc).
v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc');

const utc = (sec) => new Date(sec * 1000).toISOString().slice(0, 19).replace('T', ' ');
const nowSec = () => Math.floor(Date.now() / 1000);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const FILE = 'message-poller-poller.json';

describe('iotgw-message-poller: faults of disk and gateway', function () {
  this.timeout(60000);
  let sim;
  simulatorPerTest({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 } }, (s) => (sim = s));

  let userDir;
  beforeEach(function () {
    userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'iotgw-faults-'));
    helper.settings({ userDir });
  });
  afterEach(function () {
    helper.settings({});
    fs.rmSync(userDir, { recursive: true, force: true });
  });
  const feeds = () => path.join(userDir, 'iotgw-feeds');

  const flow = (props) =>
    nodeFlow(sim, messagePollerNode({ intervalSeconds: 1, ...props }), {
      // Every input msg that ends with done() (no error) shows here.
      extra: [
        { id: 'ender', type: 'complete', scope: ['poller'], uncaught: false, wires: [['completed']] },
        { id: 'completed', type: 'helper' },
      ],
    });
  const route = () => sim.server.routes.find((r) => r.name === 'terminal/re_messages');
  const calls = () => sim.server.callsTo('terminal/re_messages').length;
  /** Runs `before(n)` as request n (1-based) arrives, then the simulator's own handler. */
  const onRequest = (before) => {
    const r = route();
    const real = r.handler;
    let n = 0;
    r.handler = async (req) => {
      n++;
      await before(n, req);
      return real(req);
    };
  };
  /** The simulator answers re_messages with `reply(n, req)` instead (a hostile gateway). */
  const hostile = (reply) => {
    let n = 0;
    route().handler = (req) => ({ status: 200, body: reply(++n, req) });
  };
  const spy = (node, method) => {
    const seen = [];
    const orig = node[method].bind(node);
    node[method] = (m, ...rest) => {
      seen.push(m instanceof Error ? m.message : String(m));
      return orig(m, ...rest);
    };
    return seen;
  };
  // Tests run as root: chmod would not stop a write. The folder is moved aside (its marks
  // kept, as on a disk gone read-only) and a regular file takes its place; mending undoes it.
  const breakFeeds = () => {
    fs.renameSync(feeds(), `${feeds()}.saved`);
    fs.writeFileSync(feeds(), 'not a folder');
  };
  const mendFeeds = () => {
    fs.rmSync(feeds(), { force: true });
    fs.renameSync(`${feeds()}.saved`, feeds());
  };
  const ids = (msgs) => msgs.map((m) => String(m.payload.ID));
  const dupes = (list) => list.length - new Set(list).size;

  describe('a mark that cannot be written', function () {
    it('stops emitting, one STORAGE error naming the file relative to the user directory, no fetch while broken, then resumes: every message once', async function () {
      const base = nowSec() - 400;
      sim.terminal.mobile.seed({ count: 2000, perSecond: 10, startSec: base });
      const all = sim.terminal.mobile.fromMobile.items.map((m) => String(m.ID));
      onRequest((n) => {
        if (n === 2) breakFeeds(); // during the drain: reply 1's mark is written, reply 2's cannot be
      });
      const n = await load(flow({ startFrom: utc(base) }));
      const statuses = recordStatuses(n.get('poller'));
      const out = collect(n.get('out'));
      const caught = collect(n.get('caught'));
      await until(() => caught.length >= 1, 60000, 'the STORAGE error');
      assert.equal(caught[0].error.code, 'STORAGE', caught[0].error.message);
      assert.match(caught[0].error.message, /iotgw-feeds\/message-poller-poller\.json/);
      assert.ok(!caught[0].error.message.includes(userDir), 'never the absolute path');
      const emittedWhenBroken = out.length;
      const callsWhenBroken = calls();
      assert.equal(callsWhenBroken, 2);
      assert.ok(emittedWhenBroken > 500 && emittedWhenBroken <= 1000, `${emittedWhenBroken}: the reply in flight went out`);
      // Three more polls of the timer with the folder broken (each shows its failure): the write
      // is retried, nothing is fetched or emitted.
      const reds = () => statuses.filter((s) => s.fill === 'red').length;
      const redsWhenBroken = reds();
      await until(() => reds() >= redsWhenBroken + 3, 30000, 'three more polls with the folder broken', () => JSON.stringify(statuses.slice(-3)));
      assert.equal(calls(), callsWhenBroken, 'no request while the mark cannot be written');
      assert.equal(out.length, emittedWhenBroken, 'nothing more emitted');
      assert.equal(caught.length, 1, 'one error, not one per interval');
      const red = statuses.filter((s) => s.fill === 'red');
      assert.ok(red.length >= 1 && red.every((s) => /storage/.test(s.text)), JSON.stringify(red));
      mendFeeds();
      await until(() => out.length >= 2000, 60000, 'the rest of the feed');
      await sleep(1500);
      assert.equal(out.length, 2000, 'no message twice');
      assert.equal(dupes(ids(out)), 0);
      assert.deepEqual([...ids(out)].sort(), [...all].sort(), 'every message once');
      const mark = JSON.parse(fs.readFileSync(path.join(feeds(), FILE), 'utf8'));
      assert.ok(mark.fromUtc >= utc(base + 199), `the mark moved on (${mark.fromUtc})`);
      assert.equal(statuses[statuses.length - 1].fill, 'green');
    });

    it('a restart while the mark cannot be written repeats at most the one reply in flight, and skips nothing', async function () {
      const base = nowSec() - 400;
      sim.terminal.mobile.seed({ count: 2000, perSecond: 10, startSec: base });
      const all = sim.terminal.mobile.fromMobile.items.map((m) => String(m.ID));
      onRequest((n) => {
        if (n === 2) breakFeeds();
      });
      let n = await load(flow({ startFrom: utc(base) }));
      const first = collect(n.get('out'));
      const caught = collect(n.get('caught'));
      await until(() => caught.some((m) => m.error.code === 'STORAGE'), 60000, 'the STORAGE error');
      await stopRuntime();
      mendFeeds();
      n = await load(flow({ startFrom: utc(base) }));
      const second = collect(n.get('out'));
      const got = () => new Set([...ids(first), ...ids(second)]).size;
      await until(() => got() >= 2000, 60000, 'every message');
      await sleep(1500);
      const list = [...ids(first), ...ids(second)];
      assert.deepEqual([...new Set(list)].sort(), [...all].sort(), 'none skipped');
      const repeated = dupes(list);
      assert.ok(repeated > 0 && repeated <= 500, `${repeated} repeated: at most the one reply in flight`);
      this.test.title += ` (${repeated} repeated)`;
    });
  });

  describe('a mark that cannot be read', function () {
    for (const [name, text] of [
      ['torn', '{"fromUtc":"2026-01-01 00:00:00","seen":["1","2'],
      ['garbage', '{"fromUtc":"garbage"}'],
    ]) {
      it(`a ${name} mark file: no poll, red status saying to send {fromUTC}, the file kept aside; {fromUTC} goes on`, async function () {
        sim.terminal.mobile.seed({ count: 5, perSecond: 5, startSec: nowSec() - 30 });
        fs.mkdirSync(feeds(), { recursive: true });
        fs.writeFileSync(path.join(feeds(), FILE), text);
        const n = await load(flow());
        const statuses = recordStatuses(n.get('poller'));
        const out = collect(n.get('out'));
        const caught = collect(n.get('caught'));
        await until(() => caught.length >= 1, 60000, 'the STORAGE error');
        // Two more polls of the timer, each stopped by the mark (each shows red): nothing fetched.
        const reds = () => statuses.filter((s) => s.fill === 'red').length;
        const redsAtError = reds();
        await until(() => reds() >= redsAtError + 2, 30000, 'two more polls', () => JSON.stringify(statuses.slice(-3)));
        assert.equal(calls(), 0, 'nothing polled');
        assert.equal(out.length, 0);
        assert.equal(caught.length, 1, 'one error');
        const err = caught[0].error;
        assert.equal(err.code, 'STORAGE');
        assert.match(err.message, /fromUTC/);
        assert.ok(!err.message.includes(userDir), 'never the absolute path');
        const files = fs.readdirSync(feeds());
        const bad = files.filter((f) => f.startsWith(`${FILE}.bad-`));
        assert.equal(bad.length, 1, files.join(', '));
        assert.ok(!files.includes(FILE), 'the bad file is moved aside');
        assert.equal(fs.readFileSync(path.join(feeds(), bad[0]), 'utf8'), text, 'kept as it was, not overwritten');
        assert.ok(err.message.includes(`iotgw-feeds/${bad[0]}`), err.message);
        const last = statuses.filter((s) => s.fill === 'red').pop();
        assert.match(last.text, /send \{fromUTC\}/);
        // The way on: a reset to a chosen time.
        n.get('poller').receive({ payload: { fromUTC: utc(nowSec() - 60) } });
        await until(() => out.length === 5, 60000, 'the feed after the reset');
        assert.equal(fs.readFileSync(path.join(feeds(), bad[0]), 'utf8'), text, 'the kept file stays');
        assert.match(JSON.parse(fs.readFileSync(path.join(feeds(), FILE), 'utf8')).fromUtc, /^\d{4}-/);
      });
    }

    it('a named context store holding garbage: no poll, STORAGE, the value kept aside, {fromUTC} goes on', async function () {
      helper.settings({ userDir, contextStorage: { default: { module: 'memory' }, mem2: { module: 'memory' } } });
      const redNodes = helper._redNodes;
      const orig = redNodes.loadFlows;
      redNodes.loadFlows = async function (...args) {
        await redNodes.loadContextsPlugin();
        return orig.apply(this, args);
      };
      try {
        sim.terminal.mobile.seed({ count: 3, perSecond: 3, startSec: nowSec() - 30 });
        const n = await load(flow({ contextStore: 'mem2', autoStart: false }));
        const ctx = n.get('poller').context();
        await new Promise((r) => ctx.set('feedMark', { fromUtc: 'garbage', seen: 7 }, 'mem2', r));
        const out = collect(n.get('out'));
        const caught = collect(n.get('caught'));
        n.get('poller').receive({ payload: 'poll' });
        await until(() => caught.length >= 1, 60000, 'the STORAGE error');
        assert.equal(caught[0].error.code, 'STORAGE');
        assert.match(caught[0].error.message, /context store "mem2".*fromUTC/);
        assert.equal(calls(), 0, 'nothing polled');
        const keys = await new Promise((r) => ctx.keys('mem2', (e, k) => r(k)));
        const aside = keys.find((k) => k.startsWith('feedMark-bad-'));
        assert.ok(aside, keys.join(', '));
        assert.deepEqual(ctx.get(aside, 'mem2'), { fromUtc: 'garbage', seen: 7 });
        n.get('poller').receive({ payload: { fromUTC: utc(nowSec() - 60) } });
        n.get('poller').receive({ payload: 'poll' });
        await until(() => out.length === 3, 60000, 'the feed after the reset');
        assert.equal(caught.length, 1, 'a poll right after the reset asks from the reset mark');
      } finally {
        redNodes.loadFlows = orig;
        helper.settings({ userDir, contextStorage: undefined });
      }
    });
  });

  describe('a hostile or broken gateway', function () {
    const msg = (id, sec, extra = {}) => ({ ID: id, MessageUTC: utc(sec), ReceiveUTC: utc(sec), SIN: 128, MobileID: '01000001SKYA001', RawPayload: 'gAE=', ...extra });

    /** One poll from `start` refused: BAD_RESPONSE whose message matches `why`, nothing emitted, a red status. */
    async function refusedPoll(start, why) {
      const n = await load(flow({ startFrom: start, autoStart: false }));
      const out = collect(n.get('out'));
      const caught = collect(n.get('caught'));
      n.get('poller').receive({ payload: 'poll' });
      await until(() => caught.length === 1, 60000, 'the error');
      assert.equal(caught[0].error.code, 'BAD_RESPONSE');
      assert.match(caught[0].error.message, why);
      assert.equal(out.length, 0);
      assert.equal(n.get('poller').status.lastCall.args[0].fill, 'red');
      return { n, out };
    }

    it('10,000 messages in one reply: BAD_RESPONSE, nothing emitted, the mark kept', async function () {
      const sec = nowSec() - 100;
      hostile(() => ({ ErrorID: 0, NextFromUTC: utc(sec), Messages: Array.from({ length: 10000 }, (_, i) => msg(i + 1, sec)) }));
      await refusedPoll(utc(nowSec() - 3600), /10000 records, more than the 500/);
      assert.ok(!fs.existsSync(path.join(feeds(), FILE)), 'the mark kept (the start mark, not written by a refused reply)');
    });

    // A full reply here is 100 messages (fullAt 100: "Full at" as a user may set it), not the
    // API's 500: the poll's bound of 50 replies is met with a fifth of the messages to emit.
    it('always full, new IDs every reply: an input "poll" ends after a bounded number of replies; the next poll goes on; memory flat', async function () {
      let id = 0;
      const base = nowSec() - 80000;
      hostile((n) => {
        const sec = base + n;
        return { ErrorID: 0, NextFromUTC: utc(sec), Messages: Array.from({ length: 100 }, () => msg(++id, sec)) };
      });
      const n = await load(flow({ startFrom: utc(base), autoStart: false, fullAt: 100 }));
      let count = 0;
      n.get('out').on('input', () => count++);
      const ends = [];
      const heaps = [];
      const completed = collect(n.get('completed'));
      for (let i = 0; i < 3; i++) {
        const before = calls();
        n.get('poller').receive({ payload: 'poll' });
        await until(() => completed.length === i + 1, 60000, `input poll ${i + 1} to end`);
        ends.push(calls() - before);
        helper._sandbox.resetHistory(); // the test helper's spies keep every msg sent: not ours
        gc();
        heaps.push(process.memoryUsage().heapUsed);
        await sleep(100);
      }
      assert.deepEqual(ends, [50, 50, 50], 'each poll read 50 replies and ended');
      await until(() => count >= 15000, 60000, 'the msgs of three polls');
      assert.equal(count, 15000, 'every new message once');
      // 5,000 msgs between the two readings: 20 MB is 4 KB a msg (as 100 MB was for 25,000).
      const growth = heaps[2] - heaps[1];
      assert.ok(growth < 20 * 1024 * 1024, `heap grew ${Math.round(growth / 1048576)} MB between the second and third poll`);
      this.test.title += ` (heap after polls: ${heaps.map((h) => Math.round(h / 1048576)).join(', ')} MB)`;
    });

    it('the same IDs again at later seconds: never emitted twice, the poll still ends', async function () {
      const base = nowSec() - 50000;
      hostile((n) => {
        const sec = base + n;
        // The same 100 IDs (a full reply at fullAt 100), at a new second in every reply.
        return { ErrorID: 0, NextFromUTC: utc(sec), Messages: Array.from({ length: 100 }, (_, i) => msg(i + 1, sec)) };
      });
      const n = await load(flow({ startFrom: utc(base), autoStart: false, fullAt: 100 }));
      const out = collect(n.get('out'));
      const completed = collect(n.get('completed'));
      for (let i = 0; i < 2; i++) {
        n.get('poller').receive({ payload: 'poll' });
        await until(() => completed.length === i + 1, 60000, `input poll ${i + 1} to end`);
      }
      assert.equal(calls(), 100, 'two polls of 50 replies, each ended');
      assert.equal(out.length, 100, 'each ID once');
      assert.equal(dupes(ids(out)), 0);
    });

    it('a malformed message (ID 1.5): one Catch with the raw record, the rest of the reply goes out, never reported again', async function () {
      sim.terminal.mobile.seed({ count: 10, perSecond: 10, startSec: nowSec() - 20 });
      sim.server.inject({ kind: 'wrong-types', route: 'terminal/re_messages', patch: { 'Messages.3.ID': 1.5 }, times: 1 });
      const n = await load(flow({ autoStart: false }));
      const out = collect(n.get('out'));
      const caught = collect(n.get('caught'));
      const completed = collect(n.get('completed'));
      n.get('poller').receive({ payload: 'poll' });
      await until(() => out.length === 9 && caught.length === 1 && completed.length === 1, 60000, 'nine msgs, one error and the poll\'s end');
      assert.equal(caught[0].error.code, 'BAD_RESPONSE');
      assert.match(caught[0].error.message, /malformed \(ID: /);
      assert.equal(caught[0].payload.ID, 1.5, 'the raw record');
      // The same malformed record in every later reply (FromUTC is inclusive): never reported again.
      sim.server.inject({ kind: 'wrong-types', route: 'terminal/re_messages', patch: { 'Messages.3.ID': 1.5 }, times: Infinity });
      for (let i = 0; i < 2; i++) {
        n.get('poller').receive({ payload: 'poll' });
        await until(() => completed.length === i + 2, 60000, 'the poll to end');
      }
      assert.ok(calls() >= 3);
      assert.equal(out.length, 9);
      assert.equal(caught.length, 1, 'reported once');
    });

    it('NextFromUTC 9999-12-31: BAD_RESPONSE, red status, the mark kept, nothing emitted; the next reply goes on', async function () {
      sim.terminal.mobile.seed({ count: 4, perSecond: 4, startSec: nowSec() - 20 });
      sim.server.inject({ kind: 'wrong-types', route: 'terminal/re_messages', patch: { NextFromUTC: '9999-12-31 23:59:59' }, times: 1 });
      const start = utc(nowSec() - 60);
      const { n, out } = await refusedPoll(start, /9999-12-31 23:59:59 is \d+ h ahead/);
      assert.ok(!fs.existsSync(path.join(feeds(), FILE)) || JSON.parse(fs.readFileSync(path.join(feeds(), FILE), 'utf8')).fromUtc === start, 'the mark kept');
      n.get('poller').receive({ payload: 'poll' });
      await until(() => out.length === 4, 60000, 'the messages');
    });

    it('RawPayload that is not base64: a warning, msg.raw left out, never garbage bytes', async function () {
      sim.terminal.mobile.seed({ count: 2, perSecond: 2, startSec: nowSec() - 20 });
      sim.server.inject({ kind: 'wrong-types', route: 'terminal/re_messages', patch: { 'Messages.0.RawPayload': '!!not*base64' }, times: 1 });
      const n = await load(flow({ autoStart: false }));
      const warns = spy(n.get('poller'), 'warn');
      const out = collect(n.get('out'));
      n.get('poller').receive({ payload: 'poll' });
      await until(() => out.length === 2, 60000, 'two msgs');
      assert.equal(out[0].raw, undefined, 'no garbage bytes');
      assert.equal(out[0].payload.RawPayload, '!!not*base64', 'as received');
      assert.ok(Buffer.isBuffer(out[1].raw));
      assert.equal(warns.filter((w) => /RawPayload is not base64/.test(w)).length, 1, warns.join(' | '));
    });
  });
});
