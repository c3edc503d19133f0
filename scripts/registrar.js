#!/usr/bin/env node
'use strict';
/**
 * Build step after `tsc` (npm run build). tsc writes dist/ as it is (readable CommonJS,
 * declarations for the package's API); the runtime dependencies (undici, zod,
 * lossless-json, ioredis, saxes) stay in node_modules, declared in package.json
 * "dependencies", so a user's `npm ls` and `npm audit` see them. This step writes what
 * Node-RED loads at start, so that a Node-RED with our package and no flow of ours pays
 * for almost nothing:
 *  - dist/nodes.js   the registrar: for every type of package.json "node-red.nodes", a
 *    register function that registers the type at once with its options (credentials)
 *    and a constructor that requires the node's own module (dist/nodes/<type>.js, and the
 *    lib files it imports) when the first node of that type is created. The options are
 *    read here, at build time, by running each real register function against a recording
 *    RED, so they cannot drift from the source. A register function may do nothing but
 *    call RED.nodes.registerType (the build fails otherwise);
 *  - a node's admin routes (the editor's "test connection", ...) are registered at start
 *    from dist/nodes/<type>.routes.js when src/nodes/<type>.routes.ts exists: such a file
 *    exports `routes(RED)`, imports nothing heavy at its top and requires what a request
 *    needs inside its handlers;
 *  - nodes/<type>.js  a one-line shim per type requiring the registrar (written only
 *    when it differs).
 */
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const ROOT = path.resolve(__dirname, '..');
const DIST = path.join(ROOT, 'dist');
const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
const types = Object.entries(pkg['node-red'].nodes).map(([type, file]) => ({ type, file, name: path.basename(file, '.js') }));

/** Each type's registerType options, read in a child process (a fresh module cache). */
function readRegistrations() {
  for (const { type, name } of types) {
    if (!fs.existsSync(path.join(DIST, 'nodes', `${name}.js`))) throw new Error(`node-red.nodes["${type}"]: dist/nodes/${name}.js is missing (src/nodes/${name}.ts?)`);
  }
  const code = `
    const path = require('node:path');
    const out = {};
    for (const { type, name } of ${JSON.stringify(types)}) {
      const seen = [];
      const admin = (verb) => (p) => { throw new Error(type + ': its register function adds the admin route ' + verb + ' ' + p + ': put it in src/nodes/' + name + '.routes.ts (routes(RED), registered at start)'); };
      const RED = {
        nodes: { registerType: (t, ctor, opts) => seen.push({ type: t, opts: opts || null }) },
        httpAdmin: { get: admin('GET'), post: admin('POST'), put: admin('PUT'), delete: admin('DELETE'), use: admin('USE') },
        httpNode: { get: admin('GET'), post: admin('POST'), use: admin('USE') },
        auth: { needsPermission: () => () => {} },
      };
      require(path.join(${JSON.stringify(DIST)}, 'nodes', name + '.js')).default(RED);
      out[type] = seen;
    }
    process.stdout.write(JSON.stringify(out));`;
  const regs = JSON.parse(execFileSync(process.execPath, ['-e', code], { encoding: 'utf8' }));
  for (const [type, seen] of Object.entries(regs)) {
    if (seen.length !== 1 || seen[0].type !== type) {
      throw new Error(`${type}: its register function must register exactly the type "${type}" and do nothing else (it registered ${JSON.stringify(seen.map((r) => r.type))})`);
    }
  }
  return regs;
}

function writeRegistrar() {
  const regs = readRegistrations();
  const lines = [
    "'use strict';",
    '// Written by scripts/registrar.js (npm run build). Each type is registered at once with',
    '// its options; its real constructor comes from dist/nodes/<type>.js when the first node',
    '// of that type is created.',
    'function lazy(type, file, options, routes) {',
    '  return function register(RED) {',
    '    let Real;',
    '    function load() {',
    '      // The real register function, run against this RED, hands over its constructor.',
    '      const nodes = Object.create(RED.nodes, { registerType: { value: (t, ctor) => { Real = ctor; } } });',
    '      require(file).default(Object.create(RED, { nodes: { value: nodes } }));',
    '      return Real;',
    '    }',
    '    function LazyNode(config) {',
    '      (Real || load()).call(this, config);',
    '    }',
    '    RED.nodes.registerType(type, LazyNode, options);',
    '    if (routes) require(routes).routes(RED);',
    '  };',
    '}',
  ];
  for (const { type, name } of types) {
    const routes = fs.existsSync(path.join(DIST, 'nodes', `${name}.routes.js`)) ? `./nodes/${name}.routes.js` : null;
    const opts = regs[type][0].opts;
    lines.push(`exports[${JSON.stringify(type)}] = lazy(${JSON.stringify(type)}, ${JSON.stringify(`./nodes/${name}.js`)}, ${JSON.stringify(opts)}, ${JSON.stringify(routes)});`);
  }
  fs.writeFileSync(path.join(DIST, 'nodes.js'), `${lines.join('\n')}\n`);
  process.stdout.write(`[build] dist/nodes.js: ${(fs.statSync(path.join(DIST, 'nodes.js')).size / 1024).toFixed(1)} kB (registrar, ${types.length} types)\n`);
}

function writeShims() {
  for (const { type, file, name } of types) {
    const shim = `// The registrar entry of ${type} (src/nodes/${name}.ts); written by scripts/registrar.js (npm run build).\nmodule.exports = require('../dist/nodes.js')[${JSON.stringify(type)}];\n`;
    const at = path.join(ROOT, file);
    if (!fs.existsSync(at) || fs.readFileSync(at, 'utf8') !== shim) {
      fs.writeFileSync(at, shim);
      process.stdout.write(`[build] wrote ${file}\n`);
    }
  }
}

/** nodes/<name>.js for every editor plugin of "node-red.plugins" (src/plugins/<name>.ts): its default export. */
function writePluginShims() {
  for (const [id, file] of Object.entries(pkg['node-red'].plugins ?? {})) {
    const name = path.basename(file, '.js');
    if (!fs.existsSync(path.join(DIST, 'plugins', `${name}.js`))) throw new Error(`node-red.plugins["${id}"]: dist/plugins/${name}.js is missing (src/plugins/${name}.ts?)`);
    const shim = `// The editor plugin ${id} (src/plugins/${name}.ts); written by scripts/registrar.js (npm run build).\nmodule.exports = require('../dist/plugins/${name}.js').default;\n`;
    const at = path.join(ROOT, file);
    if (!fs.existsSync(at) || fs.readFileSync(at, 'utf8') !== shim) {
      fs.writeFileSync(at, shim);
      process.stdout.write(`[build] wrote ${file}\n`);
    }
  }
}

try {
  writeRegistrar();
  writeShims();
  writePluginShims();
  fs.chmodSync(path.join(DIST, 'simulator', 'cli.js'), 0o755);
} catch (err) {
  process.stderr.write(`${err.stack || err}\n`);
  process.exit(1);
}
