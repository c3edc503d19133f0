'use strict';
/**
 * Figure 5: footprint on an edge gateway.
 *
 * - Installed size: `npm pack` of this checkout, then `npm install --omit=dev <tarball>`
 *   in a temporary directory (the npm registry supplies the runtime dependencies);
 *   the apparent size (sum of file sizes) and the disk usage (du -sk) of its
 *   node_modules, i.e. the package plus its runtime dependencies.
 * - Load time, two ways:
 *   (a) Node-RED's start time (spawn to the admin API answering) in three user
 *       directories: without the package, with it and no flow, and with it and a flow of
 *       one iotgw-gateway and ten nodes of ours (TEN below) saved in flows.json;
 *       START_ROUNDS rounds of one start each, back to back (order alternating); the
 *       median of the per-round differences against "without" (fastest and medians too).
 *       "With, no flow" is what installing the package adds; "with a flow" adds the load
 *       of the node modules, which the registrar defers to the first node of each type (scripts/registrar.js);
 *   (b) in a fresh node process, require() of every node module the package lists plus
 *       the call that registers its types (a stub RED that records registerType), then the
 *       load of every node module with its real register function (what the first node of ours
 *       costs), the median of ROUNDS processes: what the package itself costs, without the
 *       noise of the rest of the start.
 * - Idle memory: RSS after a full GC of the three Node-REDs of (a), every round, the median
 *   of the per-round differences against "without"; and the
 *   Node-RED with the package, empty flows, then TEN deployed (pollers with autoStart off,
 *   nothing sent), rested 3 s, RSS after a full GC; the difference.
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync, execFile } = require('node:child_process');
const { ChildRed, makeUserDir, idleRss, ROOT } = require('../lib/red');
const { sim, mb, r1, gatewayConfig, onTab, median } = require('../lib/util');

function dirSize(dir) {
  let bytes = 0;
  let files = 0;
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) {
        bytes += fs.statSync(p).size;
        files++;
      }
    }
  };
  walk(dir);
  return { bytes, files };
}


const LOAD_SCRIPT = `
const path = require('path');
const pkgDir = process.argv[1];
const t0 = process.hrtime.bigint();
const pkg = require(path.join(pkgDir, 'package.json'));
const types = [];
const RED = { nodes: { registerType: (t) => types.push(t), createNode() {}, getNode() { return null; } }, _: (k) => k, util: {}, settings: {}, log: {}, events: { on() {} }, httpAdmin: { get() {}, post() {} } };
for (const file of Object.values(pkg['node-red'].nodes)) {
  const mod = require(path.join(pkgDir, file));
  (typeof mod === 'function' ? mod : mod.default)(RED);
}
const ms = Number(process.hrtime.bigint() - t0) / 1e6;
// What the first nodes of ours cost: every node module (dist/nodes/*.js, with the lib and
// the dependencies they import at their top) and its real register function.
const t1 = process.hrtime.bigint();
for (const file of Object.values(pkg['node-red'].nodes)) {
  require(path.join(pkgDir, 'dist', 'nodes', path.basename(file))).default({ nodes: { registerType() {} } });
}
const coreMs = Number(process.hrtime.bigint() - t1) / 1e6;
process.stdout.write(JSON.stringify({ ms, coreMs, types: types.length }));
`;

/** One iotgw-gateway and ten nodes of ours (pollers with autoStart off: nothing is sent). */
function tenNodes(simUrl) {
  const n = (id, type, extra = {}) => ({ id, type, gateway: 'gw', wires: [], ...extra });
  return onTab([
    gatewayConfig(simUrl, { rateLimitCalls: 5, rateLimitWindowSeconds: 60 }),
    n('m1', 'iotgw-terminal-mode', { mode: 0, wakeupInterval: 0, family: 'any', wires: [[], []] }),
    n('m2', 'iotgw-terminal-mode', { mode: 1, wakeupInterval: 3, family: 'IDP', wires: [[], []] }),
    n('c1', 'iotgw-cancel', { wires: [[], []] }),
    n('p1', 'iotgw-status-poller', { intervalSeconds: 60, startFrom: '', output: 'record', autoStart: false, fullAt: 500, addNames: true, wires: [[]] }),
    n('p2', 'iotgw-status-poller', { intervalSeconds: 60, startFrom: '', output: 'batch', autoStart: false, fullAt: 500, addNames: true, wires: [[]] }),
    n('t1', 'iotgw-message-tracker', { wires: [[], []] }),
    n('d1', 'iotgw-lorawan-devices', { pageSize: 100, allPages: true, wires: [[]] }),
    n('k1', 'iotgw-lorawan-contract', { wires: [[]] }),
    n('r1', 'iotgw-lorawan-referral', { wires: [[]] }),
    n('s1', 'iotgw-sms-request', { wires: [[]] }),
  ]);
}

module.exports = async function footprint(opts = {}) {
  const ROUNDS = opts.quick ? 3 : 5;
  const START_ROUNDS = opts.quick ? 3 : 9;
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'iotgw-bench-pack-'));
  // The npm on PATH, not node_modules/.bin's (under `npm run`, that is Node-RED's own npm 10,
  // whose `pack --ignore-scripts` still runs prepare and prints the build before the JSON).
  const PATH = (process.env.PATH || '').split(path.delimiter).filter((d) => !d.endsWith(path.join('node_modules', '.bin'))).join(path.delimiter);
  const npmEnv = { ...process.env, PATH, npm_config_ignore_scripts: 'true', npm_config_loglevel: 'error', npm_config_fund: 'false', npm_config_audit: 'false', npm_config_update_notifier: 'false' };
  try {
    // Pack without running prepare (dist/ is built already).
    const packOut = execFileSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], { cwd: ROOT, env: npmEnv, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    const packInfo = JSON.parse(packOut.slice(packOut.search(/^\[/m)))[0];
    const tarball = path.join(work, packInfo.filename);
    const inst = path.join(work, 'install');
    fs.mkdirSync(inst);
    fs.writeFileSync(path.join(inst, 'package.json'), JSON.stringify({ name: 'edge', private: true }));
    execFileSync('npm', ['install', '--omit=dev', '--ignore-scripts', '--no-package-lock', tarball], { cwd: inst, env: npmEnv, stdio: ['ignore', 'pipe', 'pipe'], timeout: 300_000 });
    const nm = path.join(inst, 'node_modules');
    const total = dirSize(nm);
    const pkgDir = path.join(nm, '@iotgateway', 'node-red-gateway');
    const own = dirSize(pkgDir);
    const du = Number(execFileSync('du', ['-sk', nm], { encoding: 'utf8' }).split(/\s/)[0]) * 1024;
    const deps = fs
      .readdirSync(nm)
      .filter((n) => !n.startsWith('.'))
      .flatMap((n) => (n.startsWith('@') ? fs.readdirSync(path.join(nm, n)).map((m) => `${n}/${m}`) : [n]))
      .map((n) => ({ name: n, bytes: dirSize(path.join(nm, n)).bytes }))
      .sort((a, b) => b.bytes - a.bytes);

    // (b) require + registration in fresh processes.
    const loads = [];
    for (let i = 0; i < ROUNDS; i++) {
      const out = await new Promise((resolve, reject) =>
        execFile(process.execPath, ['-e', LOAD_SCRIPT, pkgDir], { encoding: 'utf8' }, (err, so, se) => (err ? reject(new Error(se)) : resolve(JSON.parse(so)))),
      );
      loads.push(out);
    }

    // Of which: each runtime dependency alone, required from the install (fresh processes).
    const depLoad = {};
    // (Bundled, they are no longer installed: only what the install holds is timed.)
    for (const dep of ['undici', 'zod', 'lossless-json'].filter((d) => fs.existsSync(path.join(nm, d)))) {
      const times = [];
      for (let i = 0; i < ROUNDS; i++) {
        const code = `const t=process.hrtime.bigint(); require(${JSON.stringify(path.join(nm, dep))}); process.stdout.write(String(Number(process.hrtime.bigint()-t)/1e6));`;
        times.push(Number(execFileSync(process.execPath, ['-e', code], { encoding: 'utf8' })));
      }
      depLoad[dep] = r1(median(times));
    }

    // (a) Node-RED start without the package, with it, and with it and a flow of ours; (c) idle memory.
    const { startSimulator } = sim();
    const s = await startSimulator({});
    const ms = { without: [], with: [], flow: [] };
    const rss = { without: [], with: [], flow: [] };
    let types = [];
    let idle;
    try {
      for (let i = 0; i < START_ROUNDS; i++) {
        // Rotate which goes first, so a trend in the machine's load favours none.
        const order = ['without', 'with', 'flow'];
        for (let k = 0; k < i % 3; k++) order.push(order.shift());
        for (const variant of order) {
          const dir = makeUserDir(variant === 'without' ? 'none' : pkgDir);
          if (variant === 'flow') fs.writeFileSync(path.join(dir, 'flows.json'), JSON.stringify(tenNodes(s.url)));
          const red = new ChildRed(dir);
          try {
            await red.start();
            ms[variant].push(red.startMs);
            // Idle RSS after a full GC, every round (one sample swings by several MB).
            rss[variant].push((await idleRss(red)).rss);
            if (i === 0 && variant === 'with') types = (await red.nodeTypes()).filter((t) => t.startsWith('iotgw-'));
          } finally {
            await red.stop();
          }
        }
      }

      // Idle memory of one config node and ten nodes, deployed on a running Node-RED.
      const red = new ChildRed(makeUserDir(pkgDir));
      try {
        await red.start();
        await red.deploy(onTab([]));
        const empty = await idleRss(red, 2000);
        await red.deploy(tenNodes(s.url));
        const ten = await idleRss(red, 3000);
        idle = { emptyRssMB: mb(empty.rss), tenRssMB: mb(ten.rss), addedRssMB: mb(ten.rss - empty.rss), addedHeapMB: mb(ten.heapUsed - empty.heapUsed) };
      } finally {
        await red.stop();
      }
    } finally {
      await s.close();
    }
    const withMs = ms.with;
    const withoutMs = ms.without;
    const startDiff = median(withMs) - median(withoutMs);
    const startMinDiff = Math.min(...withMs) - Math.min(...withoutMs);
    // Each round's two starts ran back to back, under about the same load: the median of
    // the per-round differences is the least disturbed estimate.
    const startPairedDiff = median(withMs.map((w, i) => w - withoutMs[i]));
    const flowPairedDiff = median(ms.flow.map((w, i) => w - withoutMs[i]));
    const requireMs = median(loads.map((l) => l.ms));
    const coreMs = loads[0] && loads[0].coreMs !== null ? median(loads.map((l) => l.coreMs)) : null;
    // Median of the per-round differences, as for the start time.
    const packageRss = mb(median(rss.with.map((w, i) => w - rss.without[i])));
    const flowRss = mb(median(rss.flow.map((w, i) => w - rss.without[i])));
    return {
      figure: 'footprint',
      setup: { rounds: ROUNDS, startRounds: START_ROUNDS },
      tarball: { file: packInfo.filename, packedBytes: packInfo.size, unpackedBytes: packInfo.unpackedSize, entries: packInfo.entryCount },
      installed: { bytes: total.bytes, files: total.files, diskBytes: du, ownBytes: own.bytes, deps: deps.map((d) => ({ name: d.name, kb: Math.round(d.bytes / 1024) })) },
      installedMB: mb(total.bytes),
      load: {
        requireRegisterMs: r1(requireMs),
        requireRegisterRuns: loads.map((l) => r1(l.ms)),
        typesRegistered: loads[0] && loads[0].types,
        depRequireMs: depLoad,
        redStartWithMs: withMs.map(r1),
        redStartWithoutMs: withoutMs.map(r1),
        redStartDiffMs: r1(startDiff),
        redStartMinDiffMs: r1(startMinDiff),
        redStartPairedDiffMs: r1(startPairedDiff),
        coreLoadMs: coreMs === null ? null : r1(coreMs),
        redStartFlowMs: ms.flow.map(r1),
        redStartFlowPairedDiffMs: r1(flowPairedDiff),
        typesLoadedByRed: types.length,
      },
      packageRssMB: packageRss,
      flowRssMB: flowRss,
      rssMB: { without: rss.without.map(mb), with: rss.with.map(mb), flow: rss.flow.map(mb) },
      idle,
      // Issue 26: at most 15 MB installed with its declared dependencies (the sum of the file
      // sizes, as npm's "unpacked size" counts; du, which rounds every file up to a disk block,
      // is shown beside it); issue 17: at most 30 ms added to Node-RED's start, at most 8 MB
      // added to idle RSS by loading the package.
      met: {
        size: total.bytes <= 15 * 1024 * 1024,
        load: Math.max(requireMs, startPairedDiff) <= 30,
        idle: packageRss <= 8,
      },
    };
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
};
