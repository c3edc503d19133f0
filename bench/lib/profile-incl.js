'use strict';
/** node bench/lib/profile-incl.js file.cpuprofile pattern...: inclusive time of matching functions (not double counted on recursion). */
const fs = require('node:fs');
const prof = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const pats = process.argv.slice(3).map((p) => new RegExp(p));
const byId = new Map(prof.nodes.map((x) => [x.id, x]));
const parent = new Map();
for (const x of prof.nodes) for (const c of x.children || []) parent.set(c, x.id);
const dt = new Map();
let total = 0, busy = 0;
for (let i = 0; i < prof.samples.length; i++) { dt.set(prof.samples[i], (dt.get(prof.samples[i]) || 0) + (prof.timeDeltas[i] || 0)); }
const label = (x) => `${x.callFrame.functionName || '(anon)'} ${x.callFrame.url.replace(/^.*node_modules\//, 'nm/').replace(/^file:\/\/.*\/work\/main\//, '')}:${x.callFrame.lineNumber + 1}`;
const incl = pats.map(() => new Map());
for (const [id, us] of dt) {
  total += us;
  if (byId.get(id).callFrame.functionName !== '(idle)') busy += us;
  pats.forEach((re, k) => {
    const seen = new Set();
    for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
      const l = label(byId.get(cur));
      if (re.test(l) && !seen.has(l)) { seen.add(l); incl[k].set(l, (incl[k].get(l) || 0) + us); }
    }
  });
}
console.log(`total ${(total / 1e6).toFixed(2)} s, busy ${(busy / 1e6).toFixed(2)} s`);
pats.forEach((re, k) => { for (const [l, us] of [...incl[k]].sort((a, b) => b[1] - a[1]).slice(0, 6)) console.log(`${((100 * us) / busy).toFixed(1).padStart(5)}% of busy  ${l}`); });
