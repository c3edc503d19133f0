'use strict';
/**
 * Issue 19 for the message poller: two Node-RED runtimes (child processes) running the same
 * flow, one gateway account shared through a real redis-server, against the simulator's
 * strict from-mobile feed. One poller is active, the other shows "standby"; every message
 * is emitted once in all (the lease and the mark come from the account, not the node).
 */
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { startSimulator } = require('../dist/simulator');
const { ChildRed, makeUserDir } = require('./helpers/child-red');
const { describeRedis } = require('./helpers/redis');

const COUNT = 1000;

function flows(sim, redisUrl, prefix) {
  return [
    { id: 'tab1', type: 'tab', label: 'fleet' },
    { id: 'r', type: 'iotgw-redis', url: redisUrl, keyPrefix: prefix },
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
      id: 'mp1',
      z: 'tab1',
      type: 'iotgw-message-poller',
      gateway: 'gw1',
      intervalSeconds: 1,
      startFrom: '-1h',
      output: 'record',
      contextStore: '',
      autoStart: true,
      fullAt: 100,
      sinFilter: '',
      mobileFilter: '',
      includeRaw: false,
      wires: [['append1']],
    },
    {
      id: 'append1',
      z: 'tab1',
      type: 'function',
      func: "global.get('append')(env.get('IOTGW_TAG') + ' M ' + String(msg.payload.ID) + '\\n');\nreturn null;",
      outputs: 0,
      wires: [],
    },
    { id: 'st1', z: 'tab1', type: 'status', scope: ['mp1'], wires: [['append2']] },
    {
      id: 'append2',
      z: 'tab1',
      type: 'function',
      func: "global.get('append')(env.get('IOTGW_TAG') + ' S ' + String(msg.status.text || '').replace(/\\s+/g, '_') + '\\n');\nreturn null;",
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
      const [tag, kind, value] = l.split(' ');
      return { tag, kind, value };
    });
}
const messages = (file) => read(file).filter((r) => r.kind === 'M');

async function waitFor(pred, ms, what) {
  const start = Date.now();
  while (!pred()) {
    if (Date.now() - start > ms) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describeRedis('message poller fleet: two Node-RED instances, one account, Redis (child Node-RED, real redis-server)', function (ctx) {
  this.timeout(120000);
  let sim;
  const reds = [];
  const dirs = [];
  let recordsFile;

  beforeEach(async function () {
    sim = await startSimulator({ terminal: { rateLimitCalls: 2, rateLimitWindowMs: 1000, maxConcurrent: 3 } });
    const now = Math.floor(Date.now() / 1000);
    sim.terminal.mobile.seed({ count: COUNT, perSecond: 10, startSec: now - 600 });
    const d = fs.mkdtempSync(path.join(os.tmpdir(), 'iotgw-mfleet-'));
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

  it('one poller active, the other on "standby": each message emitted once in all', async function () {
    const ids = sim.terminal.mobile.fromMobile.items.map((m) => String(m.ID));
    assert.equal(ids.length, COUNT);
    const prefix = `mfleet${Date.now()}:`;
    const a = await startRed('A');
    await a.deploy(flows(sim, ctx.server.url, prefix));
    await waitFor(() => messages(recordsFile).length > 0, 30000, 'A to start polling');
    const b = await startRed('B');
    await b.deploy(flows(sim, ctx.server.url, prefix));
    await waitFor(() => read(recordsFile).some((r) => r.tag === 'B' && r.kind === 'S' && r.value.startsWith('standby')), 30000, 'B to show standby');
    await waitFor(() => new Set(messages(recordsFile).map((r) => r.value)).size >= COUNT, 60000, 'every message');
    // A few more intervals: a second active poller would emit them all again.
    await new Promise((r) => setTimeout(r, 3000));
    const all = messages(recordsFile);
    const seen = new Set(all.map((r) => r.value));
    for (const id of ids) assert.ok(seen.has(id), `message ${id} emitted`);
    assert.equal(all.length, COUNT, `each message once in all (${all.length} msgs for ${COUNT} messages)`);
    assert.equal(all.filter((r) => r.tag === 'B').length, 0, 'B stood by while A was active');
    assert.equal(sim.terminal.counters.throttled, 0, 'no 429: one shared budget');
  });
});
