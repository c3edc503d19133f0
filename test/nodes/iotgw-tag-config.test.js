'use strict';
const assert = require('node:assert/strict');
const { simulatorPerTest, load, until, collect, catchAll } = require('../helpers/harness');
const { simUuid } = require('../../dist/simulator/app');

const TOKEN = 'app-demo-token';
const TAG1 = simUuid(3, 1); // SN000001, esp32, configuration version 2
const TAG2 = simUuid(3, 2); // SN000002, nrf52, configuration version 3
const OTHER_ACCOUNT_TAG = simUuid(3, 1001);

function appNode(sim, props = {}) {
  return { id: 'app', type: 'iotgw-app', name: 'sim', baseUrl: sim.appUrl, timeoutSeconds: 5, rateLimitCalls: 0, rateLimitWindowSeconds: 1, maxRetries: 0, ...props };
}

const queryOf = (call) => Object.fromEntries(new URLSearchParams(call.query));
const PARAMS = {
  token: '', tokenType: 'str',
  tagId: 'payload', tagIdType: 'msg',
  serialNumber: '', serialNumberType: 'str',
  chipset: '', chipsetType: 'str',
  version: '', versionType: 'str',
};

describe('iotgw-tag-config against the simulator', function () {
  let sim;
  simulatorPerTest({ app: { rateLimitCalls: 0 } }, (s) => (sim = s));

  function flow(nodeProps = {}) {
    return [
      appNode(sim),
      { id: 'cfg', type: 'iotgw-tag-config', app: 'app', ...PARAMS, wires: [['out']], ...nodeProps },
      { id: 'out', type: 'helper' },
      ...catchAll(),
    ];
  }
  const creds = { app: { authToken: TOKEN } };

  it('gets the configuration of the tag in msg.payload, keeping the other msg properties', async function () {
    const n = await load(flow(), creds);
    const out = collect(n.get('out'));
    n.get('cfg').receive({ payload: TAG1, keep: 'me' });
    await until(() => out.length === 1);
    assert.equal(out[0].keep, 'me');
    assert.equal(out[0].statusCode, 200);
    assert.equal(out[0].payload.tag_id, TAG1);
    assert.equal(out[0].payload.chipset, 'esp32');
    assert.equal(out[0].payload.version, 2);
    assert.deepEqual(queryOf(sim.server.callsTo('app/tag-config')[0]), { tag_id: TAG1 }, 'empty parameters are not sent');
  });

  it('sends all five parameters from the settings (string, msg, flow, env and JSONata values)', async function () {
    process.env.IOTGW_TEST_CHIPSET = 'nrf52';
    try {
      const n = await load(
        flow({
          token: 'mgr-demo-customer', tokenType: 'str',
          tagId: 'tag', tagIdType: 'msg',
          serialNumber: 'serial', serialNumberType: 'flow',
          chipset: 'IOTGW_TEST_CHIPSET', chipsetType: 'env',
          version: '$string(1 + 1)', versionType: 'jsonata',
        }),
        creds,
      );
      const out = collect(n.get('out'));
      n.get('cfg').context().flow.set('serial', 'SN000002');
      n.get('cfg').receive({ tag: TAG2 });
      await until(() => out.length === 1);
      assert.deepEqual(queryOf(sim.server.callsTo('app/tag-config')[0]), {
        token: 'mgr-demo-customer',
        tag_id: TAG2,
        serial_number: 'SN000002',
        chipset: 'nrf52',
        version: '2',
      });
      assert.equal(out[0].payload.version, 2);
      assert.equal(out[0].payload.serial_number, 'SN000002');
    } finally {
      delete process.env.IOTGW_TEST_CHIPSET; // whatever happens: no other test sees it
    }
  });

  it('lets msg.query add and rename parameters', async function () {
    const n = await load(flow(), creds);
    const out = collect(n.get('out'));
    n.get('cfg').receive({ payload: 'ignored', query: { tag_id: null, tagId: TAG2, configVersion: 'latest' } });
    await until(() => out.length === 1);
    assert.deepEqual(queryOf(sim.server.callsTo('app/tag-config')[0]), { tagId: TAG2, configVersion: 'latest' });
    assert.equal(out[0].payload.tag_id, TAG2);
    assert.equal(out[0].payload.version, 3);
  });

  it('refuses a parameter that is an object or an array, and a bad msg.query, before any request', async function () {
    const n = await load(flow({ chipset: 'chip', chipsetType: 'msg' }), creds);
    const caught = collect(n.get('caught'));
    n.get('cfg').receive({ payload: { id: TAG1 } });
    n.get('cfg').receive({ payload: TAG1, chip: ['nrf52'] });
    n.get('cfg').receive({ payload: TAG1, query: { version: { v: 1 } } });
    n.get('cfg').receive({ payload: TAG1, query: [] });
    await until(() => caught.length === 4);
    assert.ok(caught.every((c) => c.error.code === 'BAD_INPUT'));
    assert.match(caught[0].error.message, /tagId: must be a string, number or boolean, not an object/);
    assert.match(caught[1].error.message, /chipset: must be a string, number or boolean, not an array/);
    assert.match(caught[2].error.message, /msg\.query\.version: must be a string, number or boolean/);
    assert.match(caught[3].error.message, /msg\.query: must be an object/);
    assert.equal(sim.server.calls.length, 0);
  });

  it('reports a JSONata setting that fails as BAD_INPUT before any request', async function () {
    const n = await load(flow({ version: '$notAFunction(', versionType: 'jsonata' }), creds);
    const caught = collect(n.get('caught'));
    n.get('cfg').receive({ payload: TAG1 });
    await until(() => caught.length === 1);
    assert.equal(caught[0].error.code, 'BAD_INPUT');
    assert.equal(sim.server.calls.length, 0);
  });

  for (const shape of ['platform', 'error']) {
    it(`passes the platform's 400, 403 and 404 on with their own text (${shape} body)`, async function () {
      sim.areas.app.configure({ errorShape: shape });
      const n = await load(flow({ chipset: 'chip', chipsetType: 'msg' }), creds);
      const caught = collect(n.get('caught'));
      n.get('cfg').receive({ payload: TAG1, chip: 'nrf52' });
      await until(() => caught.length === 1);
      n.get('cfg').receive({ payload: OTHER_ACCOUNT_TAG });
      await until(() => caught.length === 2);
      n.get('cfg').receive({ payload: simUuid(3, 999) });
      await until(() => caught.length === 3);
      assert.deepEqual(caught.map((c) => c.error.code), ['HTTP_ERROR', 'FORBIDDEN', 'NOT_FOUND']);
      assert.match(caught[0].error.message, /HTTP 400.*chipset does not match the tag's chipset/);
      assert.match(caught[1].error.message, /HTTP 403.*the tag belongs to another account/);
      assert.match(caught[2].error.message, /HTTP 404.*no tag with this ID or serial number/);
      for (const c of caught) assert.equal(/ERROR_CODE_/.test(c.error.message), shape === 'platform');
    });
  }

  it('refuses a reply that is not a JSON object as BAD_RESPONSE', async function () {
    const n = await load(flow(), creds);
    const caught = collect(n.get('caught'));
    sim.inject({ route: 'app/tag-config', status: 200, body: ['not', 'an', 'object'] });
    n.get('cfg').receive({ payload: TAG1 });
    await until(() => caught.length === 1);
    assert.equal(caught[0].error.code, 'BAD_RESPONSE');
  });
});
