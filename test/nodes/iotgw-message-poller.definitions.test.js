'use strict';
/** iotgw-message-poller with definitions, against the strict simulator: RawPayload-only messages decoded, none dropped or repeated. */
const assert = require('node:assert/strict');
const { simulatorPerTest, load, until, collect, recordWarnings, messagePollerNode, nodeFlow } = require('../helpers/harness');
const { definitionsNode, demoText, messageFile, nestedBooleans } = require('../helpers/codec');

describe('iotgw-message-poller with definitions', function () {
  let sim;
  simulatorPerTest({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 } }, (s) => (sim = s));

  const flow = (props = {}, defs = {}) => nodeFlow(sim, messagePollerNode({ definitions: 'defs', ...props }), { extra: [definitionsNode(defs)] });

  it('1,000 RawPayload-only messages: 1,000 decoded, none repeated; an undefined SIN/MIN passes undecoded with one warning', async function () {
    const now = Math.floor(Date.now() / 1000);
    sim.terminal.mobile.seed({ count: 1000, perSecond: 50, startSec: now - 100, kind: 'telemetry' });
    // Position and sensor reports (SIN 128) without their Payload: not in the example file.
    sim.terminal.mobile.configure({ omit: 'payload' });
    sim.terminal.mobile.seed({ count: 6, perSecond: 6, startSec: now - 50 });
    const n = await load(flow());
    const warns = recordWarnings(n.get('poller'));
    const out = collect(n.get('out'));
    await until(() => out.length >= 1006, 15000, '1,006 messages');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(out.length, 1006);
    const ids = out.map((m) => String(m.payload.ID));
    assert.equal(new Set(ids).size, 1006, 'no repeats');
    const telemetry = out.filter((m) => m.payload.SIN === 255);
    assert.equal(telemetry.length, 1000);
    for (const m of telemetry) {
      assert.equal(m.payload.Payload.Name, 'SatelliteTelemetry');
      assert.equal(m.payload.Payload.Fields.length, 10);
      assert.equal(typeof m.fields.latitude, 'number');
      assert.ok(Buffer.isBuffer(m.raw));
    }
    // The simulator's first report: latitude 2722878 + 0, longitude -4543732 - 0, temperature 0 - 10.
    const first = telemetry.find((m) => m.fields.latitude === 2722878);
    assert.equal(first.fields.longitude, -4543732);
    assert.equal(first.fields.temperature, -10);
    const others = out.filter((m) => m.payload.SIN === 128);
    assert.equal(others.length, 6);
    for (const m of others) {
      assert.equal(m.payload.Payload, undefined, 'emitted as before, undecoded');
      assert.equal(m.fields, undefined);
      assert.ok(Buffer.isBuffer(m.raw));
    }
    assert.deepEqual(warns.filter((w) => /SIN 128 MIN [12]: not in the message definitions/.test(w)).length, 2, 'one warning per SIN/MIN');
  });

  it('bytes that do not decode: emitted undecoded with a warning, never dropped', async function () {
    const now = Math.floor(Date.now() / 1000);
    const t = [...sim.terminal.terminals.values()][0];
    sim.terminal.mobile.add({ sec: now - 5, MobileID: t.id, account: t.account, SIN: 255, MIN: 1, name: 'x', fields: [], raw: Buffer.from([255, 1, 1, 2]), region: 'AORWSC', transport: 1, rawOnly: true });
    sim.terminal.mobile.seed({ count: 1, perSecond: 1, startSec: now - 4, kind: 'telemetry' });
    const n = await load(flow());
    const warns = recordWarnings(n.get('poller'));
    const out = collect(n.get('out'));
    await until(() => out.length === 2);
    assert.equal(out[0].payload.Payload, undefined);
    assert.deepEqual([...out[0].raw], [255, 1, 1, 2]);
    assert.equal(out[1].payload.Payload.Name, 'SatelliteTelemetry');
    assert.equal(warns.length, 1);
    assert.match(warns[0], /emitted undecoded: SatelliteTelemetry\.timestamp: the bytes end inside this field \(at bit 16 it needs 31 bits; 16 are left\)/);
  });

  /** A RawPayload-only message of `raw` bytes, `sec` seconds since the epoch, from the first terminal. */
  const addRaw = (sec, raw) => {
    const t = [...sim.terminal.terminals.values()][0];
    sim.terminal.mobile.add({ sec, MobileID: t.id, account: t.account, SIN: raw[0], MIN: raw[1], name: 'x', fields: [], raw, region: 'AORWSC', transport: 1, rawOnly: true });
  };
  const twoMegabytes = () => Buffer.concat([Buffer.from([200, 1]), Buffer.alloc(2 * 1024 * 1024 - 2, 0xff)]);

  it('a 2 MB RawPayload: BAD_RESPONSE warning, emitted undecoded before decoding; Node-RED up, RSS bounded, the next records decoded', async function () {
    const now = Math.floor(Date.now() / 1000);
    addRaw(now - 6, twoMegabytes());
    addRaw(now - 5, Buffer.from([200, 1, 1, 1, 0x80]));
    sim.terminal.mobile.seed({ count: 3, perSecond: 3, startSec: now - 4, kind: 'telemetry' });
    // The example's services and a service holding the nested layout (Sizes small enough to load).
    const nested = messageFile(nestedBooleans(90)).match(/<Service>.*<\/Service>/)[0];
    const rss = process.memoryUsage().rss;
    const n = await load(flow({}, { xml: demoText().replace('</Services>', `${nested}</Services>`) }));
    const warns = recordWarnings(n.get('poller'));
    const out = collect(n.get('out'));
    await until(() => out.length === 5, 20000, '5 messages');
    assert.equal(out[0].payload.Payload, undefined, 'emitted undecoded');
    assert.equal(out[0].fields, undefined);
    assert.equal(out[0].raw.length, 2 * 1024 * 1024, 'as received');
    assert.deepEqual(out[1].fields, { outer: [{ inner: [{ b: true }] }] });
    assert.deepEqual(out.slice(2).map((m) => m.payload.Payload.Name), ['SatelliteTelemetry', 'SatelliteTelemetry', 'SatelliteTelemetry']);
    assert.equal(warns.length, 1);
    assert.match(warns[0], /^BAD_RESPONSE: from-mobile message \d+: emitted undecoded: RawPayload is 2097152 bytes, more than the largest from-mobile message \(6400 bytes, the definitions' setting\); not decoded$/);
    assert.ok(process.memoryUsage().rss - rss < 150 * 1024 * 1024, `RSS grew ${Math.round((process.memoryUsage().rss - rss) / 1048576)} MB`);
  });

  it("the issue's layout (nested arrays of 32,767 booleans) is refused at deploy: the 2 MB message and the next are emitted undecoded", async function () {
    const now = Math.floor(Date.now() / 1000);
    addRaw(now - 6, twoMegabytes());
    sim.terminal.mobile.seed({ count: 2, perSecond: 2, startSec: now - 5, kind: 'telemetry' });
    const rss = process.memoryUsage().rss;
    const n = await load(flow({}, { xml: messageFile(nestedBooleans()) }));
    const warns = recordWarnings(n.get('poller'));
    const out = collect(n.get('out'));
    await until(() => out.length === 3, 20000, '3 messages');
    assert.ok(out.every((m) => m.payload.Payload === undefined && Buffer.isBuffer(m.raw)));
    assert.equal(warns.length, 1);
    assert.match(warns[0], /definitions refused, messages are emitted undecoded: .*Field "outer" > Field "inner": a 6400-byte message could decode into 115,166 values/);
    assert.ok(process.memoryUsage().rss - rss < 150 * 1024 * 1024, `RSS grew ${Math.round((process.memoryUsage().rss - rss) / 1048576)} MB`);
  });

  it('a refused definitions file: messages are emitted undecoded with one warning', async function () {
    const now = Math.floor(Date.now() / 1000);
    sim.terminal.mobile.seed({ count: 3, perSecond: 3, startSec: now - 5, kind: 'telemetry' });
    const n = await load(flow({}, { xml: '<nope' }));
    const warns = recordWarnings(n.get('poller'));
    const out = collect(n.get('out'));
    await until(() => out.length === 3);
    assert.ok(out.every((m) => m.payload.Payload === undefined && Buffer.isBuffer(m.raw)));
    assert.equal(warns.filter((w) => w.includes('definitions refused')).length, 1);
  });
});
