'use strict';
/**
 * The shared editor code (resources/iotgw-editor.js), outside a browser: the validators
 * accept and refuse what the per-file validators they replace did, and the dialog rows
 * expand to the label and input each .html had written out. (The browser tests open every
 * dialog in Chromium.)
 */
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const vm = require('node:vm');

const FILE = path.join(__dirname, '..', '..', 'resources', 'iotgw-editor.js');

/** Runs the file in a context with a window and one template script element. */
function load(templates = {}) {
  const els = Object.fromEntries(
    Object.entries(templates).map(([type, text]) => [type, { textContent: text, attrs: {}, getAttribute(k) { return this.attrs[k]; }, setAttribute(k, v) { this.attrs[k] = v; } }]),
  );
  const document = { querySelector: (sel) => els[/data-template-name="([^"]+)"/.exec(sel)[1]] || null };
  const window = {};
  vm.runInNewContext(fs.readFileSync(FILE, 'utf8'), { window, document });
  return { IOTGW: window.IOTGW, els };
}

/**
 * The template of `type` after IOTGW.rows(type, ...args) (the file loaded with that one
 * template): `{ IOTGW, els, out }`, `out` one string a row, the white space between elements
 * as one space (as the browser shows it).
 */
function expandRows(type, tpl, ...args) {
  const { IOTGW: I, els } = load({ [type]: tpl });
  I.rows(type, ...args);
  return { IOTGW: I, els, out: els[type].textContent.replace(/\s*\n\s*/g, ' ').split(/(?<=<\/div>) /) };
}

const node = { _: (k) => `msg:${k}` };

/** The definition nodes/<type>.html registers, its inline scripts run after the shared file (as Node-RED loads them). */
function definition(type) {
  const html = fs.readFileSync(path.join(__dirname, '..', '..', 'nodes', `${type}.html`), 'utf8');
  const defs = {};
  const RED = { nodes: { registerType: (t, d) => (defs[t] = d) }, validators: { typedInput: () => () => true } };
  const ctx = vm.createContext({ window: {}, document: { querySelector: () => null }, RED });
  vm.runInContext(fs.readFileSync(FILE, 'utf8'), ctx);
  ctx.IOTGW = ctx.window.IOTGW;
  for (const [, src] of html.matchAll(/<script type="text\/javascript">([\s\S]*?)<\/script>/g)) vm.runInContext(src, ctx);
  return defs[type];
}

describe('shared editor code (resources/iotgw-editor.js)', function () {
  const { IOTGW } = load();

  it('check(): ${ENV_VAR}, empty only when optional, else the test, else the catalogue message', function () {
    const v = IOTGW.check('iotgw-x', IOTGW.numIn(0, 5000), 'lingerMs');
    for (const ok of ['0', '50', ' 5000 ', 12.5, '${LINGER}', ' ${A_1} ']) assert.equal(v.call(node, ok), true, `accepts ${ok}`);
    for (const bad of ['', '-1', '5001', 'x', '${}', '${1A}', null, undefined]) assert.equal(v.call(node, bad), 'msg:iotgw-x.errors.lingerMs', `refuses ${bad}`);
    assert.equal(v.call({}, 'x'), false, 'no catalogue: false');
    const opt = IOTGW.check('iotgw-x', IOTGW.isParam, 'idParam', true);
    for (const ok of ['', '  ', 'id', 'a.b[0]-c_d', '${P}']) assert.equal(opt.call(node, ok), true, `accepts ${JSON.stringify(ok)}`);
    for (const bad of ['a b', 'x'.repeat(101), 'a=b']) assert.equal(opt.call(node, bad), 'msg:iotgw-x.errors.idParam');
  });

  it("check() with isQueryName: accepts and refuses what iotgw-user's own Query name validator did", function () {
    // The validator iotgw-user.html had written out before it took the shared one.
    const before = function (v) {
      const s = String(v === undefined || v === null ? '' : v);
      if (/^\$\{[A-Za-z_][A-Za-z0-9_]*\}$/.test(s.trim()) || /^[^\s=&#?]{1,200}$/.test(s)) return true;
      return typeof this._ === 'function' ? this._('iotgw-user.errors.param') : false;
    };
    const now = IOTGW.check('iotgw-user', IOTGW.isQueryName, 'param');
    const values = ['user_id', 'id', 'a.b[0]-c_d', 'ü~!$%', 'x'.repeat(200), 'x'.repeat(201), '', '  ', ' user_id', 'user_id ', 'a b', 'a\tb',
      'a=b', 'a&b', 'a#b', 'a?b', '${P}', ' ${A_1} ', '${}', '${1A}', 12, 0, null, undefined];
    for (const v of values) {
      assert.equal(now.call(node, v), before.call(node, v), `with a catalogue: ${JSON.stringify(v)}`);
      assert.equal(now.call({}, v), before.call({}, v), `without one: ${JSON.stringify(v)}`);
    }
    assert.equal(now.call(node, ' user_id'), 'msg:iotgw-user.errors.param', 'white space around the name is refused, as before');
    assert.equal(now.call(node, '${USER_PARAM}'), true);
  });

  it('the dialogs that took the shared oneOf() and check() accept and refuse what their own validators did', function () {
    const say = (type) => function (key, opts) { return typeof this._ === 'function' ? this._(`${type}.errors.${key}`, opts) : false; };
    const tagSay = say('iotgw-tag-list');
    const ENV = /^\$\{[A-Za-z_][A-Za-z0-9_]*\}$/;
    const text = (v) => String(v === undefined || v === null ? '' : v).trim();
    // The validators the files had written out before.
    const before = {
      'iotgw-lorawan-devices': {
        receivable: (v) => v === '' || v === 'true' || v === 'false',
        pages: (v) => v === undefined || v === '' || v === 'one' || v === 'all',
      },
      'iotgw-lorawan-contract': { operation: (v) => v === 'create' || v === 'list' },
      'iotgw-tag-list': {
        pages: function (v) { return v === undefined || v === '' || v === 'one' || v === 'all' || tagSay.call(this, 'walk'); },
        walk: function (v) { return v === undefined || v === '' || v === 'page' || v === 'all' || tagSay.call(this, 'walk'); },
        page: optInt(1, 1000000), pageSize: optInt(1, 10000), perPage: optInt(1, 10000), offset: optInt(0, 1000000000),
        maxPages: function (v) {
          const s = text(v);
          return ENV.test(s) || (/^\d+$/.test(s) && Number(s) >= 1 && Number(s) <= 1000000) || tagSay.call(this, 'maxPages');
        },
      },
    };
    function optInt(min, max) {
      return function (v) {
        const s = text(v);
        if (s === '' || ENV.test(s)) return true;
        return (/^-?\d+$/.test(s) && Number(s) >= min && Number(s) <= max) || tagSay.call(this, 'optInt', { min, max });
      };
    }
    const values = [undefined, null, '', ' ', 'one', 'all', 'page', 'ALL', 'true', 'false', true, false, 'create', 'list', 'x', '0', '1', ' 7 ',
      '-1', '-0', '1e3', '10.0', '0x10', '1000000', '1000001', '10000', '10001', '1000000000', '1000000001', 5, 0, '${N}', ' ${N_1} ', '${}'];
    for (const [type, fields] of Object.entries(before)) {
      const d = definition(type);
      for (const [k, old] of Object.entries(fields)) {
        for (const v of values) {
          for (const n of [node, {}]) assert.deepEqual(d.defaults[k].validate.call(n, v, {}), old.call(n, v), `${type}.${k}: ${JSON.stringify(v)}`);
        }
      }
    }
  });

  it('intIn(): integers by value, as the devices and contract validators did', function () {
    const t = IOTGW.intIn(1);
    assert.deepEqual(['1', '1e2', '100', '0', '1.5', 'x', '-3'].map(t), [true, true, true, false, false, false, false]);
    assert.deepEqual(['5', '6'].map(IOTGW.intIn(0, 5)), [true, false]);
  });

  it('startFrom(): now, -24h, a UTC time; with real=true only a real date', function () {
    for (const real of [true, false]) {
      const t = IOTGW.startFrom(real);
      for (const ok of ['now', '-24h', '-1.5 d', '2026-01-31 00:00:00']) assert.equal(t(ok), true, `accepts ${ok}`);
      for (const bad of ['later', '24h', '2026-01-31', '2026-01-31T00:00:00']) assert.equal(t(bad), false, `refuses ${bad}`);
    }
    assert.equal(IOTGW.startFrom(true)('2026-13-45 99:00:00'), false);
    assert.equal(IOTGW.startFrom(false)('2026-13-45 99:00:00'), true, 'the message poller kept its pattern-only check');
  });

  it('rows(): data-input-* attributes go onto the input; a config node prefix', function () {
    const tpl = [
      '<div class="form-row" data-iotgw-row="name tag -" data-input-data-i18n="[placeholder]iotgw-c.placeholder.name"></div>',
      '<div class="form-row" data-iotgw-row="password lock" data-input-type="password"></div>',
      '<div class="form-row" data-input-placeholder="iotgw:" data-iotgw-row="keyPrefix key"></div>',
    ].join('\n');
    const { out } = expandRows('iotgw-c', tpl, 'node-config-input');
    assert.equal(out[0], '<div class="form-row"> <label for="node-config-input-name"><i class="fa fa-tag"></i> <span data-i18n="iotgw-c.label.name"></span></label> <input type="text" id="node-config-input-name" data-i18n="[placeholder]iotgw-c.placeholder.name"> </div>');
    assert.match(out[1], /<input type="password" id="node-config-input-password"> <\/div>$/);
    assert.match(out[2], /^<div class="form-row">.*<input type="text" id="node-config-input-keyPrefix" placeholder="iotgw:"> <\/div>$/);
  });

  it('label() and labelStyle()', function () {
    const label = IOTGW.label('iotgw-x');
    assert.equal(label.call({ name: 'mine', _: node._ }), 'mine');
    assert.equal(label.call({ name: '', _: node._ }), 'msg:iotgw-x.label.node');
    assert.equal(IOTGW.labelStyle.call({ name: 'a' }), 'node_label_italic');
    assert.equal(IOTGW.labelStyle.call({ name: '' }), '');
  });

  it('rows(): expands text, typed, checkbox and select rows once, keeping other attributes and content', function () {
    const tpl = [
      '<div class="form-row" data-iotgw-row="gateway server"></div>',
      '<div class="form-row" style="margin-top: 8px;" data-iotgw-row="lingerMs hourglass-half 70px"> ms</div>',
      '<div class="form-row" data-iotgw-row="token id-card-o 70%" data-typed></div>',
      '<div class="form-row" data-iotgw-row="pageSize list-ol 70px perPage"></div>',
      '<div class="form-row" data-iotgw-check="wait"></div>',
      '<div class="form-row" data-iotgw-select="firstPage sort 70%"><option value="">one</option></div>',
      '<div class="form-tips">left as it is</div>',
    ].join('\n');
    const { IOTGW: I, els, out } = expandRows('iotgw-x', tpl);
    assert.equal(out.length, 7);
    assert.equal(out[0], '<div class="form-row"> <label for="node-input-gateway"><i class="fa fa-server"></i> <span data-i18n="iotgw-x.label.gateway"></span></label> <input type="text" id="node-input-gateway"> </div>');
    assert.equal(out[1], '<div class="form-row" style="margin-top: 8px;"> <label for="node-input-lingerMs"><i class="fa fa-hourglass-half"></i> <span data-i18n="iotgw-x.label.lingerMs"></span></label> <input type="text" id="node-input-lingerMs" style="width: 70px;"> ms </div>');
    assert.match(out[2], /<input type="text" id="node-input-token" style="width: 70%;"> <input type="hidden" id="node-input-tokenType"> <\/div>$/);
    assert.ok(!out[2].includes('data-typed'));
    assert.match(out[3], /data-i18n="iotgw-x\.label\.perPage".*id="node-input-pageSize" style="width: 70px;"/);
    assert.equal(out[4], '<div class="form-row"> <label>&nbsp;</label> <input type="checkbox" id="node-input-wait" style="display: inline-block; width: auto; vertical-align: top;"> <label for="node-input-wait" style="width: auto;" data-i18n="iotgw-x.label.wait"></label> </div>');
    assert.match(out[5], /<\/label> <select id="node-input-firstPage" style="width: 70%;"><option value="">one<\/option><\/select> <\/div>$/);
    assert.equal(out[6], '<div class="form-tips">left as it is</div>');
    const once = els['iotgw-x'].textContent;
    I.rows('iotgw-x');
    assert.equal(els['iotgw-x'].textContent, once, 'a second call changes nothing');
    I.rows('iotgw-missing');
  });

  it('every row marker in nodes/*.html names a field of its node', function () {
    const dir = path.join(__dirname, '..', '..', 'nodes');
    for (const f of fs.readdirSync(dir).filter((n) => n.endsWith('.html'))) {
      const html = fs.readFileSync(path.join(dir, f), 'utf8');
      const markers = [...html.matchAll(/data-iotgw-(?:row|check|select)="(\w+)/g)].map((m) => m[1]);
      if (markers.length === 0) continue;
      const type = /registerType\('([^']+)'/.exec(html)[1];
      // IOTGW.rows(type), or IOTGW.editor / IOTGW.poller.editor, which call it.
      const expands = html.includes(`IOTGW.rows('${type}'`) || html.includes(`IOTGW.editor('${type}'`) ||
        (html.includes(`var T = '${type}'`) && /IOTGW\.(poller\.)?editor\(T\b/.test(html));
      assert.ok(expands, `${f}: uses row markers without IOTGW.rows('${type}') or IOTGW.editor('${type}')`);
      assert.ok(html.includes('src="resources/@iotgateway/node-red-gateway/iotgw-editor.js"'), `${f}: does not include the shared editor code`);
      for (const m of markers) assert.match(html, new RegExp(`\\b${m}: \\{`), `${f}: row ${m} is not a property in defaults`);
    }
  });

  it('rows(): a select with data-iotgw-options lists its options from the catalogue, the row\'s content after it', function () {
    const tpl = [
      '<div class="form-row" data-iotgw-select="pages files-o 70%" data-iotgw-options="one all">\n        <input type="hidden" id="node-input-walk"></div>',
      '<div class="form-row" data-iotgw-select="view eye" data-iotgw-options="=view.any true=receivable"></div>',
    ].join('\n');
    const { out } = expandRows('iotgw-o', tpl);
    assert.equal(out[0], '<div class="form-row"> <label for="node-input-pages"><i class="fa fa-files-o"></i> <span data-i18n="iotgw-o.label.pages"></span></label> ' +
      '<select id="node-input-pages" style="width: 70%;"><option value="one" data-i18n="iotgw-o.pages.one"></option><option value="all" data-i18n="iotgw-o.pages.all"></option></select> ' +
      '<input type="hidden" id="node-input-walk"> </div>');
    assert.match(out[1], /<select id="node-input-view"><option value="" data-i18n="iotgw-o\.view\.any"><\/option><option value="true" data-i18n="iotgw-o\.view\.receivable"><\/option><\/select> <\/div>$/);
    assert.ok(!out[1].includes('data-iotgw-options') && !out[1].includes(' options='));
  });

  it('the three sending dialogs take the outbox block (IOTGW.outbox): the defaults and checks their own had, absent values valid, and its rows', function () {
    // What each file had written out before (issue 45), as values each validator must accept or refuse.
    const cases = {
      outbox: [['off', 'on', '', undefined], ['maybe', 'ON']],
      outboxName: [['', 'pumps', 'x'.repeat(200), '${OUTBOX}'], ['x'.repeat(201)]],
      ttlSeconds: [['', 1, '3600', 31536000, 0.5 + 1, '${TTL}'], [0, '-1', 31536001, 'x']],
      outboxMaxEntries: [['', 1, '10000', 10000000], [0, 2.5, 10000001, 'x']],
      outboxMaxBytes: [['', 1024, '67108864', 1099511627776], [1023, 1.5, 1099511627777, 'x']],
      whenFull: [['reject', 'drop-oldest', ''], ['drop', 'oldest']],
    };
    const values = { outbox: 'off', outboxName: '', ttlSeconds: 3600, outboxMaxEntries: 10000, outboxMaxBytes: 67108864, whenFull: 'reject' };
    for (const type of ['iotgw-send-message', 'iotgw-terminal-mode', 'iotgw-cancel']) {
      const d = definition(type);
      for (const [key, [ok, bad]] of Object.entries(cases)) {
        assert.equal(d.defaults[key].value, values[key], `${type} ${key}'s default`);
        for (const v of ok) assert.equal(d.defaults[key].validate.call(node, v), true, `${type} ${key} accepts ${JSON.stringify(v)}`);
        for (const v of bad) assert.notEqual(d.defaults[key].validate.call(node, v), true, `${type} ${key} refuses ${JSON.stringify(v)}`);
      }
      const html = fs.readFileSync(path.join(__dirname, '..', '..', 'nodes', `${type}.html`), 'utf8');
      assert.ok(html.includes('<div data-iotgw-outbox></div>'), `${type}: the template takes the block`);
    }
    const { IOTGW: I, els } = load({ 'iotgw-o': '<div class="form-row" data-iotgw-row="gateway server"></div>\n    <div data-iotgw-outbox></div>' });
    I.rows('iotgw-o', 'node-input');
    const t = els['iotgw-o'].textContent;
    for (const id of ['outbox', 'outboxName', 'ttlSeconds', 'outboxMaxEntries', 'outboxMaxBytes', 'whenFull']) assert.match(t, new RegExp(`id="node-input-${id}"`), id);
    assert.match(t, /<div class="iotgw-outbox-rows">[\s\S]*node-input-whenFull[\s\S]*data-i18n="iotgw-o\.tip\.outbox"><\/div>\n {4}<\/div>/);
    assert.match(t, /<option value="drop-oldest" data-i18n="iotgw-o\.label\.whenFullDrop">/);
  });

  it('editor(): the rows expanded, a Name row last when the template has none, the label and the port labels asked for', function () {
    const { IOTGW: I, els } = load({ 'iotgw-e': '<div class="form-row" data-iotgw-row="gateway server"></div>', 'iotgw-n': '<div class="form-row" data-iotgw-row="name tag"></div>' });
    const d = I.editor('iotgw-e', 'input output');
    assert.match(els['iotgw-e'].textContent, /id="node-input-gateway"[\s\S]*<div class="form-row" style="margin-top: 8px;">[\s\S]*id="node-input-name"/);
    assert.equal(d.label.call({ name: '', _: node._ }), 'msg:iotgw-e.label.node');
    assert.equal(d.labelStyle, I.labelStyle);
    assert.equal(d.inputLabels.call(node), 'msg:iotgw-e.label.input');
    assert.equal(d.outputLabels.call(node), 'msg:iotgw-e.label.output');
    const n = I.editor('iotgw-n');
    assert.equal(n.inputLabels, undefined);
    assert.equal(n.outputLabels, undefined);
    assert.equal((els['iotgw-n'].textContent.match(/node-input-name"/g) || []).length, 2, 'its own Name row only (label and input)');
    const once = els['iotgw-e'].textContent;
    I.editor('iotgw-e');
    assert.equal(els['iotgw-e'].textContent, once, 'a second call changes nothing');
  });

  it('oneOf(): the values listed, else the catalogue message (false without a key)', function () {
    const v = IOTGW.oneOf('iotgw-x', [undefined, '', 'own', 'all'], 'accounts');
    for (const ok of [undefined, '', 'own', 'all']) assert.equal(v.call(node, ok), true, `accepts ${ok}`);
    for (const bad of ['x', 'OWN', null, 0]) assert.equal(v.call(node, bad), 'msg:iotgw-x.errors.accounts', `refuses ${bad}`);
    assert.equal(IOTGW.oneOf('iotgw-x', ['GET', 'POST']).call(node, 'PUT'), false);
  });

  it('IOTGW.poller: the polling block expands once into its rows, with the type\'s texts; its defaults, checks, labels', function () {
    const tpl = ['<div class="form-row" data-iotgw-row="gateway server"></div>', '<div data-iotgw-poller></div>', '<div class="form-row" data-iotgw-row="name tag"></div>'].join('\n');
    const { IOTGW: I, els } = load({ 'iotgw-p': tpl });
    I.rows('iotgw-p');
    const text = els['iotgw-p'].textContent;
    for (const k of ['gateway', 'intervalSeconds', 'startFrom', 'output', 'contextStore', 'fullAt', 'autoStart', 'feedName', 'name']) assert.ok(text.includes(`id="node-input-${k}"`), `the field ${k}`);
    assert.ok(text.includes('id="node-input-store-missing"') && text.includes('data-i18n="iotgw-p.tip.feedName"') && text.includes('data-i18n="iotgw-p.output.batch"'));
    assert.ok(!/data-iotgw-|TYPE\./.test(text), 'every marker expanded');
    I.rows('iotgw-p');
    assert.equal(els['iotgw-p'].textContent, text, 'a second call changes nothing');
    const d = I.poller.defaults('iotgw-p');
    assert.deepEqual(Object.keys(d), ['intervalSeconds', 'startFrom', 'output', 'contextStore', 'autoStart', 'fullAt', 'feedName']);
    assert.deepEqual([d.intervalSeconds.value, d.output.value, d.fullAt.value, d.autoStart.value, d.feedName.value], [60, 'record', 500, true, '']);
    assert.equal(d.intervalSeconds.validate.call(node, '0'), 'msg:iotgw-p.errors.interval');
    assert.equal(d.startFrom.validate.call(node, '2026-13-45 99:00:00'), 'msg:iotgw-p.errors.startFrom');
    assert.equal(d.output.validate.call(node, 'stream'), 'msg:iotgw-p.errors.output');
    for (const ok of ['', 'fleet-updates', 'site.1:feed_2', '${FEED}']) assert.equal(d.feedName.validate.call(node, ok), true, `feedName ${ok}`);
    for (const bad of ['my feed', 'a{b}', 'x'.repeat(101)]) assert.equal(d.feedName.validate.call(node, bad), 'msg:iotgw-p.errors.feedName', `feedName ${bad}`);
    const e = I.poller.editor('iotgw-p');
    assert.equal(e.inputLabels.call(node), 'msg:iotgw-p.label.input');
    assert.equal(e.outputLabels.call({ ...node, output: 'batch' }), 'msg:iotgw-p.output.batch');
    assert.equal(e.label.call({ ...node, name: '' }), 'msg:iotgw-p.label.node');
  });

  it('every poller dialog names each polling setting in its literal defaults, taking its value from IOTGW.poller', function () {
    const dir = path.join(__dirname, '..', '..', 'nodes');
    const keys = Object.keys(IOTGW.poller.defaults('x'));
    const pollers = fs.readdirSync(dir).filter((n) => n.endsWith('.html') && fs.readFileSync(path.join(dir, n), 'utf8').includes('<div data-iotgw-poller></div>'));
    assert.deepEqual(pollers.sort(), ['iotgw-message-poller.html', 'iotgw-status-poller.html', 'iotgw-terminal-updates.html']);
    for (const f of pollers) {
      const html = fs.readFileSync(path.join(dir, f), 'utf8');
      for (const k of keys) assert.ok(html.includes(`${k}: P.${k}`), `${f}: ${k}`);
      assert.ok(html.includes('...IOTGW.poller.editor(T)'), `${f}: labels and the store select`);
    }
  });
});
