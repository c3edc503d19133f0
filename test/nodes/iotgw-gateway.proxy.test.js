'use strict';
/**
 * Proxies (issue 15): loopback never goes through a proxy; other hosts follow
 * http(s)_proxy/no_proxy; an error through a proxy names the proxy (no credentials).
 * Real proxy servers on loopback, the real simulator, the real Node-RED runtime.
 */
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const https = require('node:https');
const os = require('node:os');
const path = require('node:path');
const { simulatorPerTest, helper, gatewayNode, until, collect, catchAll, ALL_NODES } = require('../helpers/harness');
const { freePort, connectProxy, setProxyEnv } = require('../helpers/net');
const { proxyFor, proxyHost } = require('../../dist/lib/transport/proxy');
const { networkText } = require('../../dist/lib/transport/http');

const ITEM = { DestinationID: '01000001SKYA001', Mode: 0 };
const HOST = 'gateway.iotgw.test';

const loadFlow = (nodes, creds) =>
  new Promise((resolve, reject) =>
    helper
      .load(
        [...ALL_NODES, require('@node-red/nodes/core/network/05-tls.js')],
        [{ id: 'flow', type: 'tab' }, ...nodes.map((n) => (['iotgw-gateway', 'tls-config'].includes(n.type) ? n : { z: 'flow', ...n }))],
        creds ?? { gw: { clientId: 'demo', clientSecret: 'demo-secret' } },
        () => resolve({ get: (id) => helper.getNode(id) }),
      )
      .catch(reject),
  );

describe('proxies: loopback direct, other hosts through http(s)_proxy', function () {
  let sim;
  let restore;
  simulatorPerTest({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 } }, (s) => (sim = s));
  afterEach(function () {
    restore?.();
    restore = undefined;
  });

  // `maxRetries: 0` where a test waits for a NETWORK error: the message is the same after the
  // gateway's retries (1 + 2 + 4 s of backoff by default), which these tests are not about.
  const flow = (gw) => [
    { ...gatewayNode(sim), ...gw },
    { id: 'mode', type: 'iotgw-terminal-mode', gateway: 'gw', mode: 0, wakeupInterval: 0, family: 'any', wires: [['ok'], []] },
    { id: 'ok', type: 'helper' },
    ...catchAll(),
  ];

  it('a dead proxy in the environment (no no_proxy) does not touch loopback requests', async function () {
    const port = await freePort();
    restore = setProxyEnv({ http_proxy: `http://user:pw@127.0.0.1:${port}`, HTTP_PROXY: `http://127.0.0.1:${port}`, https_proxy: `http://127.0.0.1:${port}`, HTTPS_PROXY: `http://127.0.0.1:${port}` });
    const n = await loadFlow(flow());
    const ok = collect(n.get('ok'));
    const caught = collect(n.get('caught'));
    n.get('mode').receive({ payload: ITEM });
    await until(() => ok.length + caught.length === 1);
    assert.deepEqual(caught.map((c) => c.error.message), []);
    assert.equal(ok.length, 1);
    assert.ok(sim.server.calls.length >= 1, 'the simulator was called directly');
  });

  describe('through a proxy (HTTPS, a non-loopback name)', function () {
    let cert;
    let front;
    let proxy;
    before(function () {
      cert = fs.mkdtempSync(path.join(os.tmpdir(), 'iotgw-proxy-'));
      execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', `/CN=${HOST}`,
        '-addext', `subjectAltName=DNS:${HOST}`, '-keyout', path.join(cert, 'key.pem'), '-out', path.join(cert, 'cert.pem')], { stdio: 'ignore' });
    });
    after(function () {
      fs.rmSync(cert, { recursive: true, force: true });
    });
    beforeEach(async function () {
      // An HTTPS front for the simulator with a certificate for HOST ...
      front = https.createServer({ key: fs.readFileSync(path.join(cert, 'key.pem')), cert: fs.readFileSync(path.join(cert, 'cert.pem')) }, (req, res) => {
        const up = http.request({ host: '127.0.0.1', port: sim.server.port, path: req.url, method: req.method, headers: req.headers }, (r) => {
          res.writeHead(r.statusCode, r.headers);
          r.pipe(res);
        });
        req.pipe(up);
      });
      await new Promise((r) => front.listen(0, '127.0.0.1', r));
      // ... and a CONNECT proxy that knows HOST as that front (HOST is not in DNS: only
      // the proxy can reach it, so a success proves the request went through the proxy).
      proxy = await connectProxy((host, port) => (host === HOST ? ['127.0.0.1', port] : null));
    });
    afterEach(function () {
      front.closeAllConnections();
      front.close();
      proxy.close();
    });
    const tlsNode = { id: 'tls', type: 'tls-config', name: '', cert: '', key: '', ca: '', certname: '', keyname: '', caname: '', servername: '', verifyservercert: true };

    it('a live CONNECT proxy from HTTPS_PROXY carries the requests, with its credentials', async function () {
      restore = setProxyEnv({ HTTPS_PROXY: `http://proxyuser:proxypass@127.0.0.1:${proxy.port}` });
      const n = await loadFlow([...flow({ baseUrl: `https://${HOST}:${front.address().port}`, tls: 'tls' }), { ...tlsNode, ca: path.join(cert, 'cert.pem') }]);
      const ok = collect(n.get('ok'));
      const caught = collect(n.get('caught'));
      n.get('mode').receive({ payload: ITEM });
      await until(() => ok.length + caught.length === 1, 10000);
      assert.deepEqual(caught.map((c) => c.error.message), []);
      assert.ok(proxy.connects.length >= 1);
      assert.equal(proxy.connects[0].target, `${HOST}:${front.address().port}`);
      assert.equal(proxy.connects[0].auth, `Basic ${Buffer.from('proxyuser:proxypass').toString('base64')}`);
    });

    it('an error through a dead proxy says so and names the proxy, without its credentials', async function () {
      const port = await freePort();
      restore = setProxyEnv({ https_proxy: `http://proxyuser:proxypass@127.0.0.1:${port}` });
      const n = await loadFlow(flow({ baseUrl: `https://${HOST}:${front.address().port}`, maxRetries: 0 }));
      const caught = collect(n.get('caught'));
      n.get('mode').receive({ payload: ITEM });
      await until(() => caught.length === 1, 30000);
      const err = caught[0].error;
      assert.equal(err.code, 'NETWORK');
      assert.match(err.message, new RegExp(`through the proxy 127\\.0\\.0\\.1:${port} \\(from https_proxy`));
      assert.doesNotMatch(err.message, /proxyuser|proxypass/);
      assert.equal(proxy.connects.length, 0);
    });

    it('no_proxy naming the host sends it direct (the proxy is not asked)', async function () {
      restore = setProxyEnv({ https_proxy: `http://127.0.0.1:${proxy.port}`, NO_PROXY: `.iotgw.test` });
      const n = await loadFlow(flow({ baseUrl: `https://${HOST}:${front.address().port}`, timeoutSeconds: 5, maxRetries: 0 }));
      const caught = collect(n.get('caught'));
      n.get('mode').receive({ payload: ITEM });
      await until(() => caught.length === 1, 30000);
      assert.equal(caught[0].error.code, 'NETWORK');
      assert.doesNotMatch(caught[0].error.message, /through the proxy/);
      assert.equal(proxy.connects.length, 0);
    });
  });

  it('an https:// base URL on a plain-HTTP server says so, without OpenSSL text', async function () {
    const n = await loadFlow(flow({ baseUrl: sim.url.replace(/^http:/, 'https:') }));
    const caught = collect(n.get('caught'));
    n.get('mode').receive({ payload: ITEM });
    await until(() => caught.length === 1, 10000);
    assert.equal(caught[0].error.code, 'NETWORK');
    assert.match(caught[0].error.message, /did not answer with TLS.*plain HTTP/);
    assert.doesNotMatch(caught[0].error.message, /SSL routines|wrong version number|0A0000/i);
  });

  it('a refused connection names the code once, in words', async function () {
    const port = await freePort();
    const n = await loadFlow(flow({ baseUrl: `http://127.0.0.1:${port}`, maxRetries: 0 }));
    const caught = collect(n.get('caught'));
    n.get('mode').receive({ payload: ITEM });
    await until(() => caught.length === 1, 30000);
    const m = caught[0].error.message;
    assert.match(m, /connection refused/);
    assert.equal(m.match(/ECONNREFUSED/g)?.length, 1, m);
  });

  it('proxyFor follows the variables as undici does, never for loopback', function () {
    const env = { http_proxy: 'http://u:p@proxy.corp:3128', HTTPS_PROXY: 'http://sproxy.corp:8080', no_proxy: 'intra.corp, .lan,other.corp:8443' };
    assert.equal(proxyFor(new URL('http://127.0.0.1:1881'), env), undefined);
    assert.equal(proxyFor(new URL('http://localhost:1881'), env), undefined);
    assert.equal(proxyFor(new URL('http://[::1]:1881'), env), undefined);
    assert.deepEqual(proxyFor(new URL('https://api.example.com'), env), { host: 'sproxy.corp:8080', variable: 'HTTPS_PROXY' });
    assert.equal(proxyFor(new URL('https://x.intra.corp'), env), undefined);
    assert.equal(proxyFor(new URL('https://box.lan'), env), undefined);
    assert.equal(proxyFor(new URL('https://other.corp:8443'), env), undefined);
    assert.deepEqual(proxyFor(new URL('https://other.corp'), env), { host: 'sproxy.corp:8080', variable: 'HTTPS_PROXY' });
    // https falls back to http_proxy, as in undici and Node-RED.
    assert.deepEqual(proxyFor(new URL('https://api.example.com'), { http_proxy: 'http://u:p@proxy.corp:3128' }), { host: 'proxy.corp:3128', variable: 'http_proxy' });
    assert.equal(proxyFor(new URL('https://api.example.com'), { https_proxy: 'http://p:1', no_proxy: '*' }), undefined);
    assert.equal(proxyHost('http://user:secret@p.corp:3128'), 'p.corp:3128');
    assert.equal(networkText('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:1881'), 'connection refused (connect ECONNREFUSED 127.0.0.1:1881)');
    assert.equal(networkText('EPIPE', 'write failed'), 'EPIPE write failed');
  });
});
