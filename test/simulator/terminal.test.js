'use strict';
const assert = require('node:assert/strict');
const path = require('node:path');
const { startSimulator } = require('../../dist/simulator');
const { spawnSimulator } = require('../helpers/sim-cli');

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

  it('serves every status record to a client that re-asks inclusively and de-duplicates, across live traffic and a backlog', async function () {
    sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0, maxStatuses: 100, sendingAfterMs: 30, receivedAfterMs: 80, acceptUnknownTerminals: true } });
    // Live traffic here is about 45 records a second: below the cap, so no second is crowded.
    sim.terminal.seedBacklog(300, { perSecond: 70 });
    const { body } = await token(sim);
    const auth = { authorization: `Bearer ${body.access_token}`, 'content-type': 'application/json' };
    let from = '2000-01-01 00:00:00';
    const seen = new Set();
    let served = 0;
    const poll = async () => {
      const r = await (await fetch(`${sim.url}/api/v1.0/get/subaccounts/fw_status_updates?FromUTC=${encodeURIComponent(from)}`, { headers: auth })).json();
      assert.ok(r.Statuses.length <= 100, 'never more than the cap');
      for (const s of r.Statuses) {
        assert.ok(s.StatusUTC >= from, 'FromUTC is inclusive: nothing before it');
        seen.add(`${s.ID}|${s.State}|${s.StatusUTC}`);
      }
      served += r.Statuses.length;
      if (r.Statuses.length) assert.equal(r.NextFromUTC, r.Statuses[r.Statuses.length - 1].StatusUTC, 'NextFromUTC is the last record\'s time');
      else assert.equal(r.NextFromUTC, null, 'an empty reply: NextFromUTC null');
      if (r.NextFromUTC) from = r.NextFromUTC;
      return r.Statuses.length;
    };
    const stop = Date.now() + 3500;
    let submitted = 0;
    while (Date.now() < stop) {
      await fetch(`${sim.url}/api/v1.0/terminal/mode`, { method: 'POST', headers: auth, body: JSON.stringify([{ DestinationID: `3${String(submitted).padStart(7, '0')}SKYAAAA`, Mode: 0 }]) });
      submitted++;
      await poll();
      await new Promise((res) => setTimeout(res, 60));
    }
    const expected = 300 + submitted * 3;
    const until = Date.now() + 10000;
    while (seen.size < expected && Date.now() < until) if ((await poll()) < 100) await new Promise((res) => setTimeout(res, 200));
    assert.equal(seen.size, expected, 'every backlog record and every state change of every message');
    assert.ok(served > seen.size, 'the mark\'s second came again (inclusive FromUTC)');
  });

  it('crowdStatusRecords (--crowd-status N): each second a message\'s state is recorded in first gets N other records, so its own lie past the full reply', async function () {
    const { parseArgs } = require('../../dist/simulator/cli');
    assert.deepEqual(parseArgs(['--crowd-status', '600']).terminal, { crowdStatusRecords: 600 });
    sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0, crowdStatusRecords: 600 } });
    const { formatUtc } = require('../../dist/simulator');
    const { body } = await token(sim);
    const headers = { authorization: `Bearer ${body.access_token}`, 'content-type': 'application/json' };
    const sent = await (await fetch(`${sim.url}/api/v1.0/submit/messages`, { method: 'POST', headers, body: JSON.stringify([{ DestinationID: '01000001SKYA001', RawPayload: 'gAE=' }]) })).json();
    const id = sent.Submissions[0].ID;
    const second = formatUtc(sim.terminal.messages.get(String(id)).createSec);
    const r = await (await fetch(`${sim.url}/api/v1.0/get/subaccounts/fw_status_updates?FromUTC=${encodeURIComponent(second)}`, { headers })).json();
    assert.equal(r.Statuses.length, 500);
    assert.equal(r.NextFromUTC, second, 'a crowded second: NextFromUTC does not move');
    assert.ok(r.Statuses.every((s) => s.StatusUTC === second && s.ID !== id), 'the message\'s own record is past the reply');
  });

  it('is strict about FromUTC: inclusive, crowded seconds, late records, empty replies, real dates', async function () {
    sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 } });
    const { formatUtc } = require('../../dist/simulator');
    const { body } = await token(sim);
    const get = async (from) =>
      (await fetch(`${sim.url}/api/v1.0/get/subaccounts/fw_status_updates?FromUTC=${encodeURIComponent(from)}`, { headers: { authorization: `Bearer ${body.access_token}` } })).json();
    const sec = Math.floor(Date.now() / 1000) - 100;
    sim.terminal.addStatusRecords(700, sec);
    sim.terminal.addStatusRecords(5, sec + 1);
    // 700 records in one second: a reply holds 500 of them; NextFromUTC does not move.
    let r = await get(formatUtc(sec - 10));
    assert.equal(r.Statuses.length, 500);
    assert.ok(r.Statuses.every((s) => s.StatusUTC === formatUtc(sec)));
    assert.equal(r.NextFromUTC, formatUtc(sec));
    const again = await get(r.NextFromUTC);
    assert.deepEqual(again.Statuses.map((s) => s.ID), r.Statuses.map((s) => s.ID), 'the same FromUTC returns the same records');
    assert.equal(again.NextFromUTC, formatUtc(sec));
    r = await get(formatUtc(sec + 1));
    assert.equal(r.Statuses.length, 5);
    // A late record lands in a second already read.
    sim.terminal.addStatusRecords(1, sec + 1);
    r = await get(formatUtc(sec + 1));
    assert.equal(r.Statuses.length, 6);
    sim.terminal.configure({ lateBySeconds: 3 });
    const before = Math.floor(Date.now() / 1000);
    await fetch(`${sim.url}/api/v1.0/terminal/mode`, { method: 'POST', headers: { authorization: `Bearer ${body.access_token}`, 'content-type': 'application/json' }, body: JSON.stringify([{ DestinationID: '01000001SKYA001', Mode: 0 }]) });
    r = await get(formatUtc(before - 5));
    assert.equal(r.Statuses.length, 1);
    assert.ok(r.Statuses[0].StatusUTC <= formatUtc(before - 3 + 1), `visible late, with an earlier StatusUTC (${r.Statuses[0].StatusUTC})`);
    // Empty replies: NextFromUTC null by default, or "" or FromUTC as options.
    const future = formatUtc(Math.floor(Date.now() / 1000) + 3600);
    assert.equal((await get(future)).NextFromUTC, null);
    sim.terminal.configure({ emptyNextFromUTC: 'empty' });
    assert.equal((await get(future)).NextFromUTC, '');
    sim.terminal.configure({ emptyNextFromUTC: 'from' });
    assert.equal((await get(future)).NextFromUTC, future);
    // Not a real date: refused as the gateway does.
    assert.equal((await get('2026-13-45 99:00:00')).ErrorID, 108);
    assert.equal((await get('2026-02-30 00:00:00')).ErrorID, 108);
  });

  it('starts from the command line with a port option and a control route', async function () {
    const { cli, url } = await spawnSimulator(['--port', '0', '--next-id', '9223372036854775800']);
    try {
      const state = await (await fetch(`${url}/_sim/state`)).json();
      assert.equal(state.terminal.terminals.length, 4);
      const seeded = await fetch(`${url}/_sim/terminals`, { method: 'POST', body: JSON.stringify({ terminals: [{ id: '05000001SKYC001', family: 'OGx', online: false }] }) });
      assert.equal((await seeded.json()).terminals, 5);
      sim = null;
    } finally {
      cli.kill('SIGTERM');
    }
  });

  it('the command line turns on the real services\' edges (throttling as HTTP 200 + ErrorID, a base path, a token lifetime) and refuses a wrong value', async function () {
    const bin = path.join(__dirname, '..', '..', require('../../package.json').bin['iotgw-simulator']);
    const args = ['--port', '0', '--calls', '1', '--throttle-as', 'errorId', '--base-path', '/gw/v1', '--token-ttl', '120', '--reports-every', '0'];
    const { cli, url: base } = await spawnSimulator(args, bin);
    try {
      assert.ok(base.endsWith('/gw/v1'), base);
      const t = await token({ url: base });
      assert.equal(t.status, 200);
      assert.equal(t.body.expires_in, 120);
      const get = async () => {
        const r = await fetch(`${base}/api/v1.0/get/subaccounts/fw_status_updates?FromUTC=2020-01-01%2000:00:00`, { headers: { authorization: `Bearer ${t.body.access_token}` } });
        return { status: r.status, body: await r.json() };
      };
      assert.equal((await get()).status, 200);
      const throttled = await get();
      assert.equal(throttled.status, 200, 'throttled as the real gateway can: HTTP 200');
      assert.equal(throttled.body.ErrorID, 24581);
    } finally {
      cli.kill('SIGTERM');
    }
    for (const [bad, said] of [
      [['--throttle-as', '429'], /--throttle-as: must be one of http, errorId, not "429"/],
      [['--calls', '-1'], /--calls: must be a whole number of 0 or more, not "-1"/],
      [['--late-secs', '2'], /unknown option "--late-secs"/],
    ]) {
      const r = require('node:child_process').spawnSync(process.execPath, [bin, ...bad], { encoding: 'utf8', timeout: 10000 });
      assert.equal(r.status, 2, bad.join(' '));
      assert.match(r.stderr, said);
    }
  });
});
