'use strict';
const assert = require('node:assert/strict');
const { startSimulator } = require('../helpers/harness');

/** Direct HTTP checks of the simulator's broker/SMS area (no Node-RED). */
describe('simulator: broker and SMS area', function () {
  let sim;
  const headers = { client_id: 'sim-client', access_token: 'sim-access-token' };
  afterEach(async function () {
    await sim.close();
  });

  async function get(path, h = headers) {
    const res = await fetch(`${sim.url}${path}`, { headers: h });
    return { status: res.status, body: await res.json() };
  }

  it('serves page 1000 of 100,000 devices without building the inventory', async function () {
    sim = await startSimulator({ broker: { deviceCount: 100000, wrapDevicePage: false } });
    const { status, body } = await get('/lorawan/broker/devices?page=1000&pageSize=100');
    assert.equal(status, 200);
    assert.equal(body.totalElements, 100000);
    assert.equal(body.totalPages, 1000);
    assert.equal(body.last, true);
    assert.equal(body.number, 999);
    assert.equal(body.pageable.pageNumber, 999);
    assert.equal(body.pageable.offset, 99900);
    assert.deepEqual([body.content[0].id, body.content[99].id], [199900, 199999]);
    assert.match(body.content[99].devEui, /^[0-9a-f]{16}$/);
  });

  it('counts the customer and payable views exactly as a full scan would', async function () {
    sim = await startSimulator({ broker: { deviceCount: 1237, customers: 5 } });
    for (const [query, keep] of [
      ['customerId=2', (i) => i % 5 === 1],
      ['receivable=false', (i) => Math.floor(i / 5) % 2 === 0],
      ['customerId=4&receivable=false', (i) => i % 5 === 3 && Math.floor(i / 5) % 2 === 0],
    ]) {
      const all = [];
      for (let page = 1; ; page++) {
        const { status, body } = await get(`/lorawan/broker/devices?${query}&page=${page}&pageSize=100`);
        assert.equal(status, 200);
        assert.ok(Array.isArray(body) && body.length === 1, 'wrapped in an array by default');
        all.push(...body[0].content.map((d) => d.id - 100000));
        if (body[0].last) {
          assert.equal(body[0].totalElements, all.length);
          break;
        }
      }
      const expected = Array.from({ length: 1237 }, (_, i) => i).filter(keep);
      assert.ok(expected.every((i) => sim.areas.broker.device(i).customer.id === (i % 5) + 1));
      assert.deepEqual(all, expected, query);
    }
  });

  it('accepts the parameter aliases a user may send', async function () {
    sim = await startSimulator({ broker: { wrapDevicePage: false } });
    const a = await get('/lorawan/broker/devices?pagina=2&size=7&customer=1&isReceivable=true');
    assert.equal(a.status, 200);
    assert.equal(a.body.number, 1);
    assert.equal(a.body.size, 7);
    assert.ok(a.body.content.every((d) => d.customer.id === 1));
    const c = await get('/lorawan/broker/contract?name=avan%C3%A7ado&per_page=4');
    assert.equal(c.body.length, 4);
    const s = await get('/sms/request?batchId=1');
    assert.equal(s.body.sendSmsRequest.id, 1);
  });

  it('answers 401 with the API gateway body (a bare string) for a missing or wrong header', async function () {
    sim = await startSimulator();
    const a = await get('/sms/request?id=1', { access_token: 'sim-access-token' });
    assert.equal(a.status, 401);
    assert.match(a.body, /^Client Id in the request, identified by HEADER client_id, is invalid/);
    const b = await get('/lorawan/broker/devices', { client_id: 'sim-client', access_token: 'nope' });
    assert.equal(b.status, 401);
    assert.match(b.body, /^Access Token in the request, identified by HEADER access_token, is invalid/);
  });

  it('lets the pending count of a batch fall over time', async function () {
    sim = await startSimulator();
    let clock = Date.now();
    sim.areas.broker.now = () => clock;
    const id = sim.areas.broker.addSmsBatch({ total: 4, msPerMessage: 1000 });
    clock += 2500;
    const first = (await get(`/sms/request?id=${id}`)).body;
    assert.deepEqual([first.pendingCount, first.successCount, first.sendSmsRequest.status], [2, 2, 'PROCESSING']);
    clock += 2000;
    const later = (await get(`/sms/request?id=${id}`)).body;
    assert.equal(later.pendingCount, 0);
    assert.equal(later.successCount, 4);
    assert.equal(later.sendSmsRequest.status, 'PROCESSED');
  });
});
