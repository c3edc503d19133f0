'use strict';
/**
 * The simulator's info/* calls over loopback HTTP (real-services.md, "More of the gateway"):
 * the inventory by keyset, one terminal, the fleet as it looks, service information,
 * broadcast IDs, subaccounts, and the INFO throttle group.
 */
const assert = require('node:assert/strict');
const { startSimulator } = require('../../dist/simulator');

const DEMO = { authorization: 'Bearer demo-token' };
const SUB = { authorization: 'Bearer sub-token' };
const NO_LIMITS = { rateLimitCalls: 0, maxConcurrent: 0 };

async function get(sim, path, headers = DEMO) {
  const r = await fetch(`${sim.url}/api/v1.0/${path}`, { headers });
  const text = await r.text();
  return { status: r.status, text, body: text ? JSON.parse(text) : undefined };
}

/** Every page of the inventory by keyset: [page sizes], terminals. */
async function walk(sim, pageSize, headers = DEMO) {
  const sizes = [];
  const all = [];
  let since;
  for (let i = 0; i < 1000; i++) {
    const q = `info/terminals?PageSize=${pageSize}${since ? `&SinceID=${since}` : ''}`;
    const r = await get(sim, q, headers);
    assert.equal(r.status, 200);
    assert.equal(r.body.ErrorID, 0);
    assert.ok(!('More' in r.body), 'no More: keyset paging');
    sizes.push(r.body.Terminals.length);
    if (!r.body.Terminals.length) break;
    all.push(...r.body.Terminals);
    since = r.body.Terminals[r.body.Terminals.length - 1].PrimeID;
  }
  return { sizes, all };
}

describe('the simulator: info/* (inventory, one terminal, service, broadcast, subaccounts)', function () {
  let sim;
  afterEach(async () => sim && (await sim.close()));

  it('pages 2,500 terminals by keyset: 3 pages in PrimeID order, SinceID exclusive, then an empty page', async function () {
    sim = await startSimulator({ terminal: NO_LIMITS, fleet: { size: 2500 } });
    const { sizes, all } = await walk(sim, 1000);
    assert.deepEqual(sizes, [1000, 1000, 500, 0]);
    const ids = all.map((t) => t.PrimeID);
    assert.equal(new Set(ids).size, 2500, 'each terminal once');
    assert.deepEqual(ids, [...ids].sort(), 'in PrimeID order');
    assert.equal(ids[0], '01000001SKYA001', "the simulator's own terminals come first");
    // SinceID is exclusive: the page after terminal k starts at terminal k + 1.
    const r = await get(sim, `info/terminals?PageSize=2&SinceID=${ids[9]}`);
    assert.deepEqual(r.body.Terminals.map((t) => t.PrimeID), [ids[10], ids[11]]);
    // Without PageSize: 1000.
    assert.equal((await get(sim, 'info/terminals')).body.Terminals.length, 1000);
    // The end of the list as the option says: an empty page (default), Terminals null, or none.
    const last = ids[ids.length - 1];
    assert.deepEqual((await get(sim, `info/terminals?SinceID=${last}`)).body, { ErrorID: 0, Terminals: [] });
    sim.terminal.configure({ inventoryEnd: 'null' });
    assert.deepEqual((await get(sim, `info/terminals?SinceID=${last}`)).body, { ErrorID: 0, Terminals: null });
    sim.terminal.configure({ inventoryEnd: 'missing' });
    assert.deepEqual((await get(sim, `info/terminals?SinceID=${last}`)).body, { ErrorID: 0 });
  });

  it('a fleet that looks real: both networks, several regions and modes, some never registered, int64 registration IDs', async function () {
    sim = await startSimulator({ terminal: NO_LIMITS });
    const { all } = await walk(sim, 1000);
    assert.equal(all.length, 3000, 'a few thousand terminals by default');
    const fields = ['PrimeID', 'UnitID', 'Description', 'LastRegistrationUTC', 'LastRegistrationMessageID', 'LastRegionName', 'LastSatelliteNetwork', 'LastOperationMode', 'TerminalWakeupPeriod', 'MTSN', 'IMEI', 'MEID', 'MAC', 'PairedTerminalPrimeID', 'IsRegistered', 'LastCellAccessUTC', 'UpdateUTC'];
    for (const t of all.slice(0, 50)) assert.deepEqual(Object.keys(t).sort(), [...fields].sort());
    assert.deepEqual(new Set(all.map((t) => t.LastSatelliteNetwork)), new Set([0, 1]));
    const regions = new Set(all.map((t) => t.LastRegionName).filter(Boolean));
    assert.ok(regions.size >= 5 && regions.has('AMERRB16') && regions.has('EMEARB5'), [...regions].join());
    assert.deepEqual(new Set(all.map((t) => t.LastOperationMode)), new Set([0, 1, 2, 3]));
    assert.ok(all.filter((t) => t.LastSatelliteNetwork === 0).every((t) => t.LastOperationMode <= 1), 'modes 2 and 3 on OGx only');
    const never = all.filter((t) => t.IsRegistered !== 1);
    assert.ok(never.length >= 50, `${never.length} never registered`);
    assert.ok(never.every((t) => (t.IsRegistered === null || t.IsRegistered === 0) && t.LastRegistrationUTC === null));
    assert.ok(never.some((t) => t.IsRegistered === null) && never.some((t) => t.IsRegistered === 0));
    assert.ok(all.every((t) => /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/.test(t.UpdateUTC)));
    // Beyond 2^53 the JSON number is exact on the wire (JSON.parse would round it: read the text).
    const r = await get(sim, 'info/terminals?PageSize=1000');
    const big = [...r.text.matchAll(/"LastRegistrationMessageID":(\d+)/g)].map((m) => BigInt(m[1])).filter((n) => n > 2n ** 53n);
    assert.ok(big.length >= 20, `${big.length} IDs beyond 2^53`);
    assert.ok(big.some((n) => n % 2n === 1n), 'odd ones too: not a double');
    // The same fleet every time (seeded).
    const again = await startSimulator({ terminal: NO_LIMITS });
    try {
      const a = (await get(again, 'info/terminals?PageSize=5')).body.Terminals;
      assert.deepEqual(a.map((t) => [t.PrimeID, t.Description, t.LastRegionName]), all.slice(0, 5).map((t) => [t.PrimeID, t.Description, t.LastRegionName]));
    } finally {
      await again.close();
    }
  });

  it('refuses PageSize over 1000, below 1 or not a number with an ErrorID of the catalogue, and no Terminals', async function () {
    sim = await startSimulator({ terminal: NO_LIMITS, fleet: { size: 100 } });
    const names = new Map((await get(sim, 'info/service?GetErrorCodes=true')).body.ErrorCodes.map((e) => [e.ID, e.Name]));
    for (const bad of ['1001', '0', '-5', 'abc', '10.5']) {
      const r = await get(sim, `info/terminals?PageSize=${bad}`);
      assert.equal(r.status, 200, bad);
      assert.ok(r.body.ErrorID > 0, bad);
      assert.ok(names.has(r.body.ErrorID), `ErrorID ${r.body.ErrorID} is in the catalogue`);
      assert.equal(r.body.Terminals ?? null, null, bad);
    }
    assert.equal((await get(sim, 'info/terminals?PageSize=1000')).body.Terminals.length, 100);
  });

  it('one terminal by PrimeID; an unknown one: a non-zero ErrorID and no Terminal', async function () {
    sim = await startSimulator({ terminal: NO_LIMITS, fleet: { size: 2500 } });
    const page = (await get(sim, 'info/terminals?PageSize=1000&SinceID=01000100SKY0000')).body.Terminals;
    const t = page[17];
    const one = await get(sim, `info/terminal?PrimeID=${t.PrimeID}`);
    assert.deepEqual(one.body, { ErrorID: 0, Terminal: t });
    for (const unknown of ['01999999SKY0000', 'nope']) {
      const r = await get(sim, `info/terminal?PrimeID=${unknown}`);
      assert.equal(r.status, 200);
      assert.ok(r.body.ErrorID > 0);
      assert.ok(!('Terminal' in r.body));
    }
  });

  it('a terminal added by hand joins the inventory in PrimeID order and the updates feed', async function () {
    sim = await startSimulator({ terminal: { ...NO_LIMITS, acceptUnknownTerminals: true }, fleet: { size: 1500 } });
    const added = await fetch(`${sim.url}/_sim/terminals`, { method: 'POST', body: JSON.stringify({ terminals: [{ id: '05000001SKYC001', family: 'OGx' }, { id: '01000000SKY0000' }] }) });
    assert.equal(added.status, 200);
    // And an unknown destination accepted as a terminal.
    const sent = await fetch(`${sim.url}/api/v1.0/terminal/mode`, { method: 'POST', headers: { ...DEMO, 'content-type': 'application/json' }, body: JSON.stringify([{ DestinationID: '01000777SKY0777', Mode: 0 }]) });
    assert.equal((await sent.json()).Submissions[0].ErrorID, 0);
    const { sizes, all } = await walk(sim, 1000);
    assert.deepEqual(sizes, [1000, 503, 0]);
    const ids = all.map((t) => t.PrimeID);
    assert.deepEqual(ids, [...ids].sort());
    assert.equal(ids[0], '01000000SKY0000');
    assert.equal(ids[ids.length - 1], '05000001SKYC001');
    assert.ok(ids.includes('01000777SKY0777'));
    const one = (await get(sim, 'info/terminal?PrimeID=05000001SKYC001')).body.Terminal;
    assert.equal(one.LastSatelliteNetwork, 1);
    assert.equal(one.IsRegistered, 1);
    const u = (await get(sim, `info/terminal_updates?FromUTC=${encodeURIComponent(one.UpdateUTC)}`)).body.Terminals.map((t) => t.PrimeID);
    assert.ok(u.includes('05000001SKYC001') && u.includes('01000000SKY0000'));
  });

  it('serves a 100,000-terminal fleet page by page (each terminal once, an empty page at the end)', async function () {
    sim = await startSimulator({ terminal: NO_LIMITS, fleet: { size: 100_000 } });
    const { sizes, all } = await walk(sim, 1000);
    assert.equal(sizes.length, 101);
    assert.equal(sizes[100], 0);
    assert.equal(all.length, 100_000);
    assert.equal(new Set(all.map((t) => t.PrimeID)).size, 100_000);
  });

  it('a subaccount sees its own terminals; the super account sees them too', async function () {
    sim = await startSimulator({ terminal: NO_LIMITS, fleet: { size: 2500 } });
    const demo = (await walk(sim, 1000)).all;
    const sub = (await walk(sim, 1000, SUB)).all;
    assert.ok(sub.length > 100 && sub.length < 500, `${sub.length} of the subaccount`);
    const demoIds = new Set(demo.map((t) => t.PrimeID));
    assert.ok(sub.every((t) => demoIds.has(t.PrimeID)));
    const notSub = demo.find((t) => !sub.some((s) => s.PrimeID === t.PrimeID));
    assert.ok((await get(sim, `info/terminal?PrimeID=${notSub.PrimeID}`, SUB)).body.ErrorID > 0, "another account's terminal is unknown");
  });

  it('info/service: version and server time; the catalogue, with names the package does not carry, only when asked', async function () {
    sim = await startSimulator({ terminal: NO_LIMITS, fleet: { size: 10 } });
    const plain = (await get(sim, 'info/service')).body;
    assert.equal(plain.ErrorID, 0);
    assert.equal(typeof plain.Version, 'string');
    assert.match(plain.ServerUTC, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    assert.ok(!('ErrorCodes' in plain));
    const full = (await get(sim, 'info/service?GetErrorCodes=true')).body;
    const e = full.ErrorCodes.find((c) => c.ID === 21786);
    assert.ok(e && e.Name && e.Description, 'ErrorID 21786 has a name and a description');
    assert.ok(full.ErrorCodes.every((c) => Number.isInteger(c.ID) && typeof c.Name === 'string'));
  });

  it('info/broadcast and info/subaccount/list in both forms; 403 for an account that is not a super account', async function () {
    sim = await startSimulator({ terminal: NO_LIMITS, fleet: { size: 10 } });
    const b = (await get(sim, 'info/broadcast')).body;
    assert.equal(b.ErrorID, 0);
    assert.ok(b.BroadcastIDs.some((x) => x.ID === '12345678GRPAB12' && typeof x.Description === 'string' && typeof x.SatelliteNetwork === 'number'));
    assert.ok(b.BroadcastIDs.every((x) => /^\d{8}GRP[0-9A-Z]{4}$/.test(x.ID)));
    const s = (await get(sim, 'info/subaccount/list')).body;
    assert.deepEqual(s, { ErrorID: 0, Subaccounts: [{ AccountID: 10002, AccountName: 'sub' }] });
    assert.equal((await get(sim, 'info/subaccount/list', SUB)).status, 403);
    // Whether an account is a super account is per account.
    const off = await fetch(`${sim.url}/_sim/account`, { method: 'POST', body: JSON.stringify({ clientId: 'demo', superAccount: false }) });
    assert.equal(off.status, 200);
    assert.equal((await get(sim, 'info/subaccount/list')).status, 403);
    assert.equal((await get(sim, 'get/subaccounts/re_messages?FromUTC=2020-01-01%2000:00:00')).status, 403);
    await fetch(`${sim.url}/_sim/account`, { method: 'POST', body: JSON.stringify({ clientId: 'demo', superAccount: true }) });
    sim.terminal.configure({ infoForm: 'predecessor' });
    assert.ok(Array.isArray((await get(sim, 'info/broadcast')).body.BroadcastInfos));
    assert.deepEqual((await get(sim, 'info/subaccount/list')).body.Subaccounts, [{ AccountID: '10002', Name: 'sub' }]);
  });

  it('counts info/* in their own INFO group, throttled like the others (429, or 200 + ErrorID)', async function () {
    sim = await startSimulator({ terminal: { rateLimitCalls: 2, rateLimitWindowMs: 60_000, maxConcurrent: 0 }, fleet: { size: 10 } });
    const calls = ['info/terminals', 'info/service', 'info/broadcast'];
    const statuses = [];
    for (const c of calls) statuses.push((await get(sim, c)).status);
    assert.deepEqual(statuses, [200, 200, 429]);
    const r = await get(sim, 'info/terminal?PrimeID=01000001SKYA001');
    assert.equal(r.status, 429);
    assert.ok([24579, 24581].includes(r.body.ErrorID));
    assert.equal((await get(sim, 'get/re_messages?FromUTC=2020-01-01%2000:00:00')).status, 200, 'GET is another group');
    sim.terminal.configure({ throttleAs: 'errorId', rateLimitCalls: 1 });
    assert.equal((await get(sim, 'info/service')).status, 200);
    const t = await get(sim, 'info/service');
    assert.equal(t.status, 200);
    assert.equal(t.body.ErrorID, 24581);
  });
});
