'use strict';
/**
 * Browser-test fixtures: a real Node-RED (scripts/start.js in a child process, on free
 * loopback ports, with a temporary user dir) and Debian's Chromium driven by
 * playwright-core. `chromiumPath()` tells whether a browser is here at all.
 */
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawn } = require('child_process');

const ROOT = path.resolve(__dirname, '..', '..');
const START = path.join(ROOT, 'scripts', 'start.js');

/** The Chromium to drive: $IOTGW_CHROMIUM if set, else Debian's; undefined when there is none. */
function chromiumPath() {
  // IOTGW_CHROMIUM, when set, is the only candidate (a missing path means no browser).
  const candidates = process.env.IOTGW_CHROMIUM ? [process.env.IOTGW_CHROMIUM] : ['/usr/bin/chromium', '/usr/bin/chromium-browser'];
  for (const p of candidates) {
    if (p && fs.existsSync(p)) return p;
  }
  return undefined;
}

/**
 * Starts `scripts/start.js --port 0 --sim-port 0` in a child process and resolves when it
 * prints its addresses: {url, simUrl, userDir, log(), stop()}.
 */
function startNodeRed({ deployExamples = false, nodeRedPath = process.env.IOTGW_NODE_RED_PATH, timeoutMs = 60000 } = {}) {
  const userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'iotgw-editor-'));
  const args = [START, '--port', '0', '--sim-port', '0', '--user-dir', userDir];
  if (!deployExamples) args.push('--no-examples');
  const env = { ...process.env, IOTGW_LOG_LEVEL: 'warn' };
  if (nodeRedPath) env.IOTGW_NODE_RED_PATH = nodeRedPath;
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const exited = new Promise((r) => child.once('exit', (code, signal) => r({ code, signal })));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 10000);
      await exited;
      clearTimeout(t);
    }
    fs.rmSync(userDir, { recursive: true, force: true });
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`Node-RED did not start within ${timeoutMs} ms:\n${out}`));
    }, timeoutMs);
    const check = () => {
      const url = /Node-RED editor: (\S+)/.exec(out);
      const sim = /Simulator: (\S+)/.exec(out);
      if (url && sim) {
        clearTimeout(timer);
        child.stdout.off('data', check);
        resolve({ url: url[1], simUrl: sim[1], userDir, log: () => out, stop });
      }
    };
    child.stdout.on('data', check);
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`scripts/start.js exited (${code ?? signal}) before it started:\n${out}`));
    });
  });
}

/** Launches headless Chromium with the flags this machine's closed network needs. */
async function launchBrowser() {
  const { chromium } = require('playwright-core');
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-dev-shm-usage',
    ],
  });
}

/**
 * Opens the editor in a new page and waits until the palette has loaded. Every console
 * error and uncaught page error is collected in `page.errors` (tests read and reset it).
 */
async function openEditor(browser, url, { width = 1400, height = 900 } = {}) {
  const context = await browser.newContext({ viewport: { width, height } });
  const page = await context.newPage();
  page.errors = [];
  page.on('console', (m) => {
    if (m.type() === 'error') page.errors.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => page.errors.push(`pageerror: ${e.message}`));
  await page.goto(url, { waitUntil: 'load' });
  await page.waitForFunction(
    () =>
      window.RED && RED.nodes && RED.workspaces && RED.workspaces.active() && document.querySelectorAll('.red-ui-palette-node').length > 10 && !$('#red-ui-loading-progress').is(':visible'),
    null,
    { timeout: 60000 },
  );
  return page;
}

/**
 * Mocha hooks for a describe block: before its first test the demo's Node-RED
 * (startNodeRed, `deployExamples`), headless Chromium and the editor in a `width` x `height`
 * page; after its last, both stopped. `set({ nr, browser, page })` receives them.
 */
function useEditor({ deployExamples = false, width = 1400, height = 900 } = {}, set) {
  let nr;
  let browser;
  before(async function () {
    if (!chromiumPath()) throw new Error('no Chromium: install it (apt-get install -y chromium) or set IOTGW_CHROMIUM');
    nr = await startNodeRed({ deployExamples });
    browser = await launchBrowser();
    set({ nr, browser, page: await openEditor(browser, nr.url, { width, height }) });
  });
  after(async function () {
    if (browser) await browser.close();
    if (nr) await nr.stop();
  });
}

/** Example files of the package: [{file, nodes}] (read from examples/). */
function exampleFiles() {
  const dir = path.join(ROOT, 'examples');
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((file) => ({ file, nodes: JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')) }));
}

/** The package's node types from package.json's `node-red.nodes`. */
function nodeTypes() {
  return Object.keys(require(path.join(ROOT, 'package.json'))['node-red'].nodes);
}

module.exports = { ROOT, chromiumPath, startNodeRed, launchBrowser, openEditor, useEditor, exampleFiles, nodeTypes };
