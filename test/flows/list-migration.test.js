'use strict';
/**
 * One vocabulary for lists (issue 14): `pages` ('one' | 'all'), 1-based `page`, `pageSize`.
 * Flows saved with the old properties (devices: `allPages`, `page` as sent to the service;
 * tag list: `walk`, `perPage`) load and give the same output as the same flow written in
 * the new vocabulary, and send the same requests.
 */
const assert = require('node:assert/strict');
const { helper, startSimulator, gatewayNode, until, collect, catchAll, DEMO_CREDS, ALL_NODES } = require('../helpers/harness');
const { migrateListConfig } = require('../../dist/lib/api/list-paging');

const JOIN = require('@node-red/nodes/core/sequence/17-split.js');
const APP_TOKEN = 'app-demo-token';

function load(flow) {
  const nodes = [{ id: 'flow', type: 'tab', label: 'test' }, ...flow.map((n) => (n.type.startsWith('iotgw-') && ['iotgw-gateway', 'iotgw-app'].includes(n.type) ? n : { z: 'flow', ...n }))];
  return new Promise((resolve, reject) => {
    helper.load([...ALL_NODES, JOIN], nodes, { gw: DEMO_CREDS, app: { authToken: APP_TOKEN } }, () => resolve({ get: (id) => helper.getNode(id) })).catch(reject);
  });
}

/** What a run shows: every output msg without its ids, every request's query, and errors. */
async function run(sim, flow, area, path, input, done) {
  const n = await load(flow);
  const out = collect(n.get('out'));
  const caught = collect(n.get('caught'));
  n.get('list').receive(input);
  await until(() => caught.length > 0 || done(out), 10000, 'the list output');
  const shown = out.map((m) => {
    const { _msgid, parts, ...rest } = m;
    void _msgid;
    return { ...rest, parts: parts && { index: parts.index, count: parts.count, type: parts.type, len: parts.len } };
  });
  const queries = sim.server.callsTo(path).map((c) => Object.fromEntries(new URLSearchParams(c.query)));
  await helper.unload();
  sim.server.reset?.();
  return { out: shown, queries, errors: caught.map((c) => c.error.message) };
}

describe('list vocabulary: saved flows with the old properties', function () {
  it('the migration reads the old names only when the new one is absent', function () {
    assert.deepEqual(migrateListConfig({ allPages: true, page: 0, pageSize: 10 }), { pages: 'all', page: 1, firstPage: 0, pageSize: 10 });
    assert.deepEqual(migrateListConfig({ allPages: false, page: 3, pageSize: 10 }), { pages: 'one', page: 3, pageSize: 10 });
    assert.deepEqual(migrateListConfig({ walk: 'all', page: '', perPage: '7' }), { pages: 'all', page: '', pageSize: '7' });
    assert.deepEqual(migrateListConfig({ walk: 'page', perPage: '' }), { pages: 'one' }, 'an empty old page size stays absent');
    assert.deepEqual(migrateListConfig({ page: 2 }), { pages: 'one', page: 2 }, 'neither name: one page, as before');
    const fresh = { pages: 'all', page: 2, pageSize: 5, walk: 'page', perPage: 9 };
    assert.equal(migrateListConfig(fresh), fresh, 'a flow in the new vocabulary is left as it is');
  });

  describe('iotgw-lorawan-devices', function () {
    let sim;
    afterEach(async function () {
      await new Promise((r) => helper.stopServer(r));
      sim.areas.broker.release();
      await sim.close();
    });

    for (const firstPage of [1, 0]) {
      it(`an old every-page flow (allPages, page ${firstPage} of a ${firstPage ? 'one' : 'zero'}-based service) gives the same msgs as pages: 'all', page 1`, async function () {
        sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 }, broker: { deviceCount: 25, firstPage } });
        await new Promise((r) => helper.startServer(r));
        const common = [gatewayNode(sim), { id: 'out', type: 'helper' }, ...catchAll()];
        const last = (out) => out.length > 0 && out.at(-1).page.last === true;
        const old = await run(sim, [...common, { id: 'list', type: 'iotgw-lorawan-devices', gateway: 'gw', page: firstPage, pageSize: 10, allPages: true, wires: [['out']] }], 'broker', 'broker/devices', { payload: '' }, last);
        const callsBefore = old.queries.length;
        const now = await run(
          sim,
          [...common, { id: 'list', type: 'iotgw-lorawan-devices', gateway: 'gw', pages: 'all', page: 1, firstPage, pageSize: 10, wires: [['out']] }],
          'broker',
          'broker/devices',
          { payload: '' },
          last,
        );
        assert.deepEqual(old.errors, []);
        assert.equal(old.out.length, 3, 'three pages of 10, 10 and 5 devices');
        assert.deepEqual(old.out.map((m) => m.payload.length), [10, 10, 5]);
        assert.deepEqual(old.out.map((m) => m.parts.index), [0, 1, 2]);
        assert.deepEqual(old.queries.map((q) => q.page), [0, 1, 2].map((i) => String(i + firstPage)), 'the same page numbers as before the vocabulary');
        assert.deepEqual(now.out, old.out);
        assert.deepEqual(now.queries.slice(callsBefore), old.queries);
        assert.deepEqual(now.errors, []);
      });
    }

    it('msg.pages / msg.page / msg.pageSize override the settings as on the tag list', async function () {
      sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 }, broker: { deviceCount: 25 } });
      await new Promise((r) => helper.startServer(r));
      const flow = [gatewayNode(sim), { id: 'out', type: 'helper' }, ...catchAll(), { id: 'list', type: 'iotgw-lorawan-devices', gateway: 'gw', pages: 'one', page: 1, pageSize: 100, wires: [['out']] }];
      const r = await run(sim, flow, 'broker', 'broker/devices', { payload: '', pages: 'all', page: 2, pageSize: 10 }, (out) => out.length > 0 && out.at(-1).page.last === true);
      assert.deepEqual(r.errors, []);
      assert.deepEqual(r.queries.map((q) => [q.page, q.pageSize]), [['2', '10'], ['3', '10']]);
      assert.deepEqual(r.out.map((m) => m.parts.index), [0, 1]);
    });
  });

  describe('iotgw-tag-list', function () {
    let sim;
    afterEach(async function () {
      await new Promise((r) => helper.stopServer(r));
      await sim.close();
    });

    it("an old flow (walk 'all', perPage) gives the same msgs as pages: 'all', pageSize", async function () {
      sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 }, app: { rateLimitCalls: 0, tagCount: 25 } });
      await new Promise((r) => helper.startServer(r));
      const appNode = { id: 'app', type: 'iotgw-app', baseUrl: sim.appUrl, timeoutSeconds: 5, rateLimitCalls: 0, rateLimitWindowSeconds: 1, maxRetries: 0 };
      const common = [appNode, { id: 'out', type: 'helper' }, ...catchAll()];
      const rest = { app: 'app', page: '', offset: '', token: '', tokenType: 'str', search: '', searchType: 'str', wires: [['out']] };
      const last = (out) => out.length > 0 && out.at(-1).parts?.count !== undefined;
      const old = await run(sim, [...common, { id: 'list', type: 'iotgw-tag-list', walk: 'all', perPage: '10', ...rest }], 'app', 'app/tags', { payload: 'go' }, last);
      const n0 = old.queries.length;
      const now = await run(sim, [...common, { id: 'list', type: 'iotgw-tag-list', pages: 'all', pageSize: '10', ...rest }], 'app', 'app/tags', { payload: 'go' }, last);
      assert.deepEqual(old.errors, []);
      assert.deepEqual(old.out.map((m) => m.payload.length), [10, 10, 5]);
      assert.deepEqual(now.out, old.out);
      assert.deepEqual(now.queries.slice(n0), old.queries);
      // msg.pageSize is the new name of msg.perPage; msg.pages picks one page here.
      const one = await run(sim, [...common, { id: 'list', type: 'iotgw-tag-list', pages: 'all', pageSize: '', ...rest }], 'app', 'app/tags', { payload: 'go', pages: 'one', page: 2, pageSize: 4 }, (out) => out.length === 1);
      assert.deepEqual(one.errors, []);
      assert.deepEqual(one.queries.at(-1), { page: '2', per_page: '4' });
      assert.equal(one.out[0].payload.curPage, 2);
    });
  });
});

describe('list vocabulary: a flow the new editor saved without opening the old node', function () {
  it("pages '' (the editor's default) reads the old names", function () {
    assert.deepEqual(migrateListConfig({ pages: '', firstPage: '', allPages: true, page: 0, pageSize: 10 }), { pages: 'all', page: 1, firstPage: 0, pageSize: 10 });
    assert.deepEqual(migrateListConfig({ pages: '', walk: 'all', pageSize: '', perPage: '10', page: '' }), { pages: 'all', pageSize: '10', page: '' });
  });
});
