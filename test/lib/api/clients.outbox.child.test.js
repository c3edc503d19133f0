'use strict';
/**
 * The TerminalClient's outbox through SIGKILLs (issue 45): a script (test/helpers/outbox-client-
 * child.js) accepts messages into a folder's outbox and is killed, once while the reply of its
 * first send is held by the simulator (the request arrived: created at the gateway, the script
 * never knew), once during an outage (its entries waiting). Opened again here, the outbox
 * reconciles the send whose outcome was unknown, drains the rest, and gives every accepted
 * send's outcome exactly once: each message created at the gateway exactly once.
 */
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { startSimulator, TerminalClient } = require('../../..');
const { waitUntil } = require('../../helpers/wait');

const CHILD = path.join(__dirname, '../../helpers/outbox-client-child.js');
const DEST = '01000001SKYA001';
const N = 40;

/** The script, started: its `accepted <i> <key>` lines as they come. */
function script(url, dir, from, n) {
  const child = spawn(process.execPath, [CHILD, url, dir, String(from), String(n)], { stdio: ['ignore', 'pipe', 'pipe'] });
  const run = { child, accepted: new Map(), all: false, out: '', exited: false };
  let buf = '';
  child.stdout.on('data', (d) => {
    buf += d;
    run.out += d;
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      const m = /^accepted (\d+) (\S+)$/.exec(line);
      if (m) run.accepted.set(Number(m[1]), m[2]);
      if (line === 'all accepted') run.all = true;
    }
  });
  child.stderr.on('data', (d) => (run.out += d));
  child.on('exit', () => (run.exited = true));
  return run;
}

async function kill(run) {
  run.child.kill('SIGKILL');
  await waitUntil(() => run.exited, 30000, 'the script killed');
}

describe('TerminalClient outbox: a script SIGKILLed (issue 45)', function () {
  this.timeout(120000);
  let sim;
  let dir;
  let client;
  const runs = [];

  beforeEach(async () => {
    sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 } });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iotgw-client-outbox-kill-'));
  });
  afterEach(async () => {
    for (const r of runs.splice(0)) if (!r.exited) await kill(r);
    await client?.close();
    await sim.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('killed with a send\'s reply held, then killed during an outage: opened again, every accepted send ends once, each message created exactly once', async function () {
    // Life 1: the first send's request arrives and its reply is held; the script dies.
    sim.inject({ route: 'terminal/messages', kind: 'hold', times: 1 });
    const one = script(sim.url, dir, 0, N);
    runs.push(one);
    await waitUntil(() => one.all && sim.server.held === 1, 60000, 'all accepted, a reply held', () => one.out.slice(-500));
    await kill(one);
    const createdInLife1 = sim.terminal.creations.total;
    assert.ok(createdInLife1 >= 1, 'the held send was created at the gateway');
    sim.server.releaseHeld();

    // Life 2: the link is down; the script accepts more and dies with them waiting.
    sim.server.link.refuse();
    const two = script(sim.url, dir, N, N);
    runs.push(two);
    await waitUntil(() => two.all, 60000, 'all accepted during the outage', () => two.out.slice(-500));
    await kill(two);
    await sim.server.link.up();
    assert.equal(sim.terminal.creations.total, createdInLife1);

    // Opened again here: reconciled, drained, every outcome once.
    client = new TerminalClient({ baseUrl: sim.url, clientId: 'demo', clientSecret: 'demo-secret', rateLimitCalls: 0, maxRetries: 0 });
    const ob = await client.outbox({ file: dir });
    const seen = [];
    ob.on('outcome', (o) => seen.push(o));
    const keys = new Map([...one.accepted, ...two.accepted]);
    assert.equal(keys.size, 2 * N);
    await waitUntil(() => seen.length >= 2 * N, 60000, 'an outcome for every accepted send', () => `${seen.length} outcomes; ${JSON.stringify(ob.state())}`);
    assert.deepEqual(seen.map((o) => o.key).sort(), [...keys.values()].sort(), 'each accepted send\'s outcome, once');
    for (const o of seen) {
      assert.equal(o.error, undefined, JSON.stringify(o));
      assert.equal(keys.get(o.meta.i), o.key);
      assert.equal(typeof o.results[0].ID, 'number');
    }
    for (let i = 0; i < 2 * N; i++) {
      const n = sim.terminal.creations.count(DEST, { RawPayload: Buffer.from([128, 9, i >> 8, i & 255]).toString('base64') });
      assert.equal(n, 1, `message ${i} created ${n} times`);
    }
    assert.equal(sim.terminal.creations.total, 2 * N);
    await ob.close();
  });
});
