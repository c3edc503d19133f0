'use strict';
/**
 * iotgw-account-status (nodes.md, "Seeing an account at work") in the real runtime against
 * the simulator: the figures of a burst (used reaches the limit, waiting rises then
 * drains), a 429 in `throttled`, the token and the last error (no credential anywhere),
 * the interval, input msgs keeping their properties, and a missing account.
 */
const assert = require('node:assert/strict');
const { simulatorPerTest, gatewayNode, load, until, collect, catchAll, DEMO_CREDS } = require('../helpers/harness');

const APP_TOKEN = 'app-demo-token';

describe('iotgw-account-status', function () {
  this.timeout(30000);
  let sim;
  simulatorPerTest({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 }, app: { rateLimitCalls: 0 } }, (s) => (sim = s));

  function flow(gwProps = {}, statusProps = {}) {
    return [
      gatewayNode(sim, { maxBatchSize: 1, ...gwProps }),
      { id: 'mode', type: 'iotgw-terminal-mode', gateway: 'gw', mode: 0, wakeupInterval: 0, family: 'any', lingerMs: 0, wires: [['done'], ['done']] },
      { id: 'done', type: 'helper' },
      { id: 'status', type: 'iotgw-account-status', account: 'gw', intervalSeconds: 0, wires: [['out']], ...statusProps },
      { id: 'out', type: 'helper' },
      ...catchAll(),
    ];
  }

  /** One read through the node: sends a msg in and resolves with the msg that comes out. */
  async function read(n, out, extra = {}) {
    const before = out.length;
    n.get('status').receive({ payload: 'now', ...extra });
    await until(() => out.length > before, 5000, 'the status msg');
    return out[before];
  }

  it('a burst shows used reaching the limit and waiting rising, then draining', async function () {
    const n = await load(flow({ rateLimitCalls: 3, rateLimitWindowSeconds: 2 }));
    const out = collect(n.get('out'));
    const done = collect(n.get('done'));
    const caught = collect(n.get('caught'));
    const first = (await read(n, out)).payload;
    assert.deepEqual(first.groups.SEND, { limit: 3, windowSeconds: 2, used: 0, waiting: 0, inFlight: 0, throttled: 0 });
    assert.equal(first.shared, 'local');
    assert.equal(first.account, 'sim');
    for (let i = 0; i < 8; i++) n.get('mode').receive({ payload: { DestinationID: `0100000${i}SKYA00${i}`, Mode: 0 } });
    const seen = [];
    await until(
      async () => {
        seen.push((await read(n, out)).payload.groups.SEND);
        return done.length + caught.length === 8;
      },
      20000,
      'the burst to finish',
    );
    assert.deepEqual(caught.map((m) => m.error), []);
    assert.ok(seen.some((g) => g.used === 3), `used reached the limit of 3: ${JSON.stringify(seen.map((g) => g.used))}`);
    assert.ok(seen.every((g) => g.used <= 3), 'used never passes the limit');
    assert.ok(seen.some((g) => g.waiting > 0), `something waited: ${JSON.stringify(seen.map((g) => g.waiting))}`);
    // Drained: nothing waits or flies once every msg is out; the window empties by itself.
    const after = (await read(n, out)).payload.groups.SEND;
    assert.equal(after.waiting, 0);
    assert.equal(after.inFlight, 0);
    await until(async () => (await read(n, out)).payload.groups.SEND.used === 0, 8000, 'the window to empty');
    assert.equal(sim.server.callsTo('terminal/mode').length, 8);
  });

  it('a 429 shows in throttled; the token is valid; any msg keeps its other properties', async function () {
    // No pacing of ours; the window (1 s) bounds the wait after the 429.
    const n = await load(flow({ rateLimitCalls: 0, rateLimitWindowSeconds: 1 }));
    const out = collect(n.get('out'));
    const done = collect(n.get('done'));
    const none = (await read(n, out)).payload;
    assert.deepEqual(none.token, { state: 'none', expiresInSeconds: null });
    sim.terminal.configure({ throttleNext: 1 });
    n.get('mode').receive({ payload: { DestinationID: '01000001SKYA001', Mode: 0 } });
    await until(() => done.length === 1, 10000, 'the retried call');
    const msg = await read(n, out, { topic: 'dash', keep: { a: 1 } });
    assert.equal(msg.topic, 'dash');
    assert.deepEqual(msg.keep, { a: 1 });
    assert.equal(msg.payload.groups.SEND.throttled, 1);
    assert.equal(msg.payload.groups.GET.throttled, 0);
    assert.equal(msg.payload.groups.SEND.limit, 0, 'no limit set');
    assert.equal(msg.payload.token.state, 'valid');
    assert.ok(msg.payload.token.expiresInSeconds > 0, JSON.stringify(msg.payload.token));
    assert.equal(msg.payload.lastError, null, 'a retried 429 is no failure');
    assert.ok(!Number.isNaN(Date.parse(msg.payload.at)));
  });

  it('a refused login shows as token "failed" and lastError, with no credential in the msg', async function () {
    const n = await load(flow(), { gw: { ...DEMO_CREDS, clientSecret: 'wrong-secret-value' } });
    const out = collect(n.get('out'));
    const caught = collect(n.get('caught'));
    n.get('mode').receive({ payload: { DestinationID: '01000001SKYA001', Mode: 0 } });
    await until(() => caught.some((m) => m.error.source.id === 'mode'), 10000, 'the failed call');
    const p = (await read(n, out)).payload;
    assert.equal(p.token.state, 'failed');
    assert.equal(p.lastError.code, 'UNAUTHORIZED');
    assert.ok(!Number.isNaN(Date.parse(p.lastError.at)));
    const text = JSON.stringify(p);
    for (const secret of ['wrong-secret-value', 'demo-secret', 'sim-access-token']) assert.ok(!text.includes(secret), `${secret} in ${text}`);
  });

  it('emits on its own every intervalSeconds, topic the account name; an app account shows its APP group', async function () {
    const n = await load(
      [
        { id: 'app', type: 'iotgw-app', name: 'platform', baseUrl: sim.appUrl, timeoutSeconds: 5, rateLimitCalls: 4, rateLimitWindowSeconds: 20 },
        { id: 'status', type: 'iotgw-account-status', account: 'app', intervalSeconds: 0.2, wires: [['out']] },
        { id: 'out', type: 'helper' },
      ],
      { app: { authToken: APP_TOKEN } },
    );
    const out = collect(n.get('out'));
    await until(() => out.length >= 2, 5000, 'two msgs on the interval');
    assert.equal(out[0].topic, 'platform');
    assert.deepEqual(Object.keys(out[0].payload.groups), ['APP']);
    assert.equal(out[0].payload.groups.APP.limit, 4);
    assert.deepEqual(out[0].payload.feeds, []);
  });

  it('without an account: a catchable BAD_INPUT naming the field, nothing sent', async function () {
    const n = await load([{ id: 'status', type: 'iotgw-account-status', account: '', intervalSeconds: 0, wires: [['out']] }, { id: 'out', type: 'helper' }, ...catchAll()]);
    const out = collect(n.get('out'));
    const caught = collect(n.get('caught'));
    n.get('status').receive({ payload: 1 });
    await until(() => caught.length === 1, 5000, 'the error');
    assert.equal(caught[0].error.code, 'BAD_INPUT');
    assert.match(caught[0].error.message, /\baccount: no iotgw-gateway or iotgw-app/);
    assert.equal(out.length, 0);
  });
});
