'use strict';
/**
 * iotgw-terminals against the simulator (issue 35): the inventory by keyset in pages with
 * msg.parts that a core join node merges, one page with msg.nextSinceId, one terminal, an
 * unknown one (NOT_FOUND), and bad input that sends no request.
 */
const assert = require('node:assert/strict');
const JOIN = require('@node-red/nodes/core/sequence/17-split.js');
const { simulatorPerTest, gatewayNode, load, until, collect, catchAll } = require('../helpers/harness');

const NO_LIMITS = { rateLimitCalls: 0, maxConcurrent: 0 };

describe('iotgw-terminals against the simulator', function () {
  let sim;
  simulatorPerTest({ terminal: NO_LIMITS, fleet: { size: 2500 } }, (s) => (sim = s));

  const flow = (props = {}) => [gatewayNode(sim), { id: 'terms', type: 'iotgw-terminals', gateway: 'gw', ...props, wires: [['out']] }, { id: 'out', type: 'helper' }, ...catchAll()];
  const sinceIds = () => sim.server.callsTo('terminal/inventory').map((c) => new URLSearchParams(c.query).get('SinceID'));

  it('walks 2,500 terminals in 3 pages with msg.parts, the ending empty page sends nothing, and a join node merges them', async function () {
    const flow = [
      gatewayNode(sim),
      { id: 'terms', type: 'iotgw-terminals', gateway: 'gw', pages: 'all', pageSize: 1000, wires: [['out', 'joiner']] },
      { id: 'joiner', type: 'join', mode: 'auto', wires: [['joined']] },
      { id: 'out', type: 'helper' },
      { id: 'joined', type: 'helper' },
    ];
    const n = await load(flow, undefined, [JOIN]);
    const out = collect(n.get('out'));
    const joined = collect(n.get('joined'));
    n.get('terms').receive({ payload: '', topic: 'inventory' });
    await until(() => joined.length === 1, 20000, 'the joined inventory');
    assert.equal(out.length, 3, 'three msgs: the empty page sends none');
    const id = out[0].parts.id;
    out.forEach((m, i) => {
      assert.equal(m.topic, 'inventory');
      assert.deepEqual({ ...m.parts }, i < 2 ? { id, index: i, type: 'array', len: 1000 } : { id, index: 2, count: 3, type: 'array', len: 1000 });
      assert.equal(m.payload.length, i < 2 ? 1000 : 500);
    });
    const all = joined[0].payload;
    assert.equal(all.length, 2500);
    const ids = all.map((t) => t.PrimeID);
    assert.equal(new Set(ids).size, 2500, 'each terminal once');
    assert.deepEqual(ids, [...ids].sort(), 'in PrimeID order');
    // Four calls: three pages and the empty one; each after the last PrimeID of the page before.
    assert.deepEqual(sinceIds(), [null, out[0].payload[999].PrimeID, out[1].payload[999].PrimeID, out[2].payload[499].PrimeID]);
    assert.ok(sim.server.callsTo('terminal/inventory').every((c) => new URLSearchParams(c.query).get('PageSize') === '1000'));
  });

  it('one page with msg.nextSinceId, from the setting or {sinceId, pageSize}; null after the last', async function () {
    const n = await load(flow({ pages: 'one', pageSize: 2 }));
    const out = collect(n.get('out'));
    n.get('terms').receive({ payload: '' });
    await until(() => out.length === 1);
    assert.equal(out[0].payload.length, 2);
    assert.equal(out[0].nextSinceId, out[0].payload[1].PrimeID);
    assert.equal(out[0].parts, undefined);
    n.get('terms').receive({ payload: { sinceId: out[0].nextSinceId, pageSize: 3 } });
    await until(() => out.length === 2);
    assert.equal(out[1].payload.length, 3);
    assert.ok(out[1].payload[0].PrimeID > out[0].payload[1].PrimeID, 'SinceID is exclusive');
    n.get('terms').receive({ payload: { sinceId: 'ZZZZZZZZZZZZZZZ' } });
    await until(() => out.length === 3);
    assert.deepEqual(out[2].payload, []);
    assert.equal(out[2].nextSinceId, null);
  });

  it('one terminal by PrimeID as an object, keeping msg properties; an unknown one is NOT_FOUND', async function () {
    const n = await load(flow());
    const out = collect(n.get('out'));
    const caught = collect(n.get('caught'));
    n.get('terms').receive({ payload: '01000001SKYA001', keep: 1 });
    await until(() => out.length === 1);
    assert.equal(out[0].payload.PrimeID, '01000001SKYA001');
    assert.equal(out[0].keep, 1);
    assert.ok(!Array.isArray(out[0].payload));
    n.get('terms').receive({ payload: '99999999SKYZZZZ' });
    await until(() => caught.length === 1);
    assert.equal(caught[0].error.code, 'NOT_FOUND');
    assert.match(caught[0].error.message, /99999999SKYZZZZ/);
    assert.equal(sim.server.callsTo('terminal/terminal-info').length, 2);
  });

  it('an account with no terminal: one msg with an empty array', async function () {
    const n = await load(flow());
    const out = collect(n.get('out'));
    // The account's inventory is empty: its first page has no terminal.
    sim.server.inject({ route: 'terminal/inventory', status: 200, body: { ErrorID: 0, Terminals: [] }, times: 1 });
    n.get('terms').receive({ payload: '' });
    await until(() => out.length === 1);
    assert.deepEqual(out[0].payload, []);
    assert.equal(out[0].parts.count, 1);
  });

  describe('a walk always ends (issue 43)', function () {
    const joinFlow = (props) => [
      gatewayNode(sim),
      { id: 'terms', type: 'iotgw-terminals', gateway: 'gw', pages: 'all', pageSize: 1000, ...props, wires: [['joiner']] },
      { id: 'joiner', type: 'join', mode: 'auto', wires: [['joined']] },
      { id: 'joined', type: 'helper' },
      ...catchAll(),
    ];

    it('pages that go round (A, B, A) into the example\'s join: BAD_RESPONSE at the third page, nothing joined', async function () {
      sim.terminal.configure({ inventoryLoop: 'cycle' });
      const n = await load(joinFlow(), undefined, [JOIN]);
      const caught = collect(n.get('caught'));
      n.get('terms').receive({ payload: '' });
      await until(() => caught.length === 1, 30000, 'the walk to fail');
      assert.equal(caught[0].error.code, 'BAD_RESPONSE');
      assert.match(caught[0].error.message, /page 3 ends with .*: the pages go round in a cycle/);
      assert.equal(sim.server.callsTo('terminal/inventory').length, 3);
      assert.equal(collect(n.get('joined')).length, 0);
    });

    it('endless fresh pages into the join: BAD_RESPONSE after maxPages calls, memory bounded; an older flow without maxPages stops at 1000', async function () {
      sim.terminal.configure({ inventoryLoop: 'endless' });
      const before = process.memoryUsage().rss;
      const n = await load(joinFlow({ maxPages: 100 }), undefined, [JOIN]);
      const caught = collect(n.get('caught'));
      n.get('terms').receive({ payload: '' });
      await until(() => caught.length === 1, 50000, 'the walk to fail at the cap');
      assert.equal(caught[0].error.code, 'BAD_RESPONSE');
      assert.match(caught[0].error.message, /did not end within 100 pages \(maxPages/);
      assert.equal(sim.server.callsTo('terminal/inventory').length, 100, 'no call past the cap');
      const grown = (process.memoryUsage().rss - before) / 1048576;
      assert.ok(grown < 500, `RSS grew ${grown.toFixed(0)} MB for 97,500 terminals held by the join`);
      sim.server.calls.length = 0;
      const old = joinFlow({ pageSize: 1 });
      delete old[1].maxPages;
      const m = await load(old, undefined, [JOIN]);
      const caught2 = collect(m.get('caught'));
      m.get('terms').receive({ payload: '' });
      await until(() => caught2.length === 1, 50000, 'the older flow\'s walk to fail at 1000 pages');
      assert.equal(sim.server.callsTo('terminal/inventory').length, 1000);
    });
  });

  it('bad input (a PrimeID not text, pageSize out of range, unknown fields) is BAD_INPUT naming the field; nothing is sent', async function () {
    const n = await load(flow());
    const caught = collect(n.get('caught'));
    const bad = [
      [{ payload: 12345 }, 'msg.payload'],
      [{ payload: { sinceId: 5 } }, 'msg.payload.sinceId'],
      [{ payload: { pageSize: 0 } }, 'msg.payload.pageSize'],
      [{ payload: { pageSize: 1001 } }, 'msg.payload.pageSize'],
      [{ payload: '', pageSize: 2.5 }, 'msg.pageSize'],
      [{ payload: { since: 'x' } }, 'msg.payload.since'],
      [{ payload: '', pages: 'some' }, 'msg.pages'],
      [{ payload: true }, 'msg.payload'],
      // The walk's own parameters (a SinceID of its own asked every page for the same page; issue 43).
      [{ payload: '', query: { SinceID: '01000005SKYCD96' } }, 'msg.query.SinceID'],
      [{ payload: { pageSize: 5 }, query: { pagesize: 9 } }, 'msg.query.pagesize'],
      [{ payload: '01000005SKYCD96', query: { PrimeID: '01000006SKYCD97' } }, 'msg.query.PrimeID'],
    ];
    for (const [msg] of bad) n.get('terms').receive(msg);
    await until(() => caught.length === bad.length);
    caught.forEach((c, i) => {
      assert.equal(c.error.code, 'BAD_INPUT', JSON.stringify(bad[i][0]));
      assert.ok(c.error.message.includes(bad[i][1]), `${c.error.message} names ${bad[i][1]}`);
    });
    assert.equal(sim.server.callsTo().length, 0, 'no request reached the simulator');
  });
});
