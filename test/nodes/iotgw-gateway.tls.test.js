'use strict';
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const https = require('node:https');
const os = require('node:os');
const path = require('node:path');
const { simulatorPerTest, helper, gatewayNode, load, until, collect, catchAll } = require('../helpers/harness');

const ITEM = { DestinationID: '01000001SKYA001', Mode: 0 };

/** A self-signed certificate for 127.0.0.1, made with openssl for this run. */
function makeCert() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iotgw-tls-'));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1',
    '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost', '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem')], { stdio: 'ignore' });
  return { dir, key: fs.readFileSync(path.join(dir, 'key.pem')), cert: fs.readFileSync(path.join(dir, 'cert.pem')), certFile: path.join(dir, 'cert.pem') };
}

describe('TLS through a tls-config node, and redeploy during in-flight work', function () {
  let sim;
  simulatorPerTest({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 } }, (s) => (sim = s));

  describe('TLS', function () {
    let tls;
    let front;
    before(function () {
      tls = makeCert();
    });
    after(function () {
      fs.rmSync(tls.dir, { recursive: true, force: true });
    });
    beforeEach(async function () {
      // An HTTPS front for the simulator, with the self-signed certificate.
      front = https.createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
        const up = http.request({ host: '127.0.0.1', port: sim.server.port, path: req.url, method: req.method, headers: req.headers }, (r) => {
          res.writeHead(r.statusCode, r.headers);
          r.pipe(res);
        });
        req.pipe(up);
      });
      await new Promise((r) => front.listen(0, '127.0.0.1', r));
    });
    afterEach(function () {
      front.closeAllConnections();
      front.close();
    });
    const url = () => `https://127.0.0.1:${front.address().port}`;
    const tlsNode = (props) => ({ id: 'tls', type: 'tls-config', name: '', cert: '', key: '', ca: '', certname: '', keyname: '', caname: '', servername: '', verifyservercert: true, ...props });
    const flow = (extra) => [
      { ...gatewayNode(sim), baseUrl: url(), ...extra },
      { id: 'mode', type: 'iotgw-terminal-mode', gateway: 'gw', mode: 0, wakeupInterval: 0, family: 'any', wires: [['ok'], []] },
      { id: 'ok', type: 'helper' },
      ...catchAll(),
    ];
    const loadTls = (nodes) =>
      new Promise((resolve, reject) =>
        helper
          .load([...require('../helpers/harness').ALL_NODES, require('@node-red/nodes/core/network/05-tls.js')], [{ id: 'flow', type: 'tab' }, ...nodes.map((n) => (['iotgw-gateway', 'tls-config'].includes(n.type) ? n : { z: 'flow', ...n }))], { gw: { clientId: 'demo', clientSecret: 'demo-secret' } }, () =>
            resolve({ get: (id) => helper.getNode(id) }),
          )
          .catch(reject),
      );

    it('verification stays on: an unknown CA is refused', async function () {
      const n = await loadTls(flow());
      const caught = collect(n.get('caught'));
      n.get('mode').receive({ payload: ITEM });
      await until(() => caught.length === 1);
      assert.equal(caught[0].error.code, 'NETWORK');
      assert.match(caught[0].error.message, /not trusted .*tls-config/);
      assert.equal(sim.server.calls.length, 0);
    });

    it('a custom CA from a tls-config node is trusted', async function () {
      const n = await loadTls([...flow({ tls: 'tls' }), tlsNode({ ca: tls.certFile })]);
      const ok = collect(n.get('ok'));
      n.get('mode').receive({ payload: ITEM });
      await until(() => ok.length === 1);
    });

    it('turning verification off in the tls-config node is warned about, not silent', async function () {
      const n = await loadTls([...flow({ tls: 'tls' }), tlsNode({ verifyservercert: false })]);
      const warned = n.get('gw').warn.getCalls().map((c) => String(c.args[0]));
      assert.ok(warned.some((w) => /verification OFF/.test(w)), `warnings: ${warned}`);
      const ok = collect(n.get('ok'));
      n.get('mode').receive({ payload: ITEM });
      await until(() => ok.length === 1);
    });
  });

  it('a redeploy while messages wait for a SEND slot ends each of them and sends nothing more', async function () {
    const n = await load([
      gatewayNode(sim, { rateLimitCalls: 1, rateLimitWindowSeconds: 1.5 }),
      { id: 'mode', type: 'iotgw-terminal-mode', gateway: 'gw', mode: 0, wakeupInterval: 0, family: 'any', lingerMs: 0, wires: [['ok'], []] },
      { id: 'ok', type: 'helper' },
    ]);
    const ok = collect(n.get('ok'));
    const mode = n.get('mode');
    const ended = [];
    mode.on('call:error', (c) => ended.push(c.args[0]));
    mode.receive({ payload: ITEM });
    await until(() => ok.length === 1);
    mode.receive({ payload: ITEM });
    mode.receive({ payload: ITEM });
    await new Promise((r) => setTimeout(r, 100));
    const before = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    // What a redeploy does: stop the flows (helper.unload() would also drop the spies).
    await helper._redNodes.stopFlows();
    await until(() => ended.length === 2, 2000, 'both waiting msgs ended with an error');
    assert.ok(ended.every((e) => e.code === 'NETWORK' && /not sent/.test(e.message)), ended.map((e) => e.message).join(' | '));
    await new Promise((r) => setTimeout(r, 1700));
    assert.equal(sim.server.callsTo('terminal/mode').length, 1, 'nothing was sent after the close');
    const after = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    assert.ok(after <= before, `no timer left behind (${before} -> ${after})`);
  });
});
