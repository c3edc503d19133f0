#!/usr/bin/env node
'use strict';
/**
 * Build step after `tsc` (npm run build): esbuild bundles what the published package runs
 * into dist/bundle/, so that an install carries only what is called (undici, zod and
 * lossless-json cut to the parts we use; no TypeScript sources, typings or maps):
 *  - dist/bundle/nodes.js  what Node-RED loads at start: for every type of package.json
 *    "node-red.nodes", a register function that registers the type with its options
 *    (credentials) and its admin routes (path and permission; the handler loads core.js on
 *    the first request) and a constructor that loads core.js when the first node of ours is
 *    created (nodes/<type>.js is a one-line shim requiring its entry). The options are read
 *    here, at build time, by running each real register function against a recording RED,
 *    so they cannot drift from the source. A Node-RED with no flow of ours loads 3 kB;
 *  - dist/bundle/core.js   every node module, by type (new nodes added to the map are
 *    picked up here, new lib files through their imports), loaded at the first node's
 *    creation;
 *  - dist/bundle/undici.js   undici (cut to the dispatchers we use), loaded on the first request;
 *  - dist/bundle/ioredis.js  ioredis, loaded only when an iotgw-redis node connects;
 *  - dist/bundle/index.js  the package's API (src/index.ts: startSimulator, errors);
 *  - dist/bundle/cli.js    the `iotgw-simulator` bin (its simulator is index.js's).
 * The editor .html files, locales and icons stay as they are in nodes/ (the Flow Library
 * reads them). No source maps (a map without its sources helps nobody).
 * Sizes of the outputs are printed; `--meta` writes esbuild's metafiles for analysis.
 */
const fs = require('node:fs');
const path = require('node:path');
const esbuild = require('esbuild');

const ROOT = path.resolve(__dirname, '..');
const OUT = path.join(ROOT, 'dist', 'bundle');
const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));

function nodeEntry() {
  const lines = ["'use strict';"];
  for (const [type, file] of Object.entries(pkg['node-red'].nodes)) {
    const src = path.join('src', 'nodes', `${path.basename(file, '.js')}.ts`);
    if (!fs.existsSync(path.join(ROOT, src))) throw new Error(`node-red.nodes["${type}"]: ${src} is missing`);
    // A getter: a type's module is evaluated when Node-RED loads that type.
    lines.push(`Object.defineProperty(exports, ${JSON.stringify(type)}, { enumerable: true, get: () => require(${JSON.stringify(`./${src.split(path.sep).join('/')}`)}).default });`);
  }
  return lines.join('\n');
}

/** What `import ... from 'undici'` may name in src: undici's main module requires all of undici (fetch, websocket, mocks, caches). */
const UNDICI_PARTS = {
  Agent: 'undici/lib/dispatcher/agent.js',
  Client: 'undici/lib/dispatcher/client.js',
  Pool: 'undici/lib/dispatcher/pool.js',
  ProxyAgent: 'undici/lib/dispatcher/proxy-agent.js',
  EnvHttpProxyAgent: 'undici/lib/dispatcher/env-http-proxy-agent.js',
  Dispatcher: 'undici/lib/dispatcher/dispatcher.js',
  errors: 'undici/lib/core/errors.js',
};

/** Fails the build when src imports a part of undici the cut-down entry does not carry. */
function checkUndiciImports() {
  const walk = (d) => fs.readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(d, e.name)) : e.name.endsWith('.ts') ? [path.join(d, e.name)] : []));
  for (const f of walk(path.join(ROOT, 'src'))) {
    const text = fs.readFileSync(f, 'utf8');
    for (const m of text.matchAll(/import\s*(type\s*)?\{([^}]*)\}\s*from\s*'undici'/g)) {
      if (m[1]) continue;
      for (const raw of m[2].split(',')) {
        const name = raw.trim();
        if (!name || name.startsWith('type ')) continue;
        const base = name.split(/\s+as\s+/)[0].trim();
        if (!UNDICI_PARTS[base]) throw new Error(`${path.relative(ROOT, f)} imports ${base} from undici: add it to UNDICI_PARTS in scripts/bundle.js`);
      }
    }
  }
}

/** undici: only the dispatchers we use; zod: English messages only (zod's other locales are 300 kB). */
const trim = {
  name: 'trim',
  setup(build) {
    // core.js requires undici and ioredis from their own files: undici on the first request
    // (src/lib/transport/proxy.ts), ioredis on the first Redis connection (src/lib/account/redis/connection.ts).
    if (build.initialOptions.outfile && path.basename(build.initialOptions.outfile) === 'core.js') {
      build.onResolve({ filter: /^undici$/ }, () => ({ path: './undici.js', external: true }));
      build.onResolve({ filter: /^ioredis$/ }, () => ({ path: './ioredis.js', external: true }));
    }
    // cli.js runs the simulator of index.js (the package's API) instead of a second copy of it.
    if (build.initialOptions.outfile && path.basename(build.initialOptions.outfile) === 'cli.js') {
      build.onResolve({ filter: /^\.\/index$/ }, (args) => (args.importer.endsWith(path.join('src', 'simulator', 'cli.ts')) ? { path: './index.js', external: true } : undefined));
    }
    build.onResolve({ filter: /^undici$/ }, () => ({ path: 'undici-parts', namespace: 'trim' }));
    build.onLoad({ filter: /^undici-parts$/, namespace: 'trim' }, () => ({
      // As undici's index.js does: request(), stream() ... are set on Dispatcher.prototype.
      contents: [
        "Object.assign(require('undici/lib/dispatcher/dispatcher.js').prototype, require('undici/lib/api'));",
        ...Object.entries(UNDICI_PARTS).map(([k, v]) => `exports.${k} = require(${JSON.stringify(v)});`),
      ].join('\n'),
      resolveDir: ROOT,
      loader: 'js',
    }));
    build.onResolve({ filter: /\/locales\/index\.js$/ }, (args) =>
      /node_modules[\\/]zod[\\/]/.test(args.importer) ? { path: path.join(path.dirname(args.importer), '../locales/en.js').replace(/\.js$/, '.js') + '?en-only', namespace: 'trim' } : undefined,
    );
    build.onLoad({ filter: /\?en-only$/, namespace: 'trim' }, (args) => ({
      contents: `export { default as en } from ${JSON.stringify(args.path.replace(/\?en-only$/, ''))};`,
      resolveDir: ROOT,
      loader: 'js',
    }));
  },
};

async function main() {
  checkUndiciImports();
  const meta = process.argv.includes('--meta');
  fs.rmSync(OUT, { recursive: true, force: true });
  const common = {
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    // ESM builds first: they tree-shake (zod's other locales, undici's unused clients).
    mainFields: ['module', 'main'],
    minifySyntax: true,
    minifyWhitespace: true,
    keepNames: true,
    legalComments: 'external',
    sourcemap: false,
    metafile: true,
    logLevel: 'warning',
    // Optional peers of bundled packages that are never installed here.
    external: ['node-red', '@node-red/*'],
    plugins: [trim],
  };
  const builds = [
    // keepNames off in core.js: its 1,387 __name() calls and their name literals were a quarter of the CPU time of
    // loading it (81 against 112 ms, median of 15 loads); nothing in it reads a function's name
    // (our errors set their own; zod names its classes itself; undici names its errors).
    { name: 'core.js', keepNames: false, stdin: { contents: nodeEntry(), resolveDir: ROOT, sourcefile: 'nodes-entry.js', loader: 'js' } },
    // keepNames off in undici.js as well: a named closure made per request (writeH1's abort,
    // ...) would pay a defineProperty per call that an unbundled undici does not; undici's
    // errors set their own name.
    { name: 'undici.js', keepNames: false, stdin: { contents: "module.exports = require('undici');", resolveDir: ROOT, sourcefile: 'undici-entry.js', loader: 'js' } },
    { name: 'ioredis.js', stdin: { contents: "module.exports = require('ioredis');", resolveDir: ROOT, sourcefile: 'ioredis-entry.js', loader: 'js' } },
    { name: 'index.js', entryPoints: [path.join(ROOT, 'src/index.ts')] },
    { name: 'cli.js', entryPoints: [path.join(ROOT, 'src/simulator/cli.ts')] }, // keeps the source's #! line
  ];
  for (const b of builds) {
    const { name, ...opts } = b;
    const res = await esbuild.build({ ...common, ...opts, outfile: path.join(OUT, name) });
    const size = fs.statSync(path.join(OUT, name)).size;
    process.stdout.write(`[bundle] dist/bundle/${name}: ${(size / 1024).toFixed(0)} kB\n`);
    if (meta) fs.writeFileSync(path.join(OUT, `${name}.meta.json`), JSON.stringify(res.metafile));
  }
  fs.chmodSync(path.join(OUT, 'cli.js'), 0o755);
  writeRegistrar();
  writeShims();
}

/**
 * Each type's registerType options, read by running core.js's register functions against a
 * recording RED in a child process (a fresh module cache; the register functions only
 * define their constructors and register them).
 */
function readRegistrations() {
  const { execFileSync } = require('node:child_process');
  const code = `
    const core = require(${JSON.stringify(path.join(OUT, 'core.js'))});
    const out = {};
    for (const key of Object.keys(core)) {
      const seen = [];
      const routes = [];
      // Admin routes (the gateway dialog's "test connection"): method, path and permission are recorded.
      const route = (method) => (p, ...handlers) => routes.push({ method, path: p, permission: (handlers.find((h) => h && h.permission) || {}).permission || null });
      const RED = {
        nodes: { registerType: (type, ctor, opts) => seen.push({ type, opts: opts || null }) },
        httpAdmin: { get: route('get'), post: route('post'), put: route('put'), delete: route('delete') },
        auth: { needsPermission: (permission) => ({ permission }) },
      };
      core[key](RED);
      if (seen[0]) seen[0].routes = routes;
      out[key] = seen;
    }
    process.stdout.write(JSON.stringify(out));`;
  const regs = JSON.parse(execFileSync(process.execPath, ['-e', code], { encoding: 'utf8' }));
  for (const [key, seen] of Object.entries(regs)) {
    if (seen.length !== 1 || seen[0].type !== key) {
      throw new Error(`${key}: its register function must register exactly the type "${key}" (it registered ${JSON.stringify(seen.map((r) => r.type))})`);
    }
  }
  return regs;
}

/** dist/bundle/nodes.js: the registrar Node-RED loads (see the top of this file). */
function writeRegistrar() {
  const regs = readRegistrations();
  const lines = [
    "'use strict';",
    '// Written by scripts/bundle.js. Each type is registered at once with its options; its',
    '// real constructor comes from core.js when the first node of ours is created.',
    'let core;',
    'function lazy(type, options, routes) {',
    '  return function register(RED) {',
    '    let Real;',
    '    function load() {',
    "      core = core || require('./core.js');",
    '      // The real register function, run against this RED, hands over its constructor.',
    '      const nodes = Object.create(RED.nodes, { registerType: { value: (t, ctor) => { Real = ctor; } } });',
    '      // Its admin routes hand over their handlers too (registered below, at once).',
    '      handlers = {};',
    "      const route = (m) => (p, ...hs) => { handlers[m + ' ' + p] = hs[hs.length - 1]; };",
    "      const httpAdmin = { get: route('get'), post: route('post'), put: route('put'), delete: route('delete') };",
    '      core[type](Object.create(RED, { nodes: { value: nodes }, httpAdmin: { value: httpAdmin } }));',
    '      return Real;',
    '    }',
    '    let handlers;',
    '    function LazyNode(config) {',
    '      (Real || load()).call(this, config);',
    '    }',
    '    RED.nodes.registerType(type, LazyNode, options);',
    '    // Admin routes at once, with the permission the register function asked for; the',
    '    // handler comes from core.js at the first request.',
    '    for (const r of routes || []) {',
    '      const guard = r.permission ? [RED.auth.needsPermission(r.permission)] : [];',
    '      RED.httpAdmin[r.method](r.path, ...guard, (req, res, next) => {',
    '        if (!handlers) load();',
    "        handlers[r.method + ' ' + r.path](req, res, next);",
    '      });',
    '    }',
    '  };',
    '}',
  ];
  for (const [type, seen] of Object.entries(regs)) {
    const routes = seen[0].routes && seen[0].routes.length ? seen[0].routes : null;
    const opts = seen[0].opts || routes ? `, ${JSON.stringify(seen[0].opts)}` : '';
    lines.push(`exports[${JSON.stringify(type)}] = lazy(${JSON.stringify(type)}${opts}${routes ? `, ${JSON.stringify(routes)}` : ''});`);
  }
  fs.writeFileSync(path.join(OUT, 'nodes.js'), `${lines.join('\n')}\n`);
  process.stdout.write(`[bundle] dist/bundle/nodes.js: ${(fs.statSync(path.join(OUT, 'nodes.js')).size / 1024).toFixed(1)} kB (registrar)\n`);
}

/** nodes/<name>.js for every entry of "node-red.nodes": one line requiring the bundle (written only when it differs). */
function writeShims() {
  for (const [type, file] of Object.entries(pkg['node-red'].nodes)) {
    const shim = `// Bundled from src/nodes/${path.basename(file, '.js')}.ts by scripts/bundle.js (npm run build); this file is written by it.\nmodule.exports = require('../dist/bundle/nodes.js')[${JSON.stringify(type)}];\n`;
    const at = path.join(ROOT, file);
    if (!fs.existsSync(at) || fs.readFileSync(at, 'utf8') !== shim) {
      fs.writeFileSync(at, shim);
      process.stdout.write(`[bundle] wrote ${file}\n`);
    }
  }
}

main().catch((err) => {
  process.stderr.write(`${err.stack || err}\n`);
  process.exit(1);
});
