'use strict';
/**
 * The editor tour in a real browser, in parts (test/editor/editor.*.browser.test.js), each
 * file in a parallel worker of its own with its own Node-RED and Chromium (useEditor):
 * - every node appears in the palette under `iot gateway`;
 * - every edit dialog opens without a console error, shows its fields, refuses an invalid
 *   value with a visible message, accepts ${ENV_VAR} and a valid value;
 * - the help sidebar shows each node's help;
 * - every example is listed under Import > Examples, imports, deploys and produces output
 *   in the debug sidebar.
 * Written over package.json's `node-red.nodes` and the files of `examples/`, split by area
 * (typeArea, exampleArea: every type and example falls in exactly one part), so every node
 * type and every example is covered as it lands.
 * Screenshots go to docs/images/ only when asked (IOTGW_SCREENSHOTS=1, `npm run screenshots`):
 * `npm test` leaves the tracked images as they are.
 *
 * Without Chromium these tests are pending and a loud banner says so; with CI=true a
 * missing browser fails the run.
 */
const assert = require('assert');
const fs = require('fs');
const path = require('path');
const { ROOT, WAIT_MS, chromiumPath, useEditor, exampleFiles, nodeTypes } = require('./browser');

const CATEGORY = 'iot gateway';
const IMAGES = path.join(ROOT, 'docs', 'images');
const SHOTS = process.env.IOTGW_SCREENSHOTS === '1';
/** IOTGW_BROWSER_SMOKE=1: palette, one dialog and one example only (the Node-RED 5 line in CI). */
const SMOKE = process.env.IOTGW_BROWSER_SMOKE === '1';
const EXAMPLE_SIM_URL = 'http://127.0.0.1:1881';

/** The LoRaWAN, SMS and application nodes; every other type (the account, the terminal nodes, the codec, shared state) is of `terminals`. */
const LORAWAN_SMS_APP = /^iotgw-(lorawan-|sms-|app$|user$|tag-)/;

/** The area a node type's dialog is checked with: `terminals` or `lorawan-sms-app`. */
function typeArea(type) {
  return LORAWAN_SMS_APP.test(type) ? 'lorawan-sms-app' : 'terminals';
}

/** The area an example is checked with: `lorawan-sms-app` when it has a node of those areas, else `terminals`. */
function exampleArea(f) {
  return f.nodes.some((n) => LORAWAN_SMS_APP.test(n.type)) ? 'lorawan-sms-app' : 'terminals';
}

function banner(text) {
  const line = '!'.repeat(78);
  return `\n${line}\n!!! ${text}\n${line}\n`;
}

/**
 * With no Chromium on this machine: a loud banner and, in a describe block named `title`, a
 * pending test (CI=true: a failing one); returns true then, false when there is a browser.
 */
function withoutChromium(title) {
  if (chromiumPath()) return false;
  const text =
    'NO CHROMIUM: the editor tests in a real browser did NOT run. Install it with `apt-get install -y chromium` ' +
    '(or set IOTGW_CHROMIUM to a Chromium binary).';
  process.stderr.write(banner(text));
  // Once more at the very end of the run, where people read the summary.
  after(() => process.stderr.write(banner(text)));
  describe(title, function () {
    if (process.env.CI === 'true') {
      it('has a browser to run in (CI=true: a missing Chromium fails the run)', function () {
        throw new Error(text);
      });
    } else {
      // Pending, not passed: mocha reports it as such.
      it('runs the editor tests (PENDING: no Chromium on this machine)');
    }
  });
  return true;
}

/**
 * A describe block with the editor open (1280 x 800) before its first test: `body(ed)`
 * registers its tests, which read `ed.page`, `ed.nr`, `ed.types` (package.json's node types)
 * and `ed.defs` (type -> {category, isConfig, defaults, credentials}). After a failed test
 * a screenshot goes to test/artifacts/; after every test the editor is left with no open
 * tray, dialog or tooltip. With `clock`, the page's timers run on Playwright's clock (openEditor in
 * browser.js), so the tests skip delays meant for people (a tooltip's, a folder's spinner, a
 * closing tray's) with page.clock.fastForward. Without Chromium: a banner, and a
 * pending test (CI=true: a failing one).
 */
function describeEditor(title, body, { clock = false } = {}) {
  if (withoutChromium(title)) return;
  describe(title, function () {
    this.timeout(180000);
    const ed = { types: nodeTypes(), nr: undefined, page: undefined, defs: undefined, clock };
    useEditor({ width: 1280, height: 800, clock }, (e) => Object.assign(ed, e));

    before(async function () {
      const { page } = ed;
      page.setDefaultTimeout(WAIT_MS);
      ed.defs = await page.evaluate((list) => {
        const out = {};
        for (const t of list) {
          const d = RED.nodes.getType(t);
          if (!d) continue;
          out[t] = {
            category: d.category,
            isConfig: d.category === 'config',
            defaults: Object.fromEntries(Object.entries(d.defaults || {}).map(([k, v]) => [k, { value: v.value, type: v.type, validate: !!v.validate, required: !!v.required }])),
            credentials: Object.keys(d.credentials || {}),
          };
        }
        return out;
      }, ed.types);
      if (SHOTS) fs.mkdirSync(IMAGES, { recursive: true });
    });

    afterEach(async function () {
      const { page } = ed;
      if (this.currentTest && this.currentTest.state === 'failed' && page) {
        const dir = path.join(ROOT, 'test', 'artifacts');
        fs.mkdirSync(dir, { recursive: true });
        const name = this.currentTest.title.replace(/[^a-z0-9-]+/gi, '_').slice(0, 80);
        await page.screenshot({ path: path.join(dir, `${name}.png`) }).catch(() => {});
      }
      // Leave the editor as the next test expects it: no open tray, dialog or tooltip.
      if (page) await resetEditor(ed);
    });

    body(ed);
  });
}

async function resetEditor(ed) {
  const { page } = ed;
  for (let i = 0; i < 6; i++) {
    const open = await page.evaluate(() => {
      $('.ui-dialog-content:visible').each(function () {
        $(this).dialog('close');
      });
      const cancel = $('.red-ui-tray').last().find('#node-dialog-cancel, #node-config-dialog-cancel, button:contains("Cancel")').first();
      if (cancel.length) cancel.trigger('click');
      return $('.red-ui-tray').length;
    });
    if (!open) break;
    // A closing tray goes after 250 ms: on the page's clock (describeEditor's `clock`), at once.
    if (ed.clock) await page.clock.fastForward(300);
    else await page.waitForTimeout(400);
  }
  await page.mouse.move(5, 5);
}

/** Creates one config node per config type of the package, valid for the simulator. */
async function ensureConfigNodes(ed) {
  const { page, nr, types, defs } = ed;
  await page.evaluate(
    ({ configTypes, simUrl }) => {
      for (const t of configTypes) {
        if (RED.nodes.node(`iotgw-test-${t}`)) continue;
        const d = RED.nodes.getType(t);
        const n = { id: `iotgw-test-${t}`, type: t };
        for (const [k, v] of Object.entries(d.defaults || {})) n[k] = v.value;
        n.name = 'simulator';
        if ('baseUrl' in n) n.baseUrl = /app/.test(t) ? `${simUrl}/app` : simUrl;
        RED.view.importNodes([n], { generateIds: false });
      }
    },
    { configTypes: types.filter((t) => defs[t] && defs[t].isConfig), simUrl: nr.simUrl },
  );
}

/** Dialogs with no text field but the name: iotgw-codec (action, messages: selects; definitions: a config node). */
const ONLY_SELECTS = new Set(['iotgw-codec', 'iotgw-message-lookup', 'iotgw-gateway-info']);
/** The candidate invalid values for a validated field, tried in order. */
const BAD_VALUES = ['not valid!', '-1', '99999999999', 'ftp://example.com', '1.5', 'x'.repeat(300), ''];

/**
 * In an open dialog (prefix node-input / node-config-input), finds a validated field that
 * a person can type into, types an invalid value, and checks the field is marked with a
 * visible reason; then ${ENV_VAR} and a valid value must clear it. Returns what it did.
 */
async function checkValidation(ed, type, prefix) {
  const { page } = ed;
  const candidates = await page.evaluate(
    ({ type, prefix, BAD }) => {
      const d = RED.nodes.getType(type);
      const editing = RED.editor.getEditStack ? RED.editor.getEditStack().slice(-1)[0] : undefined;
      const node = editing || { _: d._, _def: d };
      const out = [];
      for (const [k, p] of Object.entries(d.defaults || {})) {
        const el = $(`#${prefix}-${k}`);
        if (!el.length) continue;
        const typed = el.next('.red-ui-typedInput-container').length > 0;
        const visible = typed ? el.next('.red-ui-typedInput-container').is(':visible') : el.is(':visible');
        const isText = typed || (el.is('input') && ['text', '', undefined].includes(el.attr('type'))) || el.is('textarea');
        if (!visible || !isText) continue;
        if (typeof p.validate !== 'function') continue;
        const bad = BAD.find((v) => {
          const r = p.validate.call(node, v, {});
          return r !== true && !(typeof r !== 'string' && r);
        });
        if (bad === undefined) continue;
        const good = [p.value, el.val(), node[k]].find((v) => v !== undefined && v !== '' && p.validate.call(node, v, {}) === true);
        out.push({ key: k, bad, good: good === undefined ? undefined : String(good), typed });
      }
      return out;
    },
    { type, prefix, BAD: BAD_VALUES },
  );
  // A dialog whose settings are all selects and config nodes (ONLY_SELECTS) has nothing to refuse.
  if (ONLY_SELECTS.has(type)) return candidates;
  assert.ok(candidates.length > 0, `${type}: no validated text field that a person can type into (so nothing can be refused)`);
  const results = [];
  for (const c of candidates) {
    const sel = `#${prefix}-${c.key}`;
    const setValue = async (v) => {
      if (c.typed) {
        await page.evaluate(({ sel, v }) => $(sel).typedInput('value', v), { sel, v });
      } else {
        await page.fill(sel, v);
      }
      await page.evaluate((sel) => $(sel).trigger('change').trigger('keyup'), sel);
    };
    const marked = () =>
      page.evaluate((sel) => {
        const el = $(sel);
        return el.hasClass('input-error') || el.next('.red-ui-typedInput-container').hasClass('input-error');
      }, sel);
    await setValue(c.bad);
    assert.ok(await marked(), `${type}.${c.key}: the invalid value ${JSON.stringify(c.bad)} is not marked as an error`);
    // The reason: the field's tooltip (a validator that returns a message), or a visible
    // error text in the dialog.
    const target = c.typed ? page.locator(sel).locator('xpath=following-sibling::div[contains(@class,"red-ui-typedInput-container")]') : page.locator(sel);
    await target.hover();
    // The tooltip shows after 750 ms of hovering: with the page's timers on Playwright's clock
    // (describeEditor's `clock`), that time is skipped.
    if (ed.clock) await page.clock.fastForward(800);
    const reason = await page
      .waitForFunction(
        () => {
          const pop = [...document.querySelectorAll('.red-ui-popover')].find((p) => p.offsetParent !== null && p.textContent.trim());
          if (pop) return pop.textContent.trim();
          const tray = document.querySelector('.red-ui-tray:last-of-type .red-ui-tray-body') || document;
          const err = [...tray.querySelectorAll('[id*="error"],[id*="warning"],.iotgw-error')].find((e) => e.offsetParent !== null && e.textContent.trim());
          return err ? err.textContent.trim() : false;
        },
        null,
        { timeout: WAIT_MS },
      )
      .then((h) => h.jsonValue())
      .catch(() => '');
    assert.ok(reason, `${type}.${c.key}: the invalid value ${JSON.stringify(c.bad)} is marked, but no message says what is wrong`);
    await page.mouse.move(5, 5);
    await setValue('${IOTGW_EXAMPLE_VALUE}');
    assert.ok(!(await marked()), `${type}.${c.key}: \${IOTGW_EXAMPLE_VALUE} should be accepted`);
    if (c.good !== undefined) {
      await setValue(c.good);
      assert.ok(!(await marked()), `${type}.${c.key}: the valid value ${JSON.stringify(c.good)} is refused`);
    }
    results.push({ ...c, reason });
  }
  return results;
}

/** Drags a node from the palette onto the canvas; returns the new node's id. */
async function addFromPalette(ed, type, index) {
  const { page } = ed;
  const before = await page.evaluate(() => RED.nodes.filterNodes({}).map((n) => n.id));
  const item = page.locator(`#red-ui-palette-container-iot_gateway .red-ui-palette-node[data-palette-type="${type}"]`);
  await item.scrollIntoViewIfNeeded();
  const box = await item.boundingBox();
  const ws = await page.locator('#red-ui-workspace-chart').boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await page.mouse.down();
  await page.mouse.move(ws.x + 250, ws.y + 150, { steps: 3 });
  await page.mouse.move(ws.x + 160 + 220 * (index % 3), ws.y + 60 + 50 * Math.floor(index / 3), { steps: 3 });
  await page.mouse.up();
  const id = await page
    .waitForFunction((b) => RED.nodes.filterNodes({}).map((n) => n.id).find((i) => !b.includes(i)), before, { timeout: WAIT_MS })
    .then((h) => h.jsonValue());
  return id;
}

/** The edit dialog of each of `areaTypes` (IOTGW_BROWSER_SMOKE=1: iotgw-terminal-mode's only). */
function dialogTests(ed, areaTypes) {
  describe('edit dialogs', function () {
    const list = SMOKE ? areaTypes.filter((t) => t === 'iotgw-terminal-mode') : areaTypes;
    for (const type of list) {
      it(`${type}: opens without a console error, shows its fields, refuses an invalid value with a message, accepts a valid one`, async function () {
        const { page, types, defs } = ed;
        if (!defs[type]) assert.fail(`${type} is not registered in the editor`);
        await ensureConfigNodes(ed);
        page.errors.length = 0;
        const d = defs[type];
        let nodeId;
        if (d.isConfig) {
          await page.evaluate((t) => RED.editor.editConfig('', t, '_ADD_', 'node-config-input'), type);
          await page.waitForSelector('.red-ui-tray #node-config-dialog-edit-form', { state: 'visible' });
        } else {
          // From the palette onto the canvas, then a double click: as a person does it.
          nodeId = await addFromPalette(ed, type, types.indexOf(type));
          await page.dblclick(`[id="${nodeId}"] .red-ui-flow-node`);
          await page.waitForSelector('.red-ui-tray #dialog-form', { state: 'visible' });
        }
        // The tray's opening (its animation, the dialog's own deferred set-up) has its 400 ms: on
        // the page's clock (describeEditor's `clock`) moved on at once.
        if (ed.clock) await page.clock.fastForward(400);
        else await page.waitForTimeout(400);
        const prefix = d.isConfig ? 'node-config-input' : 'node-input';
        // Every property of the node has its field.
        const missing = await page.evaluate(
          ({ keys, creds, prefix }) => [...keys, ...creds].filter((k) => !document.getElementById(`${prefix}-${k}`)),
          { keys: Object.keys(d.defaults), creds: d.credentials, prefix },
        );
        assert.deepStrictEqual(missing, [], `${type}: properties without a field in the dialog`);
        const labels = await page.evaluate(() => [...document.querySelectorAll('.red-ui-tray:last-of-type .form-row label')].map((l) => l.textContent.trim()).filter(Boolean));
        assert.ok(labels.length >= 2, `${type}: the dialog shows no labelled fields`);
        const untranslated = labels.filter((l) => /^[\w-]+\.[\w.-]+$/.test(l) && l.includes('.label.'));
        assert.deepStrictEqual(untranslated, [], `${type}: labels whose message catalogue entry is missing`);
        // The config-node picker: choose the account created for the simulator.
        await page.evaluate(
          ({ d, prefix }) => {
            for (const [k, p] of Object.entries(d.defaults)) {
              if (p.type && RED.nodes.getType(p.type) && RED.nodes.node(`iotgw-test-${p.type}`)) {
                $(`#${prefix}-${k}`).val(`iotgw-test-${p.type}`).trigger('change');
              }
            }
          },
          { d, prefix },
        );
        if (SHOTS && !SMOKE) {
          await page.evaluate(() => $('.red-ui-notification').css('visibility', 'hidden'));
          await page.locator('.red-ui-tray').last().screenshot({ path: path.join(IMAGES, `dialog-${type}.png`) });
        }
        const configsBefore = await page.evaluate(() => {
          const ids = [];
          RED.nodes.eachConfig((n) => ids.push(n.id));
          return ids;
        });
        const checked = await checkValidation(ed, type, prefix);
        // Every dialog has a validated field to refuse, but those whose settings are all
        // selects and config nodes.
        assert.equal(checked.length > 0, !ONLY_SELECTS.has(type), `${type}: validated text fields ${JSON.stringify(checked.map((c) => c.key))}`);
        // Done with valid values: the node is valid and keeps them.
        for (const c of checked) {
          if (c.good === undefined) continue;
          await page.evaluate(({ sel, v, typed }) => (typed ? $(sel).typedInput('value', v) : $(sel).val(v).trigger('change')), { sel: `#${prefix}-${c.key}`, v: c.good, typed: c.typed });
        }
        if (d.isConfig) {
          await page.click('#node-config-dialog-ok');
        } else {
          await page.click('#node-dialog-ok');
        }
        // The tray slides out for 250 ms before it is removed: on the page's clock, at once.
        if (ed.clock) await page.clock.fastForward(300);
        await page.waitForFunction(() => !document.querySelector('.red-ui-tray'), null, { timeout: WAIT_MS }).catch(() => {});
        assert.deepStrictEqual(page.errors, [], `${type}: console errors while the dialog was used`);
        const state = await page.evaluate(
          ({ isConfig, id, before }) => {
            let n;
            if (isConfig) {
              RED.nodes.eachConfig((c) => {
                if (!before.includes(c.id)) n = c;
              });
            } else n = RED.nodes.node(id);
            if (!n) return { missing: true };
            const out = { valid: n.valid, errors: n.validationErrors || [] };
            // Keep the config-node pickers of later tests unambiguous.
            if (isConfig) RED.nodes.remove(n.id);
            return out;
          },
          { isConfig: d.isConfig, id: nodeId, before: configsBefore },
        );
        assert.ok(!state.missing, `${type}: Done did not keep the node`);
        assert.notStrictEqual(state.valid, false, `${type}: still invalid after valid values: ${state.errors.join(', ')}`);
      });
    }
  });
}

/**
 * Each example of `area` (exampleArea) imported, deployed and producing output
 * (IOTGW_BROWSER_SMOKE=1: terminal-mode-messages.json only); with `listed`, first that
 * every example of the package is listed under Import > Examples.
 */
function exampleTests(ed, area, { listed = false } = {}) {
  describe('examples', function () {
    const files = exampleFiles();
    const mine = files.filter((f) => exampleArea(f) === area);
    // An example naming an iotgw-redis node gets a real redis-server (its URL is pointed here).
    let redis;
    before(async function () {
      if (!mine.some((f) => f.nodes.some((n) => n.type === 'iotgw-redis'))) return;
      const { RedisServer, findRedisServer } = require('./redis');
      const bin = findRedisServer();
      if (bin) redis = await new RedisServer(bin).start();
    });
    after(async () => {
      if (redis) await redis.destroy();
    });

    if (listed) {
      it('every example is listed under Import > Examples', async function () {
        const { page } = ed;
        assert.ok(files.length > 0, 'examples/ has no flows');
        await page.click('#red-ui-header-button-sidemenu');
        await page.click('#menu-item-import');
        await page.click('#red-ui-clipboard-dialog-import-tabs li:has-text("Examples")');
        const tab = page.locator('#red-ui-clipboard-dialog-import-tabs-content');
        await tab.getByText('@iotgateway/node-red-gateway', { exact: true }).click();
        // The folder's spinner, shown 400 ms at least: on the page's clock, at once.
        if (ed.clock) await page.clock.fastForward(400);
        for (const f of files) {
          await tab.getByText(f.file.replace(/\.json$/, ''), { exact: true }).waitFor({ state: 'visible', timeout: WAIT_MS });
        }
        await page.click('#red-ui-clipboard-dialog-cancel');
      });
    }

    const list = SMOKE ? mine.filter((f) => f.file === 'terminal-mode-messages.json') : mine;
    for (const f of list) {
      it(`${f.file}: imports from Import > Examples, deploys and produces output in the debug sidebar`, async function () {
        const { page, nr } = ed;
        await clearWorkspace(ed);
        // Every example starts on a fresh account window of the simulator, as it would on a user's own
        // account: the examples before it share the simulator's demo account, and their GET calls
        // (pollers) would otherwise leave this one waiting out a 60 s window.
        // The application API's windows too (10 calls per 20 s per token: the app examples before
        // this one would leave it waiting out the window).
        // A message to an online terminal is received 1 s after it was sent (5 s by default): the
        // examples that track one wait for it.
        for (const [area, options] of [['terminal-options', { sendingAfterMs: 500, receivedAfterMs: 1000 }], ['app-options', {}]]) {
          await fetch(`${nr.simUrl}/_sim/${area}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(options) });
        }
        page.errors.length = 0;
        const tabsBefore = await page.evaluate(() => {
          const ids = [];
          RED.nodes.eachWorkspace((ws) => ids.push(ws.id));
          return ids;
        });
        await page.evaluate(() => RED.actions.invoke('core:show-examples-import-dialog'));
        // The tree's first folder opens with its spinner (400 ms at least): on the page's clock, at once.
        if (ed.clock) await page.clock.fastForward(400);
        const tab = page.locator('#red-ui-clipboard-dialog-import-tabs-content');
        const name = f.file.replace(/\.json$/, '');
        await selectExample(page, tab, name, { clock: ed.clock });
        await page.click('#red-ui-clipboard-dialog-import-opt-new');
        await page.click('#red-ui-clipboard-dialog-ok');
        // The editor fetches the example from the runtime, then imports it: wait for its tab.
        await page.waitForFunction(
          (before) => {
            let added = false;
            RED.nodes.eachWorkspace((ws) => {
              if (!before.includes(ws.id) && RED.nodes.filterNodes({ z: ws.id }).length) added = true;
            });
            return added;
          },
          tabsBefore,
          { timeout: 15000 },
        );
        // The examples name the simulator at its default address: point them at this one.
        const imported = await page.evaluate(
          ({ exampleUrl, simUrl, redisUrl, ids, tabsBefore, POLL_SECONDS }) => {
            // The example's own tab (a new one), shown as a person would look at it.
            const added = [];
            RED.nodes.eachWorkspace((ws) => {
              if (!tabsBefore.includes(ws.id)) added.push(ws.id);
            });
            if (added.length) RED.workspaces.show(added[0]);
            let changed = 0;
            RED.nodes.eachConfig((n) => {
              if (n.type === 'iotgw-redis' && redisUrl) {
                n.url = redisUrl;
                n.changed = true;
              }
              if (typeof n.baseUrl === 'string' && n.baseUrl.startsWith(exampleUrl)) {
                n.baseUrl = simUrl + n.baseUrl.slice(exampleUrl.length);
                n.changed = true;
                changed++;
              }
            });
            // Pollers poll every 5 s at the most here: the output the test waits for may come from a
            // poll (the tracker's delivery), and the pace of an example's polls (10 to 60 s, for a
            // real account) is not what it proves. Five polls in 20 s stay within the examples' own
            // rate limit of 5 calls a minute. An account-status node, whose figures cost no call,
            // sends them every second (the fleet dashboard's one debug output).
            // Likewise an inject node that fires once at deploy fires 0.1 s after it (Node-RED's
            // default; the examples wait 1 to 20 s, which a person watching the debug sidebar does
            // not mind).
            for (const ws of added) {
              for (const n of RED.nodes.filterNodes({ z: ws })) {
                const every = n.type === 'iotgw-account-status' ? 1 : POLL_SECONDS;
                if (/^iotgw-/.test(n.type) && Number(n.intervalSeconds) > every) {
                  n.intervalSeconds = every;
                  n.changed = true;
                }
                if (n.type === 'inject' && n.once && Number(n.onceDelay) > 0.1) {
                  n.onceDelay = 0.1;
                  n.changed = true;
                }
              }
            }
            RED.nodes.dirty(true);
            const z = RED.workspaces.active();
            const nodes = RED.nodes.filterNodes({ z });
            const invalid = nodes.filter((n) => n.valid === false).map((n) => `${n.type} ${n.id}: ${(n.validationErrors || []).join(', ')}`);
            return { z, added, count: nodes.length, changed, invalid, known: ids };
          },
          { exampleUrl: EXAMPLE_SIM_URL, simUrl: nr.simUrl, redisUrl: redis && redis.url, ids: f.nodes.map((n) => n.id), tabsBefore, POLL_SECONDS: 5 },
        );
        assert.ok(imported.count > 0, `${f.file}: nothing was imported (${JSON.stringify(imported)})`);
        assert.deepStrictEqual(imported.invalid, [], `${f.file}: imported nodes are invalid`);
        const comments = f.nodes.filter((n) => n.type === 'comment');
        assert.ok(comments.length > 0, `${f.file}: has no comment node saying what it shows`);
        await page.evaluate(() => RED.sidebar.show('debug'));
        await page.click('#red-ui-sidebar-debug-clear');
        await deploy(ed);
        // Most examples run at deploy; the others wait for a click. An example whose inject nodes
        // all wait for one (none fires once at deploy) gets it at once; the rest get it after 2.5 s
        // without output (an example that runs at deploy and is slower than that only gets a click
        // too: both give output).
        const injects = f.nodes.filter((n) => n.type === 'inject');
        const waitsForClick = injects.length > 0 && !injects.some((n) => n.once);
        let messages = waitsForClick ? [] : await debugFromFlow(ed, imported.z, 2500);
        let pressed404 = 0;
        if (!messages.some((m) => !m.error)) {
          // Examples that wait for a click: press every inject button of the flow. Right after the
          // deploy the runtime may still be starting the flow: a 404 (no such node yet) is pressed
          // again, as a person would, for up to 15 s (the page logs each such 404 as a console error:
          // those are ours and are left out of the check below, no more of them than were sent).
          pressed404 = await page.evaluate(async (z) => {
            let notFound = 0;
            for (const n of RED.nodes.filterNodes({ z, type: 'inject' })) {
              for (const end = Date.now() + 15000; ; ) {
                // The editor's own request (its credentials), as its inject button sends it.
                const status = await $.ajax({ url: `inject/${n.id}`, type: 'POST' }).then(
                  () => 200,
                  (x) => x.status,
                );
                if (status === 200) break;
                if (status !== 404 || Date.now() > end) throw new Error(`inject ${n.id} (${n.name || 'no name'}): HTTP ${status}`);
                notFound++;
                await new Promise((ok) => setTimeout(ok, 250));
              }
            }
            return notFound;
          }, imported.z);
          // Returns at the first output; 40 s covers the slowest example's pace (track-delivery:
          // delivery in the simulator, then the status poller's next poll feeds the tracker).
          messages = await debugFromFlow(ed, imported.z, 40000);
        }
        const outputs = messages.filter((m) => !m.error);
        assert.ok(outputs.length > 0, `${f.file}: no output in the debug sidebar; messages: ${JSON.stringify(messages).slice(0, 600)}`);
        const errors = page.errors.filter((e) => !(/status of 404 \(Not Found\)/.test(e) && pressed404-- > 0));
        assert.deepStrictEqual(errors, [], `${f.file}: console errors`);
        if (SHOTS && !SMOKE && f.file === 'terminal-mode-messages.json') {
          await page.waitForTimeout(1500);
          await page.evaluate(() => $('.red-ui-notification').css('visibility', 'hidden'));
          await page.screenshot({ path: path.join(IMAGES, 'example-running.png') });
        }
        if (SHOTS && !SMOKE && f.file === 'decode-terminal-messages.json') {
          // The decoded fields of the newest message, opened in the debug sidebar (README picture).
          await page.evaluate(() => $('.red-ui-notification').css('visibility', 'hidden'));
          await page.evaluate(() => $('#red-ui-debug-content .red-ui-debug-msg').last().find('.red-ui-debug-msg-expandable').first().trigger('click'));
          await page.waitForTimeout(500);
          // Node-RED 4's sidebar content is #red-ui-sidebar-content; Node-RED 5 (split sidebars) has
          // a .red-ui-sidebar-content section in #red-ui-sidebar instead.
          await page.locator('#red-ui-sidebar-content, #red-ui-sidebar .red-ui-sidebar-content').first().screenshot({ path: path.join(IMAGES, 'codec-debug.png') });
        }
      });
    }
  });
}

/**
 * Selects an example in the Import dialog's tree and waits until Import is enabled (on Node-RED
 * 5 once the editor has fetched the example's preview: slow on a busy machine). A click can
 * miss: the tree's folder opens with a spinner that goes as its children slide in, and a click
 * aimed at the example as the rows moved has landed on the folder's own label, which closed
 * the folder and left Import disabled (1 in 30 under load). So after each click the tree's
 * selection is read: Import enabled, done; the example selected, wait on; anything else, the
 * folder is opened and the example clicked again (at most 4 clicks). On the page's clock
 * (`clock`), the folder's spinner, shown at least 400 ms for a person, is moved past.
 */
async function selectExample(page, tab, name, { clock = false } = {}) {
  const item = tab.getByText(name, { exact: true });
  const missed = [];
  for (let attempt = 1; ; attempt++) {
    if (!(await item.isVisible())) {
      await tab.getByText('@iotgateway/node-red-gateway', { exact: true }).click();
      if (clock) await page.clock.fastForward(400);
    }
    await item.click();
    const state = await page
      .waitForFunction(
        (name) => {
          if ($('#red-ui-clipboard-dialog-ok').is(':not([disabled])')) return 'ok';
          const labels = $('#red-ui-clipboard-dialog-import-tabs-content .red-ui-treeList-label:visible');
          // A tree of another make (a later Node-RED): its selection unknown, wait for Import.
          if (!labels.length) return false;
          const selected = labels.filter('.selected').first().text().trim();
          return selected.includes(name) ? false : selected || 'nothing';
        },
        name,
        { timeout: WAIT_MS },
      )
      .then((h) => h.jsonValue());
    if (state === 'ok') return;
    missed.push(state);
    if (attempt >= 4) throw new Error(`${name}: not selected in Import > Examples after ${attempt} clicks (selected instead: ${missed.join(', ')})`);
  }
}

/** Removes every flow tab and every config node of the package (not deployed). */
async function clearWorkspace(ed) {
  const { page } = ed;
  await page.evaluate(() => {
    const tabs = [];
    RED.nodes.eachWorkspace((ws) => tabs.push(ws));
    const keep = RED.workspaces.add(null, null, null);
    for (const ws of tabs) RED.workspaces.delete(ws);
    const configs = [];
    RED.nodes.eachConfig((n) => configs.push(n.id));
    for (const id of configs) RED.nodes.remove(id);
    RED.workspaces.show(keep.id);
    RED.nodes.dirty(true);
    RED.view.redraw(true);
  });
}

async function deploy(ed) {
  const { page } = ed;
  await page.click('#red-ui-header-button-deploy');
  const confirm = page.locator('#red-ui-deploy-dialog-confirm-deploy-deploy, .red-ui-deploy-dialog-confirm-deploy-deploy');
  const result = await Promise.race([
    page.waitForSelector('.red-ui-notification:has-text("Successfully deployed")', { timeout: 15000 }).then(() => 'ok'),
    confirm.first().waitFor({ state: 'visible', timeout: 15000 }).then(() => 'confirm'),
  ]).catch((e) => `failed: ${e.message}`);
  if (result === 'confirm') {
    const text = await page.evaluate(() => $('.red-ui-dialog:visible, .ui-dialog:visible').text());
    assert.fail(`deploy asked for confirmation: ${text.replace(/\s+/g, ' ').slice(0, 400)}`);
  }
  assert.strictEqual(result, 'ok', 'deploy did not succeed');
}

/** Debug-sidebar messages from nodes of flow `z`, waiting up to `ms` for a non-error one. */
async function debugFromFlow(ed, z, ms) {
  const { page } = ed;
  const read = () =>
    page.evaluate((z) => {
      const cls = `red-ui-debug-msg-flow-${z.replace(/\./g, '_')}`;
      return [...document.querySelectorAll(`.red-ui-debug-msg.${cls}`)].map((el) => {
        const src = RED.nodes.node($(el).data('source'));
        // A node's own error, or a debug node fed by a Catch node, is not the flow's output.
        const fromCatch = !!src && src.type === 'debug' && RED.nodes.filterLinks({ target: src }).some((l) => l.source.type === 'catch');
        return {
          error: !src || src.type !== 'debug' || fromCatch || /red-ui-debug-msg-level-(20|error)/.test(el.className),
          text: el.textContent.replace(/\s+/g, ' ').slice(0, 200),
        };
      });
    }, z);
  const end = Date.now() + ms;
  let msgs = await read();
  while (!msgs.some((m) => !m.error) && Date.now() < end) {
    await page.waitForTimeout(250);
    msgs = await read();
  }
  return msgs;
}

module.exports = { CATEGORY, IMAGES, SHOTS, SMOKE, typeArea, exampleArea, withoutChromium, describeEditor, dialogTests, exampleTests };
