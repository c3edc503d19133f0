'use strict';
/** Small helpers shared by the figures. */
const path = require('node:path');
const { ROOT } = require('./red');

const sim = () => require(path.join(ROOT, 'dist/simulator'));

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function until(pred, ms, what, every = 50) {
  const start = Date.now();
  for (;;) {
    if (await pred()) return true;
    if (Date.now() - start > ms) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(every);
  }
}

function percentile(sorted, p) {
  if (!sorted.length) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

/** The median (NaN for none). */
function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : NaN;
}

const MB = 1024 * 1024;
const mb = (b) => Math.round((b / MB) * 10) / 10;
const r1 = (x) => Math.round(x * 10) / 10;
const r2 = (x) => Math.round(x * 100) / 100;

/** A prime ID the simulator accepts as an online IDP terminal (/^\d{8}SKY[0-9A-F]{4}$/). */
function terminalId(i) {
  return `${String(10000000 + (i % 90000000)).padStart(8, '0')}SKY${(i % 65536).toString(16).toUpperCase().padStart(4, '0')}`;
}

/** The gateway config node of a bench flow (static bearer token of the demo account). */
function gatewayConfig(simUrl, props = {}) {
  return {
    id: 'gw',
    type: 'iotgw-gateway',
    name: 'bench',
    baseUrl: simUrl,
    apiVersion: '1.0',
    rateLimitCalls: 0,
    rateLimitWindowSeconds: 60,
    maxConcurrent: 3,
    maxBatchSize: 100,
    timeoutSeconds: 30,
    maxRetries: 3,
    maxQueue: 10000,
    ...props,
    credentials: { token: 'demo-token', brokerClientId: 'sim-client', brokerAccessToken: 'sim-access-token' },
  };
}

/** Puts flow nodes on one tab. */
function onTab(nodes, tab = 'bench') {
  return [{ id: tab, type: 'tab', label: 'bench' }, ...nodes.map((n) => (n.type === 'iotgw-gateway' || n.z ? n : { z: tab, x: 100, y: 100, ...n }))];
}

function loadavg() {
  return require('node:fs').readFileSync('/proc/loadavg', 'utf8').trim();
}

module.exports = { sim, sleep, until, percentile, median, mb, MB, r1, r2, terminalId, gatewayConfig, onTab, loadavg };
