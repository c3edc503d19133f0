'use strict';
/**
 * `npm start` with a dead proxy in the environment (issue 15, done-when): every example
 * talks to the simulator on loopback, which never goes through a proxy, so no node shows a
 * red status and no `[error]` line is logged.
 *
 * Instead of a fixed 40 s wait: the demo is watched until it is quiet (every node's
 * last status is not "busy" for 3 s, at least 8 s after deploy, at most 40 s). Every
 * request the examples send at deploy has then been answered, so a red status would have
 * shown. The simulator's call count proves the demo really sent requests.
 */
const assert = require('node:assert/strict');
const { fork } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { freePort, proxiedEnv } = require('../helpers/net');

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
    const last = new Map();
    const reds = [];
    let names = {};
    let changedAt = Date.now();
    const ready = new Promise((resolve, reject) => {
      child.on('exit', (code) => reject(new Error(`demo exited (${code}):\n${log}`)));
      child.on('message', (m) => {
        if (m.ready) {
          names = m.names;
          resolve(m);
        }
        if (m.status) {
          last.set(m.status.id, m.status.status);
          changedAt = Date.now();
          if (m.status.status?.fill === 'red') reds.push(`${m.status.id}: ${m.status.status.text}`);
        }
      });
    });
    const info = await ready;
    assert.ok(info.deployed > 0, 'the examples were deployed');
    const start = Date.now();
    const busy = () => [...last.values()].some((s) => s && s.fill === 'blue' && s.shape === 'dot');
    // Watch until the demo is quiet (at least 8 s), or 25 s at most: the examples' pollers poll
    // every 20 s at the slowest, so each has polled twice (the demo never goes quiet for long).
    while (Date.now() - start < 25000) {
      await new Promise((r) => setTimeout(r, 250));
      if (Date.now() - start >= 8000 && !busy() && Date.now() - changedAt >= 3000) break;
    }
    const calls = await new Promise((resolve) => {
      child.on('message', (m) => m.calls !== undefined && resolve(m.calls));
      child.send('calls');
    });
    assert.ok(calls >= 5, `the demo sent requests to the simulator (${calls})`);
    assert.deepEqual(reds.map((r) => r.replace(/^[^:]+/, (id) => names[id] ?? id)), [], 'no node showed a red status');
    const errors = log.split('\n').filter((l) => /\[error\]/.test(l));
    assert.deepEqual(errors, [], 'no [error] line in the log');
    assert.doesNotMatch(log, /secret/);
  });
});
