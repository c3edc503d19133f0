'use strict';
/** node bench/lib/profile-top.js file.cpuprofile [n]: self time by function and by file. */
const fs = require('node:fs');
const prof = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const n = Number(process.argv[3] || 30);
const self = new Map();
const byId = new Map(prof.nodes.map((x) => [x.id, x]));
const dt = new Map();
for (let i = 0; i < prof.samples.length; i++) dt.set(prof.samples[i], (dt.get(prof.samples[i]) || 0) + (prof.timeDeltas[i] || 0));
let total = 0;
const files = new Map();
for (const [id, us] of dt) {
  const node = byId.get(id);
  const cf = node.callFrame;
  const file = cf.url.replace(/^.*node_modules\//, 'nm/').replace(/^file:\/\/.*\/work\/main\//, '');
  const key = `${cf.functionName || '(anon)'} ${file}:${cf.lineNumber + 1}`;
  self.set(key, (self.get(key) || 0) + us);
  const f = file.split('/').slice(0, file.startsWith('nm/@') ? 3 : 2).join('/') || cf.functionName;
  files.set(f, (files.get(f) || 0) + us);
  total += us;
}
const top = (m) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, v]) => `${((100 * v) / total).toFixed(1).padStart(5)}%  ${k}`).join('\n');
console.log(`total ${(total / 1e6).toFixed(2)} s\n-- by function --\n${top(self)}\n-- by module --\n${top(files)}`);
