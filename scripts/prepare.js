#!/usr/bin/env node
'use strict';
/**
 * npm's `prepare` (runs on `npm install` in a checkout, on `npm pack`, and when a checkout
 * is installed as a dependency): builds dist/ when TypeScript is at hand (a development
 * checkout after `npm ci`). Installed from a checkout without its devDependencies, there is
 * no tsc: then an existing dist/ is used as it is, and without one it says what to do
 * instead of failing with "tsc: not found" (issue 15).
 */
const { spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const ROOT = path.resolve(__dirname, '..');
let hasTsc = true;
try {
  require.resolve('typescript/package.json', { paths: [ROOT] });
} catch {
  hasTsc = false;
}
if (hasTsc) {
  const r = spawnSync(process.platform === 'win32' ? 'npm.cmd' : 'npm', ['run', 'build'], { cwd: ROOT, stdio: 'inherit', shell: process.platform === 'win32' });
  process.exit(r.status ?? 1);
}
if (fs.existsSync(path.join(ROOT, 'dist', 'nodes.js'))) {
  console.log('prepare: TypeScript is not installed here; using the dist/ already built.');
  process.exit(0);
}
console.error(
  'prepare: dist/ is not built and TypeScript is not installed here.\n' +
    'Build in the checkout first (npm ci && npm run build), or install a packed tarball (see README, "Install").',
);
process.exit(1);
