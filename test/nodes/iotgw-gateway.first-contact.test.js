'use strict';
/**
 * Issue 26, first contact: what a new user meets before the first call succeeds, each
 * answered with what to do, in a real Node-RED runtime:
 *  - no simulator at a loopback address: "nothing listens at 127.0.0.1:<port>: is the
 *    simulator running?" with the command, and a short status saying the same;
 *  - `http://locahost:1911` is named a typo of localhost (not "use https://");
 *  - a settings error shows once, red, without "retrying", and the poller stops polling;
 *  - an application API base URL without its path: the 404 hints at the base URL's path;
 *  - the status names a network failure's cause (refused, TLS, timeout, reset) instead of
 *    "network error".
 */
const assert = require('node:assert/strict');
const net = require('node:net');
const { simulatorPerTest, gatewayNode, load, until, collect, catchAll, recordStatuses, DEMO_CREDS } = require('../helpers/harness');
const { freePort, listenLoopback } = require('../helpers/net');
const { checkBaseUrl } = require('../../dist/lib/transport/http');
const { localhostTypo, networkCause, BasePathWatch } = require('../../dist/lib/transport/network-cause');
const { GatewayError } = require('../../dist/lib/common/errors');
const CATALOGUE = require('../../nodes/locales/en-US/iotgw-gateway.json');

/**
 * The test helper's runtime gives a status text's i18n key back as it is (RED._ = v => v),
 * so a status reads "network-refused-loopback"; `said(text, key, english)` checks the key
 * and what the package's English catalogue says for it (what a real runtime shows).
 */
function said(text, key, english) {
  assert.equal(text, key.split('.').pop());
  const [group, name] = key.split('.');
  assert.equal(CATALOGUE[group][name], english, key);
}

/** A loopback TCP server that does `onSocket` with every connection. */
function rawServer(onSocket) {
  return listenLoopback(
    net.createServer((sock) => {
      sock.on('error', () => {});
      onSocket(sock);
    }),
  );
}

describe('iotgw-gateway: first contact (issue 26)', function () {
  this.timeout(30000);
  let sim;
  simulatorPerTest({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 } }, (s) => (sim = s));

  /** A terminal-mode call through an account at `gwProps`; its error message and the statuses shown. */
  async function failedCall(gwProps, creds = { token: 'first-contact-token' }) {
    const n = await load(
      [
        gatewayNode(sim, { maxRetries: 0, ...gwProps }),
        { id: 'mode', type: 'iotgw-terminal-mode', gateway: 'gw', mode: 0, wakeupInterval: 0, family: 'any', lingerMs: 0, wires: [['ok'], ['bad']] },
        { id: 'ok', type: 'helper' },
        { id: 'bad', type: 'helper' },
        ...catchAll(),
      ],
      { gw: creds },
    );
    const statuses = recordStatuses(n.get('mode'));
    const caught = collect(n.get('caught'));
    n.get('mode').receive({ payload: [{ DestinationID: '01000001SKYA001', UserMessageID: 1 }] });
    await until(() => caught.length === 1 && statuses.some((s) => s.fill === 'red'), 15000, 'the error');
    return { message: caught[0].error.message, code: caught[0].error.code, status: statuses.filter((s) => s.fill === 'red').pop().text };
  }

  it('no simulator at a loopback address: says nothing listens there and how to start it', async function () {
    const port = await freePort();
    const r = await failedCall({ baseUrl: `http://127.0.0.1:${port}` });
    assert.equal(r.code, 'NETWORK');
    assert.ok(r.message.includes(`nothing listens at 127.0.0.1:${port}: is the simulator running? (\`npx iotgw-simulator --port ${port}\`)`), r.message);
    said(r.status, 'errors.network-refused-loopback', 'refused: is the simulator running?');
  });

  it('the same with client credentials: the token call says it', async function () {
    const port = await freePort();
    const r = await failedCall({ baseUrl: `http://localhost:${port}/` }, DEMO_CREDS);
    assert.match(r.message, new RegExp(`nothing listens at localhost:${port}: is the simulator running\\?`));
    assert.ok(!r.message.includes(DEMO_CREDS.clientSecret));
  });

  it('https:// against the plain-HTTP simulator: the status says TLS', async function () {
    const r = await failedCall({ baseUrl: sim.url.replace('http:', 'https:') });
    assert.match(r.message, /did not answer with TLS/);
    said(r.status, 'errors.network-tls', 'TLS error');
  });

  it('a server that resets the connection: the status says reset', async function () {
    const srv = await rawServer((sock) => sock.once('data', () => sock.resetAndDestroy()));
    try {
      const r = await failedCall({ baseUrl: srv.url });
      assert.equal(r.code, 'NETWORK');
      assert.equal(r.status, 'network-reset', `${r.status}: ${r.message}`);
      said(r.status, 'errors.network-reset', 'connection reset');
    } finally {
      await srv.close();
    }
  });

  it('a server that never answers: the status says timeout', async function () {
    const srv = await rawServer(() => {});
    try {
      const r = await failedCall({ baseUrl: srv.url, timeoutSeconds: 0.3 });
      assert.equal(r.code, 'TIMEOUT');
      assert.equal(r.status, 'timeout');
    } finally {
      await srv.close();
    }
  });

  it('http://locahost:1911 is named a typo of localhost, and the poller shows it once, red, without retrying', async function () {
    const n = await load([
      gatewayNode(sim, { baseUrl: 'http://locahost:1911' }),
      { id: 'poller', type: 'iotgw-status-poller', gateway: 'gw', intervalSeconds: 1, startFrom: '-1h', output: 'record', contextStore: '', autoStart: true, fullAt: 500, addNames: false, wires: [['out']] },
      { id: 'out', type: 'helper' },
      ...catchAll(),
    ]);
    const statuses = recordStatuses(n.get('poller'));
    const caught = collect(n.get('caught'));
    await until(() => caught.length >= 1, 10000, 'the settings error');
    const message = caught[0].error.message;
    assert.match(message, /"locahost" looks like a typo of localhost; did you mean http:\/\/localhost:1911\?/);
    assert.doesNotMatch(message, /use https:\/\/ for locahost/);
    // Three more intervals: no second report, no second poll, no "retrying".
    await new Promise((r) => setTimeout(r, 3500));
    assert.equal(caught.length, 1, 'reported once');
    const red = statuses.filter((s) => s.fill === 'red');
    assert.equal(red.length, 1, JSON.stringify(statuses));
    assert.equal(red[0].text, 'bad-input (baseUrl) · redeploy');
    said('redeploy', 'status.redeploy', 'fix the config node, redeploy');
    assert.ok(!statuses.some((s) => /retrying/.test(s.text ?? '')), JSON.stringify(statuses));
    assert.equal(statuses.filter((s) => s.text === 'polling').length, 1, `one poll only: ${JSON.stringify(statuses)}`);
  });

  it('an application API base URL without its path: the 404 hints at the path', async function () {
    sim.areas.app.configure({ rateLimitCalls: 0 });
    const n = await load(
      [
        { id: 'app', type: 'iotgw-app', name: 'sim', baseUrl: sim.url, timeoutSeconds: 5, rateLimitCalls: 0, rateLimitWindowSeconds: 1, maxRetries: 0 },
        { id: 'user', type: 'iotgw-user', app: 'app', wires: [['out']] },
        { id: 'out', type: 'helper' },
        ...catchAll(),
      ],
      { app: { authToken: 'app-demo-token' } },
    );
    const caught = collect(n.get('caught'));
    n.get('user').receive({ payload: '' });
    await until(() => caught.length === 1, 10000, 'the first error');
    assert.equal(caught[0].error.code, 'NOT_FOUND');
    assert.match(caught[0].error.message, /HTTP 404/);
    assert.match(caught[0].error.message, new RegExp(`no call of this account has succeeded yet: if every call answers 404, the base URL ${sim.url.replace(/[.]/g, '\\.')} may lack its path`));
    n.get('user').receive({ payload: '' });
    await until(() => caught.length === 2, 10000, 'the second error');
    assert.match(caught[1].error.message, /the first 2 calls of this account all answered 404: check the path of the base URL/);
  });

  it('the right application API base URL: a later 404 carries no hint', async function () {
    const watch = new BasePathWatch(new URL(sim.appUrl));
    watch.ok();
    const e = new GatewayError('NOT_FOUND', 'GET /tags/x: HTTP 404, not found', { statusCode: 404 });
    assert.equal(watch.annotate(e), e);
    const fresh = new BasePathWatch(new URL(sim.appUrl));
    assert.match(fresh.annotate(e).message, /\/app may lack its path/);
    const other = new GatewayError('FORBIDDEN', 'x', { statusCode: 403 });
    assert.equal(fresh.annotate(other), other);
  });
});

describe('first-contact words (issue 26)', function () {
  it('names hosts one or two edits from localhost as typos, and only those', function () {
    for (const h of ['locahost', 'localhots', 'lcoalhost', 'localhst', 'locallhost', 'LOCALHOS']) assert.ok(localhostTypo(h), h);
    for (const h of ['localhost', 'gateway', 'example.com', 'local', 'lo', 'host', 'localhost.example.com']) assert.ok(!localhostTypo(h), h);
    assert.throws(() => checkBaseUrl('http://localhots:1881/api'), /"localhots" looks like a typo of localhost; did you mean http:\/\/localhost:1881\/api\?/);
    assert.throws(() => checkBaseUrl('http://gateway.example.com'), /use https:\/\/ for gateway\.example\.com/);
  });

  it('names the cause of a network error from its code', function () {
    const err = (code, extra = {}) => new GatewayError('NETWORK', 'GET /x: failed', { cause: Object.assign(new Error(`x ${code}`), { code, ...extra }) });
    assert.equal(networkCause(err('ECONNREFUSED', { address: '10.1.2.3' })), 'refused');
    assert.equal(networkCause(err('ECONNREFUSED', { address: '127.0.0.1' })), 'refused-loopback');
    assert.equal(networkCause(err('ENOTFOUND')), 'dns');
    assert.equal(networkCause(err('EAI_AGAIN')), 'dns');
    assert.equal(networkCause(err('UNABLE_TO_VERIFY_LEAF_SIGNATURE')), 'tls');
    assert.equal(networkCause(err('UND_ERR_CONNECT_TIMEOUT')), 'timeout');
    assert.equal(networkCause(err('ECONNRESET')), 'reset');
    assert.equal(networkCause(err('EHOSTUNREACH')), 'unreachable');
    assert.equal(networkCause(err('SOMETHING_ELSE')), undefined);
    assert.equal(networkCause(new GatewayError('TIMEOUT', 'no reply')), 'timeout');
    assert.equal(networkCause(new GatewayError('NOT_FOUND', 'x')), undefined);
  });
});
