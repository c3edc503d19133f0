'use strict';
/**
 * Issue 26, the account dialog in a real browser (Chromium, a real Node-RED from
 * scripts/start.js with the simulator):
 * - its fields in four tabs (connection, credentials, limits, shared state), as the core
 *   MQTT broker dialog has them, each field on its tab;
 * - "test connection" makes one call through the runtime and shows the result in the
 *   dialog: a good account, a wrong secret and a dead port each show theirs; after a
 *   deploy, a secret field left as it is (Node-RED shows __PWRD__) tests with the stored
 *   secret; no secret is ever shown;
 * - issue 34: a secret left as it is with another base URL shown is refused in the dialog
 *   (type it again; nothing posted); one saved at another URL but not deployed is refused
 *   by the runtime with its reason; a second test while one of the user's runs shows 429;
 * - the palette: a colour per area, none of the core nodes' colours, the areas in order,
 *   and an icon per LoRaWAN node.
 */
const assert = require('assert');
const { useAccountDialog, nodeTypes } = require('../helpers/browser');
const { startRecorder } = require('../helpers/recorder');
const { movedSecretInDialog } = require('../helpers/lending');

const AREAS = {
  terminals: ['iotgw-terminal-mode', 'iotgw-cancel', 'iotgw-status-poller', 'iotgw-message-poller', 'iotgw-send-message', 'iotgw-message-tracker'],
  lorawan: ['iotgw-lorawan-contract', 'iotgw-lorawan-referral', 'iotgw-lorawan-devices'],
  sms: ['iotgw-sms-request'],
  app: ['iotgw-user', 'iotgw-tag-list', 'iotgw-tag-config'],
};

describe('gateway account dialog and palette in a real browser (issue 26)', function () {
  this.timeout(120000);
  let nr;
  let page;
  let dialog;
  useAccountDialog('iotgw-gateway', (e) => ({ nr, page, dialog } = e));

  it('shows the account settings in four tabs, each field on its tab', async function () {
    page.errors.length = 0;
    await dialog.open();
    assert.deepStrictEqual(await dialog.tabLabels(), ['Connection', 'Credentials', 'Limits', 'Shared state']);
    const onTab = {
      Connection: ['baseUrl', 'apiVersion', 'brokerBaseUrl'],
      Credentials: ['clientId', 'clientSecret', 'token', 'brokerClientId', 'brokerAccessToken', 'brokerTokenUrl', 'brokerClientSecret'],
      Limits: ['rateLimitCalls', 'rateLimitWindowSeconds', 'maxConcurrent', 'maxBatchSize', 'timeoutSeconds', 'maxRetries', 'maxQueue'],
      'Shared state': ['redis'],
    };
    const shown = await dialog.fieldsByTab(onTab);
    for (const [label, ids] of Object.entries(onTab)) {
      assert.deepStrictEqual(shown[label].filter((id) => id !== 'redis' || label === 'Shared state').sort(), [...ids].sort(), `${label}: the fields shown`);
    }
    // The test button is there whatever the tab.
    assert.ok(await page.isVisible('#node-config-iotgw-gateway-test'));
    await dialog.close();
    assert.deepStrictEqual(page.errors, []);
  });

  it('test connection: a good account, a wrong secret and a dead port each show their result', async function () {
    page.errors.length = 0;
    await dialog.open();
    await dialog.fill({ baseUrl: nr.simUrl, clientId: 'demo', clientSecret: 'demo-secret' });
    const good = await dialog.testConnection();
    assert.ok(good.ok, good.text);
    assert.match(good.text, /accepted the client ID and secret/);

    await page.fill('#node-config-input-clientSecret', 'a-wrong-secret');
    const wrong = await dialog.testConnection();
    assert.ok(wrong.failed && !wrong.ok, wrong.text);
    assert.match(wrong.text, /^UNAUTHORIZED: .*client ID and client secret/);
    assert.ok(!wrong.text.includes('a-wrong-secret'));

    const dead = await dialog.testDeadPort();
    assert.ok(dead.failed, dead.text);
    assert.ok(dead.text.includes(`nothing listens at 127.0.0.1:${dead.port}: is the simulator running? (\`npx iotgw-simulator --port ${dead.port}\`)`), dead.text);
    await dialog.close();
    assert.deepStrictEqual(page.errors, []);
  });

  it('test connection after a deploy: a secret left as it is tests with the stored one', async function () {
    await dialog.open();
    await dialog.fill({ name: 'stored', baseUrl: nr.simUrl, clientId: 'demo', clientSecret: 'demo-secret' });
    const id = await dialog.saveAndDeploy('stored');
    await dialog.open(id);
    assert.strictEqual(await page.inputValue('#node-config-input-clientSecret'), '__PWRD__', 'Node-RED shows the stored secret as __PWRD__');
    const r = await dialog.testConnection();
    assert.ok(r.ok, r.text);
    assert.ok(!r.text.includes('demo-secret'));
    await dialog.close();
    await dialog.remove(id);
  });

  it('issue 34: a stored secret with another base URL: type it again (dialog, then runtime); a second test of the user: 429', async function () {
    const rec = await startRecorder();
    try {
      page.errors.length = 0;
      const { id, remote } = await movedSecretInDialog(dialog, { name: 'moved', baseUrl: nr.simUrl, clientId: 'demo', clientSecret: 'demo-secret' }, rec.url);
      // Saved (OK) at the other URL but not deployed: the dialog posts, the runtime refuses.
      assert.ok(remote.failed, remote.text);
      assert.match(remote.text, /^BAD_INPUT: credentials\.clientSecret: left as it is, but the base URL is not the deployed one.*type the secret again/);
      assert.deepStrictEqual(rec.requests, [], 'nothing reached the other URL');
      // One test at a time: a test of this user still running at the recorder, then the button.
      rec.hold();
      await page.evaluate((url) => {
        $.ajax({ url: 'iotgw/test-connection', type: 'POST', contentType: 'application/json', data: JSON.stringify({ baseUrl: url, apiVersion: '1.0', credentials: { token: 'typed-token-1' } }) });
      }, rec.url);
      const deadline = Date.now() + 30000;
      while (rec.requests.length < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
      assert.strictEqual(rec.requests.length, 1, 'the first test is running');
      await dialog.fill({ clientSecret: 'typed-secret-2' });
      const busy = await dialog.testConnection();
      assert.ok(busy.failed, busy.text);
      assert.match(busy.text, /^RATE_LIMITED: another test connection of yours is still running/);
      rec.release();
      await dialog.close();
      await dialog.remove(id);
      // The browser logs the refused request itself; nothing else.
      assert.deepStrictEqual(page.errors.filter((e) => !/status of 429 \(Too Many Requests\)/.test(e)), []);
    } finally {
      await rec.close();
    }
  });

  it('the palette: a colour per area, none of the core nodes\', in area order, and an icon per LoRaWAN node', async function () {
    const got = await page.evaluate(
      ({ ours }) => {
        const core = [];
        for (const t of RED.nodes.registry.getNodeTypes()) {
          const d = RED.nodes.getType(t);
          if (d && !t.startsWith('iotgw-') && d.color) core.push({ t, color: String(d.color).toLowerCase().replace(/\s+/g, '') });
        }
        const defs = Object.fromEntries(ours.map((t) => [t, { color: String(RED.nodes.getType(t).color || '').toLowerCase(), icon: RED.nodes.getType(t).icon }]));
        const order = [...document.querySelectorAll('#red-ui-palette-container-iot_gateway .red-ui-palette-node')].map((el) => el.getAttribute('data-palette-type'));
        return { core, defs, order };
      },
      { ours: Object.values(AREAS).flat() },
    );
    // A colour per area: the same within it, another in each other area.
    const colours = Object.fromEntries(Object.entries(AREAS).map(([area, list]) => [area, [...new Set(list.map((t) => got.defs[t].color))]]));
    for (const [area, c] of Object.entries(colours)) assert.strictEqual(c.length, 1, `${area}: one colour (${c.join(', ')})`);
    const flat = Object.values(colours).map((c) => c[0]);
    assert.strictEqual(new Set(flat).size, flat.length, `a colour per area: ${JSON.stringify(colours)}`);
    // Core colours come as names, rgb() or hex: compare them as the browser renders them.
    const rgb = (c) => page.evaluate((c) => {
      const el = document.createElement('div');
      el.style.color = c;
      document.body.appendChild(el);
      const v = getComputedStyle(el).color;
      el.remove();
      return v;
    }, c);
    const coreRgb = new Set(await Promise.all(got.core.map((c) => rgb(c.color))));
    assert.ok(coreRgb.size > 5, 'the core colours were read');
    for (const c of flat) assert.ok(!coreRgb.has(await rgb(c)), `${c} is a core node's colour`);
    // Area order: every node of an area before any node of the next.
    const expected = nodeTypes().filter((t) => got.order.includes(t));
    assert.deepStrictEqual(got.order.filter((t) => expected.includes(t)), expected, 'the palette follows package.json');
    const areaOf = (t) => Object.keys(AREAS).find((a) => AREAS[a].includes(t));
    const seq = got.order.map(areaOf).filter(Boolean).filter((a, i, all) => i === 0 || all[i - 1] !== a);
    assert.deepStrictEqual(seq, ['terminals', 'lorawan', 'sms', 'app'], `areas in order: ${got.order.join(', ')}`);
    const icons = AREAS.lorawan.map((t) => got.defs[t].icon);
    assert.strictEqual(new Set(icons).size, 3, `an icon per LoRaWAN node: ${icons.join(', ')}`);
  });
});
