'use strict';
/**
 * The README's install route, word for word (issue 15). Not a *.test.js file: `npm test`
 * does not run it (it packs, installs from the npm registry into a fresh directory and
 * starts a Node-RED: slow and needs the network); .ci/run runs it on its own line:
 *
 *   node_modules/.bin/mocha --no-config --timeout 600000 --exit test/package/install-route.ci.js
 *
 * It copies the checkout (as a fresh clone would be, with this checkout's node_modules as
 * after `npm ci`), runs the README's block between the install-route markers with HOME set
 * to a fresh directory (so `~/.node-red` is a fresh Node-RED user directory), starts
 * Node-RED on that user directory and checks that every node type of package.json
 * registers from the installed package, without errors.
 */
const assert = require('node:assert/strict');
const { execFileSync, spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { freePort } = require('../helpers/net');

const ROOT = path.resolve(__dirname, '..', '..');
const PKG = require('../../package.json');

function readmeBlock() {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const m = /<!-- install-route:begin[^>]*-->\s*```sh\n([\s\S]*?)```\s*<!-- install-route:end -->/.exec(readme);
  assert.ok(m, 'README.md has the install-route block');
  return m[1];
}

describe("the README's install route (packed tarball into a fresh ~/.node-red)", function () {
  let tmp;
  let red;
  before(function () {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'iotgw-install-'));
  });
  after(async function () {
    if (red && red.exitCode === null) {
      red.kill('SIGTERM');
      await new Promise((r) => red.once('exit', r));
    }
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  it('installs with the README commands and Node-RED registers every node type', async function () {
    const block = readmeBlock();
    // A copy of the checkout as a clone has it (no build output, no local state) ...
    const clone = path.join(tmp, 'clone');
    fs.mkdirSync(clone);
    const skip = new Set(['node_modules', '.git', 'dist', '.node-red-dev', 'artifacts', 'out', 'coverage']);
    fs.cpSync(ROOT, clone, { recursive: true, filter: (src) => !skip.has(path.basename(src)) && !src.endsWith('.tgz') });
    // ... after `npm ci` (this checkout's dependencies, linked, not reinstalled).
    fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(clone, 'node_modules'));
    const home = path.join(tmp, 'home');
    fs.mkdirSync(home);
    const npmEnv = {};
    // A fresh HOME, but the machine's npm settings and cache (registry, proxy, mirrors).
    for (const k of ['userconfig', 'cache']) npmEnv[`npm_config_${k}`] = execFileSync('npm', ['config', 'get', k], { encoding: 'utf8' }).trim();
    const env = { ...process.env, ...npmEnv, HOME: home };
    // The last command of the block is the install of the tarball: what it prints names nothing of ours.
    const lines = block.trim().split('\n');
    execFileSync('bash', ['-euo', 'pipefail', '-c', lines.slice(0, -1).join('\n')], { cwd: clone, env, stdio: ['ignore', 'pipe', 'pipe'], timeout: 540000 });
    const userDir = path.join(home, '.node-red');
    const install = spawnSync('bash', ['-euo', 'pipefail', '-c', lines[lines.length - 1]], { cwd: userDir, env, encoding: 'utf8', timeout: 540000 });
    assert.equal(install.status, 0, `${lines[lines.length - 1]}:\n${install.stdout}${install.stderr}`);
    const printed = `${install.stdout}${install.stderr}`;
    assert.doesNotMatch(printed, /iotgateway|node-red-gateway|prepare|prepack|install script/i, `installing the tarball printed something of ours:\n${printed}`);

    const installed = path.join(userDir, 'node_modules', ...PKG.name.split('/'));
    assert.ok(fs.existsSync(path.join(installed, PKG.main)), `the tarball holds ${PKG.main}`);
    assert.ok(!fs.lstatSync(installed).isSymbolicLink(), 'installed from the tarball, not linked');

    // npm ls and npm audit see every third-party package our nodes run.
    const ls = JSON.parse(execFileSync('npm', ['ls', '--all', '--json'], { cwd: userDir, env, encoding: 'utf8' }));
    const ourDeps = ls.dependencies[PKG.name].dependencies || {};
    for (const dep of ['undici', 'zod', 'lossless-json', 'ioredis', 'saxes']) assert.ok(ourDeps[dep] && ourDeps[dep].version, `npm ls --all lists ${dep} under ${PKG.name}: ${Object.keys(ourDeps).join(', ')}`);

    // An error thrown inside the request path carries readable frames: our files and functions by name.
    const probe = `
      const { ApiClient } = require(${JSON.stringify(path.join(installed, 'dist/lib/transport/http.js'))});
      const client = new ApiClient({ label: 't', baseUrl: 'http://127.0.0.1:9', timeoutMs: 5000, maxConcurrent: 1, maxRetries: 0 });
      client.request({ method: 'GET', path: '/x' }).then(() => process.exit(2), (e) => { process.stdout.write(JSON.stringify({ code: e.code, stack: String(e.stack) })); });`;
    const err = JSON.parse(execFileSync(process.execPath, ['-e', probe], { cwd: userDir, encoding: 'utf8', timeout: 30000 }));
    assert.equal(err.code, 'NETWORK');
    assert.match(err.stack, /dist[\\/]lib[\\/]transport[\\/]http\.js:\d+:\d+/, err.stack);
    assert.match(err.stack, /at (async )?(ApiClient\.)?\w+/, err.stack);

    // Node-RED on the fresh user directory (the devDependency's runtime).
    const port = await freePort();
    const redMain = require.resolve(`${process.env.IOTGW_NODE_RED_PATH || 'node-red'}/red.js`);
    let log = '';
    red = spawn(process.execPath, [redMain, '--userDir', userDir, '--port', String(port)], { env: { ...process.env, HOME: home }, stdio: ['ignore', 'pipe', 'pipe'] });
    red.stdout.on('data', (d) => (log += d));
    red.stderr.on('data', (d) => (log += d));
    let sets;
    const start = Date.now();
    while (Date.now() - start < 60000) {
      assert.equal(red.exitCode, null, `Node-RED exited:\n${log}`);
      try {
        const res = await fetch(`http://127.0.0.1:${port}/nodes`, { headers: { accept: 'application/json' } });
        if (res.ok) {
          sets = await res.json();
          if (/Started flows|Server now running/.test(log)) break;
        }
      } catch {
        /* not listening yet */
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    assert.ok(sets, `Node-RED answered /nodes:\n${log}`);
    const ours = sets.filter((s) => s.module === PKG.name);
    const types = ours.flatMap((s) => s.types);
    for (const type of Object.keys(PKG['node-red'].nodes)) assert.ok(types.includes(type), `${type} registered; log:\n${log}`);
    for (const s of ours) assert.ok(s.enabled && !s.err, `${s.name}: ${s.err}`);
    assert.doesNotMatch(log, /\[error\]/);
  });
});
