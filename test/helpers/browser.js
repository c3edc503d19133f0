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
const { freePort } = require('./net');

const ROOT = path.resolve(__dirname, '..', '..');
/**
 * How long a browser test waits for what it expects on the page (a dialog, a tooltip, a
 * node): 30 s, which a loaded machine meets (issue 34: waits of 5 s failed under load). A
 * wait ends as soon as its condition holds, so this costs nothing when all is well.
 */
const WAIT_MS = 30000;
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
async function openEditor(browser, url, { width = 1400, height = 900, clock = false } = {}) {
  const context = await browser.newContext({ viewport: { width, height } });
  // With `clock`, the page's timers run on Playwright's clock (in step with real time until a
  // test moves it on: page.clock.fastForward), so a test need not sit out a delay meant for
  // people, such as a tooltip's 750 ms.
  if (clock) await context.clock.install();
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT_MS);
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
 * page (its timers on Playwright's clock with `clock`: openEditor); after its last, both stopped. `set({ nr, browser, page })` receives them.
 */
function useEditor({ deployExamples = false, width = 1400, height = 900, clock = false } = {}, set) {
  let nr;
  let browser;
  before(async function () {
    if (!chromiumPath()) throw new Error('no Chromium: install it (apt-get install -y chromium) or set IOTGW_CHROMIUM');
    // Node-RED and Chromium start side by side; either one started is stopped in `after`.
    const [n, b] = await Promise.allSettled([startNodeRed({ deployExamples }), launchBrowser()]);
    nr = n.value;
    browser = b.value;
    for (const r of [n, b]) if (r.status === 'rejected') throw r.reason;
    set({ nr, browser, page: await openEditor(browser, nr.url, { width, height, clock }) });
  });
  after(async function () {
    if (browser) await browser.close();
    if (nr) await nr.stop();
  });
}

/**
 * Mocha hooks for the tests of one account dialog (config type `type`): the editor open
 * (useEditor, 1280 x 900, the page's timers on Playwright's clock), and `set({ nr, page, dialog })`
 * (accountDialog) before the first test.
 */
function useAccountDialog(type, set) {
  useEditor({ width: 1280, height: 900, clock: true }, ({ nr, page }) => {
    page.setDefaultTimeout(WAIT_MS);
    set({ nr, page, dialog: accountDialog(page, type, { clock: true }) });
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

/** The tabs of an account dialog (resources/iotgw-editor.js IOTGW.tabs), by label. */
const TAB_IDS = { Connection: 'connection', Credentials: 'credentials', Limits: 'limits', 'Shared state': 'shared' };

/**
 * Drives the account dialog of config type `type` (iotgw-gateway, iotgw-app) on `page` (with
 * `clock`, a page whose timers run on Playwright's clock: openEditor):
 * open(id) (a new one by default), close(button), tab(label), tabLabels(), fieldsByTab(onTab), fill({key: value}) (on the
 * field's tab), saveAndDeploy(name), remove(id), testDeadPort(path) and testConnection(), which clicks "test connection" and resolves with {ok, failed, text}
 * once the result shows.
 */
function accountDialog(page, type, { clock = false } = {}) {
  const tabId = (label) => `#${type}-tab-${TAB_IDS[label]}`;
  return {
    async open(id = '_ADD_') {
      await page.evaluate(({ type, id }) => RED.editor.editConfig('', type, id, 'node-config-input'), { type, id });
      await page.waitForSelector('.red-ui-tray #node-config-dialog-edit-form', { state: 'visible' });
      await page.waitForSelector(`#node-config-${type}-tabs li`, { state: 'visible' });
    },
    async close(button = '#node-config-dialog-cancel') {
      await page.click(button);
      // The tray slides out for 250 ms before it is removed: on the page's clock, at once.
      if (clock) await page.clock.fastForward(300);
      await page.waitForFunction(() => !document.querySelector('.red-ui-tray'), null, { timeout: WAIT_MS });
    },
    /** The labels of the open dialog's tabs. */
    tabLabels() {
      return page.evaluate((type) => [...document.querySelectorAll(`#node-config-${type}-tabs li`)].map((li) => li.textContent.trim()), type);
    },
    /** Each tab of `onTab` (label -> field keys) shown in turn: label -> the keys of all its fields visible on it. */
    async fieldsByTab(onTab) {
      const all = Object.values(onTab).flat();
      const shown = {};
      for (const label of Object.keys(onTab)) {
        await this.tab(label);
        shown[label] = await page.evaluate((ids) => ids.filter((id) => $(`#node-config-input-${id}`).is(':visible')), all);
      }
      return shown;
    },
    async tab(label) {
      if (await page.isVisible(tabId(label))) return;
      // RED.tabs takes two clicks within its double-click time (400 ms of Date.now()) as one
      // double click: 600 ms between them, on the page's clock moved on at once.
      if (clock) await page.clock.fastForward(600);
      else await page.waitForTimeout(600);
      await page.click(`#node-config-${type}-tabs a[href="${tabId(label)}"]`);
      await page.waitForSelector(tabId(label), { state: 'visible' });
    },
    /** Types each value into its field (#node-config-input-KEY), showing the field's tab first. */
    async fill(values) {
      for (const [key, value] of Object.entries(values)) {
        const sel = `#node-config-input-${key}`;
        const tabName = await page.evaluate(({ sel, type }) => {
          const div = document.querySelector(sel)?.closest(`[id^="${type}-tab-"]`);
          return div ? div.id.slice(type.length + 5) : null;
        }, { sel, type });
        if (tabName) await this.tab(Object.keys(TAB_IDS).find((l) => TAB_IDS[l] === tabName));
        await page.fill(sel, value);
      }
    },
    /** Tests with the base URL `http://127.0.0.1:<a free port><path>`: resolves with {port, ok, failed, text}. */
    async testDeadPort(path = '') {
      const port = await freePort();
      await this.fill({ baseUrl: `http://127.0.0.1:${port}${path}` });
      return { port, ...(await this.testConnection()) };
    },
    /** Closes the open dialog with its OK button and deploys; resolves with the id of the account named `name`. */
    async saveAndDeploy(name) {
      await this.close('#node-config-dialog-ok');
      const id = await page.evaluate(({ type, name }) => {
        let id;
        RED.nodes.eachConfig((n) => {
          if (n.type === type && n.name === name) id = n.id;
        });
        return id;
      }, { type, name });
      if (!id) throw new Error(`no ${type} named ${name} after OK`);
      await page.click('#red-ui-header-button-deploy');
      await page.waitForSelector('.red-ui-notification:has-text("Successfully deployed")', { timeout: 15000 });
      // With an account no node uses, the note says so ("You have some unused configuration
      // nodes") and stays, over the dialog's buttons, for several seconds: closed, as a person would.
      const close = page.locator('.red-ui-notification:has-text("Successfully deployed") button:has-text("Close")');
      if (await close.count()) await close.first().click();
      return id;
    },
    /** Takes the account `id` out of the editor's flows (not deployed). */
    async remove(id) {
      await page.evaluate((id) => {
        RED.nodes.remove(id);
        RED.nodes.dirty(true);
      }, id);
    },
    async testConnection() {
      await page.click(`#node-config-${type}-test`);
      const h = await page.waitForFunction(
        (id) => {
          const el = document.getElementById(id);
          if (!el || el.offsetParent === null || el.querySelector('.fa-spinner')) return false;
          return { ok: !!el.querySelector('.fa-check'), failed: !!el.querySelector('.fa-times'), text: el.textContent.trim() };
        },
        `node-config-${type}-test-result`,
        { timeout: 30000 },
      );
      return h.jsonValue();
    },
  };
}

module.exports = { ROOT, WAIT_MS, chromiumPath, startNodeRed, launchBrowser, openEditor, useEditor, useAccountDialog, exampleFiles, nodeTypes, accountDialog };
