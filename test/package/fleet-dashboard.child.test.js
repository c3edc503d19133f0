'use strict';
/**
 * The fleet dashboard example (examples/fleet-dashboard.json, issue 36) in the demo's own
 * set-up (scripts/start.js in a child process, test/helpers/demo.js):
 * - with FlowFuse Dashboard 2.0 and the worldmap installed (devDependencies), it deploys with
 *   no red status and no [error] line, and /dashboard and the map's page are served (both
 *   redirected from the root to httpNodeRoot, the query string kept);
 * - without them (a Node-RED whose module scan cannot see this checkout's node_modules:
 *   `coreNodesDir` through a link from a temporary directory), `npm start` leaves it out of
 *   the demo naming the missing types, and deployed anyway, Node-RED's own missing-types
 *   notice lists exactly the two packages' node types, which the example's comment names.
 */
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { forkDemo } = require('../helpers/demo');
const { until } = require('../helpers/harness');

const EXAMPLE = require('../../examples/fleet-dashboard.json');
/** The example's node types that the two packages provide. */
const PACKAGE_TYPES = [...new Set(EXAMPLE.map((n) => n.type).filter((t) => /^ui-/.test(t) || t === 'worldmap'))].sort();

describe('examples/fleet-dashboard.json in the demo', function () {
  this.timeout(120000);
  let demo;
  let linkDir;
  afterEach(async function () {
    if (demo) await demo.stop();
    demo = undefined;
    if (linkDir) fs.rmSync(linkDir, { recursive: true, force: true });
    linkDir = undefined;
  });

  it('with the two packages: deploys, no red status, no [error] line, /dashboard and the map served', async function () {
    demo = await forkDemo({ only: ['fleet-dashboard'] });
    assert.deepEqual(demo.info.skipped, [], 'nothing left out');
    assert.equal(demo.info.deployed, 1);
    assert.equal(demo.info.dashboardUrl, `${demo.info.url}dashboard`);
    // Every flow node of the example runs.
    const ids = Object.keys(demo.info.names);
    for (const n of EXAMPLE.filter((n) => n.z)) assert.ok(ids.includes(n.id), `${n.type} ${n.id} runs`);
    // The pollers and the inventory have answered (the account status reports feeds).
    await until(async () => (await demo.ask('calls', 'calls')).calls >= 4, 60000, 'the example to call the simulator');
    await new Promise((r) => setTimeout(r, 5000));
    assert.deepEqual(demo.reds, [], 'no node showed a red status');
    assert.deepEqual(demo.log().split('\n').filter((l) => /\[error\]/.test(l)), [], 'no [error] line');
    const page = await fetch(demo.info.dashboardUrl);
    assert.equal(page.status, 200);
    assert.match(new URL(page.url).pathname, /^\/api\/dashboard/, 'redirected under httpNodeRoot');
    assert.match(await page.text(), /<div id="app"/);
    const map = await fetch(`${demo.info.url}api/worldmap/`);
    assert.equal(map.status, 200);
    // The map's page at the root too, as /dashboard is.
    const atRoot = await fetch(`${demo.info.url}worldmap`);
    assert.equal(atRoot.status, 200, '/worldmap is served');
    assert.match(new URL(atRoot.url).pathname, /^\/api\/worldmap/, 'redirected under httpNodeRoot');
    const moved = await fetch(`${demo.info.url}worldmap/?lat=51.5&lon=-0.1`, { redirect: 'manual' });
    assert.equal(moved.status, 302);
    assert.equal(moved.headers.get('location'), '/api/worldmap/?lat=51.5&lon=-0.1', 'the query string kept');
  });

  it('without them: left out of the demo, and Node-RED names the missing types', async function () {
    // Node-RED scans the node_modules of coreNodesDir's ancestors; through a link from a
    // temporary directory it scans none of this checkout's, and loads our nodes by nodesDir.
    linkDir = fs.mkdtempSync(path.join(os.tmpdir(), 'iotgw-core-'));
    const core = path.join(linkDir, 'nodes');
    fs.symlinkSync(path.dirname(require.resolve('@node-red/nodes/package.json')), core, 'dir');
    demo = await forkDemo({ only: ['fleet-dashboard'], settings: { coreNodesDir: core } });
    assert.equal(demo.info.deployed, 0);
    assert.equal(demo.info.dashboardUrl, undefined);
    assert.deepEqual(demo.info.skipped, [{ name: 'fleet-dashboard', missing: PACKAGE_TYPES }]);
    // Our own nodes are there: only the packages' types are missing.
    const reply = await demo.ask({ deploy: ['fleet-dashboard'] }, 'deployed');
    assert.ok(reply.deployed > 0, reply.error);
    const missing = () => demo.events.find((e) => e.id === 'runtime-state' && e.payload && e.payload.error === 'missing-types');
    await until(() => Boolean(missing()), 30000, 'the missing-types notice');
    const notice = missing().payload;
    assert.deepEqual([...notice.types].sort(), PACKAGE_TYPES);
    // The log's lines come through the child's stdout, which may reach us after the notice (a
    // loaded run read the log between the two).
    const named = () => /Waiting for missing types to be registered/.test(demo.log()) && PACKAGE_TYPES.every((t) => demo.log().includes(` - ${t}`));
    await until(named, 30000, 'the log to name the missing types').catch(() => {});
    assert.match(demo.log(), /Waiting for missing types to be registered/);
    for (const t of PACKAGE_TYPES) assert.ok(demo.log().includes(` - ${t}`), `the log names ${t}`);
    // The example says which packages those are.
    const comment = EXAMPLE.find((n) => n.type === 'comment');
    assert.match(comment.name, /@flowfuse\/node-red-dashboard/);
    assert.match(comment.name, /node-red-contrib-web-worldmap/);
  });
});
