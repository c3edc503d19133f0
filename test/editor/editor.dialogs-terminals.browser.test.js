'use strict';
/**
 * The editor tour, part 2 (test/helpers/editor.js): the edit dialogs of the account, the
 * terminal nodes, the codec and shared state (typeArea `terminals`; docs/images/dialog-<type>.png
 * with IOTGW_SCREENSHOTS=1), and the account dialog's resolved endpoint.
 */
const assert = require('assert');
const { WAIT_MS, nodeTypes } = require('../helpers/browser');
const { describeEditor, dialogTests, typeArea } = require('../helpers/editor');

describeEditor('editor in a real browser (Chromium): dialogs of the terminals side', (ed) => {
  dialogTests(ed, nodeTypes().filter((t) => typeArea(t) === 'terminals'));

  describe('gateway dialog: resolved endpoint', function () {
    it('iotgw-gateway: shows the endpoint a pasted base URL resolves to, never doubled', async function () {
      const { page } = ed;
      page.errors.length = 0;
      await page.evaluate(() => RED.editor.editConfig('', 'iotgw-gateway', '_ADD_', 'node-config-input'));
      await page.waitForSelector('.red-ui-tray #node-config-dialog-edit-form', { state: 'visible' });
      const shown = async (url) => {
        await page.fill('#node-config-input-baseUrl', url);
        await page.evaluate(() => $('#node-config-input-baseUrl').trigger('change'));
        return page.evaluate(() => ($('#node-config-endpoint').is(':visible') ? $('#node-config-endpoint').text() : ''));
      };
      for (const url of ['https://gw.example.com', 'https://gw.example.com/', 'https://gw.example.com/api/v1.0', 'https://gw.example.com/api/v1.0/']) {
        const text = await shown(url);
        assert.ok(text.includes('https://gw.example.com/api/v1.0/'), `${url}: shows "${text}"`);
        assert.ok(!text.includes('/api/v1.0/api/'), `${url}: doubled in "${text}"`);
      }
      assert.ok((await shown('https://gw.example.com/gw/v1/')).includes('https://gw.example.com/gw/v1/api/v1.0/'));
      assert.equal(await shown('ftp://nope'), '', 'nothing shown for an invalid URL');
      await page.click('#node-config-dialog-cancel');
      await page.clock.fastForward(300);
      await page.waitForFunction(() => !document.querySelector('.red-ui-tray'), null, { timeout: WAIT_MS }).catch(() => {});
      assert.deepStrictEqual(page.errors, []);
    });
  });
}, { clock: true });
