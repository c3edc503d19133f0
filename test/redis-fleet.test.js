'use strict';
/**
 * Issue 19 with real parts: two Node-RED runtimes (child processes) running the same flow,
 * one gateway account shared through a real redis-server, against the simulator's strict
 * feed and real sliding window. One poller is active, the other stands by; a SIGKILL of the
 * active one during a 10,000-record drain: the standby takes over, nothing is lost, at most
 * one reply (500 records) comes again, and the shared budget provokes no 429.
 */
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { startSimulator } = require('../dist/simulator');
const { ChildRed, makeUserDir } = require('./helpers/child-red');
const { describeRedis } = require('./helpers/redis');

const BACKLOG = 10000;
const REPLY = 500;

function flows(sim, redisUrl) {
  return [
    { id: 'tab1', type: 'tab', label: 'fleet' },
    { id: 'r', type: 'iotgw-redis', url: redisUrl, keyPrefix: 'fleet:' },
    {
      id: 'gw1',
      type: 'iotgw-gateway',
      baseUrl: sim.url,
      apiVersion: '1.0',
      rateLimitCalls: 2,
      rateLimitWindowSeconds: 1,
      maxConcurrent: 3,
      maxBatchSize: 100,
      timeoutSeconds: 10,
      redis: 'r',
      credentials: { clientId: 'demo', clientSecret: 'demo-secret' },
    },
    {
      id: 'poller1',
      z: 'tab1',
      type: 'iotgw-status-poller',
      gateway: 'gw1',
      intervalSeconds: 1,
      startFrom: '-2d',
      output: 'record',
      contextStore: '',
      autoStart: true,
      addNames: false,
      wires: [['append1']],
    },
    {
      id: 'append1',
      z: 'tab1',
      type: 'function',
      func: "global.get('append')(env.get('IOTGW_TAG') + ' ' + msg.topic + '\\n');\nreturn null;",
      outputs: 0,
      wires: [],
    },
  ];
}

function read(file) {
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const [tag, id] = l.split(' ');
      return { tag, id };
    });
}

async function waitFor(pred, ms, what) {
  const start = Date.now();
  while (!pred()) {
    if (Date.now() - start > ms) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describeRedis('fleet: two Node-RED instances, one account, Redis (child Node-RED, real redis-server)', function (ctx) {
  this.timeout(120000);
  let sim;
  const reds = [];
  const dirs = [];
  let recordsFile;

  beforeEach(async function () {
    sim = await startSimulator({ terminal: { rateLimitCalls: 2, rateLimitWindowMs: 1000, maxConcurrent: 3 } });
    sim.terminal.seedBacklog(BACKLOG);
    const d = fs.mkdtempSync(path.join(os.tmpdir(), 'iotgw-fleet-'));
    dirs.push(d);
    recordsFile = path.join(d, 'records.txt');
  });

  afterEach(async function () {
    for (const red of reds.splice(0)) if (red.proc.exitCode === null && red.proc.signalCode === null) await red.kill('SIGKILL');
    await sim.close();
    for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  });

  async function startRed(tag) {
    const userDir = makeUserDir({ recordsFile, defaultContext: true });
    dirs.push(userDir);
    const before = process.env.IOTGW_TAG;
    process.env.IOTGW_TAG = tag;
    try {
      const red = await new ChildRed(userDir).start();
      reds.push(red);
      return red;
    } finally {
      if (before === undefined) delete process.env.IOTGW_TAG;
      else process.env.IOTGW_TAG = before;
    }
  }

  it('SIGKILL of the active poller during a 10,000-record drain: the standby takes over, 0 lost, at most one reply repeated, 0 429s', async function () {
    const a = await startRed('A');
    await a.deploy(flows(sim, ctx.server.url));
    await waitFor(() => read(recordsFile).length > 0, 30000, 'A to start polling');
    const b = await startRed('B');
    await b.deploy(flows(sim, ctx.server.url));
    await waitFor(() => read(recordsFile).length >= BACKLOG * 0.4, 60000, '40% of the backlog');
    const beforeKill = read(recordsFile);
    assert.equal(beforeKill.filter((r) => r.tag === 'B').length, 0, 'B stood by while A was active');
    const tKill = Date.now();
    await a.kill('SIGKILL');
    const atKill = read(recordsFile).length;
    await waitFor(() => read(recordsFile).some((r) => r.tag === 'B'), 30000, 'B to take over');
    const takeoverS = (Date.now() - tKill) / 1000;
    await waitFor(() => new Set(read(recordsFile).map((r) => r.id)).size >= BACKLOG, 60000, 'the backlog to drain');
    await new Promise((r) => setTimeout(r, 2500));
    const all = read(recordsFile);
    const ids = new Set(all.map((r) => r.id));
    let missing = 0;
    for (let i = 0n; i < BigInt(BACKLOG); i++) if (!ids.has(String(10_000_000_000n + i))) missing++;
    const repeated = all.length - ids.size;
    console.log(`      [figures] ${JSON.stringify({ atKill, takeoverS, missing, repeated, throttled: sim.terminal.counters.throttled, tokenFetches: sim.server.callsTo('terminal/auth').length })}`);
    assert.ok(atKill < BACKLOG, 'the kill came in the middle of the drain');
    assert.equal(missing, 0, 'no record lost');
    assert.ok(repeated <= REPLY, `at most one reply repeated (${repeated})`);
    assert.ok(takeoverS <= 10 + 3, `takeover within the lease time (10 s) and a poll: ${takeoverS} s`);
    assert.equal(sim.terminal.counters.throttled, 0, 'no 429: one shared budget');
  });
});
