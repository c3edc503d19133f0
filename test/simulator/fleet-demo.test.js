'use strict';
/**
 * The living fleet of the demo (issue 36) over loopback HTTP: fleet terminals report
 * SatelliteTelemetry (RawPayload laid out by examples/definitions/demo.idpmsg) with positions
 * that move plausibly, and terminals change so the updates feed moves on; `npm start`'s
 * command-line switches.
 */
const assert = require('node:assert/strict');
const { startSimulator } = require('../../dist/simulator');
const { demoText, load } = require('../helpers/codec');
const { spawnSimulator } = require('../helpers/sim-cli');

const H = { authorization: 'Bearer demo-token' };
const utc = (ms) => new Date(ms).toISOString().slice(0, 19).replace('T', ' ');

async function get(url, p) {
  const r = await fetch(`${url}/api/v1.0/${p}`, { headers: H });
  assert.equal(r.status, 200, p);
  return r.json();
}

/** km between two positions (degrees). */
function km(a, b) {
  const rad = Math.PI / 180;
  const x = (b.lon - a.lon) * rad * Math.cos(((a.lat + b.lat) / 2) * rad);
  const y = (b.lat - a.lat) * rad;
  return Math.sqrt(x * x + y * y) * 6371;
}

describe('the simulator: a living fleet (positions that move, terminals that change)', function () {
  let sim;
  afterEach(async () => sim && (await sim.close()));

  it('a few fleet terminals report positions every round, laid out by demo.idpmsg, moving plausibly', async function () {
    const since = utc(Date.now() - 1000);
    sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 }, fleet: { size: 500 }, demo: { everyMs: 100, movers: 6, reportsPerRound: 3, changesPerRound: 0 } });
    const defs = load(demoText(), 'demo.idpmsg');
    const inventory = new Map((await get(sim.url, 'info/terminals?PageSize=500')).Terminals.map((t) => [t.PrimeID, t]));
    const tracks = new Map();
    const accounts = new Set();
    const end = Date.now() + 30_000;
    while (Date.now() < end && !([...tracks.values()].filter((t) => t.length >= 3).length >= 6)) {
      await new Promise((r) => setTimeout(r, 200));
      tracks.clear();
      for (const m of (await get(sim.url, `get/subaccounts/re_messages?FromUTC=${encodeURIComponent(since)}`)).Messages) {
        assert.equal(m.SIN, 255);
        assert.ok(!('Payload' in m), 'RawPayload only: decode it with the definitions');
        const d = defs.decode(Buffer.from(m.RawPayload, 'base64'), 'return');
        assert.equal(d.message.def.name, 'SatelliteTelemetry');
        const t = inventory.get(m.MobileID);
        assert.ok(t && t.IsRegistered === 1, 'a registered terminal of the inventory');
        assert.equal(m.RegionName, t.LastRegionName);
        accounts.add(m.AccountID);
        const pos = { lat: d.fields.latitude / 60000, lon: d.fields.longitude / 60000 };
        assert.ok(Math.abs(pos.lat) <= 90 && Math.abs(pos.lon) <= 180);
        if (!tracks.has(m.MobileID)) tracks.set(m.MobileID, []);
        tracks.get(m.MobileID).push(pos);
      }
    }
    const full = [...tracks.entries()].filter(([, t]) => t.length >= 3);
    assert.equal(full.length, 6, 'each of the 6 movers reported at least 3 times');
    for (const [id, t] of full) {
      assert.ok(t.some((p, i) => i > 0 && km(t[i - 1], p) > 0.001), `${id} moved`);
      for (let i = 1; i < t.length; i++) assert.ok(km(t[i - 1], t[i]) < 50, `${id}: no jump (${km(t[i - 1], t[i])} km)`);
    }
    assert.ok(accounts.has('demo'));
    assert.deepEqual(new Set(sim.terminal.demo.positions().map((p) => p.PrimeID)), new Set(full.map(([id]) => id)));
  });

  it('terminals register and change mode, so the terminal-updates feed lives', async function () {
    sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 }, fleet: { size: 300 }, demo: { everyMs: 100, reportsPerRound: 0, changesPerRound: 2 } });
    const from = utc(Date.now() - 1000);
    let changed = [];
    const end = Date.now() + 30_000;
    while (changed.length < 6 && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 200));
      changed = (await get(sim.url, `info/terminal_updates?FromUTC=${encodeURIComponent(from)}`)).Terminals;
    }
    assert.ok(changed.length >= 6, `${changed.length} terminals changed`);
    assert.ok(changed.every((t) => t.UpdateUTC >= from));
    const one = (await get(sim.url, `info/terminal?PrimeID=${changed[0].PrimeID}`)).Terminal;
    assert.equal(one.UpdateUTC >= changed[0].UpdateUTC, true, 'the inventory shows the change');
  });

  it('is off unless asked for', async function () {
    const since = utc(Date.now() - 1000);
    sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 }, fleet: { size: 100 } });
    await new Promise((r) => setTimeout(r, 600));
    assert.equal(sim.terminal.demo.counters.rounds, 0);
    assert.deepEqual((await get(sim.url, `get/re_messages?FromUTC=${encodeURIComponent(since)}`)).Messages, []);
  });

  it('the command line sizes the fleet and sets the rounds (--fleet-size, --fleet-every)', async function () {
    const { cli, url } = await spawnSimulator(['--port', '0', '--no-limits', '--reports-every', '0', '--fleet-size', '1200', '--fleet-every', '1']);
    try {
      const since = utc(Date.now() - 1000);
      const pages = [];
      let sinceId = '';
      for (let i = 0; i < 5; i++) {
        const p = (await get(url, `info/terminals?PageSize=1000${sinceId ? `&SinceID=${sinceId}` : ''}`)).Terminals;
        pages.push(p.length);
        if (!p.length) break;
        sinceId = p[p.length - 1].PrimeID;
      }
      assert.deepEqual(pages, [1000, 200, 0]);
      let msgs = [];
      const end = Date.now() + 30_000;
      while (!msgs.length && Date.now() < end) {
        await new Promise((r) => setTimeout(r, 250));
        msgs = (await get(url, `get/re_messages?FromUTC=${encodeURIComponent(since)}`)).Messages;
      }
      assert.ok(msgs.length > 0 && msgs.every((m) => m.SIN === 255), 'fleet positions within a few seconds');
    } finally {
      cli.kill('SIGTERM');
    }
  });
});
