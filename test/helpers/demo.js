'use strict';
/**
 * The demo (`npm start`'s startDev) in a child process (test/helpers/demo-child.js) on free
 * ports and a fresh user dir: `forkDemo({only, settings, demo, env})` (startDev's options) resolves, once it is up, with
 * {info: {url, simUrl, dashboardUrl, deployed, skipped, names}, log(), reds, events,
 * ask(msg, key), stop()}. `reds` collects red statuses ("<type> "<name>": <text>"), `events`
 * Node-RED's runtime events; `ask` sends a request and resolves with the first reply that
 * carries `key`.
 */
const { fork } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

async function forkDemo({ only, settings, demo, env = process.env, timeoutMs = 60000 } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iotgw-demo-'));
  const extra = JSON.stringify({ ...(only ? { only } : {}), ...(settings ? { settings } : {}), ...(demo ? { demo } : {}) });
  const child = fork(path.join(__dirname, 'demo-child.js'), [path.join(dir, 'user'), extra], { env, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const reds = [];
  const events = [];
  let names = {};
  child.on('message', (m) => {
    if (m.runtimeEvent) events.push(m.runtimeEvent);
    if (m.status && m.status.status && m.status.status.fill === 'red') reds.push(`${names[m.status.id] ?? m.status.id}: ${m.status.status.text}`);
  });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.send('stop');
      const t = setTimeout(() => child.kill('SIGKILL'), 10000);
      await new Promise((r) => child.once('exit', r));
      clearTimeout(t);
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  const info = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the demo did not start within ${timeoutMs} ms:\n${out}`)), timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the demo exited (${code}):\n${out}`));
    });
    child.on('message', (m) => {
      if (!m.ready) return;
      clearTimeout(timer);
      names = m.names;
      resolve(m);
    });
  }).catch(async (err) => {
    await stop();
    throw err;
  });
  const ask = (msg, key) =>
    new Promise((resolve) => {
      const on = (m) => {
        if (m && m[key] !== undefined) {
          child.off('message', on);
          resolve(m);
        }
      };
      child.on('message', on);
      child.send(msg);
    });
  return { info, log: () => out, reds, events, ask, stop, pid: child.pid };
}

/**
 * Mocha hooks for the fleet dashboard in Chromium: before the first test, npm start's set-up
 * with the fleet-dashboard example only (forkDemo, its `demo` options) and Chromium, started
 * side by side, then the dashboard in a 1400 x 1100 page, `watch(page)` first (the test's own
 * listeners); `set({ demo, page })` gets them. Every console error and page error of the page
 * and its frames (the map's too) goes to the returned list. After the last test both stop.
 */
function useDashboardPage({ demo: demoOptions, watch = () => {} }, set) {
  const assert = require('node:assert/strict');
  const { launchBrowser } = require('./browser');
  const errors = [];
  let demo;
  let browser;
  before(async function () {
    const [d, b] = await Promise.allSettled([forkDemo({ only: ['fleet-dashboard'], demo: demoOptions }), launchBrowser()]);
    demo = d.value;
    browser = b.value;
    if (d.status === 'rejected') throw d.reason;
    if (b.status === 'rejected') throw b.reason;
    assert.ok(demo.info.dashboardUrl, `the example was deployed (${JSON.stringify(demo.info.skipped)})`);
    const context = await browser.newContext({ viewport: { width: 1400, height: 1100 } });
    const page = await context.newPage();
    // Console messages of every frame (the map's too) reach the page's listener.
    page.on('console', (m) => m.type() === 'error' && errors.push(`console: ${m.text()}`));
    page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
    watch(page);
    await page.goto(demo.info.dashboardUrl, { waitUntil: 'load' });
    set({ demo, page });
  });
  after(async function () {
    if (browser) await browser.close();
    if (demo) await demo.stop();
  });
  return errors;
}

module.exports = { forkDemo, useDashboardPage };
