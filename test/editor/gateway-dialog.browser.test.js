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
 * - the palette: a colour per area, none of the core nodes' colours, the areas in order,
 *   and an icon per LoRaWAN node.
 */
const assert = require('assert');
const { freePort } = require('../helpers/net');
const { useEditor, nodeTypes } = require('../helpers/browser');

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
  useEditor({ width: 1280, height: 900 }, (e) => {
    ({ nr, page } = e);
    page.setDefaultTimeout(15000);
  });

  async function openNewAccount() {
    await page.evaluate(() => RED.editor.editConfig('', 'iotgw-gateway', '_ADD_', 'node-config-input'));
    await page.waitForSelector('.red-ui-tray #node-config-dialog-edit-form', { state: 'visible' });
    await page.waitForSelector('#node-config-iotgw-gateway-tabs li', { state: 'visible' });
  }
  async function closeDialog(button = '#node-config-dialog-cancel') {
    await page.click(button);
    await page.waitForFunction(() => !document.querySelector('.red-ui-tray'), null, { timeout: 5000 });
  }
  const TAB_IDS = { Connection: 'connection', Credentials: 'credentials', Limits: 'limits', 'Shared state': 'shared' };
  async function tab(label) {
    if (await page.isVisible(`#iotgw-gateway-tab-${TAB_IDS[label]}`)) return;
    // RED.tabs takes two clicks within its double-click time as one double click.
    await page.waitForTimeout(600);
    await page.click(`#node-config-iotgw-gateway-tabs a[href="#iotgw-gateway-tab-${TAB_IDS[label]}"]`);
    await page.waitForSelector(`#iotgw-gateway-tab-${TAB_IDS[label]}`, { state: 'visible' });
  }
  /** Clicks "test connection" and waits for its result; returns {ok, text}. */
  async function testConnection() {
    await page.click('#node-config-iotgw-test');
    const h = await page.waitForFunction(
      () => {
        const el = document.getElementById('node-config-iotgw-test-result');
        if (!el || el.offsetParent === null || el.querySelector('.fa-spinner')) return false;
        return { ok: !!el.querySelector('.fa-check'), failed: !!el.querySelector('.fa-times'), text: el.textContent.trim() };
      },
      null,
      { timeout: 30000 },
    );
    return h.jsonValue();
  }

  it('shows the account settings in four tabs, each field on its tab', async function () {
    page.errors.length = 0;
    await openNewAccount();
    const labels = await page.evaluate(() => [...document.querySelectorAll('#node-config-iotgw-gateway-tabs li')].map((li) => li.textContent.trim()));
    assert.deepStrictEqual(labels, ['Connection', 'Credentials', 'Limits', 'Shared state']);
    const visible = (ids) => page.evaluate((ids) => ids.filter((id) => $(`#node-config-input-${id}`).is(':visible')), ids);
    const onTab = {
      Connection: ['baseUrl', 'apiVersion', 'brokerBaseUrl'],
      Credentials: ['clientId', 'clientSecret', 'token', 'brokerClientId', 'brokerAccessToken', 'brokerTokenUrl', 'brokerClientSecret'],
      Limits: ['rateLimitCalls', 'rateLimitWindowSeconds', 'maxConcurrent', 'maxBatchSize', 'timeoutSeconds', 'maxRetries', 'maxQueue'],
      'Shared state': ['redis'],
    };
    const all = Object.values(onTab).flat();
    for (const [label, ids] of Object.entries(onTab)) {
      await tab(label);
      const shown = await visible(all);
      assert.deepStrictEqual(shown.filter((id) => id !== 'redis' || label === 'Shared state').sort(), [...ids].sort(), `${label}: the fields shown`);
    }
    // The test button is there whatever the tab.
    assert.ok(await page.isVisible('#node-config-iotgw-test'));
    await closeDialog();
    assert.deepStrictEqual(page.errors, []);
  });

  it('test connection: a good account, a wrong secret and a dead port each show their result', async function () {
    page.errors.length = 0;
    await openNewAccount();
    await page.fill('#node-config-input-baseUrl', nr.simUrl);
    await tab('Credentials');
    await page.fill('#node-config-input-clientId', 'demo');
    await page.fill('#node-config-input-clientSecret', 'demo-secret');
    const good = await testConnection();
    assert.ok(good.ok, good.text);
    assert.match(good.text, /accepted the client ID and secret/);

    await page.fill('#node-config-input-clientSecret', 'a-wrong-secret');
    const wrong = await testConnection();
    assert.ok(wrong.failed && !wrong.ok, wrong.text);
    assert.match(wrong.text, /^UNAUTHORIZED: .*client ID and client secret/);
    assert.ok(!wrong.text.includes('a-wrong-secret'));

    const port = await freePort();
    await tab('Connection');
    await page.fill('#node-config-input-baseUrl', `http://127.0.0.1:${port}`);
    const dead = await testConnection();
    assert.ok(dead.failed, dead.text);
    assert.ok(dead.text.includes(`nothing listens at 127.0.0.1:${port}: is the simulator running? (\`npx iotgw-simulator --port ${port}\`)`), dead.text);
    await closeDialog();
    assert.deepStrictEqual(page.errors, []);
  });

  it('test connection after a deploy: a secret left as it is tests with the stored one', async function () {
    await openNewAccount();
    await page.fill('#node-config-input-name', 'stored');
    await page.fill('#node-config-input-baseUrl', nr.simUrl);
    await tab('Credentials');
    await page.fill('#node-config-input-clientId', 'demo');
    await page.fill('#node-config-input-clientSecret', 'demo-secret');
    await closeDialog('#node-config-dialog-ok');
    const id = await page.evaluate(() => {
      let id;
      RED.nodes.eachConfig((n) => {
        if (n.type === 'iotgw-gateway' && n.name === 'stored') id = n.id;
      });
      return id;
    });
    assert.ok(id);
    await page.click('#red-ui-header-button-deploy');
    await page.waitForSelector('.red-ui-notification:has-text("Successfully deployed")', { timeout: 15000 });
    await page.evaluate((id) => RED.editor.editConfig('', 'iotgw-gateway', id, 'node-config-input'), id);
    await page.waitForSelector('#node-config-iotgw-gateway-tabs li', { state: 'visible' });
    assert.strictEqual(await page.inputValue('#node-config-input-clientSecret'), '__PWRD__', 'Node-RED shows the stored secret as __PWRD__');
    const r = await testConnection();
    assert.ok(r.ok, r.text);
    assert.ok(!r.text.includes('demo-secret'));
    await closeDialog();
    await page.evaluate((id) => {
      RED.nodes.remove(id);
      RED.nodes.dirty(true);
    }, id);
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
