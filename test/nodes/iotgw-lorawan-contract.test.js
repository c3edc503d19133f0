'use strict';
const assert = require('node:assert/strict');
const { simulatorPerTest, load, until, collect, DEMO_CREDS, nodeFlow } = require('../helpers/harness');

describe('iotgw-lorawan-contract and iotgw-lorawan-referral against the simulator', function () {
  let sim;
  simulatorPerTest({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 } }, (s) => (sim = s));

  const flow = (nodeProps = {}, gw = {}) =>
    nodeFlow(sim, { id: 'contract', type: 'iotgw-lorawan-contract', operation: 'list', ...nodeProps }, { gw, extra: [{ id: 'referral', z: 'flow', type: 'iotgw-lorawan-referral', gateway: 'gw', wires: [['out']] }] });

  const goodBody = {
    customerId: 2,
    monthlyFee: 49.9,
    activationPrice: 10,
    planDesc: 'Plano Sensores 500',
    sharingType: 1,
    uplinkCount: 500,
    downlinkCount: 50,
    excessUplinkPrice: 0.02,
    excessDownlinkPrice: 0.1,
  };

  describe('create (endpoint 4)', function () {
    it('posts the body with the broker headers and emits the 201 {message}', async function () {
      const n = await load(flow({ operation: 'create' }));
      const out = collect(n.get('out'));
      n.get('contract').receive({ payload: goodBody, keep: 'me' });
      await until(() => out.length === 1);
      assert.equal(out[0].keep, 'me');
      assert.equal(out[0].statusCode, 201);
      assert.match(out[0].payload.message, /^Contrato \d+ criado com sucesso$/);
      const calls = sim.server.callsTo('broker/contract-create');
      assert.equal(calls.length, 1);
      assert.deepEqual(JSON.parse(calls[0].body), goodBody);
      assert.equal(calls[0].headers.client_id, 'sim-client');
      assert.equal(calls[0].headers.access_token, 'sim-access-token');
      assert.match(String(calls[0].headers['content-type']), /^application\/json/);
      assert.equal(sim.areas.broker.contracts.at(-1).planDesc, 'Plano Sensores 500');
    });

    it('reports every bad field at once and sends nothing', async function () {
      const n = await load(flow({ operation: 'create' }));
      const caught = collect(n.get('caught'));
      n.get('contract').receive({
        payload: { customerId: '2', planDesc: '  ', monthlyFee: -1, uplinkCount: 1.5, downlinkCount: -3, excessUplinkPrice: 'cheap', sharingtype: 1 },
      });
      await until(() => caught.length === 1);
      const e = caught[0].error;
      assert.equal(e.code, 'BAD_INPUT');
      for (const re of [
        /msg\.payload\.sharingtype: unknown field \(did you mean sharingType\?\)/,
        /msg\.payload\.customerId: required, the customer ID/,
        /msg\.payload\.planDesc: must not be empty/,
        /msg\.payload\.monthlyFee: must not be negative/,
        /msg\.payload\.uplinkCount: must be an integer/,
        /msg\.payload\.downlinkCount: must not be negative/,
        /msg\.payload\.excessUplinkPrice: must be a number/,
      ]) {
        assert.match(e.message, re);
      }
      assert.equal(sim.server.calls.length, 0, 'no request was sent');
    });

    it('refuses a payload that is not an object, and a bad operation', async function () {
      const n = await load(flow({ operation: 'create' }));
      const caught = collect(n.get('caught'));
      n.get('contract').receive({ payload: [goodBody] });
      n.get('contract').receive({ payload: goodBody, operation: 'delete' });
      await until(() => caught.length === 2);
      assert.match(caught[0].error.message, /msg\.payload: must be the contract creation object, not an array/);
      assert.match(caught[1].error.message, /msg\.operation: must be "create" or "list"/);
      assert.ok(caught.every((c) => c.error.code === 'BAD_INPUT'));
      assert.equal(sim.server.calls.length, 0);
    });

    it('passes on the {errors} text of a 400 (parameter not found) and a 404 (missing customer)', async function () {
      const n = await load(flow({ operation: 'create' }));
      const caught = collect(n.get('caught'));
      // A well-formed body for a customer the service does not know.
      n.get('contract').receive({ payload: { ...goodBody, customerId: 77 } });
      await until(() => caught.length === 1);
      assert.equal(caught[0].error.code, 'NOT_FOUND');
      assert.match(caught[0].error.message, /POST \/lorawan\/broker\/contract: HTTP 404, not found: Cliente 77 não encontrado/);
      sim.inject({ route: 'broker/contract-create', status: 400, body: { errors: 'Parâmetro planDesc não encontrado' } });
      n.get('contract').receive({ payload: goodBody });
      await until(() => caught.length === 2);
      assert.equal(caught[1].error.code, 'HTTP_ERROR');
      assert.match(caught[1].error.message, /HTTP 400: Parâmetro planDesc não encontrado/);
    });
  });

  describe('list (endpoint 5)', function () {
    it('lists with the filters and paging of the settings', async function () {
      const n = await load(flow({ operation: 'list', customerId: '2', page: 1, pageSize: 5 }));
      const out = collect(n.get('out'));
      n.get('contract').receive({ payload: 1700000000000 });
      await until(() => out.length === 1);
      assert.equal(out[0].statusCode, 200);
      assert.equal(out[0].payload.length, 5);
      assert.ok(out[0].payload.every((c) => c.customer.id === 2));
      assert.equal(typeof out[0].payload[0].monthlyFee, 'string');
      const q = new URLSearchParams(sim.server.callsTo('broker/contract-list')[0].query);
      assert.deepEqual(Object.fromEntries(q), { customerId: '2', page: '1', pageSize: '5' });
    });

    it('takes filters from msg.payload over the settings, and msg.query last (renamed parameters)', async function () {
      const n = await load(flow({ operation: 'list', customerId: '2', pageSize: 5 }));
      const out = collect(n.get('out'));
      n.get('contract').receive({ payload: { planDesc: 'avançado', customerId: 1, page: 2 }, query: { pageSize: null, size: 3 } });
      await until(() => out.length === 1);
      const q = Object.fromEntries(new URLSearchParams(sim.server.callsTo('broker/contract-list')[0].query));
      assert.deepEqual(q, { planDesc: 'avançado', customerId: '1', page: '2', size: '3' });
      assert.equal(out[0].payload.length, 3);
      assert.ok(out[0].payload.every((c) => c.customer.id === 1 && /Avançado/.test(c.planDesc)));
      n.get('contract').receive({ payload: { externalId: 'EXT-0007' }, query: { customerId: null } });
      await until(() => out.length === 2);
      assert.deepEqual(out[1].payload.map((c) => c.id), [7]);
    });

    it('refuses bad filters before any request', async function () {
      const n = await load(flow({ operation: 'list' }));
      const caught = collect(n.get('caught'));
      n.get('contract').receive({ payload: { customerID: 1 } });
      n.get('contract').receive({ payload: { customerId: 'abc' } });
      n.get('contract').receive({ payload: {}, query: 'page=2' });
      await until(() => caught.length === 3);
      assert.match(caught[0].error.message, /msg\.payload\.customerID: unknown option \(did you mean customerId\?\)/);
      assert.match(caught[1].error.message, /msg\.payload\.customerId: must be an integer/);
      assert.match(caught[2].error.message, /msg\.query: must be an object/);
      assert.ok(caught.every((c) => c.error.code === 'BAD_INPUT'));
      assert.equal(sim.server.calls.length, 0);
    });

    it('maps each {errors} body: 400 bad parameter, 403 forbidden, 404 missing, 500 internal error', async function () {
      const n = await load(flow({ operation: 'list' }, { maxRetries: 0 }));
      const caught = collect(n.get('caught'));
      const c = n.get('contract');
      c.receive({ payload: {}, query: { page: 'x' } });
      await until(() => caught.length === 1);
      c.receive({ payload: { customerId: 900 } });
      await until(() => caught.length === 2);
      c.receive({ payload: { customerId: 42 } });
      await until(() => caught.length === 3);
      sim.inject({ route: 'broker/contract-list', status: 500, body: { errors: 'Erro interno do servidor' } });
      c.receive({ payload: {} });
      await until(() => caught.length === 4);
      assert.deepEqual(caught.map((m) => m.error.code), ['HTTP_ERROR', 'FORBIDDEN', 'NOT_FOUND', 'HTTP_ERROR']);
      assert.match(caught[0].error.message, /HTTP 400: Parâmetro page inválido: x/);
      assert.match(caught[1].error.message, /HTTP 403, the account is not allowed to do this: Acesso negado: o cliente 900/);
      assert.match(caught[2].error.message, /HTTP 404, not found: Cliente 42 não encontrado/);
      assert.match(caught[3].error.message, /HTTP 500: Erro interno do servidor/);
    });

    it('retries a 500 on a GET and succeeds', async function () {
      const n = await load(flow({ operation: 'list' }, { maxRetries: 1 }));
      const out = collect(n.get('out'));
      sim.inject({ route: 'broker/contract-list', status: 500, body: { errors: 'Erro interno do servidor' } });
      n.get('contract').receive({ payload: {} });
      await until(() => out.length === 1, 8000);
      assert.equal(sim.server.callsTo('broker/contract-list').length, 2);
    });

    it('refuses a reply that is not an array of contracts as BAD_RESPONSE', async function () {
      const n = await load(flow({ operation: 'list' }));
      const caught = collect(n.get('caught'));
      sim.inject({ route: 'broker/contract-list', phase: 'after', status: 200, body: { content: [] } });
      n.get('contract').receive({ payload: {} });
      await until(() => caught.length === 1);
      assert.equal(caught[0].error.code, 'BAD_RESPONSE');
    });
  });

  describe('API gateway authentication', function () {
    for (const [which, creds, text] of [
      ['client_id', { ...DEMO_CREDS, brokerClientId: 'wrong-client' }, /Client Id in the request, identified by HEADER client_id, is invalid/],
      ['access_token', { ...DEMO_CREDS, brokerAccessToken: 'wrong-secret-token' }, /Access Token in the request, identified by HEADER access_token, is invalid/],
    ]) {
      it(`a wrong ${which} gives UNAUTHORIZED with the gateway's text and no credential in the error`, async function () {
        const n = await load(flow({ operation: 'list' }), { gw: creds });
        const caught = collect(n.get('caught'));
        n.get('contract').receive({ payload: {} });
        n.get('referral').receive({ payload: 3 });
        await until(() => caught.length === 2);
        for (const m of caught) {
          assert.equal(m.error.code, 'UNAUTHORIZED');
          assert.match(m.error.message, text);
          assert.match(m.error.message, /Check the broker client ID and access token/);
          for (const secret of ['wrong-secret-token', 'sim-access-token', 'demo-secret']) assert.ok(!m.error.message.includes(secret));
        }
        assert.equal(sim.areas.broker.counters.unauthorized, 2);
      });
    }

    it('refuses to send without broker credentials', async function () {
      const n = await load(flow({ operation: 'list' }), { gw: { clientId: 'demo', clientSecret: 'demo-secret' } });
      const caught = collect(n.get('caught'));
      n.get('contract').receive({ payload: {} });
      await until(() => caught.length === 1);
      assert.equal(caught[0].error.code, 'BAD_INPUT');
      assert.match(caught[0].error.message, /broker client ID and access token/);
      assert.equal(sim.server.calls.length, 0);
    });
  });

  describe('referral removal (endpoint 7)', function () {
    it('deletes a referral by ID and emits the {message}', async function () {
      const n = await load(flow());
      const out = collect(n.get('out'));
      n.get('referral').receive({ payload: '17', topic: 't' });
      await until(() => out.length === 1);
      assert.equal(out[0].topic, 't');
      assert.deepEqual(out[0].payload, { message: 'Encaminhamento 17 removido com sucesso' });
      const call = sim.server.callsTo('broker/referrals')[0];
      assert.equal(call.method, 'DELETE');
      assert.equal(call.query, '?id=17');
      assert.equal(call.headers.client_id, 'sim-client');
    });

    it('gives NOT_FOUND with the {errors} text when the referral is gone', async function () {
      const n = await load(flow());
      const out = collect(n.get('out'));
      const caught = collect(n.get('caught'));
      n.get('referral').receive({ payload: 5 });
      await until(() => out.length === 1);
      n.get('referral').receive({ payload: 5 });
      await until(() => caught.length === 1);
      assert.equal(caught[0].error.code, 'NOT_FOUND');
      assert.match(caught[0].error.message, /DELETE \/lorawan\/broker\/referrals: HTTP 404, not found: Encaminhamento 5 não encontrado/);
    });

    it('gives the 400 {errors} text when the service misses its parameter (renamed away by msg.query)', async function () {
      const n = await load(flow());
      const caught = collect(n.get('caught'));
      n.get('referral').receive({ payload: 5, query: { id: null, referencia: 5 } });
      await until(() => caught.length === 1);
      assert.equal(caught[0].error.code, 'HTTP_ERROR');
      assert.match(caught[0].error.message, /HTTP 400: Parâmetro id não encontrado/);
      assert.equal(sim.server.callsTo('broker/referrals')[0].query, '?referencia=5');
    });

    it('refuses a missing or non-integer ID before any request', async function () {
      const n = await load(flow());
      const caught = collect(n.get('caught'));
      for (const payload of [undefined, '', 'abc', 1.5, -3, 0, { id: 1 }, 2 ** 60]) n.get('referral').receive({ payload });
      await until(() => caught.length === 8);
      assert.ok(caught.every((c) => c.error.code === 'BAD_INPUT' && /msg\.payload: /.test(c.error.message)), JSON.stringify(caught.map((c) => c.error.message)));
      assert.match(caught[0].error.message, /required, the referral ID/);
      assert.equal(sim.server.calls.length, 0, 'no request was sent');
    });

    it('uses the ID parameter name of the settings', async function () {
      const n = await load([...flow().filter((x) => x.id !== 'referral'), { id: 'referral', type: 'iotgw-lorawan-referral', gateway: 'gw', idParam: 'referralId', wires: [['out']] }]);
      const out = collect(n.get('out'));
      n.get('referral').receive({ payload: 9 });
      await until(() => out.length === 1);
      assert.equal(sim.server.callsTo('broker/referrals')[0].query, '?referralId=9');
    });
  });
});
