'use strict';
/**
 * `npm start` with a dead proxy in the environment (issue 15, done-when): every example
 * talks to the simulator on loopback, which never goes through a proxy, so no node shows a
 * red status and no `[error]` line is logged.
 *
 * Instead of a fixed wait: the demo is watched until every request that reached the
 * simulator has been answered (none open for 1 s, at least 8 s after deploy, at most 40 s). An inject that fires once later
 * than that (the fleet dashboard's commands, 20 s after start: a pace for a person) is
 * clicked at once instead (handed a msg, as its button does). Every request the examples
 * send at deploy has then been answered, so a red status would have shown. The
 * simulator's call count proves the demo really sent requests.
 */
const assert = require('node:assert/strict');
const { fork } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { freePort, proxiedEnv } = require('../helpers/net');
const { loadExamples } = require('../../scripts/start');
const { waitUntil } = require('../helpers/wait');

const MIN_WATCH_MS = 8000;
/** The examples' inject nodes that fire once at deploy, later than the watch's minimum. */
const lateOnce = () =>
  loadExamples()
    .flatMap((ex) => ex.nodes)
    .filter((n) => n.type === 'inject' && n.once && Number(n.onceDelay) * 1000 > MIN_WATCH_MS - 3000)
    .map((n) => n.id);

describe('npm start with a dead proxy in the environment', function () {
  this.timeout(90000);
  let child;
  let dir;
  after(async function () {
    if (child && child.exitCode === null) {
      child.send('stop');
      await Promise.race([new Promise((r) => child.once('exit', r)), new Promise((r) => setTimeout(r, 5000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
    }
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('no red status and no [error] line after the demo has run', async function () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iotgw-demo-'));
    const port = await freePort();
    const env = proxiedEnv(`http://user:secret@127.0.0.1:${port}`);
    let log = '';
    child = fork(path.join(__dirname, '..', 'helpers', 'demo-child.js'), [path.join(dir, 'user')], { env, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
    child.stdout.on('data', (d) => (log += d));
    child.stderr.on('data', (d) => (log += d));
    const reds = [];
    let names = {};
    const ready = new Promise((resolve, reject) => {
      child.on('exit', (code) => reject(new Error(`demo exited (${code}):\n${log}`)));
      child.on('message', (m) => {
        if (m.ready) {
          names = m.names;
          resolve(m);
        }
        if (m.status) {
          if (m.status.status?.fill === 'red') reds.push(`${m.status.id}: ${m.status.status.text}`);
        }
      });
    });
    const info = await ready;
    assert.ok(info.deployed > 0, 'the examples were deployed');
    const start = Date.now();
    const late = lateOnce().filter((id) => names[id]);
    const click = (id) =>
      new Promise((resolve) => {
        const on = (m) => m.received !== undefined && (child.off('message', on), resolve(m.received));
        child.on('message', on);
        child.send({ receive: { id, msg: {} } });
      });
    // The runtime answers the deploy before its flows have started: a click finds the node once they have.
    for (const id of late) await waitUntil(() => click(id), 30000, `inject ${id} to be clicked (its flow started)`, { every: 100 });
    // Watch until every request that reached the simulator has been answered (none open for 1 s),
    // at least 8 s after deploy (the other injects fire once within 4 s, the pollers poll at
    // deploy). A request through the dead proxy would never reach it, and its node would show red
    // at once. The demo never goes quiet (the pollers poll again), and some requests wait minutes
    // for the demo account's rate budget: those are not sent yet, here as before.
    const ask = (what) =>
      new Promise((resolve) => {
        const on = (m) => m[what] !== undefined && (child.off('message', on), resolve(m[what]));
        child.on('message', on);
        child.send(what);
      });
    let answeredSince = 0;
    await waitUntil(
      async () => {
        const open = await ask('open');
        if (open > 0) answeredSince = 0;
        else answeredSince ||= Date.now();
        return Date.now() - start >= MIN_WATCH_MS && answeredSince > 0 && Date.now() - answeredSince >= 1000;
      },
      40000,
      'every request at the simulator answered',
      { every: 250 },
    );
    const calls = await ask('calls');
    assert.ok(calls >= 5, `the demo sent requests to the simulator (${calls})`);
    assert.deepEqual(reds.map((r) => r.replace(/^[^:]+/, (id) => names[id] ?? id)), [], 'no node showed a red status');
    const errors = log.split('\n').filter((l) => /\[error\]/.test(l));
    assert.deepEqual(errors, [], 'no [error] line in the log');
    assert.doesNotMatch(log, /secret/);
  });
});
