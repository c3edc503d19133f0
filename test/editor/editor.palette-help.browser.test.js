'use strict';
/**
 * The editor tour, part 1 (test/helpers/editor.js): every node type loads, every flow node
 * is in the palette under `iot gateway` (docs/images/palette.png with IOTGW_SCREENSHOTS=1),
 * and the help sidebar shows each node's help.
 */
const assert = require('assert');
const fs = require('fs');
const path = require('path');
const { WAIT_MS, ROOT, nodeTypes } = require('../helpers/browser');
const { CATEGORY, IMAGES, SHOTS, SMOKE, describeEditor } = require('../helpers/editor');

describeEditor('editor in a real browser (Chromium): palette and help', (ed) => {
  it('iotgw-status-poller: Start from refuses a time that is no real date (2026-13-45 99:00:00)', async function () {
    const { page } = ed;
    const r = await page.evaluate(() => {
      const v = RED.nodes.getType('iotgw-status-poller').defaults.startFrom.validate;
      const node = { _: (k) => k };
      return ['2026-13-45 99:00:00', '2026-02-30 00:00:00', '2026-02-28 23:59:59', '-24h', ''].map((s) => v.call(node, s, {}) === true);
    });
    assert.deepEqual(r, [false, false, true, true, true]);
  });

  it('loads every node type of package.json into the editor', function () {
    const { page, nr, types, defs } = ed;
    const missing = types.filter((t) => !defs[t]);
    assert.deepStrictEqual(missing, [], `not registered in the editor: ${missing.join(', ')}\n${nr.log().slice(-2000)}`);
    assert.deepStrictEqual(page.errors, [], 'console errors while the editor loaded');
  });

  it(`shows every non-config node in the palette under "${CATEGORY}"`, async function () {
    const { page, types, defs } = ed;
    const flowTypes = types.filter((t) => defs[t] && !defs[t].isConfig);
    const shown = await page.evaluate((cat) => {
      const id = `#red-ui-palette-container-${cat.replace(/ /g, '_')}`;
      const header = document.querySelector(`${id} .red-ui-palette-header`);
      return {
        header: header ? header.textContent.trim() : null,
        types: [...document.querySelectorAll(`${id} .red-ui-palette-node`)]
          .filter((el) => el.offsetParent !== null)
          .map((el) => ({ type: el.getAttribute('data-palette-type'), label: el.textContent.replace(/\s+/g, ' ').trim() })),
      };
    }, CATEGORY);
    assert.strictEqual(shown.header, CATEGORY);
    for (const t of flowTypes) {
      assert.strictEqual(defs[t].category, CATEGORY, `${t}: category`);
      const entry = shown.types.find((s) => s.type === t);
      assert.ok(entry, `${t} is not visible in the palette under "${CATEGORY}" (shown: ${shown.types.map((s) => s.type).join(', ')})`);
      assert.ok(entry.label.length > 0 && !entry.label.startsWith('iotgw-'), `${t}: palette label "${entry.label}" should be a readable name`);
    }
    if (SHOTS) {
      const el = page.locator(`#red-ui-palette-container-${CATEGORY.replace(/ /g, '_')}`);
      await el.scrollIntoViewIfNeeded();
      await el.screenshot({ path: path.join(IMAGES, 'palette.png') });
    }
  });

  describe('help sidebar', function () {
    const list = SMOKE ? nodeTypes().filter((t) => t === 'iotgw-terminal-mode') : nodeTypes();
    for (const type of list) {
      it(`${type}: shows the node's help`, async function () {
        const { page, defs } = ed;
        const file = path.join(ROOT, 'nodes', 'locales', 'en-US', `${type}.html`);
        assert.ok(fs.existsSync(file), `${type}: no help file nodes/locales/en-US/${type}.html`);
        const intro = /<p>([\s\S]*?)<\/p>/.exec(fs.readFileSync(file, 'utf8'));
        assert.ok(intro, `${type}: the help has no one-line summary (<p>) first`);
        const first = intro[1].replace(/<[^>]+>/g, '').replace(/\s+/g, ' ').trim().slice(0, 40);
        if (defs[type].isConfig) {
          // As the config dialog's help button does.
          await page.evaluate((t) => RED.sidebar.help.show(t, true), type);
        } else {
          // Hover the palette entry: its tooltip shows the summary and a help button.
          await page.mouse.move(5, 5);
          const item = page.locator(`#red-ui-palette-container-iot_gateway .red-ui-palette-node[data-palette-type="${type}"]`);
          await item.scrollIntoViewIfNeeded();
          await item.hover();
          // Its tooltip shows after 750 ms of hovering: on the page's clock, at once.
          await page.clock.fastForward(800);
          const pop = page.locator('.red-ui-popover:visible').filter({ hasText: first });
          await pop.waitFor({ state: 'visible', timeout: WAIT_MS });
          await pop.locator('button[onclick*="sidebar.help.show"]').click();
        }
        const text = await page
          .waitForFunction((f) => {
            const el = document.querySelector('.red-ui-sidebar-help-stack .red-ui-help');
            const txt = el ? el.textContent.replace(/\s+/g, ' ') : '';
            return txt.includes(f) ? txt : false;
          }, first, { timeout: WAIT_MS })
          .then((h) => h.jsonValue())
          .catch(async () => page.evaluate(() => (document.querySelector('.red-ui-sidebar-help-stack .red-ui-help') || {}).textContent || ''));
        assert.ok(text.includes(first), `${type}: the help sidebar does not show "${first}"; it shows: ${String(text).slice(0, 200)}`);
        if (!defs[type].isConfig) {
          for (const h of ['Inputs', 'Outputs', 'Details']) assert.ok(text.includes(h), `${type}: the help has no ${h} section`);
        }
      });
    }
  });
}, { clock: true });
