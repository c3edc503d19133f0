'use strict';
/**
 * The shape of the tree (issue 14): src/lib never imports src/nodes, and no import circle
 * anywhere in src/ (type-only imports count: a circle of types is still a circle to read).
 * Reads the TypeScript sources as text; the graph walk is written here, no dependency.
 */
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const SRC = path.join(__dirname, '..', '..', 'src');

function listTs(dir) {
  const out = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...listTs(p));
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/** Module specifiers of `import … from`, `export … from`, `import '…'`, `import(…)`, `require(…)`. */
function specifiers(text) {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const out = [];
  const res = [
    /\b(?:import|export)\s+(?:type\s+)?[^'";]*?\bfrom\s*['"]([^'"]+)['"]/g,
    /\bimport\s*['"]([^'"]+)['"]/g,
    /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
    /\brequire\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  for (const re of res) for (const m of code.matchAll(re)) out.push(m[1]);
  return out;
}

/** Resolves a relative specifier to a file of `files`, or undefined (a package). */
function resolve(from, spec, files) {
  if (!spec.startsWith('.')) return undefined;
  const base = path.resolve(path.dirname(from), spec);
  for (const c of [base, `${base}.ts`, path.join(base, 'index.ts')]) if (files.has(c)) return c;
  throw new Error(`${path.relative(SRC, from)}: import '${spec}' resolves to no file`);
}

function importGraph(root) {
  const list = listTs(root);
  const files = new Set(list);
  const graph = new Map();
  for (const f of list) {
    const deps = new Set();
    for (const s of specifiers(fs.readFileSync(f, 'utf8'))) {
      const r = resolve(f, s, files);
      if (r) deps.add(r);
    }
    graph.set(f, [...deps]);
  }
  return graph;
}

/** Every import circle (as a list of nodes, first repeated last), by a depth-first walk. */
function findCircles(graph) {
  const state = new Map(); // undefined: new, 1: on the path, 2: done
  const stack = [];
  const circles = [];
  const visit = (n) => {
    state.set(n, 1);
    stack.push(n);
    for (const d of graph.get(n) ?? []) {
      if (state.get(d) === 1) circles.push([...stack.slice(stack.indexOf(d)), d]);
      else if (!state.get(d)) visit(d);
    }
    stack.pop();
    state.set(n, 2);
  };
  for (const n of graph.keys()) if (!state.get(n)) visit(n);
  return circles;
}

const rel = (f) => path.relative(SRC, f).split(path.sep).join('/');

describe('architecture: the import graph of src/', function () {
  const graph = importGraph(SRC);

  it('reads the imports it should (the walk sees lib, nodes and simulator files and their edges)', function () {
    const keys = [...graph.keys()].map(rel);
    for (const f of ['lib/transport/http.ts', 'nodes/iotgw-gateway.ts', 'simulator/areas.ts', 'index.ts']) assert.ok(keys.includes(f), f);
    const gw = graph.get(path.join(SRC, 'nodes', 'iotgw-gateway.ts')).map(rel);
    assert.ok(gw.includes('lib/transport/http.ts'), `iotgw-gateway.ts imports lib/transport/http.ts: ${gw.join(', ')}`);
    assert.deepEqual(specifiers("import type { A } from './a';\nexport { b } from \"./b\";\nconst c = require('./c');\n// import x from './no'\n"), ['./a', './b', './c']);
  });

  it('the circle finder finds a circle when there is one, and none in a tree', function () {
    const g = new Map([['a', ['b']], ['b', ['c']], ['c', ['a']], ['d', ['a']]]);
    assert.deepEqual(findCircles(g), [['a', 'b', 'c', 'a']]);
    assert.deepEqual(findCircles(new Map([['a', ['b', 'c']], ['b', ['c']], ['c', []]])), []);
  });

  it('src/lib imports nothing from src/nodes', function () {
    const bad = [];
    for (const [f, deps] of graph) {
      if (!rel(f).startsWith('lib/')) continue;
      for (const d of deps) if (rel(d).startsWith('nodes/')) bad.push(`${rel(f)} -> ${rel(d)}`);
    }
    assert.deepEqual(bad, [], 'lib must not import node files; move the shared helper into src/lib');
  });

  // The layers below Node-RED (issue 29): plain Node.js, so the clients work without it.
  const PLAIN = ['lib/api/', 'lib/transport/', 'lib/common/', 'lib/account/', 'lib/feed/', 'lib/codec/', 'lib/outbox/'];
  const plainProblems = (g, specs) => {
    const bad = [];
    for (const [f, deps] of g) {
      if (!PLAIN.some((p) => rel(f).startsWith(p))) continue;
      for (const s of specs(f)) if (s === 'node-red' || s.startsWith('node-red/') || s.startsWith('@node-red/')) bad.push(`${rel(f)} -> ${s}`);
      for (const d of deps) if (rel(d).startsWith('lib/node-red/') || rel(d).startsWith('nodes/')) bad.push(`${rel(f)} -> ${rel(d)}`);
    }
    return bad;
  };

  it('no file of lib/{api,transport,common,account,feed,codec,outbox} imports node-red, lib/node-red or nodes (type imports count)', function () {
    assert.ok([...graph.keys()].some((f) => rel(f).startsWith('lib/api/clients/')), 'the walk sees lib/api/clients');
    const bad = plainProblems(graph, (f) => specifiers(fs.readFileSync(f, 'utf8')));
    assert.deepEqual(bad, [], 'the API layer must stay plain Node.js: pass a plain interface instead');
  });

  it('the plain-layer check finds a type import of node-red and of lib/node-red when there is one', function () {
    const api = path.join(SRC, 'lib', 'api', 'x.ts');
    const kit = path.join(SRC, 'lib', 'node-red', 'node-kit.ts');
    const g = new Map([[api, [kit]], [kit, []]]);
    const specs = () => specifiers("import type { NodeAPI } from 'node-red';\nimport type { Msg } from '../node-red/node-kit';\n");
    assert.deepEqual(plainProblems(g, specs), ['lib/api/x.ts -> node-red', 'lib/api/x.ts -> lib/node-red/node-kit.ts']);
  });

  it('no import circle anywhere in src/', function () {
    const circles = findCircles(graph).map((c) => c.map(rel).join(' -> '));
    assert.deepEqual(circles, []);
  });
});

// ---- Sizes (issue 29): no .ts file in src/ over 400 lines, no function over 60 ----

const MAX_FILE_LINES = 400;
const MAX_FUNCTION_LINES = 60;

/**
 * Today's offenders, each with the size it has now: the check fails when one grows, and
 * when one is back within the limit (then take it off this list). Every other file and
 * function must keep to the limits. Function names are qualified by the functions (and
 * classes) around them; `<anon>` is an unnamed function.
 */
const ALLOWED_FILES = {};
const ALLOWED_FUNCTIONS = {};

let ts;
function typescript() {
  ts ??= require('typescript');
  return ts;
}

/** Every function (declaration, method, constructor, accessor, expression, arrow) of a source text, with its length in lines. */
function functionLengths(file, text) {
  const t = typescript();
  const sf = t.createSourceFile(file, text, t.ScriptTarget.Latest, true);
  const out = [];
  const seen = new Map();
  const nameOf = (n) => {
    if (t.isConstructorDeclaration(n)) return 'constructor';
    if (n.name) return n.name.getText(sf);
    const p = n.parent;
    if (p && (t.isVariableDeclaration(p) || t.isPropertyAssignment(p) || t.isPropertyDeclaration(p))) return p.name.getText(sf);
    return '<anon>';
  };
  const visit = (n, outer) => {
    let inner = outer;
    const isFn = t.isFunctionDeclaration(n) || t.isMethodDeclaration(n) || t.isConstructorDeclaration(n) || t.isGetAccessorDeclaration(n) ||
      t.isSetAccessorDeclaration(n) || t.isFunctionExpression(n) || t.isArrowFunction(n);
    if (isFn || t.isClassDeclaration(n) || t.isClassExpression(n)) {
      inner = [...outer, nameOf(n)];
      if (isFn) {
        let name = inner.join('.');
        const k = (seen.get(name) ?? 0) + 1;
        seen.set(name, k);
        if (k > 1) name += `#${k}`;
        const lines = sf.getLineAndCharacterOfPosition(n.getEnd()).line - sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1;
        out.push({ name, lines });
      }
    }
    t.forEachChild(n, (c) => visit(c, inner));
  };
  visit(sf, []);
  return out;
}

describe('architecture: sizes of src/ (no file over 400 lines, no function over 60)', function () {
  const files = listTs(SRC);

  it('the function counter sees methods, nested functions and arrows, with their lines', function () {
    const text = 'export function a() {\n  const b = () => {\n    return 1;\n  };\n  return b;\n}\nclass C {\n  m(): void {}\n}\n';
    assert.deepEqual(functionLengths('x.ts', text), [{ name: 'a', lines: 6 }, { name: 'a.b', lines: 3 }, { name: 'C.m', lines: 1 }]);
  });

  it(`no .ts file is over ${MAX_FILE_LINES} lines, except the listed ones (and those not grown)`, function () {
    const bad = [];
    const over = new Set();
    for (const f of files) {
      const lines = fs.readFileSync(f, 'utf8').split('\n').length - 1;
      if (lines <= MAX_FILE_LINES) continue;
      over.add(rel(f));
      const allowed = ALLOWED_FILES[rel(f)];
      if (allowed === undefined) bad.push(`${rel(f)}: ${lines} lines; cut it by role into files of at most ${MAX_FILE_LINES}`);
      else if (lines > allowed) bad.push(`${rel(f)}: ${lines} lines, grew beyond the ${allowed} it is allowed while it waits to be cut`);
    }
    for (const f of Object.keys(ALLOWED_FILES)) if (!over.has(f)) bad.push(`${f}: within ${MAX_FILE_LINES} lines now; take it off ALLOWED_FILES`);
    assert.deepEqual(bad, []);
  });

  it(`no function is over ${MAX_FUNCTION_LINES} lines, except the listed ones (and those not grown)`, function () {
    const bad = [];
    const over = new Set();
    for (const f of files) {
      for (const { name, lines } of functionLengths(f, fs.readFileSync(f, 'utf8'))) {
        if (lines <= MAX_FUNCTION_LINES) continue;
        const key = `${rel(f)}: ${name}`;
        over.add(key);
        const allowed = ALLOWED_FUNCTIONS[key];
        if (allowed === undefined) bad.push(`${key}: ${lines} lines; cut it into named steps of at most ${MAX_FUNCTION_LINES}`);
        else if (lines > allowed) bad.push(`${key}: ${lines} lines, grew beyond the ${allowed} it is allowed while it waits to be cut`);
      }
    }
    for (const k of Object.keys(ALLOWED_FUNCTIONS)) if (!over.has(k)) bad.push(`${k}: within ${MAX_FUNCTION_LINES} lines now; take it off ALLOWED_FUNCTIONS`);
    assert.deepEqual(bad, []);
  });
});
