'use strict';
/**
 * The terminal inventory of 100,000 terminals through iotgw-terminals in `pages: all` mode
 * (issue 35): RSS of the Node-RED process while the pages stream, and calls per terminal.
 *
 *   npm run build && node bench/terminals-inventory.js [--terminals 100000] [--page-size 1000]
 *
 * The simulator runs in this process (its fleet sized to --terminals, limits off so the walk
 * is not paced); a child Node-RED runs the flow: one inject asks for one page of 1,000 first
 * (so undici, the account and V8's young generation are at their working size before "idle"
 * is read), a second one, 6 s later, asks for every terminal; a function node counts the
 * terminals of each page (the pages are kept nowhere). The child's RSS is read from /proc
 * every 25 ms. Prints one JSON line: RSS before any call (cold), after the one page (idle),
 * the peak while streaming and its distance to both, terminals, pages, calls, calls per
 * 1,000 terminals, seconds, the machine's load average, and the floor: what a bare node
 * process reading the same pages with fetch and JSON.parse peaks above its idle. Run it
 * with --terminals 10000 too: a peak that does not grow with the count is what streaming means.
 * --gc-idle: both processes run with --expose-gc and do a full GC right before their idle
 * reading (and the Node-RED one before its cold reading), so idle is the settled size and not
 * wherever the last collection happened to leave RSS.
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { startSimulator } = require('../dist/simulator');
const { execFile } = require('node:child_process');
const { ChildRed, makeUserDir, childGateway } = require('../test/helpers/child-red');

/**
 * The floor: a bare `node` process (no Node-RED, no package) reading the same pages with
 * fetch and JSON.parse, each page dropped at once, after the same two warm-up pages. What it
 * peaks above its own idle is what V8 and undici take for such a walk, whoever walks.
 */
const FLOOR = `
const fs = require('fs');
const rss = () => Number(/VmRSS:\\s+(\\d+)/.exec(fs.readFileSync('/proc/self/status', 'utf8'))[1]) / 1024;
const [url, size] = process.argv.slice(1);
const get = async (since) => {
  const r = await fetch(url + '/api/v1.0/info/terminals?PageSize=' + size + (since ? '&SinceID=' + since : ''), { headers: { authorization: 'Bearer demo-token' } });
  return JSON.parse(await r.text()).Terminals;
};
(async () => {
  await get(); await get();
  if (global.gc) global.gc();
  await new Promise((r) => setTimeout(r, 1000));
  const idle = rss(); let peak = idle; let since; let n = 0;
  for (;;) { const t = await get(since); if (!t.length) break; n += t.length; since = t[t.length - 1].PrimeID; peak = Math.max(peak, rss()); }
  process.stdout.write(JSON.stringify({ n, idle, peak }));
})();
`;

function floor(url, pageSize, gcIdle) {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [...(gcIdle ? ['--expose-gc'] : []), '-e', FLOOR, url, String(pageSize)], { timeout: 600_000 }, (err, stdout) => (err ? reject(err) : resolve(JSON.parse(stdout))));
  });
}

const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function rssMb(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

async function main() {
  const terminals = arg('--terminals', 100_000);
  const pageSize = arg('--page-size', 1000);
  const sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 }, fleet: { size: terminals } });
  sim.server.maxCallLog = 10_000;
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'iotgw-inv-bench-')), 'pages.txt');
  // --gc-idle: a full GC (node --expose-gc, reached through an http-in endpoint) right before
  // each idle reading, in the Node-RED process and in the floor's alike.
  const gcIdle = process.argv.includes('--gc-idle');
  const userDir = makeUserDir({ recordsFile: file });
  if (gcIdle) {
    const settings = path.join(userDir, 'settings.js');
    fs.writeFileSync(settings, fs.readFileSync(settings, 'utf8').replace('functionGlobalContext: {', 'functionGlobalContext: { gc: global.gc,'));
  }
  const nodeArgs = [...(gcIdle ? ['--expose-gc'] : []), ...(process.env.BENCH_NODE_ARGS || '').split(' ').filter(Boolean)];
  const red = await new ChildRed(userDir, { nodeArgs }).start();
  const countOf = (ls) => ls.filter((l) => l.startsWith('page')).reduce((n, l) => n + Number(l.split(' ')[1]), 0);
  const lines = () => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean) : []);
  try {
    await red.deploy([
      { id: 'tab', type: 'tab', label: 'bench' },
      childGateway(sim, { id: 'gw', rateLimitCalls: 0, timeoutSeconds: 65 }),
      { id: 'warm', z: 'tab', type: 'inject', props: [{ p: 'payload' }], payload: '{"pageSize":1000}', payloadType: 'json', once: true, onceDelay: 4, wires: [['inv']] },
      { id: 'all', z: 'tab', type: 'inject', props: [{ p: 'payload' }], payload: '', payloadType: 'str', once: true, onceDelay: 10, wires: [['inv']] },
      { id: 'inv', z: 'tab', type: 'iotgw-terminals', gateway: 'gw', pages: 'all', pageSize, wires: [['count']] },
      { id: 'gcIn', z: 'tab', type: 'http in', url: '/bench-gc', method: 'get', wires: [['gcFn']] },
      { id: 'gcFn', z: 'tab', type: 'function', func: "const gc = global.get('gc');\nif (gc) gc();\nmsg.payload = gc ? 'gc' : 'no gc';\nreturn msg;", outputs: 1, wires: [['gcOut']] },
      { id: 'gcOut', z: 'tab', type: 'http response', statusCode: '200', wires: [] },
      {
        id: 'count',
        z: 'tab',
        type: 'function',
        func: "if (msg.parts) global.get('append')('page ' + msg.payload.length + (msg.parts.count ? ' last' : '') + '\\n');\nelse global.get('append')('one\\n');\nreturn null;",
        outputs: 0,
        wires: [],
      },
    ]);
    const pid = red.proc.pid;
    // The median of 1 s of samples.
    const median = async () => {
      const samples = [];
      for (let i = 0; i < 40; i++) {
        samples.push(rssMb(pid));
        await sleep(25);
      }
      return samples.sort((a, b) => a - b)[20];
    };
    // Before any call (deployed, nothing loaded yet), then after one page of 1,000 (undici, the
    // schemas, the account and V8's young generation at the size a page makes it grow to).
    const gc = async () => {
      if (!gcIdle) return;
      const said = await (await fetch(`${red.url}/bench-gc`)).text();
      if (said !== 'gc') throw new Error(`no GC in the child: ${said}`);
      await sleep(500);
    };
    await sleep(1500);
    await gc();
    const cold = await median();
    await sleep(Math.max(0, 5000 - (gcIdle ? 500 : 0)));
    await gc();
    const idle = await median();
    const callsBefore = sim.server.callsTo('terminal/inventory').length;
    let peak = idle;
    const t0 = Date.now();
    while (!lines().some((l) => l.endsWith('last')) && countOf(lines()) < terminals) {
      peak = Math.max(peak, rssMb(pid));
      await sleep(25);
      if (Date.now() - t0 > 600_000) throw new Error('the walk did not end within 10 minutes');
    }
    const seconds = (Date.now() - t0) / 1000;
    const pages = lines().filter((l) => l.startsWith('page'));
    const counted = pages.reduce((n, l) => n + Number(l.split(' ')[1]), 0);
    const calls = sim.server.callsTo('terminal/inventory').length - callsBefore;
    const out = {
      terminals: counted,
      pageSize,
      pages: pages.length,
      calls,
      callsPer1000: Math.round((calls / counted) * 1000 * 100) / 100,
      coldRssMb: Math.round(cold * 10) / 10,
      idleRssMb: Math.round(idle * 10) / 10,
      peakRssMb: Math.round(peak * 10) / 10,
      aboveIdleMb: Math.round((peak - idle) * 10) / 10,
      aboveColdMb: Math.round((peak - cold) * 10) / 10,
      seconds: Math.round(seconds * 10) / 10,
      loadavg: os.loadavg().map((x) => Math.round(x * 100) / 100),
      floorAboveIdleMb: undefined,
      cpus: os.cpus().length,
      gcBeforeIdle: gcIdle,
    };
    await red.kill('SIGTERM');
    const f = await floor(sim.url, pageSize, gcIdle);
    out.floorAboveIdleMb = Math.round((f.peak - f.idle) * 10) / 10;
    console.log(`inventory: ${JSON.stringify(out)}`);
    if (process.env.BENCH_NODE_ARGS) console.log(red.output.slice(-6000));
  } finally {
    await red.kill('SIGTERM');
    await sim.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
