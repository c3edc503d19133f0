'use strict';
/**
 * The published package is tsc's dist/ plus the registrar (scripts/registrar.js, run by
 * npm run build), with its runtime dependencies declared: what `npm pack` would ship, the
 * node shims, what loads when, the API entry and the simulator bin.
 * (Installed size, start time and idle memory are measured by `npm run bench -- footprint`.)
 */
const assert = require('node:assert/strict');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const ROOT = path.resolve(__dirname, '..', '..');
const pkg = require('../../package.json');

describe('the package: registrar, lazy loading, what is packed', function () {
  this.timeout(60000);

  it('npm pack ships dist/, the editor files and the shims; no sources or source maps; the runtime dependencies are declared', function () {
    // Scripts off (the env form: the flag alone still runs prepare): the test must not rebuild dist/ under other tests.
    // npx (mocha's launcher) leaves npm_* settings in the environment that turn scripts back on: drop them.
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith('npm_')));
    env.npm_config_ignore_scripts = 'true';
    // ...and the npm some devDependency puts in node_modules/.bin (npx puts it first on PATH): the system's npm packs.
    env.PATH = (process.env.PATH || '').split(path.delimiter).filter((d) => !d.includes(`node_modules${path.sep}.bin`)).join(path.delimiter);
    const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    const files = JSON.parse(out)[0].files.map((f) => f.path);
    for (const f of ['dist/nodes.js', 'dist/index.js', 'dist/index.d.ts', 'dist/simulator/cli.js', 'dist/lib/transport/http.js', 'package.json']) assert.ok(files.includes(f), `${f} is not packed`);
    for (const file of Object.values(pkg['node-red'].nodes)) {
      assert.ok(files.includes(file), `${file} is not packed`);
      assert.ok(files.includes(file.replace(/\.js$/, '.html')), `${file.replace(/\.js$/, '.html')} is not packed`);
    }
    const stray = files.filter((f) => !f.endsWith('.d.ts')).filter((f) => /\.(map|ts|cts|mts)$/.test(f) || f.startsWith('src/') || f.startsWith('test/'));
    assert.deepEqual(stray, []);
    assert.deepEqual(Object.keys(pkg.dependencies || {}).sort(), ['ioredis', 'lossless-json', 'saxes', 'undici', 'zod'], 'every third-party package our nodes run is a declared dependency');
    assert.ok(!('prepare' in pkg.scripts), 'no prepare script: installing the tarball runs nothing of ours');
  });

  it('every node shim loads its node through the registrar', function () {
    for (const [type, file] of Object.entries(pkg['node-red'].nodes)) {
      const text = require('node:fs').readFileSync(path.join(ROOT, file), 'utf8');
      assert.match(text, /require\('\.\.\/dist\/nodes\.js'\)/, `${file} does not load the registrar`);
      assert.equal(typeof require(path.join(ROOT, file)), 'function', `${type}: not a node module`);
    }
  });

  it('Node-RED loads only the registrar at start; a node\'s module with the first node of its type; undici with the first request (zod and lossless-json not before either); no ioredis or saxes without their nodes', function () {
    // A child process: a fresh module cache and a real Node-RED runtime (the test helper).
    const child = `
      const path = require('node:path');
      const helper = require('node-red-node-test-helper');
      helper.init(require.resolve('node-red'));
      const ROOT = ${JSON.stringify(ROOT)};
      const pkg = require(path.join(ROOT, 'package.json'));
      const shims = Object.values(pkg['node-red'].nodes).map((p) => require(path.join(ROOT, p)));
      // Our dist files by path, and the runtime dependencies by package name.
      const DEPS = ['undici', 'zod', 'lossless-json', 'ioredis', 'saxes'];
      const loaded = () => [...new Set(Object.keys(require.cache).flatMap((f) => {
        if (f.startsWith(path.join(ROOT, 'dist') + path.sep)) return [path.relative(path.join(ROOT, 'dist'), f).split(path.sep).join('/')];
        const m = /node_modules[\\/\\\\]((?:@[^\\/\\\\]+[\\/\\\\])?[^\\/\\\\]+)/.exec(f.slice(ROOT.length));
        return m && DEPS.includes(m[1]) ? [m[1]] : [];
      }))].sort();
      const out = {};
      const load = (flow) => new Promise((resolve, reject) => helper.load(shims, flow, { gw: { clientId: 'c', clientSecret: 's' } }, resolve).catch(reject));
      (async () => {
        await new Promise((r) => helper.startServer(r));
        await load([]);
        out.emptyFlow = loaded();
        await helper.unload();
        await load([
          { id: 'gw', type: 'iotgw-gateway', baseUrl: 'http://127.0.0.1:9', rateLimitCalls: 0 },
          { id: 'tab', type: 'tab' },
          { id: 'm', z: 'tab', type: 'iotgw-terminal-mode', gateway: 'gw', wires: [[], []] },
        ]);
        const m = helper.getNode('m');
        out.created = Boolean(m && m.type === 'iotgw-terminal-mode' && typeof m.receive === 'function');
        out.withFlow = loaded();
        // One call (to a closed port: the request is made, the connection refused).
        m.receive({ payload: { DestinationID: '01000001SKYA001', Mode: 1, WakeupInterval: 3 } });
        for (let t = 0; t < 1000 && !loaded().includes('undici'); t++) await new Promise((r) => setTimeout(r, 20));
        out.afterCall = loaded();
        await helper.unload();
        await new Promise((r) => helper.stopServer(r));
        process.stdout.write(JSON.stringify(out));
        process.exit(0);
      })().catch((e) => { console.error(e); process.exit(1); });`;
    const out = JSON.parse(execFileSync(process.execPath, ['-e', child], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 50000 }));
    // The registrar and the admin routes of the editor (each a few lines, requiring nothing heavy).
    assert.deepEqual(out.emptyFlow, ['lib/node-red/admin-route.js', 'lib/node-red/test-caller.js', 'nodes.js', 'nodes/iotgw-app.routes.js', 'nodes/iotgw-gateway.routes.js', 'nodes/iotgw-redis.routes.js'], 'a Node-RED without a flow of ours loads only the registrar and the admin routes (test-caller.js: the caller symbol, 16 lines, nothing imported)');
    assert.equal(out.created, true, 'the node of the flow was created from its module');
    assert.ok(out.withFlow.includes('nodes/iotgw-terminal-mode.js') && out.withFlow.includes('nodes/iotgw-gateway.js'), out.withFlow.join(', '));
    assert.ok(!out.withFlow.some((f) => f.startsWith('nodes/') && !/iotgw-(terminal-mode|gateway)\.js$|\.routes\.js$/.test(f)), `only the modules of the flow's types: ${out.withFlow.join(', ')}`);
    for (const dep of ['undici', 'zod', 'lossless-json', 'ioredis', 'saxes']) assert.ok(!out.withFlow.includes(dep), `a flow that has sent nothing does not load ${dep}`);
    assert.ok(out.afterCall.includes('undici'), 'the first request loads undici');
    for (const dep of ['ioredis', 'saxes']) assert.ok(!out.afterCall.includes(dep), `${dep} only with its node`);
  });

  it('the registrar registers each type with the options of its real register function (credentials)', function () {
    const record = (mod) => {
      const seen = [];
      mod({ nodes: { registerType: (type, _ctor, opts) => seen.push({ type, opts: opts || null }) } });
      return seen;
    };
    for (const [type, file] of Object.entries(pkg['node-red'].nodes)) {
      const real = require(path.join(ROOT, 'dist', 'nodes', path.basename(file))).default;
      assert.deepEqual(record(require(path.join(ROOT, file))), record(real), type);
    }
    assert.deepEqual(record(require(path.join(ROOT, 'nodes/iotgw-gateway.js')))[0].opts.credentials.clientSecret, { type: 'password' });
  });

  it('main gives startSimulator and the error codes; the iotgw-simulator bin starts and answers', async function () {
    const api = require(path.join(ROOT, pkg.main));
    assert.equal(typeof api.startSimulator, 'function');
    assert.ok(api.ERROR_CODES.includes('BAD_INPUT'));
    const sim = await api.startSimulator({});
    try {
      const res = await fetch(`${sim.url}/api/v1.0/terminal/mode`, { method: 'POST', body: '[]', headers: { 'content-type': 'application/json' } });
      assert.equal(res.status, 401, 'the simulator refuses a call without a token');
    } finally {
      await sim.close();
    }
    const help = execFileSync(process.execPath, [path.join(ROOT, pkg.bin['iotgw-simulator']), '--help'], { encoding: 'utf8' });
    assert.match(help, /Usage: iotgw-simulator/);
  });
});
