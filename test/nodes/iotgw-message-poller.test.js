'use strict';
const assert = require('node:assert/strict');
const { simulatorPerTest, helper, gatewayNode, load, until, collect, recordWarnings, messagePollerNode, nodeFlow, catchAll } = require('../helpers/harness');

const utc = (sec) => new Date(sec * 1000).toISOString().slice(0, 19).replace('T', ' ');

describe('iotgw-message-poller: from-mobile messages', function () {
  let sim;
  simulatorPerTest({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 } }, (s) => (sim = s));

  const poller = messagePollerNode;
  const flow = (props) => nodeFlow(sim, poller(props));

  it('2,000 messages with 600 in one second: each fetchable one emitted once, the crowded second said clearly, no loop', async function () {
    const now = Math.floor(Date.now() / 1000);
    const base = now - 400;
    sim.terminal.mobile.seed({ count: 1400, perSecond: 10, startSec: base });
    sim.terminal.mobile.seed({ count: 600, perSecond: 600, startSec: base + 140 });
    const ids = sim.terminal.mobile.fromMobile.items.map((m) => String(m.ID));
    const crowded = sim.terminal.mobile.fromMobile.items.filter((m) => m.sec === base + 140).map((m) => String(m.ID));
    assert.equal(ids.length, 2000);
    const n = await load(flow({ startFrom: utc(base) }));
    const warns = recordWarnings(n.get('poller'));
    const out = collect(n.get('out'));
    await until(() => out.length >= 1900, 15000, '1,900 messages');
    await new Promise((r) => setTimeout(r, 500));
    const got = out.map((m) => String(m.payload.ID));
    assert.equal(new Set(got).size, got.length, 'none emitted twice');
    const missing = ids.filter((id) => !got.includes(id));
    // The real service serves at most 500 of one second: the other 100 cannot be fetched.
    assert.deepEqual(missing, crowded.slice(500), 'only the unreachable tail of the crowded second is missing');
    assert.equal(warns.filter((w) => w.includes(utc(base + 140)) && w.includes('500')).length, 1, 'one warning names the crowded second');
    const calls = sim.server.callsTo('terminal/re_messages').length;
    assert.ok(calls <= 8, `${calls} calls: no loop on the crowded second`);
  });

  it('one msg per message: topic MobileID, exact int64 ID, raw Buffer, fields decoded for every type', async function () {
    sim.terminal.mobile.nextId = 9223372036854775800n;
    const now = Math.floor(Date.now() / 1000);
    sim.terminal.mobile.seed({ count: 2, perSecond: 2, startSec: now - 5 });
    const n = await load(flow());
    const out = collect(n.get('out'));
    await until(() => out.length === 2);
    const [pos, sensor] = out;
    assert.equal(pos.topic, '01000001SKYA001');
    assert.equal(pos.payload.ID, '9223372036854775800', 'above 2^53: an exact decimal string');
    assert.equal(sensor.payload.ID, '9223372036854775801');
    assert.ok(Buffer.isBuffer(pos.raw));
    assert.equal(pos.raw[0], 128);
    assert.equal(pos.raw[1], 1);
    assert.equal(pos.raw.readInt32BE(2), pos.fields.latitude);
    assert.equal(typeof pos.fields.latitude, 'number');
    assert.equal(pos.fields.fixStatus, 'Valid');
    const f = sensor.fields;
    assert.equal(typeof f.battery, 'number', 'unsignedint');
    assert.equal(typeof f.doorOpen, 'boolean', 'boolean');
    assert.equal(typeof f.mode, 'string', 'enum');
    assert.equal(f.label, 'unit A001', 'string');
    assert.ok(Buffer.isBuffer(f.blob), 'data');
    assert.deepEqual(f.temperatures, [{ celsius: 22 }, { celsius: -4 }], 'array of signedint elements');
    assert.deepEqual(f.diagnostics, { resets: 0, ok: true }, 'nested message');
    assert.equal(sim.server.callsTo('terminal/re_messages')[0].query.includes('IncludeRawPayload=true'), true);
  });

  it('filters by SIN and MobileID after the fetch; batch mode sends one msg per reply', async function () {
    sim.terminal.addTerminal({ id: '01000009SKYA009' });
    const now = Math.floor(Date.now() / 1000);
    sim.terminal.mobile.seed({ count: 4, perSecond: 4, startSec: now - 10 });
    sim.terminal.mobile.seed({ count: 4, perSecond: 4, startSec: now - 9, mobileId: '01000009SKYA009' });
    const n = await load(flow({ mobileFilter: ' 01000009skya009 ', output: 'batch' }));
    const out = collect(n.get('out'));
    await until(() => out.length === 1);
    assert.equal(out[0].payload.length, 4);
    assert.ok(out[0].payload.every((m) => m.MobileID === '01000009SKYA009'));
    assert.equal(out[0].raw.length, 4);
    assert.ok(Buffer.isBuffer(out[0].raw[0]));
    assert.equal(out[0].fields.length, 4);
    assert.equal(typeof out[0].nextFromUTC, 'string');
    await helper.unload();
    const n2 = await load(flow({ sinFilter: '19' }));
    const out2 = collect(n2.get('out'));
    await new Promise((r) => setTimeout(r, 800));
    assert.equal(out2.length, 0, 'SIN 19: none of the SIN 128 reports');
    assert.ok(sim.server.callsTo('terminal/re_messages').length >= 2, 'fetched all the same');
  });

  it('a message without RawPayload: msg.raw left out, fields still decoded', async function () {
    sim.terminal.mobile.configure({ omit: 'raw' });
    const now = Math.floor(Date.now() / 1000);
    sim.terminal.mobile.seed({ count: 1, perSecond: 1, startSec: now - 3 });
    const n = await load(flow());
    const out = collect(n.get('out'));
    await until(() => out.length === 1);
    assert.equal('raw' in out[0], false);
    assert.equal(typeof out[0].fields.latitude, 'number');
  });

  it('shares the account GET budget with the status poller: no 429, the second waits for the window', async function () {
    await sim.close();
    const { startSimulator } = require('../../dist/simulator');
    sim = await startSimulator({ terminal: { rateLimitCalls: 2, rateLimitWindowMs: 60000, maxConcurrent: 0 } });
    const now = Math.floor(Date.now() / 1000);
    sim.terminal.mobile.seed({ count: 1200, perSecond: 10, startSec: now - 200 });
    const n = await load([
      gatewayNode(sim, { rateLimitCalls: 2, rateLimitWindowSeconds: 60 }),
      poller({ startFrom: '-1h' }),
      { id: 'status', type: 'iotgw-status-poller', gateway: 'gw', intervalSeconds: 3600, startFrom: '', output: 'batch', contextStore: '', autoStart: true, wires: [[]] },
      { id: 'out', type: 'helper' },
      ...catchAll(),
    ]);
    const out = collect(n.get('out'));
    const getCalls = () => sim.server.callsTo('terminal/re_messages').length + sim.server.callsTo('terminal/status').length;
    await until(() => getCalls() >= 2 && out.length >= 500, 30000, 'both pollers to call and the first reply to come');
    await new Promise((r) => setTimeout(r, 1500)); // time for a third call, were the window not counted
    const gets = getCalls();
    assert.equal(gets, 2, 'two GET-group calls in the window, over both pollers');
    assert.equal(sim.server.calls.filter((c) => c.status === 429).length, 0, 'no 429: the budget is counted before calling');
    assert.ok(out.length >= 500 && out.length < 1200, `${out.length} messages: the rest waits for the window`);
  });

  it('control input: {fromUTC} moves the mark (messages come again from there); bad control input is BAD_INPUT', async function () {
    const now = Math.floor(Date.now() / 1000);
    sim.terminal.mobile.seed({ count: 20, perSecond: 10, startSec: now - 30 });
    const n = await load(flow({ autoStart: false }));
    const out = collect(n.get('out'));
    const caught = collect(n.get('caught'));
    n.get('poller').receive({ payload: 'poll' });
    await until(() => out.length === 20);
    n.get('poller').receive({ payload: 'poll' });
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(out.length, 20, 'a second poll emits nothing again');
    n.get('poller').receive({ payload: { fromUTC: utc(now - 29) } });
    await new Promise((r) => setTimeout(r, 100));
    n.get('poller').receive({ payload: 'poll' });
    await until(() => out.length === 30, 3000, 'the second second again');
    n.get('poller').receive({ payload: { fromUTC: 'yesterday' } });
    await until(() => caught.length === 1);
    assert.equal(caught[0].error.code, 'BAD_INPUT');
    assert.match(caught[0].error.message, /msg\.payload\.fromUTC/);
  });
});
