'use strict';
/**
 * Issue 26, the application API account dialog (iotgw-app) in a real browser (Chromium, a
 * real Node-RED from scripts/start.js with the simulator):
 * - its fields in four tabs (connection, credentials, limits, shared state), as the gateway
 *   account's dialog has them, each field on its tab;
 * - "test connection" makes one call through the runtime (GET /auth/user) and shows the
 *   result in the dialog: a good token, a good login, a wrong token and a dead port each show
 *   theirs; after a deploy, a token field left as it is (Node-RED shows __PWRD__) tests with
 *   the stored token; no credential is ever shown;
 * - issue 34: a token left as it is with another base URL shown is refused in the dialog
 *   (type it again; nothing posted), and by the runtime when saved there but not deployed.
 */
const assert = require('assert');
const { useAccountDialog } = require('../helpers/browser');
const { startRecorder } = require('../helpers/recorder');
const { movedSecretInDialog } = require('../helpers/lending');

const TOKEN = 'app-demo-token';

describe('app account dialog in a real browser (issue 26)', function () {
  this.timeout(120000);
  let nr;
  let page;
  let dialog;
  useAccountDialog('iotgw-app', (e) => ({ nr, page, dialog } = e));
  const appUrl = () => `${nr.simUrl}/app`;

  it('shows the account settings in four tabs, each field on its tab', async function () {
    page.errors.length = 0;
    await dialog.open();
    assert.deepStrictEqual(await dialog.tabLabels(), ['Connection', 'Credentials', 'Limits', 'Shared state']);
    const onTab = {
      Connection: ['baseUrl', 'tls'],
      Credentials: ['authToken', 'email', 'password', 'loginPath'],
      Limits: ['rateLimitCalls', 'rateLimitWindowSeconds', 'timeoutSeconds', 'maxRetries'],
      'Shared state': ['redis'],
    };
    const shown = await dialog.fieldsByTab(onTab);
    for (const [label, ids] of Object.entries(onTab)) assert.deepStrictEqual(shown[label].sort(), [...ids].sort(), `${label}: the fields shown`);
    // The name and the test button are there whatever the tab.
    assert.ok(await page.isVisible('#node-config-input-name'));
    assert.ok(await page.isVisible('#node-config-iotgw-app-test'));
    await dialog.close();
    assert.deepStrictEqual(page.errors, []);
  });

  it('test connection: a good token, a good login, a wrong token and a dead port each show their result', async function () {
    page.errors.length = 0;
    await dialog.open();
    await dialog.fill({ baseUrl: appUrl(), authToken: TOKEN });
    const good = await dialog.testConnection();
    assert.ok(good.ok, good.text);
    assert.match(good.text, /^GET \/auth\/user: the application API accepted the auth token \(user "Demo User"\) \(\d+ ms\)$/);

    await dialog.fill({ authToken: '', email: 'demo@example.com', password: 'demo-password' });
    const login = await dialog.testConnection();
    assert.ok(login.ok, login.text);
    assert.match(login.text, /logged in at POST \/auth\/login/);
    assert.ok(!login.text.includes('demo-password') && !login.text.includes('demo@example.com'), login.text);

    await dialog.fill({ email: '', password: '', authToken: 'a-wrong-token' });
    const wrong = await dialog.testConnection();
    assert.ok(wrong.failed && !wrong.ok, wrong.text);
    assert.match(wrong.text, /^UNAUTHORIZED: .*Check the auth token/);
    assert.ok(!wrong.text.includes('a-wrong-token'), wrong.text);

    const dead = await dialog.testDeadPort('/app');
    assert.ok(dead.failed, dead.text);
    assert.match(dead.text, new RegExp(`^NETWORK: .*nothing listens at 127\\.0\\.0\\.1:${dead.port}: is the simulator running\\?`));
    await dialog.close();
    assert.deepStrictEqual(page.errors, []);
  });

  it('test connection after a deploy: a token left as it is tests with the stored one', async function () {
    await dialog.open();
    await dialog.fill({ name: 'stored app', baseUrl: appUrl(), authToken: TOKEN });
    const id = await dialog.saveAndDeploy('stored app');
    await dialog.open(id);
    assert.strictEqual(await page.inputValue('#node-config-input-authToken'), '__PWRD__', 'Node-RED shows the stored token as __PWRD__');
    const r = await dialog.testConnection();
    assert.ok(r.ok, r.text);
    assert.ok(!r.text.includes(TOKEN), r.text);
    await dialog.close();
    await dialog.remove(id);
  });

  it('issue 34: a token left as it is with another base URL: type it again, in the dialog and from the runtime', async function () {
    const rec = await startRecorder();
    try {
      page.errors.length = 0;
      const { id, remote } = await movedSecretInDialog(dialog, { name: 'moved app', baseUrl: appUrl(), authToken: TOKEN }, rec.url);
      assert.ok(remote.failed, remote.text);
      assert.match(remote.text, /^BAD_INPUT: credentials\.authToken: left as it is, but the base URL is not the deployed one.*type the secret again/);
      assert.ok(!remote.text.includes(TOKEN), remote.text);
      assert.deepStrictEqual(rec.requests, [], 'nothing reached the other URL');
      await dialog.close();
      await dialog.remove(id);
      assert.deepStrictEqual(page.errors, []);
    } finally {
      await rec.close();
    }
  });
});
