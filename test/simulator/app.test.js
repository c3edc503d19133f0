'use strict';
const assert = require('node:assert/strict');
const { startSimulator } = require('../helpers/harness');

describe('simulator: the application API area', function () {
  let sim;
  afterEach(async function () {
    await sim.close();
  });
  const get = (path, token = 'app-demo-token') =>
    fetch(`${sim.appUrl}${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {} }).then(async (r) => ({ status: r.status, body: await r.json(), headers: r.headers }));

  it('pages the tags with the platform\'s envelope: 1-based page, per_page, offset, null at the ends', async function () {
    sim = await startSimulator({ app: { rateLimitCalls: 0, tagCount: 25 } });
    const first = await get('/costummer/tag?page=1&per_page=10');
    assert.deepEqual({ ...first.body, items: first.body.items.length }, { itemsReceived: 10, curPage: 1, nextPage: 2, prevPage: null, offset: 0, perPage: 10, items: 10 });
    const last = await get('/costummer/tag?page=3&per_page=10');
    assert.deepEqual({ ...last.body, items: last.body.items.length }, { itemsReceived: 5, curPage: 3, nextPage: null, prevPage: 2, offset: 20, perPage: 10, items: 5 });
    const dflt = await get('/costummer/tag');
    assert.equal(dflt.body.perPage, 20);
    assert.equal(dflt.body.curPage, 1);
  });

  it('accepts aliases of the parameter names', async function () {
    sim = await startSimulator({ app: { rateLimitCalls: 0 } });
    const a = await get('/costummer/tag?curPage=2&pageSize=5&q=Tag%200');
    assert.equal(a.body.curPage, 2);
    assert.equal(a.body.perPage, 5);
    const b = await get('/tag/chipset/config?serial=SN000002&config_version=latest');
    assert.equal(b.status, 200);
    assert.equal(b.body.serial_number, 'SN000002');
    const c = await get('/auth/user?userId=00000002-0000-4000-8000-000000000003');
    assert.equal(c.body.username, 'operator');
  });

  it('answers 401 without a valid bearer token, in the chosen body shape', async function () {
    sim = await startSimulator({ app: { rateLimitCalls: 0 } });
    const none = await get('/auth/user', '');
    assert.equal(none.status, 401);
    assert.deepEqual(none.body, { code: 'ERROR_CODE_UNAUTHORIZED', message: 'This request requires authentication.', payload: null });
    sim.areas.app.configure({ errorShape: 'error' });
    const bad = await get('/auth/user', 'nope');
    assert.deepEqual(bad.body, { error: 'This request requires authentication: the token is invalid or expired' });
  });

  it('limits each token to 10 calls per 20 s by default, with no Retry-After', async function () {
    sim = await startSimulator();
    const statuses = [];
    for (let i = 0; i < 11; i++) statuses.push((await get('/auth/user')).status);
    assert.deepEqual(statuses, [...Array(10).fill(200), 429]);
    const r = await get('/auth/user');
    assert.equal(r.headers.get('retry-after'), null);
    assert.equal(r.body.code, 'ERROR_CODE_TOO_MANY_REQUESTS');
    assert.equal((await get('/auth/user', 'app-other-token')).status, 200, 'per token');
  });

  it('takes options at run time on POST /_sim/app-options, including failNext', async function () {
    sim = await startSimulator({ app: { rateLimitCalls: 0 } });
    const res = await fetch(`${sim.url}/_sim/app-options`, { method: 'POST', body: JSON.stringify({ errorShape: 'error', failNext: 1, maxPerPage: 5 }) });
    assert.equal(res.status, 200);
    const fatal = await get('/auth/user');
    assert.equal(fatal.status, 500);
    assert.deepEqual(fatal.body, { error: 'Unexpected error.' });
    assert.equal((await get('/auth/user')).status, 200);
    const tooBig = await get('/costummer/tag?per_page=6');
    assert.equal(tooBig.status, 400);
    assert.match(tooBig.body.error, /per_page must be an integer from 1 to 5/);
    const refused = await fetch(`${sim.url}/_sim/app-options`, { method: 'POST', body: JSON.stringify({ errorShape: 'xml' }) });
    assert.equal(refused.status, 400);
  });
});
