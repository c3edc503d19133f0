'use strict';
const assert = require('node:assert/strict');
const { helper, startSimulator, load, until, collect, catchAll } = require('../helpers/harness');
const { simUuid } = require('../../dist/simulator/app');

const TOKEN = 'app-demo-token';

function appNode(sim, props = {}) {
  // A request timeout a starved CI process cannot hit on loopback: these tests are about 429s.
  return { id: 'app', type: 'iotgw-app', name: 'sim', baseUrl: sim.appUrl, timeoutSeconds: 30, rateLimitCalls: 0, rateLimitWindowSeconds: 1, maxRetries: 3, ...props };
}

describe('application API rate limit (the platform answers 429 with no Retry-After)', function () {
  let sim;
  afterEach(async function () {
    await helper.unload();
    await new Promise((r) => helper.stopServer(r));
    await sim.close();
  });

  async function start(simLimit, appProps) {
    sim = await startSimulator({ app: { rateLimitCalls: simLimit, rateLimitWindowMs: 1000 } });
    await new Promise((r) => helper.startServer(r));
    const n = await load(
      [
        appNode(sim, appProps),
        { id: 'user', type: 'iotgw-user', app: 'app', wires: [['out']] },
        { id: 'cfg', type: 'iotgw-tag-config', app: 'app', tagId: 'payload', tagIdType: 'msg', wires: [['out']] },
        { id: 'tags', type: 'iotgw-tag-list', app: 'app', walk: 'all', perPage: '20', wires: [['out']] },
        { id: 'out', type: 'helper' },
        ...catchAll(),
      ],
      { app: { authToken: TOKEN } },
    );
    return { n, out: collect(n.get('out')), caught: collect(n.get('caught')) };
  }
  const statuses = () => sim.server.calls.map((c) => c.status);

  it('paces every node of one account to the platform\'s limit: no 429 at all, no msg lost', async function () {
    const { n, out, caught } = await start(5, { rateLimitCalls: 5, rateLimitWindowSeconds: 1 });
    for (let i = 0; i < 6; i++) n.get('user').receive({ payload: '', n: `user${i}` });
    for (let i = 0; i < 4; i++) n.get('cfg').receive({ payload: simUuid(3, i + 1), n: `cfg${i}` });
    n.get('tags').receive({ n: 'tags' }); // 45 tags, 3 pages
    // What the run got instead, if it times out (a loaded CI machine once did, with no more said).
    await until(() => out.length === 13, 10000, '13 outputs', () => `${out.length} outputs, caught ${JSON.stringify(caught.map((m) => m.error && m.error.message))}, statuses ${statuses()}`);
    assert.equal(caught.length, 0);
    assert.equal(statuses().length, 13);
    assert.ok(statuses().every((s) => s === 200), `statuses: ${statuses()}`);
    const ns = out.map((m) => m.n);
    for (let i = 0; i < 6; i++) assert.equal(ns.filter((x) => x === `user${i}`).length, 1);
    for (let i = 0; i < 4; i++) {
      const m = out.find((x) => x.n === `cfg${i}`);
      assert.equal(m.payload.tag_id, simUuid(3, i + 1), 'each msg got its own reply');
    }
    assert.equal(ns.filter((x) => x === 'tags').length, 3);
  });

  it('retries each 429 after the window when the account is set faster than the platform, and loses no msg', async function () {
    const { n, out, caught } = await start(5, { rateLimitCalls: 10, rateLimitWindowSeconds: 1 });
    for (let i = 0; i < 12; i++) n.get('user').receive({ payload: '', n: i });
    await until(() => out.length === 12, 15000, '12 outputs');
    assert.equal(caught.length, 0);
    assert.deepEqual(out.map((m) => m.n).sort((a, b) => a - b), [...Array(12).keys()], 'every msg once');
    assert.ok(out.every((m) => m.statusCode === 200 && m.payload.username === 'demo'));
    assert.ok(statuses().filter((s) => s === 429).length >= 1, 'the platform did refuse some calls');
    assert.equal(statuses().filter((s) => s === 200).length, 12);
    // As on the real platform, the 429 offers no Retry-After: the node waited out its own window.
    let res;
    do res = await fetch(`${sim.appUrl}/auth/user`, { headers: { authorization: `Bearer ${TOKEN}` } });
    while (res.status !== 429);
    assert.equal(res.headers.get('retry-after'), null);
    assert.equal((await res.json()).code, 'ERROR_CODE_TOO_MANY_REQUESTS');
  });

  it('retries a 429 with exponential backoff when the account\'s own limit is off', async function () {
    const { n, out, caught } = await start(1, { rateLimitCalls: 0 });
    n.get('user').receive({ payload: '', n: 1 });
    n.get('user').receive({ payload: '', n: 2 });
    await until(() => out.length === 2, 15000, 'both outputs');
    assert.equal(caught.length, 0);
    assert.deepEqual(out.map((m) => m.n).sort(), [1, 2]);
    assert.ok(statuses().includes(429));
    assert.equal(statuses().filter((s) => s === 200).length, 2);
  });
});
