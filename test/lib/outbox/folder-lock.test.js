'use strict';
/**
 * One process at a time on an outbox folder (issue 45, "sends nothing twice"): real child
 * processes on one folder. A second process is refused (STORAGE, naming the folder and the
 * holder's pid) while the first lives; once the first is SIGKILLed the second takes the
 * folder over and drains it, each message created once at the simulator; a lock left by a
 * dead pid, a pid now running another process or an earlier boot is taken over; one whose pid
 * cannot be checked (another host or container) is watched for its refreshes; of processes
 * racing for a stale lock exactly one wins; close gives the folder up; a holder whose lock
 * was taken from it writes and sends nothing more.
 */
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { startSimulator, TerminalClient } = require('../../..');
const { FileOutboxStore } = require('../../../dist/lib/outbox/file-store');
const { processStart } = require('../../../dist/lib/outbox/folder-lock');
const { waitUntil } = require('../../helpers/wait');
const { FakeGateway, openOutbox, entries } = require('./fake-gateway');
const { refused } = require('../../helpers/clients');

const LOCK_CHILD = path.join(__dirname, '../../helpers/outbox-lock-child.js');
const CLIENT_CHILD = path.join(__dirname, '../../helpers/outbox-client-child.js');
const DEST = '01000001SKYA001';
const SECRET = 'demo-secret';
const payload = (i) => Buffer.from([128, 9, i >> 8, i & 255]).toString('base64');
const children = [];

/** A child process, its stdout lines as they come. */
function child(args) {
  const c = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  const run = { child: c, lines: [], out: '', exited: false, say: (l) => c.stdin.write(`${l}\n`) };
  let buf = '';
  c.stdout.on('data', (d) => {
    buf += d;
    run.out += d;
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      run.lines.push(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
    }
  });
  c.stderr.on('data', (d) => (run.out += d));
  c.on('exit', () => (run.exited = true));
  children.push(run);
  return run;
}

const has = (run, re) => run.lines.some((l) => re.test(l));
const lineOf = (run, re) => run.lines.find((l) => re.test(l));
const opened = (run) => lineOf(run, /^(held|refused )/);

async function kill(run) {
  if (!run.exited) run.child.kill('SIGKILL');
  await waitUntil(() => run.exited, 30000, 'the child killed');
}

/** The lock files of a folder: {generation: content}. */
function locks(dir) {
  const out = {};
  for (const n of fs.readdirSync(dir)) if (/^lock\.\d+$/.test(n)) out[n] = JSON.parse(fs.readFileSync(path.join(dir, n), 'utf8'));
  return out;
}
const holders = (dir) => Object.values(locks(dir)).filter((l) => !l.free);

/** A pid that was alive a moment ago and is not now. */
async function deadPid() {
  const c = spawn(process.execPath, ['-e', '0']);
  const pid = c.pid;
  await new Promise((r) => c.on('exit', r));
  return pid;
}

const bootId = () => {
  try {
    return fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return undefined;
  }
};
const staleLock = (dir, fields) => fs.writeFileSync(path.join(dir, 'lock.7'), JSON.stringify({ host: os.hostname(), boot: bootId(), at: Date.now() - 60000, token: 'old', ...fields }));

describe('outbox folder lock: one process per folder (issue 45)', function () {
  this.timeout(120000);
  let dir;
  let sim;
  let client;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iotgw-outbox-lock-'));
  });
  afterEach(async () => {
    for (const r of children.splice(0)) await kill(r);
    await client?.close();
    client = undefined;
    await sim?.close();
    sim = undefined;
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a second process is refused while the first lives (STORAGE, the folder and pid named, nothing accepted); close gives the folder up', async function () {
    const first = child([LOCK_CHILD, dir, '--now']);
    await waitUntil(() => opened(first), 30000, 'the first process holds the folder', () => first.out);
    assert.equal(opened(first), 'held');

    const second = child([LOCK_CHILD, dir, '--now']);
    await waitUntil(() => opened(second), 30000, 'the second process\'s answer', () => second.out);
    assert.match(opened(second), new RegExp(`^refused STORAGE the outbox is in use by another process \\(pid ${first.child.pid}\\), in the folder ".*${path.basename(dir)}"`));

    // A script's outbox on the folder: a catchable STORAGE error, no outbox to send through.
    sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 } });
    client = new TerminalClient({ baseUrl: sim.url, clientId: 'demo', clientSecret: SECRET, maxRetries: 0 });
    const err = await refused(client.outbox({ file: dir }), 'STORAGE');
    assert.match(err.message, new RegExp(`pid ${first.child.pid}\\b`));
    assert.ok(!err.message.includes(SECRET));
    assert.equal(sim.terminal.creations.total, 0);

    first.say('close');
    await waitUntil(() => has(first, /^closed$/), 30000, 'the first process closed its store', () => first.out);
    assert.deepEqual(holders(dir), [], 'close leaves no holder');
    const ob = await client.outbox({ file: dir });
    assert.equal(holders(dir)[0].pid, process.pid);
    await ob.close();
    assert.deepEqual(holders(dir), []);
  });

  it('after the first process is SIGKILLed, the second takes the folder over and drains it: each message created once', async function () {
    const N = 30;
    sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 } });
    sim.server.link.refuse(); // the entries wait in the first process
    const first = child([CLIENT_CHILD, sim.url, dir, '0', String(N)]);
    await waitUntil(() => has(first, /^all accepted$/), 60000, 'the first process accepted all', () => first.out.slice(-500));

    client = new TerminalClient({ baseUrl: sim.url, clientId: 'demo', clientSecret: SECRET, rateLimitCalls: 0, maxRetries: 0 });
    const err = await refused(client.outbox({ file: dir }), 'STORAGE');
    assert.match(err.message, new RegExp(`pid ${first.child.pid}\\b`));

    await kill(first);
    await sim.server.link.up();
    const ob = await client.outbox({ file: dir });
    const seen = [];
    ob.on('outcome', (o) => seen.push(o));
    await waitUntil(() => seen.length >= N, 60000, 'every accepted send\'s outcome', () => `${seen.length} outcomes; ${JSON.stringify(ob.state())}`);
    for (let i = 0; i < N; i++) assert.equal(sim.terminal.creations.count(DEST, { RawPayload: payload(i) }), 1, `message ${i}`);
    assert.equal(sim.terminal.creations.total, N);
    assert.deepEqual(seen.map((o) => o.meta.i).sort((a, b) => a - b), [...Array(N).keys()]);
    await ob.close();
  });

  it('a lock left by a dead pid, by a pid that now runs another process, from an earlier boot, or unrefreshed from another pid namespace is taken over; a live one is not', async function () {
    const stale = [{ pid: await deadPid(), start: '1' }];
    if (await processStart(process.ppid)) stale.push({ pid: process.ppid, start: 'not-its-start' });
    if (bootId()) stale.push({ pid: process.ppid, start: await processStart(process.ppid), boot: 'an-earlier-boot' });
    // Another pid namespace (a container): its pid means nothing here; its lock, never refreshed, is stale after the watch.
    if (fs.existsSync('/proc/self/ns/pid')) stale.push({ pid: process.ppid, start: await processStart(process.ppid), ns: 'pid:[1]' });
    for (const fields of stale) {
      fs.rmSync(dir, { recursive: true, force: true });
      fs.mkdirSync(dir);
      staleLock(dir, fields);
      const s = new FileOutboxStore(dir, { lockWatchMs: 1000 });
      await s.open();
      assert.deepEqual(Object.keys(locks(dir)), ['lock.8'], JSON.stringify(fields));
      assert.equal(holders(dir)[0].pid, process.pid);
      await s.close();
    }

    // A live holder (the parent of this process, as it started) is not taken over.
    fs.rmSync(dir, { recursive: true, force: true });
    fs.mkdirSync(dir);
    staleLock(dir, { pid: process.ppid, start: await processStart(process.ppid) });
    const err = await refused(new FileOutboxStore(dir).open(), 'STORAGE');
    assert.match(err.message, new RegExp(`pid ${process.ppid}\\b`));
  });

  it('a holder whose pid cannot be checked here (another host or container) is watched: refused while it refreshes its lock (every lockRefreshMs), taken over once it stops', async function () {
    // A real holder refreshing every 100 ms, its lock file made to say another host. A watch of
    // 4 s sees a refresh (at the default 5 s it would see none and take the folder).
    const holder = child([LOCK_CHILD, dir, '--now', '--refresh=100']);
    await waitUntil(() => opened(holder), 30000, 'the holder holds the folder', () => holder.out);
    const [name] = Object.keys(locks(dir));
    const file = path.join(dir, name);
    fs.writeFileSync(file, JSON.stringify({ ...locks(dir)[name], host: 'another-box' }));
    const far = await refused(new FileOutboxStore(dir, { lockWatchMs: 4000 }).open(), 'STORAGE');
    assert.match(far.message, new RegExp(`^the outbox is in use by pid ${holder.child.pid} on host "another-box" \\(it keeps its lock fresh\\), in the folder ".*${path.basename(dir)}"`));

    // Killed: its lock is no longer refreshed, and after the watch it is taken over.
    await kill(holder);
    const s = new FileOutboxStore(dir, { lockWatchMs: 1000 });
    await s.open();
    assert.deepEqual(holders(dir).map((h) => h.pid), [process.pid]);
    await s.close();
  });

  it('a holder whose lock file no longer names it (removed by hand, taken over) writes and sends nothing more', async function () {
    const gw = new FakeGateway();
    gw.mode = 'down';
    const ob = await openOutbox(dir, gw, { backoffMs: { first: 50, max: 200 } }, { lockRefreshMs: 200 });
    await ob.accept('m1', {}, entries(2));
    await waitUntil(() => gw.calls.length >= 1, 30000, 'a send tried while the link is down');
    for (const name of Object.keys(locks(dir))) fs.unlinkSync(path.join(dir, name));
    await waitUntil(() => !ob.store.holds(), 30000, 'the lost lock seen at a refresh (every 200 ms here)');
    const calls = gw.calls.length;
    gw.mode = 'ok';
    await waitUntil(() => /taken over by another process/.test(ob.state().problem ?? ''), 30000, 'the state saying why nothing goes', () => JSON.stringify(ob.state()));
    assert.equal(gw.calls.length, calls, 'no request after the lock was lost');
    assert.equal(gw.created.size, 0);
    await assert.rejects(ob.accept('m2', {}, entries(1)), (err) => err.code === 'STORAGE' && /taken over/.test(err.message));
    await ob.close();
  });

  it('of three processes racing for a stale lock, exactly one wins (five rounds)', async function () {
    for (let round = 0; round < 5; round++) {
      const d = path.join(dir, `r${round}`);
      fs.mkdirSync(d);
      staleLock(d, { pid: await deadPid() });
      const racers = [child([LOCK_CHILD, d]), child([LOCK_CHILD, d]), child([LOCK_CHILD, d])];
      await waitUntil(() => racers.every((r) => has(r, /^ready$/)), 30000, 'the racers ready');
      for (const r of racers) r.say('go');
      await waitUntil(() => racers.every((r) => opened(r)), 30000, 'every racer\'s answer', () => racers.map((r) => r.out).join(' | '));
      const answers = racers.map(opened);
      assert.equal(answers.filter((a) => a === 'held').length, 1, `round ${round}: ${answers.join(' | ')}`);
      const winner = racers[answers.indexOf('held')];
      for (const a of answers) if (a !== 'held') assert.match(a, new RegExp(`^refused STORAGE .*pid ${winner.child.pid}\\b`));
      assert.deepEqual(holders(d).map((h) => h.pid), [winner.child.pid]);
      for (const r of racers) await kill(r);
    }
  });
});
