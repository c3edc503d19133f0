'use strict';
/**
 * iotgw-terminals against the simulator (issue 35): the inventory by keyset in pages with
 * msg.parts that a core join node merges, one page with msg.nextSinceId, one terminal, an
 * unknown one (NOT_FOUND), and bad input that sends no request.
 */
const assert = require('node:assert/strict');
const JOIN = require('@node-red/nodes/core/sequence/17-split.js');
const { simulatorPerTest, gatewayNode, load, until, collect, catchAll, helper, ALL_NODES, DEMO_CREDS } = require('../helpers/harness');

const NO_LIMITS = { rateLimitCalls: 0, maxConcurrent: 0 };

describe('iotgw-terminals against the simulator', function () {
  let sim;
  simulatorPerTest({ terminal: NO_LIMITS, fleet: { size: 2500 } }, (s) => (sim = s));

  const flow = (props = {}) => [gatewayNode(sim), { id: 'terms', type: 'iotgw-terminals', gateway: 'gw', ...props, wires: [['out']] }, { id: 'out', type: 'helper' }, ...catchAll()];
  const sinceIds = () => sim.server.callsTo('terminal/inventory').map((c) => new URLSearchParams(c.query).get('SinceID'));

  it('walks 2,500 terminals in 3 pages with msg.parts, the ending empty page sends nothing, and a join node merges them', async function () {
    const n = await new Promise((resolve, reject) => {
      const nodes = [
        { id: 'flow', type: 'tab', label: 'test' },
        gatewayNode(sim),
        { id: 'terms', z: 'flow', type: 'iotgw-terminals', gateway: 'gw', pages: 'all', pageSize: 1000, wires: [['out', 'joiner']] },
        { id: 'joiner', z: 'flow', type: 'join', mode: 'auto', wires: [['joined']] },
        { id: 'out', z: 'flow', type: 'helper' },
        { id: 'joined', z: 'flow', type: 'helper' },
      ];
      helper.load([...ALL_NODES, JOIN], nodes, { gw: DEMO_CREDS }, () => resolve({ get: (id) => helper.getNode(id) })).catch(reject);
    });
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
    n.get('terms').receive({ payload: '', query: { SinceID: 'ZZZZZZZZZZZZZZZ' } });
    await until(() => out.length === 1);
    assert.deepEqual(out[0].payload, []);
    assert.equal(out[0].parts.count, 1);
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
