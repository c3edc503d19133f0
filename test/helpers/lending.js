'use strict';
/**
 * Issue 34's fixture for the test-connection routes in the harness: a flow whose nodes of
 * five types hold secrets (two gateways, two apps, a core mqtt-broker and http request node)
 * and a tls-config, and the posts that try to borrow those secrets for a host of the test's
 * own (a loopback recorder, test/helpers/recorder.js), and the same in the editor's dialog.
 */
const { DEMO_CREDS, gatewayNode } = require('./flows');

/** The core nodes the flow needs besides ours. */
const CORE = ['network/10-mqtt.js', 'network/21-httprequest.js', 'network/05-tls.js'].map((f) => require(`@node-red/nodes/core/${f}`));

/** The flow (`nodes`), its stored `credentials` and every stored `secrets` value; `rec` is the recorder. */
function lendingFlow(sim, rec) {
  const app = { id: 'app', type: 'iotgw-app', name: 'sim', baseUrl: sim.appUrl, timeoutSeconds: 5, rateLimitCalls: 0 };
  const nodes = [
    { id: 'flow', type: 'tab', label: 'test' },
    gatewayNode(sim),
    { ...gatewayNode(sim), id: 'gw2', name: 'second' },
    app,
    { ...app, id: 'app2', name: 'second' },
    { id: 'mqtt', type: 'mqtt-broker', broker: '127.0.0.1', port: '1', autoConnect: false },
    { id: 'http', z: 'flow', type: 'http request', method: 'GET', url: rec.url, authType: 'basic', wires: [[]] },
    { id: 'tls1', type: 'tls-config', verifyservercert: true },
  ];
  const credentials = {
    gw: { ...DEMO_CREDS, token: 'gw-stored-token-1' },
    gw2: { clientId: 'demo', clientSecret: 'gw2-secret-9876' },
    app: { authToken: 'app-demo-token', email: 'demo@example.com', password: 'app-stored-pass-1' },
    app2: { authToken: 'app2-stored-token' },
    mqtt: { user: 'mq', password: 'mqtt-password-1' },
    http: { user: 'hu', password: 'http-password-1' },
  };
  const secrets = ['demo-secret', 'gw-stored-token-1', 'gw2-secret-9876', 'app-demo-token', 'app-stored-pass-1', 'app2-stored-token', 'mqtt-password-1', 'http-password-1'];
  return { nodes, credentials, secrets, core: CORE };
}

/** The borrowing posts (without credentials) for the route of node `own` ('gw' or 'app'), deployed at `deployedUrl`. */
function borrowTries(rec, own, deployedUrl) {
  const other = own === 'gw' ? 'app' : 'gw';
  return {
    'the same node, another URL': { id: own, baseUrl: rec.url },
    'another node of its type, another URL': { id: `${own}2`, baseUrl: rec.url },
    'a node of the other account type': { id: other, baseUrl: rec.url },
    'a core mqtt-broker': { id: 'mqtt', baseUrl: rec.url },
    'a core http request node': { id: 'http', baseUrl: rec.url },
    'a node not deployed': { id: 'nope', baseUrl: rec.url },
    'the deployed URL with another TLS setting': { id: own, baseUrl: deployedUrl, tls: 'tls1' },
  };
}

/**
 * In the editor (test/helpers/browser.js's accountDialog `dialog`): an account saved with
 * `values` and deployed, reopened with the base URL `otherUrl` typed and its secret left as
 * it is: the dialog's own refusal (`local`, checked here: "type the secret again"); then saved (OK) at that URL, not deployed, and
 * tested again: the runtime's refusal (`remote`). Resolves with {id, local, remote}, the
 * dialog open on the account.
 */
async function movedSecretInDialog(dialog, values, otherUrl) {
  const assert = require('node:assert/strict');
  await dialog.open();
  await dialog.fill(values);
  const id = await dialog.saveAndDeploy(values.name);
  await dialog.open(id);
  await dialog.fill({ baseUrl: otherUrl });
  const local = await dialog.testConnection();
  // Both account dialogs refuse it alike, before any request.
  assert.ok(local.failed, local.text);
  assert.match(local.text, /a secret left as it is is used only at the deployed base URL .*type the secret again/);
  await dialog.close('#node-config-dialog-ok');
  await dialog.open(id);
  const remote = await dialog.testConnection();
  return { id, local, remote };
}

module.exports = { lendingFlow, borrowTries, movedSecretInDialog };
