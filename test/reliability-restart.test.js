'use strict';
/**
 * Issue 5: the status poller's high-water mark in a file-backed context store, against a
 * real Node-RED child process, stopped in the middle of draining a large backlog:
 * - redeploy (full deploy over the admin API): no record lost, none repeated;
 * - clean restart (SIGINT, then start again): no record lost, none repeated;
 * - hard kill (SIGKILL, then start again): no record lost; the records that repeat are
 *   exactly those after the mark that had reached the disk, and the test measures them.
 * The simulator runs in this process; records go to a file through a synchronous write.
 */
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { startSimulator } = require('../dist/simulator');
const { ChildRed, makeUserDir } = require('./helpers/child-red');

const BACKLOG = 60000; // 120 full replies of 500
const FLUSH_SECONDS = 1; // localfilesystem flushInterval of the store under test

function flows(sim) {
  return [
    { id: 'tab1', type: 'tab', label: 'restart test' },
    {
      id: 'gw1',
      type: 'iotgw-gateway',
      name: 'sim',
      baseUrl: sim.url,
      apiVersion: '1.0',
      rateLimitCalls: 0,
      rateLimitWindowSeconds: 60,
      maxConcurrent: 3,
      maxBatchSize: 100,
      timeoutSeconds: 10,
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
      contextStore: 'file',
      autoStart: true,
      addNames: false,
      wires: [['append1']],
    },
    {
      id: 'append1',
      z: 'tab1',
      type: 'function',
      func: "global.get('append')(msg.topic + ' ' + msg.payload.StatusUTC + '\\n');\nreturn null;",
      outputs: 0,
      wires: [],
    },
  ];
}

function readRecords(file) {
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const [id, day, time] = l.split(' ');
      return { id, utc: `${day} ${time}` };
    });
}

function lineCount(file) {
  if (!fs.existsSync(file)) return 0;
  const buf = fs.readFileSync(file);
  let n = 0;
  for (let i = 0; i < buf.length; i++) if (buf[i] === 10) n++;
  return n;
}

/** The mark as the file store has it on disk (undefined before the first flush). */
function markOnDisk(userDir) {
  const dir = path.join(userDir, 'context');
  if (!fs.existsSync(dir)) return undefined;
  for (const sub of fs.readdirSync(dir)) {
    const f = path.join(dir, sub, 'poller1.json');
    if (fs.existsSync(f)) {
      try {
        return JSON.parse(fs.readFileSync(f, 'utf8')).nextFromUTC;
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

async function waitFor(pred, ms, what) {
  const start = Date.now();
  while (!pred()) {
    if (Date.now() - start > ms) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Every backlog ID exactly accounted for: returns {unique, duplicates, missing}. */
function tally(records, sim) {
  const base = 10_000_000_000n;
  const seen = new Map();
  for (const r of records) seen.set(r.id, (seen.get(r.id) ?? 0) + 1);
  let missing = 0;
  for (let i = 0n; i < BigInt(BACKLOG); i++) if (!seen.has(String(base + i))) missing++;
  void sim;
  return { unique: seen.size, duplicates: records.length - seen.size, missing };
}

const figures = {};

describe('reliability: the status poller across redeploy, restart and hard kill (child Node-RED)', function () {
  this.timeout(120000);
  let sim;
  let red;
  let userDir;
  let recordsFile;

  beforeEach(async function () {
    sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 } });
    sim.terminal.seedBacklog(BACKLOG);
    recordsFile = path.join(fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'iotgw-rec-')), 'records.txt');
  });

  async function startRed(flushInterval = FLUSH_SECONDS) {
    userDir = makeUserDir({ flushInterval, recordsFile });
    red = await new ChildRed(userDir).start();
    const types = await red.nodeTypes();
    assert.ok(types.includes('iotgw-status-poller'), 'the package is installed in the child Node-RED');
  }

  afterEach(async function () {
    if (red && red.proc.exitCode === null && red.proc.signalCode === null) await red.kill('SIGKILL');
    await sim.close();
    if (userDir) fs.rmSync(userDir, { recursive: true, force: true });
    fs.rmSync(path.dirname(recordsFile), { recursive: true, force: true });
  });

  after(function () {
    console.log(`      [figures] ${JSON.stringify(figures)}`);
  });

  async function drainToEnd() {
    await waitFor(() => lineCount(recordsFile) >= BACKLOG, 60000, 'the backlog to drain');
    // One more poll interval and a bit: nothing else may arrive.
    await new Promise((r) => setTimeout(r, 2500));
    return readRecords(recordsFile);
  }

  it('redeploy in the middle of the drain: nothing lost, nothing repeated', async function () {
    await startRed();
    await red.deploy(flows(sim));
    await waitFor(() => lineCount(recordsFile) >= BACKLOG / 3, 60000, 'a third of the backlog');
    await red.deploy(flows(sim)); // full redeploy: every node is closed and started again
    const atRedeploy = lineCount(recordsFile);
    const t = tally(await drainToEnd(), sim);
    figures.redeploy = { atRedeploy, ...t };
    assert.ok(atRedeploy < BACKLOG, 'the redeploy came in the middle of the drain');
    assert.equal(t.missing, 0, 'no record lost');
    assert.equal(t.duplicates, 0, 'no record repeated');
  });

  it('clean restart (SIGINT) in the middle of the drain: nothing lost, nothing repeated', async function () {
    await startRed(30); // the store's default flush interval: the clean stop flushes
    await red.deploy(flows(sim));
    await waitFor(() => lineCount(recordsFile) >= BACKLOG / 3, 60000, 'a third of the backlog');
    const exit = await red.kill('SIGINT');
    const atStop = lineCount(recordsFile);
    assert.ok(atStop < BACKLOG, 'stopped in the middle of the drain');
    assert.equal(exit.signal === 'SIGKILL', false);
    assert.ok(markOnDisk(userDir), 'a clean stop flushed the mark to disk');
    await red.start();
    const t = tally(await drainToEnd(), sim);
    figures.cleanRestart = { atStop, ...t };
    assert.equal(t.missing, 0, 'no record lost');
    assert.equal(t.duplicates, 0, 'no record repeated');
  });

  for (const flush of [FLUSH_SECONDS, 30]) {
    it(`hard kill (SIGKILL) in the middle of the drain, file store flushInterval ${flush} s: nothing lost; only records after the persisted mark repeat`, async function () {
      await startRed(flush);
      await red.deploy(flows(sim));
      // With a short flush interval, wait for the first flush, so that a mark is on disk at the kill.
      await waitFor(() => lineCount(recordsFile) >= BACKLOG / 3 && (flush > 5 || markOnDisk(userDir) !== undefined), 60000, 'a third of the backlog');
      await red.kill('SIGKILL');
      const before = readRecords(recordsFile);
      const mark = markOnDisk(userDir);
      assert.ok(before.length < BACKLOG, 'killed in the middle of the drain');
      if (mark !== undefined) assert.match(mark, /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
      // What may repeat: the records already written whose second is after the persisted
      // mark (all of them when no mark reached the disk before the kill).
      const afterMark = new Set(before.filter((r) => mark === undefined || r.utc > mark).map((r) => r.id));
      await red.start();
      const all = await drainToEnd();
      const t = tally(all, sim);
      const counts = new Map();
      for (const r of all) counts.set(r.id, (counts.get(r.id) ?? 0) + 1);
      const repeated = [...counts].filter(([, c]) => c > 1).map(([id]) => id);
      figures[`hardKill_flush${flush}s`] = { atKill: before.length, persistedMark: mark ?? null, afterMark: afterMark.size, ...t };
      assert.equal(t.missing, 0, 'no record lost');
      assert.ok(repeated.every((id) => afterMark.has(id)), 'only records after the persisted mark repeat');
      assert.ok(repeated.every((id) => counts.get(id) === 2), 'a record repeats at most once');
      assert.equal(t.duplicates, afterMark.size, 'every record after the persisted mark was fetched again (the mark is exact)');
    });
  }
});
