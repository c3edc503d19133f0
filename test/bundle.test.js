'use strict';
/**
 * The published package is the esbuild bundle (scripts/bundle.js, run by npm run build):
 * what `npm pack` would ship, the node shims, the API entry and the simulator bin.
 * (Installed size, start time and idle memory are measured by `npm run bench -- footprint`.)
 */
const assert = require('node:assert/strict');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const ROOT = path.resolve(__dirname, '..');
const pkg = require('../package.json');

describe('the bundled package', function () {
  this.timeout(60000);

  it('npm pack ships the bundle, the editor files and the shims; no sources, typings or source maps', function () {
    // Scripts off (the env form: the flag alone still runs prepare): the test must not rebuild dist/ under other tests.
    // npx (mocha's launcher) leaves npm_* settings in the environment that turn scripts back on: drop them.
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith('npm_')));
    env.npm_config_ignore_scripts = 'true';
    // ...and the npm some devDependency puts in node_modules/.bin (npx puts it first on PATH): the system's npm packs.
    env.PATH = (process.env.PATH || '').split(path.delimiter).filter((d) => !d.includes(`node_modules${path.sep}.bin`)).join(path.delimiter);
    const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    const files = JSON.parse(out)[0].files.map((f) => f.path);
    for (const f of ['dist/bundle/nodes.js', 'dist/bundle/index.js', 'dist/bundle/cli.js', 'package.json']) assert.ok(files.includes(f), `${f} is not packed`);
    for (const file of Object.values(pkg['node-red'].nodes)) {
      assert.ok(files.includes(file), `${file} is not packed`);
      assert.ok(files.includes(file.replace(/\.js$/, '.html')), `${file.replace(/\.js$/, '.html')} is not packed`);
    }
    const stray = files.filter((f) => f !== 'types/index.d.ts').filter((f) => /\.(map|ts|cts|mts)$/.test(f) || f.startsWith('src/') || (f.startsWith('dist/') && !f.startsWith('dist/bundle/')));
    assert.deepEqual(stray, []);
    assert.deepEqual(Object.keys(pkg.dependencies || {}), [], 'every runtime dependency is bundled');
  });

  it('every node shim loads its node from the bundle', function () {
    for (const [type, file] of Object.entries(pkg['node-red'].nodes)) {
      const text = require('node:fs').readFileSync(path.join(ROOT, file), 'utf8');
      assert.match(text, /require\('\.\.\/dist\/bundle\/nodes\.js'\)/, `${file} does not load the bundle`);
      assert.equal(typeof require(path.join(ROOT, file)), 'function', `${type}: not a node module`);
    }
  });

  it('main gives startSimulator and the error codes; the iotgw-simulator bin starts and answers', async function () {
    const api = require(path.join(ROOT, pkg.main));
    assert.equal(typeof api.startSimulator, 'function');
    assert.ok(api.ERROR_CODES.includes('BAD_INPUT'));
    const sim = await api.startSimulator({});
    try {
      const res = await fetch(`${sim.url}/api/v1.0/terminal/mode`, { method: 'POST', body: '[]', headers: { 'content-type': 'application/json' } });
      assert.equal(res.status, 401, 'the bundled simulator refuses a call without a token');
    } finally {
      await sim.close();
    }
    const help = execFileSync(process.execPath, [path.join(ROOT, pkg.bin['iotgw-simulator']), '--help'], { encoding: 'utf8' });
    assert.match(help, /Usage: iotgw-simulator/);
  });
});
