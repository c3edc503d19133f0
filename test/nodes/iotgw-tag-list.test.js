'use strict';
const assert = require('node:assert/strict');
const { simulatorPerTest, helper, until, collect, catchAll, ALL_NODES } = require('../helpers/harness');

const TOKEN = 'app-demo-token';
const JOIN = require('@node-red/nodes/core/sequence/17-split.js');

function appNode(sim, props = {}) {
  return { id: 'app', type: 'iotgw-app', name: 'sim', baseUrl: sim.appUrl, timeoutSeconds: 5, rateLimitCalls: 0, rateLimitWindowSeconds: 1, maxRetries: 0, ...props };
}

/** Like the harness's load(), with the core join node as well. */
function load(flow) {
  const nodes = [{ id: 'flow', type: 'tab', label: 'test' }, ...flow.map((n) => (n.type === 'iotgw-app' ? n : { z: 'flow', ...n }))];
  return new Promise((resolve, reject) => {
    helper.load([...ALL_NODES, JOIN], nodes, { app: { authToken: TOKEN } }, () => resolve({ get: (id) => helper.getNode(id) })).catch(reject);
  });
}

const queryOf = (call) => Object.fromEntries(new URLSearchParams(call.query));

describe('iotgw-tag-list against the simulator', function () {
  let sim;
  simulatorPerTest({ app: { rateLimitCalls: 0, tagCount: 45 } }, (s) => (sim = s));

  function flow(nodeProps = {}, appProps = {}) {
    return [
      appNode(sim, appProps),
      { id: 'tags', type: 'iotgw-tag-list', app: 'app', walk: 'page', page: '', perPage: '', offset: '', token: '', tokenType: 'str', search: '', searchType: 'str', wires: [['out']], ...nodeProps },
      { id: 'out', type: 'helper' },
      ...catchAll(),
    ];
  }

  it('gets one page as the page envelope, sending only the parameters that have a value', async function () {
    const n = await load(flow({ page: '2', perPage: '10' }));
    const out = collect(n.get('out'));
    n.get('tags').receive({ payload: 'go', keep: 'me' });
    await until(() => out.length === 1);
    const p = out[0].payload;
    assert.equal(out[0].keep, 'me');
    assert.equal(out[0].statusCode, 200);
    assert.deepEqual(
      { itemsReceived: p.itemsReceived, curPage: p.curPage, nextPage: p.nextPage, prevPage: p.prevPage, offset: p.offset, perPage: p.perPage },
      { itemsReceived: 10, curPage: 2, nextPage: 3, prevPage: 1, offset: 10, perPage: 10 },
    );
    assert.equal(p.items.length, 10);
    assert.equal(p.items[0].device_name, 'Tag 011');
    assert.equal(out[0].parts, undefined, 'one page is not a sequence');
    assert.deepEqual(queryOf(sim.server.callsTo('app/tags')[0]), { page: '2', per_page: '10' });
  });

  it('takes page, page size and offset from the msg when the settings are empty', async function () {
    const n = await load(flow());
    const out = collect(n.get('out'));
    n.get('tags').receive({ page: 3, perPage: '20', offset: 0 });
    await until(() => out.length === 1);
    assert.deepEqual(queryOf(sim.server.callsTo('app/tags')[0]), { page: '3', per_page: '20', offset: '0' });
    assert.equal(out[0].payload.itemsReceived, 5);
    assert.equal(out[0].payload.nextPage, null, 'nextPage is null on the last page');
    assert.equal(out[0].payload.prevPage, 2);
    assert.equal(out[0].payload.offset, 40);
  });

  it('keeps the setting over the msg and warns about the conflict', async function () {
    const n = await load(flow({ perPage: '15' }));
    const out = collect(n.get('out'));
    const warnings = [];
    n.get('tags').on('call:warn', (c) => warnings.push(String(c.args[0])));
    n.get('tags').receive({ perPage: 5 });
    await until(() => out.length === 1);
    assert.equal(out[0].payload.perPage, 15);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0], /msg\.perPage ignored/);
  });

  it('walks every page in turn as separate msgs with msg.parts, following nextPage until null', async function () {
    const n = await load(flow({ walk: 'all', perPage: '10' }));
    const out = collect(n.get('out'));
    n.get('tags').receive({ payload: 'go', keep: 'me', parts: { id: 'outer', index: 7, count: 9 } });
    await until(() => out.length === 5);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(out.length, 5, 'no page after the last');
    assert.deepEqual(out.map((m) => m.payload.length), [10, 10, 10, 10, 5]);
    assert.deepEqual(out.map((m) => m.parts.index), [0, 1, 2, 3, 4]);
    assert.equal(new Set(out.map((m) => m.parts.id)).size, 1);
    assert.deepEqual(out.map((m) => m.parts.count), [undefined, undefined, undefined, undefined, 5]);
    assert.ok(out.every((m) => m.parts.type === 'array' && m.keep === 'me' && m.statusCode === 200));
    assert.ok(out.every((m) => m.parts.parts.id === 'outer'), 'an enclosing sequence is kept in parts.parts');
    assert.deepEqual(out.map((m) => m.paging.curPage), [1, 2, 3, 4, 5]);
    assert.equal(out[4].paging.nextPage, null);
    assert.equal(out[0].paging.items, undefined);
    assert.equal(new Set(out).size, 5, 'a distinct msg per page');
    const names = out.flatMap((m) => m.payload.map((t) => t.device_name));
    assert.equal(new Set(names).size, 45);
    assert.equal(names[0], 'Tag 001');
    assert.equal(names[44], 'Tag 045');
    assert.deepEqual(sim.server.callsTo('app/tags').map((c) => queryOf(c).page), [undefined, '2', '3', '4', '5'], 'the first page is the platform\'s default');
  });

  it('feeds a join node in automatic mode, which merges the pages into one array', async function () {
    const n = await load([
      ...flow({ walk: 'all', perPage: '7' }).map((x) => (x.id === 'tags' ? { ...x, wires: [['joiner']] } : x)),
      { id: 'joiner', type: 'join', mode: 'auto', wires: [['joined']] },
      { id: 'joined', type: 'helper' },
    ]);
    const joined = collect(n.get('joined'));
    n.get('tags').receive({ payload: 'go' });
    await until(() => joined.length === 1);
    assert.equal(joined[0].payload.length, 45);
    assert.deepEqual(joined[0].payload.map((t) => t.device_name).slice(0, 3), ['Tag 001', 'Tag 002', 'Tag 003']);
    assert.equal(joined[0].payload[44].device_name, 'Tag 045');
  });

  it('walks from a start page and offset given in the msg, with a search', async function () {
    const n = await load(flow({ walk: 'all', search: 'search', searchType: 'msg' }));
    const out = collect(n.get('out'));
    n.get('tags').receive({ page: 2, perPage: 4, offset: 1, search: 'Tag 0' });
    await until(() => out.length > 0 && out.at(-1).parts.count !== undefined);
    // 45 tags match "Tag 0"; skipping 1, pages of 4 from page 2 hold tags 6..45: 10 pages.
    assert.equal(out.length, 10);
    assert.equal(out[0].payload[0].device_name, 'Tag 006');
    assert.equal(out.at(-1).payload.at(-1).device_name, 'Tag 045');
    assert.equal(out.flatMap((m) => m.payload).length, 40);
    assert.equal(out.at(-1).parts.count, 10);
    assert.deepEqual(queryOf(sim.server.callsTo('app/tags')[0]), { page: '2', per_page: '4', offset: '1', search: 'Tag 0' });
    assert.deepEqual(queryOf(sim.server.callsTo('app/tags')[1]), { page: '3', per_page: '4', offset: '1', search: 'Tag 0' });
  });

  it('sends the customer token from its TypedInput; another account\'s customer is FORBIDDEN, an unknown one NOT_FOUND', async function () {
    const n = await load(flow({ token: 'customer', tokenType: 'msg' }));
    const out = collect(n.get('out'));
    const caught = collect(n.get('caught'));
    n.get('tags').receive({ customer: 'mgr-demo-customer' });
    await until(() => out.length === 1);
    assert.equal(queryOf(sim.server.callsTo('app/tags')[0]).token, 'mgr-demo-customer');
    n.get('tags').receive({ customer: 'mgr-other-customer' });
    await until(() => caught.length === 1);
    n.get('tags').receive({ customer: 'mgr-nobody' });
    await until(() => caught.length === 2);
    assert.equal(caught[0].error.code, 'FORBIDDEN');
    assert.match(caught[0].error.message, /the customer belongs to another account/);
    assert.equal(caught[1].error.code, 'NOT_FOUND');
    assert.match(caught[1].error.message, /no customer with this token/);
  });

  it('lets msg.query rename a parameter', async function () {
    const n = await load(flow({ search: 'Tag 01' }));
    const out = collect(n.get('out'));
    n.get('tags').receive({ query: { search: null, q: 'Tag 02' } });
    await until(() => out.length === 1);
    assert.deepEqual(queryOf(sim.server.callsTo('app/tags')[0]), { q: 'Tag 02' });
    assert.equal(out[0].payload.items.length, 10);
    assert.ok(out[0].payload.items.every((t) => t.device_name.startsWith('Tag 02')));
  });

  it('refuses bad paging and parameters before any request', async function () {
    const n = await load(flow({ token: 'customer', tokenType: 'msg' }));
    const caught = collect(n.get('caught'));
    const tags = n.get('tags');
    tags.receive({ perPage: 0 });
    tags.receive({ page: 'two' });
    tags.receive({ offset: -1 });
    tags.receive({ page: 1.5 });
    tags.receive({ customer: { id: 1 } });
    tags.receive({ query: { page: [1, 2] } });
    await until(() => caught.length === 6);
    assert.ok(caught.every((c) => c.error.code === 'BAD_INPUT'));
    assert.match(caught[0].error.message, /msg\.perPage: must be an integer from 1 to 10000, not 0/);
    assert.match(caught[1].error.message, /msg\.page: must be an integer from 1 to 1000000, not "two"/);
    assert.match(caught[2].error.message, /msg\.offset: must be an integer from 0/);
    assert.match(caught[3].error.message, /msg\.page:/);
    assert.match(caught[4].error.message, /token: must be a string, number or boolean, not an object/);
    assert.match(caught[5].error.message, /msg\.query\.page:/);
    assert.equal(sim.server.calls.length, 0);
  });

  it('passes a 400 from the platform on with its text, in both body shapes', async function () {
    const n = await load(flow({ perPage: '500' }));
    const caught = collect(n.get('caught'));
    n.get('tags').receive({});
    await until(() => caught.length === 1);
    sim.areas.app.configure({ errorShape: 'error' });
    n.get('tags').receive({});
    await until(() => caught.length === 2);
    for (const c of caught) {
      assert.equal(c.error.code, 'HTTP_ERROR');
      assert.match(c.error.message, /HTTP 400.*per_page must be an integer from 1 to 100/);
    }
    assert.match(caught[0].error.message, /ERROR_CODE_INPUT_ERROR/);
    assert.doesNotMatch(caught[1].error.message, /ERROR_CODE_INPUT_ERROR/);
  });

  it('stops a walk with BAD_RESPONSE after Max pages, the pages so far sent', async function () {
    const n = await load(flow({ walk: 'all', perPage: '10', maxPages: 2 }));
    const out = collect(n.get('out'));
    const caught = collect(n.get('caught'));
    n.get('tags').receive({});
    await until(() => caught.length === 1);
    assert.equal(out.length, 2);
    assert.equal(caught[0].error.code, 'BAD_RESPONSE');
    assert.match(caught[0].error.message, /more than 2 pages/);
    assert.equal(sim.server.callsTo('app/tags').length, 2);
  });

  it('stops a walk whose nextPage does not advance', async function () {
    const n = await load(flow({ walk: 'all', perPage: '10' }));
    const out = collect(n.get('out'));
    const caught = collect(n.get('caught'));
    sim.inject({ route: 'app/tags', status: 200, body: { itemsReceived: 1, curPage: 1, nextPage: 1, prevPage: null, offset: 0, perPage: 10, items: [{ id: 'x' }] } });
    n.get('tags').receive({});
    await until(() => caught.length === 1);
    assert.equal(out.length, 0);
    assert.equal(caught[0].error.code, 'BAD_RESPONSE');
    assert.match(caught[0].error.message, /nextPage 1 does not come after curPage 1/);
    assert.equal(sim.server.callsTo('app/tags').length, 1);
  });

  it('walks at the account\'s pace without a 429 and loses no page', async function () {
    sim.areas.app.configure({ rateLimitCalls: 3, rateLimitWindowMs: 1000 });
    const n = await load(flow({ walk: 'all', perPage: '5' }, { rateLimitCalls: 3, rateLimitWindowSeconds: 1 }));
    const out = collect(n.get('out'));
    n.get('tags').receive({});
    await until(() => out.length === 9, 15000, '9 pages');
    assert.equal(out.flatMap((m) => m.payload).length, 45);
    assert.ok(sim.server.callsTo('app/tags').every((c) => c.status === 200), 'the platform never had to refuse');
  });

  it('ends a walk cleanly when the node is closed mid-walk: one error for the msg, no request after the close', async function () {
    sim.areas.app.configure({ rateLimitCalls: 1, rateLimitWindowMs: 400 });
    const n = await load(flow({ walk: 'all', perPage: '5' }, { rateLimitCalls: 1, rateLimitWindowSeconds: 0.4 }));
    const out = collect(n.get('out'));
    // Count how each input msg ends (Node-RED's done() and done(err) both end in _complete).
    const ends = [];
    const tags = n.get('tags');
    const complete = tags._complete;
    tags._complete = function (msg, err) {
      ends.push([msg, err]);
      return complete.call(this, msg, err);
    };
    n.get('tags').receive({ n: 1 });
    await until(() => out.length === 2, 5000, 'two pages');
    await helper.unload();
    const callsAtClose = sim.server.callsTo('app/tags').length;
    await new Promise((r) => setTimeout(r, 900));
    assert.equal(sim.server.callsTo('app/tags').length, callsAtClose, 'no request after the close');
    assert.ok(out.length < 9);
    assert.equal(ends.length, 1, 'the input msg ended exactly once');
    assert.equal(ends[0][0].n, 1);
    assert.equal(ends[0][1].code, 'NETWORK');
    assert.match(ends[0][1].message, /closed/);
  });
});
