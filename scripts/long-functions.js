#!/usr/bin/env node
'use strict';
/**
 * Lists the functions and methods longer than a limit, and the files longer than 400
 * lines, in the TypeScript sources (issue 29: "no file over about 400 lines and no
 * function over about 60").
 *
 *   node scripts/long-functions.js [limit] [file or folder ...]
 *
 * limit: lines a function may have (default 60); files or folders: where to look
 * (default src/). Prints `file:line name lines` for every function over the limit
 * (nested functions are counted on their own, and inside their parent too), then
 * `file lines` for every file over 400 lines. Exits 0 whatever it finds: it reports.
 */
const fs = require('node:fs');
const path = require('node:path');
const ts = require('typescript');

const ROOT = path.resolve(__dirname, '..');
const FILE_LIMIT = 400;

const args = process.argv.slice(2);
const limit = args.length > 0 && /^\d+$/.test(args[0]) ? Number(args.shift()) : 60;
const roots = args.length > 0 ? args : ['src'];

/** The .ts files (not .d.ts) under a file or folder, sorted. */
function sourceFiles(where) {
  const full = path.resolve(ROOT, where);
  if (!fs.statSync(full).isDirectory()) return [full];
  return fs
    .readdirSync(full, { withFileTypes: true })
    .sort((a, b) => a.name.localeCompare(b.name))
    .flatMap((entry) => {
      const child = path.join(full, entry.name);
      if (entry.isDirectory()) return sourceFiles(child);
      return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [child] : [];
    });
}

/** A readable name for a function node: its own, or that of what it is assigned to. */
function nameOf(node) {
  const text = (n) => (n && 'text' in n ? n.text : n ? n.getText() : undefined);
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  if (node.name) return text(node.name);
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) return text(parent.name);
  if (ts.isPropertyDeclaration(parent) || ts.isBinaryExpression(parent)) {
    return text(ts.isBinaryExpression(parent) ? parent.left : parent.name);
  }
  if (ts.isCallExpression(parent)) {
    const callee = parent.expression.getText();
    return `<callback of ${callee.length > 40 ? `${callee.slice(0, 37)}...` : callee}>`;
  }
  return '<anonymous>';
}

const isFunction = (node) =>
  ts.isFunctionDeclaration(node) ||
  ts.isFunctionExpression(node) ||
  ts.isArrowFunction(node) ||
  ts.isMethodDeclaration(node) ||
  ts.isConstructorDeclaration(node) ||
  ts.isGetAccessorDeclaration(node) ||
  ts.isSetAccessorDeclaration(node);

const longFiles = [];
for (const file of roots.flatMap(sourceFiles)) {
  const source = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const rel = path.relative(ROOT, file);
  const lineOf = (pos) => source.getLineAndCharacterOfPosition(pos).line + 1;
  const visit = (node) => {
    if (isFunction(node) && node.body) {
      const first = lineOf(node.getStart(source));
      const lines = lineOf(node.getEnd()) - first + 1;
      if (lines > limit) console.log(`${rel}:${first} ${nameOf(node)} ${lines}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  const fileLines = source.getLineAndCharacterOfPosition(source.getEnd()).line + (source.text.endsWith('\n') ? 0 : 1);
  if (fileLines > FILE_LIMIT) longFiles.push(`${rel} ${fileLines}`);
}
for (const line of longFiles) console.log(line);
