'use strict';
/**
 * The simulator's info/terminal_updates over loopback HTTP: a FromUTC feed like the other two
 * (inclusive, one-second resolution, NextFromUTC the second of the last record), each record
 * the terminal's current state, crowded seconds with more updates than a reply holds, and
 * late arrivals (updates that become visible in a second already read).
 */
const assert = require('node:assert/strict');
const { startSimulator } = require('../../dist/simulator');

const DEMO = { authorization: 'Bearer demo-token', 'content-type': 'application/json' };
const SUB = { authorization: 'Bearer sub-token' };
const utc = (sec) => new Date(sec * 1000).toISOString().slice(0, 19).replace('T', ' ');
const secOf = (s) => Date.parse(`${s.replace(' ', 'T')}Z`) / 1000;

async function updates(sim, from, headers = DEMO) {
  const r = await fetch(`${sim.url}/api/v1.0/info/terminal_updates?FromUTC=${encodeURIComponent(from)}`, { headers });
  assert.equal(r.status, 200);
  return r.json();
}

/** Reads the whole feed as a careful client does (inclusive re-reads, de-duplicated by PrimeID + UpdateUTC). */
async function readAll(sim, from, headers = DEMO) {
  const seen = new Map();
  for (let i = 0; i < 200; i++) {
    const r = await updates(sim, from, headers);
    assert.equal(r.ErrorID, 0);
    for (const t of r.Terminals) {
      assert.ok(t.UpdateUTC >= from, 'inclusive FromUTC: nothing before it');
      seen.set(`${t.PrimeID}|${t.UpdateUTC}`, t);
    }
    if (!r.Terminals.length) {
      assert.equal(r.NextFromUTC, null, 'an empty reply: no NextFromUTC');
      break;
    }
    assert.equal(r.NextFromUTC, r.Terminals[r.Terminals.length - 1].UpdateUTC, 'NextFromUTC is the second of the last record');
    if (r.NextFromUTC === from) break; // the last second again: nothing newer
    from = r.NextFromUTC;
  }
  return [...seen.values()];
}

describe('the simulator: info/terminal_updates', function () {
  let sim;
  afterEach(async () => sim && (await sim.close()));

  it('serves every terminal once at its UpdateUTC, oldest first, FromUTC inclusive and the last second again', async function () {
    sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 }, fleet: { size: 2500 } });
    const all = await readAll(sim, '2000-01-01 00:00:00');
    assert.equal(all.length, 2500);
    assert.equal(new Set(all.map((t) => t.PrimeID)).size, 2500);
    const first = await updates(sim, '2000-01-01 00:00:00');
    assert.equal(first.Terminals.length, 500, 'at most 500 a reply');
    const secs = first.Terminals.map((t) => t.UpdateUTC);
    assert.deepEqual(secs, [...secs].sort(), 'oldest first');
    const again = await updates(sim, first.NextFromUTC);
    const lastSecond = first.Terminals.filter((t) => t.UpdateUTC === first.NextFromUTC).map((t) => t.PrimeID);
    assert.deepEqual(again.Terminals.slice(0, lastSecond.length).map((t) => t.PrimeID), lastSecond, "the last second's records come again");
    // The records are TerminalInfo, as the inventory gives them.
    const inv = await (await fetch(`${sim.url}/api/v1.0/info/terminal?PrimeID=${first.Terminals[3].PrimeID}`, { headers: DEMO })).json();
    assert.deepEqual(inv.Terminal, first.Terminals[3]);
    assert.equal((await updates(sim, '2026-13-01 00:00:00')).ErrorID, 108);
    assert.equal((await updates(sim, 'yesterday')).Terminals ?? null, null);
  });

  it('a crowded second holds more updates than a reply: the same first records come again', async function () {
    sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 }, fleet: { size: 2500 } });
    const sec = Math.floor(Date.now() / 1000) - 5;
    const ctl = await fetch(`${sim.url}/_sim/terminal-updates`, { method: 'POST', body: JSON.stringify({ count: 1200, sec }) });
    assert.deepEqual((await ctl.json()).updated, 1200);
    const r = await updates(sim, utc(sec));
    assert.equal(r.Terminals.length, 500);
    assert.ok(r.Terminals.every((t) => t.UpdateUTC === utc(sec) && t.LastRegistrationUTC === utc(sec) && t.IsRegistered === 1));
    assert.equal(r.NextFromUTC, utc(sec));
    const again = await updates(sim, r.NextFromUTC);
    assert.deepEqual(again.Terminals.map((t) => t.PrimeID), r.Terminals.map((t) => t.PrimeID), 'a client cannot get past it');
    sim.terminal.configure({ maxTerminalUpdates: 2000 });
    const wide = await updates(sim, utc(sec));
    assert.equal(wide.Terminals.filter((t) => t.UpdateUTC === utc(sec)).length, 1200, '1200 updates in that one second');
    // Each terminal once: those re-registered are no longer at their old UpdateUTC.
    const all = await readAll(sim, '2000-01-01 00:00:00');
    assert.equal(all.length, 2500);
    const tooMany = await fetch(`${sim.url}/_sim/terminal-updates`, { method: 'POST', body: JSON.stringify({ count: 2501 }) });
    assert.equal(tooMany.status, 400, 'each terminal is in the feed once: at most the fleet');
  });

  it('late arrivals: lateCount updates become visible later in a second already read (release, or lateAfterMs)', async function () {
    sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 }, fleet: { size: 1000 } });
    const ctl = async (b) => {
      const r = await fetch(`${sim.url}/_sim/terminal-updates`, { method: 'POST', body: JSON.stringify(b) });
      return { status: r.status, body: await r.json() };
    };
    const sec = Math.floor(Date.now() / 1000) - 5;
    const seeded = await ctl({ count: 20, sec, lateCount: 5, lateAfterMs: 600_000 });
    assert.equal(seeded.status, 200);
    assert.equal(seeded.body.updated, 20);
    assert.equal(seeded.body.waiting, 5);
    const late = seeded.body.late;
    assert.deepEqual(late, Array.from({ length: 5 }, (_, k) => sim.terminal.fleet.primeId(20 + k)), 'the next terminals after the 20');
    const before = await updates(sim, utc(sec));
    assert.equal(before.Terminals.length, 20, 'the late ones are not visible yet');
    assert.ok(!before.Terminals.some((t) => late.includes(t.PrimeID)));
    const asWas = await (await fetch(`${sim.url}/api/v1.0/info/terminal?PrimeID=${late[0]}`, { headers: DEMO })).json();
    assert.ok(asWas.Terminal.UpdateUTC < utc(sec), 'until then the terminal is as it was');
    const released = await ctl({ release: true });
    assert.deepEqual([released.body.released, released.body.waiting], [5, 0]);
    const after = await updates(sim, utc(sec));
    assert.equal(after.Terminals.length, 25, 'the second already read now holds the late ones too');
    assert.deepEqual(after.Terminals.slice(20).map((t) => t.PrimeID), late, 'in that second, after those seen before');
    assert.ok(after.Terminals.every((t) => t.UpdateUTC === utc(sec) && t.IsRegistered === 1));
    assert.equal(after.NextFromUTC, utc(sec));
    // By the clock: visible lateAfterMs from now, in lateSec.
    const timed = await ctl({ lateCount: 3, from: 100, lateSec: sec - 2, lateAfterMs: 300 });
    assert.deepEqual([timed.body.updated, timed.body.late.length], [0, 3]);
    let seen = [];
    for (const end = Date.now() + 30_000; seen.length < 3 && Date.now() < end; await new Promise((res) => setTimeout(res, 50))) {
      seen = (await updates(sim, utc(sec - 2))).Terminals.filter((t) => t.UpdateUTC === utc(sec - 2));
    }
    assert.deepEqual(seen.map((t) => t.PrimeID), timed.body.late, 'visible by the clock, in their past second');
    for (const bad of [{}, { count: 0 }, { count: 990, lateCount: 20 }, { lateCount: -1, count: 1 }, { lateCount: 1, lateAfterMs: -1 }, { lateCount: 1, lateSec: 1.5 }]) {
      assert.equal((await ctl(bad)).status, 400, JSON.stringify(bad));
    }
    assert.equal(sim.terminal.fleet.lateCount, 0, 'nothing left waiting; nothing refused was seeded');
  });

  it('late updates for every change (terminal option lateUpdatesBySeconds, --late-update-seconds): UpdateUTC N s back', async function () {
    const { parseArgs } = require('../../dist/simulator/cli');
    assert.deepEqual(parseArgs(['--late-update-seconds', '30']).terminal, { lateUpdatesBySeconds: 30 });
    sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 }, fleet: { size: 500 } });
    const id = sim.terminal.fleet.primeId(7);
    const options = await (await fetch(`${sim.url}/_sim/terminal-options`, { method: 'POST', body: JSON.stringify({ lateUpdatesBySeconds: 30 }) })).json();
    assert.equal(options.lateUpdatesBySeconds, 30);
    const before = Math.floor(Date.now() / 1000);
    sim.terminal.fleetChange(id, { mode: 1, wakeCode: 2 });
    const after = Math.floor(Date.now() / 1000);
    const r = await updates(sim, utc(before - 31));
    const mine = r.Terminals.find((t) => t.PrimeID === id);
    assert.ok(mine && mine.LastOperationMode === 1, 'the change is served');
    assert.ok(mine.UpdateUTC >= utc(before - 30) && mine.UpdateUTC <= utc(after - 30), `30 s back (${mine.UpdateUTC}, now ${utc(after)})`);
    sim.terminal.configure({ lateUpdatesBySeconds: 0 });
    sim.terminal.fleetChange(id, { mode: 0, wakeCode: 0 });
    assert.ok((await updates(sim, utc(before))).Terminals.some((t) => t.PrimeID === id && t.LastOperationMode === 0), 'off: at once, now');
  });

  it('a fleet can start with a crowded second in its history (fleet option crowdedSecond)', async function () {
    sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 }, fleet: { size: 2500, crowdedSecond: 700 } });
    const all = await readAll(sim, '2000-01-01 00:00:00');
    const bySecond = new Map();
    for (const t of all) bySecond.set(t.UpdateUTC, (bySecond.get(t.UpdateUTC) ?? 0) + 1);
    const [sec, n] = [...bySecond.entries()].sort((a, b) => b[1] - a[1])[0];
    assert.equal(n, 500, 'a careful client gets only a reply\'s worth of that second');
    const wide = await (await fetch(`${sim.url}/api/v1.0/info/terminal_updates?FromUTC=${encodeURIComponent(sec)}`, { headers: DEMO })).json();
    assert.ok(wide.Terminals.every((t) => t.UpdateUTC === sec), `${sec}: 700 updates, more than a reply holds`);
    sim.terminal.configure({ maxTerminalUpdates: 1000 });
    assert.equal((await readAll(sim, '2000-01-01 00:00:00')).length, 2500, 'with a larger reply, every terminal once');
  });

  it('each record is the terminal\'s current state: a mode change moves it to the second of the change', async function () {
    sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0, sendingAfterMs: 20, receivedAfterMs: 60 }, fleet: { size: 500 } });
    const inv = (await (await fetch(`${sim.url}/api/v1.0/info/terminals?PageSize=500`, { headers: DEMO })).json()).Terminals;
    const t = inv.find((x) => x.LastSatelliteNetwork === 1 && x.LastOperationMode === 0 && x.IsRegistered === 1 && x.PrimeID > '01000010');
    const sent = Math.floor(Date.now() / 1000);
    const r = await fetch(`${sim.url}/api/v1.0/terminal/mode`, { method: 'POST', headers: DEMO, body: JSON.stringify([{ DestinationID: t.PrimeID, Mode: 2 }]) });
    assert.equal((await r.json()).Submissions[0].ErrorID, 0);
    let mine;
    const end = Date.now() + 20_000;
    while (!mine && Date.now() < end) {
      const u = await updates(sim, utc(sent));
      mine = u.Terminals.find((x) => x.PrimeID === t.PrimeID);
      if (!mine) await new Promise((res) => setTimeout(res, 50));
    }
    assert.ok(mine, 'the change is in the feed');
    assert.equal(mine.LastOperationMode, 2);
    assert.ok(secOf(mine.UpdateUTC) >= sent);
    const old = await updates(sim, t.UpdateUTC);
    assert.ok(!old.Terminals.some((x) => x.PrimeID === t.PrimeID && x.UpdateUTC === t.UpdateUTC), 'not at its old second any more');
  });

  it('a subaccount reads its own terminals\' updates only', async function () {
    sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 }, fleet: { size: 1000 } });
    const demo = await readAll(sim, '2000-01-01 00:00:00');
    const sub = await readAll(sim, '2000-01-01 00:00:00', SUB);
    assert.ok(sub.length > 30 && sub.length < 200);
    assert.equal(demo.length, 1000);
  });
});
