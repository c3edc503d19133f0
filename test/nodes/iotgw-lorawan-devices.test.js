'use strict';
const assert = require('node:assert/strict');
const { helper, gatewayNode, load, until, collect, catchAll, DEMO_CREDS, ALL_NODES, simulatorPerTest } = require('../helpers/harness');

const JOIN = require('@node-red/nodes/core/sequence/17-split.js');

describe('iotgw-lorawan-devices against the simulator', function () {
  let sim;
  // Before the harness's own afterEach: a held broker reply must not outlive its test.
  afterEach(() => sim?.areas.broker.release());
  simulatorPerTest({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 }, broker: { deviceCount: 2500 } }, (s) => (sim = s));

  function flow(nodeProps = {}, gwProps = {}) {
    return [
      gatewayNode(sim, gwProps),
      { id: 'devices', type: 'iotgw-lorawan-devices', gateway: 'gw', page: 1, pageSize: 100, wires: [['out']], ...nodeProps },
      { id: 'out', type: 'helper' },
      ...catchAll(),
    ];
  }

  /** Every session key the simulator holds for devices 0..n-1. */
  function keysOf(n) {
    const keys = [];
    for (let i = 0; i < n; i++) {
      const d = sim.areas.broker.device(i);
      keys.push(d.nwkskey, d.appskey);
    }
    return keys;
  }

  it('lists one page with the broker headers, without session keys, and the page info in msg.page', async function () {
    const n = await load(flow({ pageSize: 50 }));
    const out = collect(n.get('out'));
    n.get('devices').receive({ payload: '', keep: 1 });
    await until(() => out.length === 1);
    const m = out[0];
    assert.equal(m.keep, 1);
    assert.equal(m.statusCode, 200);
    assert.equal(m.parts, undefined, 'one page: no msg.parts');
    assert.equal(m.payload.length, 50);
    assert.equal(m.payload[0].devEui, '70b3d5e75e000000');
    assert.match(m.payload[7].devEui, /^[0-9a-f]{16}$/);
    assert.ok(m.payload.every((d) => !('nwkskey' in d) && !('appskey' in d)));
    assert.equal(m.page.totalElements, 2500);
    assert.equal(m.page.totalPages, 50);
    assert.equal(m.page.number, 0);
    assert.equal(m.page.last, false);
    assert.equal(m.page.content, undefined);
    const text = JSON.stringify(m);
    for (const k of keysOf(50)) assert.ok(!text.includes(k), 'no session key anywhere in the msg');
    const call = sim.server.callsTo('broker/devices')[0];
    assert.deepEqual(Object.fromEntries(new URLSearchParams(call.query)), { page: '1', pageSize: '50' });
    assert.equal(call.headers.client_id, 'sim-client');
    assert.equal(call.headers.access_token, 'sim-access-token');
    assert.match(String(call.headers['content-type']), /^application\/json/);
  });

  it('keeps the session keys when the option is ticked', async function () {
    const n = await load(flow({ pageSize: 10, includeKeys: true }));
    const out = collect(n.get('out'));
    n.get('devices').receive({ payload: '' });
    await until(() => out.length === 1);
    const expected = keysOf(10);
    assert.deepEqual(out[0].payload.flatMap((d) => [d.nwkskey, d.appskey]), expected);
    assert.ok(expected.every((k) => /^[0-9a-f]{32}$/.test(k)));
  });

  for (const wrapped of [true, false]) {
    it(`walks every page in turn (${wrapped ? 'array-wrapped' : 'bare'} pages) with msg.parts, and a join node merges them`, async function () {
      sim.areas.broker.configure({ wrapDevicePage: wrapped });
      const n = await new Promise((resolve, reject) => {
        const nodes = [
          { id: 'flow', type: 'tab', label: 'test' },
          gatewayNode(sim),
          { id: 'devices', z: 'flow', type: 'iotgw-lorawan-devices', gateway: 'gw', page: 1, pageSize: 300, allPages: true, wires: [['out', 'joiner']] },
          { id: 'joiner', z: 'flow', type: 'join', mode: 'auto', wires: [['joined']] },
          { id: 'out', z: 'flow', type: 'helper' },
          { id: 'joined', z: 'flow', type: 'helper' },
        ];
        helper.load([...ALL_NODES, JOIN], nodes, { gw: DEMO_CREDS }, () => resolve({ get: (id) => helper.getNode(id) })).catch(reject);
      });
      const out = collect(n.get('out'));
      const joined = collect(n.get('joined'));
      n.get('devices').receive({ payload: 1, topic: 'inventory' });
      await until(() => joined.length === 1, 15000, 'the joined inventory');
      assert.equal(out.length, 9, '2500 devices in pages of 300');
      const id = out[0].parts.id;
      out.forEach((m, i) => {
        assert.equal(m.topic, 'inventory');
        assert.deepEqual({ ...m.parts }, { id, index: i, count: 9, type: 'array', len: 300 });
        assert.equal(m.page.number, i);
        assert.equal(m.payload.length, i < 8 ? 300 : 100);
      });
      assert.equal(out[8].page.last, true);
      assert.equal(new Set(out.map((m) => m._msgid)).size, 1, 'one msg id, as split does');
      const all = joined[0].payload;
      assert.equal(all.length, 2500);
      assert.deepEqual(all.map((d) => d.id), Array.from({ length: 2500 }, (_, i) => 100000 + i));
      assert.ok(all.every((d) => d.nwkskey === undefined && d.appskey === undefined));
      const pages = sim.server.callsTo('broker/devices').map((c) => new URLSearchParams(c.query).get('page'));
      assert.deepEqual(pages, ['1', '2', '3', '4', '5', '6', '7', '8', '9']);
    });
  }

  it('walks the filtered view with filters from msg.payload, nesting incoming msg.parts', async function () {
    const n = await load(flow({ pageSize: 100 }));
    const out = collect(n.get('out'));
    n.get('devices').receive({ payload: { customerId: 3, receivable: false, allPages: true, pageSize: 40 }, parts: { id: 'outer', index: 2, count: 5 } });
    await until(() => out.length > 0 && out.at(-1).page.last === true);
    const devices = out.flatMap((m) => m.payload);
    // customer 3 owns 500 of 2500 devices; the payable view holds every second of them.
    assert.equal(devices.length, 250);
    assert.ok(devices.every((d) => d.customer.id === 3));
    assert.equal(out.length, 7);
    assert.deepEqual(out[0].parts.parts, { id: 'outer', index: 2, count: 5 });
    const q = Object.fromEntries(new URLSearchParams(sim.server.callsTo('broker/devices')[0].query));
    assert.deepEqual(q, { customerId: '3', receivable: 'false', page: '1', pageSize: '40' });
  });

  it('filters by devEui (validated, sent in lowercase)', async function () {
    const n = await load(flow({ devEui: '70B3D5E75E0000FF', includeKeys: false }));
    const out = collect(n.get('out'));
    n.get('devices').receive({ payload: '' });
    await until(() => out.length === 1);
    assert.equal(out[0].payload.length, 1);
    assert.equal(out[0].payload[0].id, 100255);
    assert.equal(new URLSearchParams(sim.server.callsTo('broker/devices')[0].query).get('devEui'), '70b3d5e75e0000ff');
  });

  it('refuses bad filters and paging before any request', async function () {
    const n = await load(flow());
    const caught = collect(n.get('caught'));
    const bad = [
      [{ devEui: '70b3d5e75e00000' }, /msg\.payload\.devEui: must be 16 hexadecimal digits/],
      [{ devEui: '70b3d5e75e00000g' }, /msg\.payload\.devEui: must be 16 hexadecimal digits/],
      [{ customerId: 'x' }, /msg\.payload\.customerId: must be an integer/],
      [{ receivable: 'maybe' }, /msg\.payload\.receivable: must be true \(receivable view\), false \(payable view\)/],
      [{ pageSize: 0 }, /msg\.payload\.pageSize: must be an integer from 1/],
      [{ allPages: 'yes' }, /msg\.payload\.allPages: must be true or false/],
      [{ devEUI: 'x' }, /msg\.payload\.devEUI: unknown option \(did you mean devEui\?\)/],
    ];
    for (const [payload] of bad) n.get('devices').receive({ payload });
    n.get('devices').receive({ payload: '', query: ['page'] });
    await until(() => caught.length === bad.length + 1);
    bad.forEach(([, re], i) => assert.match(caught[i].error.message, re));
    assert.match(caught.at(-1).error.message, /msg\.query: must be an object/);
    assert.ok(caught.every((c) => c.error.code === 'BAD_INPUT'));
    assert.equal(sim.server.calls.length, 0, 'no request was sent');
  });

  it('maps every error body: 400, 401 (gateway body), 403, 404 and 500', async function () {
    const n = await load(flow({}, { maxRetries: 0 }));
    const caught = collect(n.get('caught'));
    const d = n.get('devices');
    const cases = [
      [{ payload: '', query: { receivable: 'talvez' } }, 'HTTP_ERROR', /HTTP 400: Parâmetro receivable inválido: talvez/],
      [{ payload: { customerId: 900 } }, 'FORBIDDEN', /HTTP 403, the account is not allowed to do this: Acesso negado/],
      [{ payload: { customerId: 42 } }, 'NOT_FOUND', /HTTP 404, not found: Cliente 42 não encontrado/],
      [{ payload: { devEui: 'ffffffffffffffff' } }, 'NOT_FOUND', /Dispositivo ffffffffffffffff não encontrado/],
      [{ payload: '' }, 'HTTP_ERROR', /GET \/lorawan\/broker\/devices: HTTP 500: Erro interno do servidor/],
      [{ payload: '' }, 'UNAUTHORIZED', /Access Token in the request, identified by HEADER access_token, is invalid/],
    ];
    for (const [i, [msg]] of cases.entries()) {
      if (i === 4) sim.inject({ route: 'broker/devices', status: 500, body: { errors: 'Erro interno do servidor' } });
      if (i === 5) sim.areas.broker.configure({ accessToken: 'rotated' });
      d.receive(msg);
      await until(() => caught.length === i + 1);
    }
    cases.forEach(([, code, re], i) => {
      assert.equal(caught[i].error.code, code);
      assert.match(caught[i].error.message, re);
    });
    assert.ok(!caught[5].error.message.includes('sim-access-token'));
  });

  it('the simulator may leave the device list unauthenticated (documented option); the node sends the headers anyway', async function () {
    sim.areas.broker.configure({ devicesRequireAuth: false });
    const n = await load(flow({ pageSize: 5 }), { gw: { ...DEMO_CREDS, brokerAccessToken: 'anything' } });
    const out = collect(n.get('out'));
    n.get('devices').receive({ payload: '' });
    await until(() => out.length === 1);
    assert.equal(out[0].payload.length, 5);
    assert.equal(sim.server.callsTo('broker/devices')[0].headers.access_token, 'anything');
  });

  it('stops a walk with BAD_RESPONSE when the service ignores the page parameter, instead of looping', async function () {
    const n = await load(flow({ allPages: true, pageSize: 500 }));
    const out = collect(n.get('out'));
    const caught = collect(n.get('caught'));
    n.get('devices').receive({ payload: '', query: { page: null } });
    await until(() => caught.length === 1);
    assert.equal(caught[0].error.code, 'BAD_RESPONSE');
    assert.match(caught[0].error.message, /asked for the page after 0 and got page 0; does the service name the page parameter "page"\?/);
    assert.equal(out.length, 1);
    assert.equal(sim.server.callsTo('broker/devices').length, 2);
  });

  it('uses the page parameter names of the settings', async function () {
    const n = await load(flow({ allPages: true, pageSize: 1000, pageParam: 'pagina', pageSizeParam: 'size' }));
    const out = collect(n.get('out'));
    n.get('devices').receive({ payload: '' });
    await until(() => out.length === 3 && out[2].page.last);
    const q = Object.fromEntries(new URLSearchParams(sim.server.callsTo('broker/devices')[2].query));
    assert.deepEqual(q, { pagina: '3', size: '1000' });
  });

  it('a redeploy during a walk stops it cleanly: the msg ends once with an error and no request follows', async function () {
    const n = await load(flow({ allPages: true, pageSize: 100 }));
    const out = collect(n.get('out'));
    const errors = [];
    n.get('devices').on('call:error', (call) => errors.push(call.args[0]));
    n.get('devices').receive({ payload: '' });
    await until(() => out.length >= 2);
    sim.areas.broker.hold();
    await until(() => sim.server.callsTo('broker/devices').length > out.length, 5000, 'a request held in the simulator');
    const sent = sim.server.callsTo('broker/devices').length;
    await helper.clearFlows(); // stops the flows as a redeploy does
    assert.equal(errors.length, 1, 'the msg ended with one error');
    assert.equal(errors[0].code, 'NETWORK');
    assert.match(errors[0].message, /closed/);
    const seen = out.length;
    sim.areas.broker.release();
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(sim.server.callsTo('broker/devices').length, sent, 'no request after the close');
    assert.equal(out.length, seen);
    assert.ok(seen < 25);
  });
});
