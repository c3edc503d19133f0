'use strict';
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const path = require('node:path');
const { startSimulator } = require('../dist/simulator');

async function token(sim, id = 'demo', secret = 'demo-secret', extra = '') {
  const r = await fetch(`${sim.url}/api/v1.0/auth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: `grant_type=client_credentials&client_id=${id}&client_secret=${secret}${extra}`,
  });
  return { status: r.status, body: await r.json() };
}

describe('the gateway simulator (area a) on its own', function () {
  let sim;
  afterEach(async () => sim && (await sim.close()));

  it('issues expiring tokens and refuses calls without a valid one', async function () {
    sim = await startSimulator({ terminal: { tokenTtlSeconds: 1 } });
    const t = await token(sim, 'demo', 'demo-secret', '&expires_in=1');
    assert.equal(t.status, 200);
    assert.equal(t.body.token_type, 'bearer');
    assert.equal(t.body.expires_in, 1);
    assert.equal((await token(sim, 'demo', 'wrong')).status, 401);
    const call = (tok) => fetch(`${sim.url}/api/v1.0/info/service?GetErrorCodes=true`, { headers: { authorization: `Bearer ${tok}` } });
    assert.equal((await call(t.body.access_token)).status, 200);
    assert.equal((await call('nope')).status, 401);
    await new Promise((r) => setTimeout(r, 1100));
    assert.equal((await call(t.body.access_token)).status, 401, 'expired');
  });

  it('throttles each group with a sliding window and answers 429 with the likely ErrorID', async function () {
    sim = await startSimulator({ terminal: { rateLimitCalls: 2, rateLimitWindowMs: 500, maxConcurrent: 0 } });
    const { body } = await token(sim);
    const get = () => fetch(`${sim.url}/api/v1.0/get/subaccounts/fw_status_updates?FromUTC=2020-01-01%2000:00:00`, { headers: { authorization: `Bearer ${body.access_token}` } });
    const s = [];
    for (let i = 0; i < 3; i++) s.push((await get()).status);
    assert.deepEqual(s, [200, 200, 429]);
    const r = await get();
    assert.deepEqual(await r.json(), { ErrorID: 24581 });
    await new Promise((res) => setTimeout(res, 550));
    assert.equal((await get()).status, 200, 'the window slid');
  });

  it('serves each status record exactly once across polls that chase live traffic and a backlog', async function () {
    sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0, maxStatuses: 30, sendingAfterMs: 30, receivedAfterMs: 80, acceptUnknownTerminals: true } });
    sim.terminal.seedBacklog(100, { perSecond: 30 });
    const { body } = await token(sim);
    const auth = { authorization: `Bearer ${body.access_token}`, 'content-type': 'application/json' };
    let from = '2000-01-01 00:00:00';
    const seen = [];
    const stop = Date.now() + 3500;
    let submitted = 0;
    while (Date.now() < stop) {
      // Submit a few messages between polls: each produces 3 records over time.
      const items = Array.from({ length: 1 }, (_, i) => ({ DestinationID: `3${String(submitted + i).padStart(7, '0')}SKYAAAA`, Mode: 0 }));
      await fetch(`${sim.url}/api/v1.0/terminal/mode`, { method: 'POST', headers: auth, body: JSON.stringify(items) });
      submitted += items.length;
      const r = await (await fetch(`${sim.url}/api/v1.0/get/subaccounts/fw_status_updates?FromUTC=${encodeURIComponent(from)}`, { headers: auth })).json();
      assert.ok(r.Statuses.length <= 30, 'never more than the cap');
      for (const s of r.Statuses) seen.push(`${s.ID}:${s.State}`);
      from = r.NextFromUTC;
      await new Promise((res) => setTimeout(res, 60));
    }
    // Drain what is left: a second is served once it is complete, so keep polling
    // until every record came (bounded: 10 s).
    const expected = 100 + submitted * 3;
    const until = Date.now() + 10000;
    while (seen.length < expected && Date.now() < until) {
      const r = await (await fetch(`${sim.url}/api/v1.0/get/subaccounts/fw_status_updates?FromUTC=${encodeURIComponent(from)}`, { headers: auth })).json();
      for (const s of r.Statuses) seen.push(`${s.ID}:${s.State}`);
      from = r.NextFromUTC;
      if (r.Statuses.length === 0) await new Promise((res) => setTimeout(res, 200));
    }
    assert.equal(new Set(seen).size, seen.length, 'no record served twice');
    assert.equal(seen.length, expected, 'every backlog record and every state change of every message');
  });

  it('starts from the command line with a port option and a control route', async function () {
    const cli = spawn(process.execPath, [path.join(__dirname, '..', 'dist', 'simulator', 'cli.js'), '--port', '0', '--next-id', '9223372036854775800'], { stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      const url = await new Promise((resolve, reject) => {
        let out = '';
        cli.stdout.on('data', (d) => {
          out += d;
          const m = /gateway base URL: (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
          if (m) resolve(m[1]);
        });
        cli.on('exit', (code) => reject(new Error(`exited ${code}`)));
      });
      const state = await (await fetch(`${url}/_sim/state`)).json();
      assert.equal(state.terminal.terminals.length, 4);
      const seeded = await fetch(`${url}/_sim/terminals`, { method: 'POST', body: JSON.stringify({ terminals: [{ id: '05000001SKYC001', family: 'OGx', online: false }] }) });
      assert.equal((await seeded.json()).terminals, 5);
      sim = null;
    } finally {
      cli.kill('SIGTERM');
    }
  });
});
