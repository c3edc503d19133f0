'use strict';
const assert = require('node:assert/strict');
const path = require('node:path');
const { simulatorPerTest, until, collect, loadExample } = require('../helpers/harness');

const CORE = ['common/20-inject.js', 'common/90-comment.js', 'sequence/17-split.js'].map((f) => require(`@node-red/nodes/core/${f}`));

/** An application API example against the test's simulator (its iotgw-app node checked as shipped). */
function loadAppExample(file, sim) {
  return loadExample(file, CORE, (c) => {
    if (c.type !== 'iotgw-app') return;
    assert.equal(c.id, 'iotgw-example-app');
    assert.equal(c.name, 'simulator');
    assert.equal(c.baseUrl, 'http://127.0.0.1:1881/app');
    assert.deepEqual(c.credentials, { authToken: 'app-demo-token' });
    c.baseUrl = sim.appUrl;
  });
}

/**
 * Presses the example's injects `<prefix>-inject-<name>` in turn, each once the one before
 * has answered: those named in `ok` into the debug node `<prefix>-debug`, then `bad` into the
 * Catch's debug node `<prefix>-error`. What each of the two received.
 */
async function pressInTurn(n, prefix, ok, bad) {
  const out = collect(n.get(`${prefix}-debug`));
  const errors = collect(n.get(`${prefix}-error`));
  for (const [i, name] of ok.entries()) {
    n.get(`${prefix}-inject-${name}`).receive({});
    await until(() => out.length === i + 1);
  }
  n.get(`${prefix}-inject-${bad}`).receive({});
  await until(() => errors.length === 1);
  return { out, errors };
}

describe('example flows of the application API nodes', function () {
  let sim;
  simulatorPerTest({}, (s) => (sim = s));

  it('each example has a comment, an inject, its node and a debug node', function () {
    for (const [file, type] of [['app-user.json', 'iotgw-user'], ['app-tag-list.json', 'iotgw-tag-list'], ['app-tag-config.json', 'iotgw-tag-config']]) {
      const flow = require(path.join('..', '..', 'examples', file));
      const types = flow.map((n) => n.type);
      for (const t of ['tab', 'comment', 'inject', type, 'debug', 'iotgw-app']) assert.ok(types.includes(t), `${file} has a ${t}`);
      const node = flow.find((n) => n.type === type);
      assert.ok(flow.some((n) => n.type === 'inject' && n.wires[0].includes(node.id)), `${file}: inject -> ${type}`);
      assert.ok(node.wires[0].length > 0);
    }
  });

  it('app-user.json: the current user, a colleague, and FORBIDDEN for another account\'s user', async function () {
    const n = await loadAppExample('app-user.json', sim);
    const { out, errors } = await pressInTurn(n, 'iotgw-ex-app-user', ['me', 'colleague'], 'other');
    assert.deepEqual(out.map((m) => m.payload.username), ['demo', 'operator']);
    assert.equal(errors[0].error.code, 'FORBIDDEN');
  });

  it('app-tag-list.json: one page from msg.page/msg.perPage, and every page merged by the join node', async function () {
    const n = await loadAppExample('app-tag-list.json', sim);
    const page = collect(n.get('iotgw-ex-app-tags-page-debug'));
    const each = collect(n.get('iotgw-ex-app-tags-each'));
    const all = collect(n.get('iotgw-ex-app-tags-all-debug'));
    n.get('iotgw-ex-app-tags-inject-page').receive({});
    await until(() => page.length === 1);
    assert.equal(page[0].payload.curPage, 2);
    assert.equal(page[0].payload.items.length, 10);
    n.get('iotgw-ex-app-tags-inject-all').receive({});
    await until(() => all.length === 1, 10000);
    assert.equal(each.length, 5);
    assert.equal(all[0].payload.length, 45);
  });

  it('app-tag-config.json: by tag ID, by serial number through msg.query, NOT_FOUND for an unknown tag', async function () {
    const n = await loadAppExample('app-tag-config.json', sim);
    const { out, errors } = await pressInTurn(n, 'iotgw-ex-app-tagcfg', ['id', 'serial'], 'unknown');
    assert.equal(out[0].payload.tag_id, '00000003-0000-4000-8000-000000000001');
    assert.equal(out[1].payload.serial_number, 'SN000002');
    assert.equal(out[1].payload.version, 1);
    assert.equal(errors[0].error.code, 'NOT_FOUND');
  });
});
