'use strict';
/**
 * The typed clients (src/lib/api/clients, exported by the package main) from plain Node.js
 * against the simulator: the example script in a child `node` without Node-RED, exact int64
 * IDs above 2^53, BAD_INPUT before any request, the 429 path with the simulator's limits on,
 * and close().
 */
const assert = require('node:assert/strict');
const { execFile } = require('node:child_process');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..', '..');
const pkg = require(ROOT);
const { refused } = require('../../helpers/clients');
const { startSimulator, TerminalClient, BrokerClient, AppClient } = pkg;

const DEST = '01000001SKYA001';
const ABOVE_2_53 = '9007199254740993'; // 2^53 + 1: not a JS number

/** Runs `code` in a child `node` (no Node-RED, no mocha); resolves with {code, stdout, stderr}. */
function runNode(code) {
  return new Promise((resolve) => {
    execFile(process.execPath, ['-e', code], { cwd: ROOT, timeout: 60000 }, (err, stdout, stderr) => resolve({ code: err ? err.code ?? 1 : 0, stdout, stderr }));
  });
}

describe('typed clients from plain Node.js', function () {
  this.timeout(60000);

  it('the example script runs in a plain node process against the simulator, without loading Node-RED', async function () {
    const script = path.join(ROOT, 'examples', 'scripts', 'plain-node.js');
    const probe = `process.on('exit', () => {
      const mods = Object.keys(require.cache);
      process.stdout.write('\\nLOADED ' + JSON.stringify({
        nodeRed: mods.filter((k) => /[\\\\/]node_modules[\\\\/](node-red|@node-red)[\\\\/]/.test(k)),
        undici: mods.some((k) => /[\\\\/]node_modules[\\\\/]undici[\\\\/]/.test(k)),
      }) + '\\n');
    });
    require(${JSON.stringify(script)});`;
    const r = await runNode(probe);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /mode submitted: \{[\s\S]*UserMessageID: '9007199254740993'/);
    assert.match(r.stdout, /status updates: \[ '1 SUBMITTED', '2 SUBMITTED' \]/);
    assert.match(r.stdout, /cancelled: \[ '2 CANCELLED' \]/);
    assert.match(r.stdout, /refused before any request: BAD_INPUT items\.DestinationID: required/);
    assert.match(r.stdout, /contracts: \[\s*'1 /);
    assert.match(r.stdout, /devices: \[ '70b3d5e75e000000'/);
    assert.match(r.stdout, /app user: demo@example\.com/);
    const loaded = JSON.parse(/LOADED (.*)/.exec(r.stdout)[1]);
    assert.equal(loaded.undici, true, 'the probe sees the modules the script loaded');
    assert.deepEqual(loaded.nodeRed, [], 'no Node-RED module loaded');
  });

  it('requiring the package or making a client loads neither undici nor zod; a first request loads undici, its first reply zod', async function () {
    const sim = await startSimulator({ port: 0 });
    try {
      const r = await runNode(`
        const has = (m) => Object.keys(require.cache).some((k) => k.includes('/node_modules/' + m + '/'));
        const pkg = require('.');
        const out = [has('undici'), has('zod')];
        const c = new pkg.TerminalClient({ baseUrl: 'http://127.0.0.1:9', token: 't', maxRetries: 0 });
        out.push(has('undici'), has('zod'));
        const ok = new pkg.TerminalClient({ baseUrl: ${JSON.stringify(sim.url)}, clientId: 'demo', clientSecret: 'demo-secret' });
        (async () => {
          // Connection refused: a request made, no reply to check.
          await c.statusUpdates('2024-01-01 00:00:00').catch(() => {});
          out.push(has('undici'), has('zod'));
          // A reply, checked.
          const page = await ok.statusUpdates('2024-01-01 00:00:00');
          out.push(Array.isArray(page.records), has('zod'));
        })().finally(() => { console.log(JSON.stringify(out)); return Promise.all([c.close(), ok.close()]); });`);
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(JSON.parse(r.stdout.trim()), [false, false, false, false, true, false, true, true]);
    } finally {
      await sim.close();
    }
  });

  describe('against the simulator', function () {
    let sim;
    const open = [];
    const make = (Client, opts) => {
      const c = new Client(opts);
      open.push(c);
      return c;
    };
    const terminals = (opts = {}) => make(TerminalClient, { baseUrl: sim.url, clientId: 'demo', clientSecret: 'demo-secret', rateLimitCalls: 0, timeoutMs: 10000, ...opts });
    const broker = () => make(BrokerClient, { baseUrl: sim.url, clientId: 'sim-client', accessToken: 'sim-access-token' });
    const app = () => make(AppClient, { baseUrl: sim.appUrl, token: 'app-demo-token', rateLimitCalls: 0 });

    async function start(terminal = { rateLimitCalls: 0, maxConcurrent: 0 }) {
      sim = await startSimulator({ port: 0, terminal });
    }
    afterEach(async function () {
      await Promise.all(open.splice(0).map((c) => c.close()));
      await sim?.close();
      sim = undefined;
    });

    it('keeps int64 IDs above 2^53 exact through submit, the status feed and cancel', async function () {
      await start();
      sim.terminal.setNextId(ABOVE_2_53);
      const t = terminals();
      const [res] = await t.submitModes({ DestinationID: DEST, Mode: 1, WakeupInterval: 2, UserMessageID: 2n ** 60n });
      assert.equal(res.ID, ABOVE_2_53);
      assert.equal(res.UserMessageID, String(2n ** 60n));
      assert.equal(res.ErrorID, 0);
      const body = JSON.parse(sim.server.callsTo('terminal/mode')[0].body);
      assert.deepEqual(body, [{ DestinationID: DEST, Mode: 1, WakeupInterval: 2, UserMessageID: 2 ** 60 }]);
      assert.match(sim.server.callsTo('terminal/mode')[0].body, /"UserMessageID":1152921504606846976\b/, 'sent as an exact JSON integer');

      const page = await t.statusUpdates(new Date(Date.now() - 60_000));
      const rec = page.records.find((r) => r.ID === ABOVE_2_53);
      assert.ok(rec, `the status feed has ${ABOVE_2_53}: ${JSON.stringify(page.records)}`);
      assert.equal(rec.StateName, 'SUBMITTED');
      assert.equal(typeof page.nextFromUtc, 'string');

      const [c] = await t.cancel([res]);
      assert.equal(c.ID, ABOVE_2_53);
      assert.equal(c.CancellationStatusName, 'CANCELLED');
      assert.match(sim.server.callsTo('terminal/cancel')[0].body, /^\[9007199254740993\]$/);
    });

    it('names rejected items, sends general messages and reads from-mobile messages', async function () {
      await start();
      const t = terminals();
      const out = await t.submitModes([{ DestinationID: DEST, Mode: 2 }, { DestinationID: '99999999SKYZZZZ' }]);
      assert.deepEqual(out.map((r) => r.ErrorName), ['MODE_NOT_SUPPORTED', 'INVALID_DESTINATION']);
      const [sent] = await t.submitMessages({ DestinationID: DEST, RawPayload: [128, 1, 7] }, { messageClass: 2 });
      assert.equal(sent.ErrorID, 0);
      assert.deepEqual(JSON.parse(sim.server.callsTo('terminal/messages')[0].body), [{ DestinationID: DEST, RawPayload: Buffer.from([128, 1, 7]).toString('base64'), MessageClass: 2 }]);
      const msgs = await t.messages('2000-01-01 00:00:00');
      assert.ok(Array.isArray(msgs.records));
      assert.match(sim.server.callsTo('terminal/re_messages')[0].query, /IncludeRawPayload=true/);
    });

    it('refuses bad input with BAD_INPUT naming the field, before any request (no token either)', async function () {
      await start();
      const t = terminals();
      let e = await refused(t.submitModes([{ DestinationID: DEST }, { DestinationID: '', Mode: 7 }]), 'BAD_INPUT');
      assert.equal(e.field, 'items[1].DestinationID');
      assert.match(e.message, /items\[1\]\.Mode: must be an integer 0 to 3/);
      await refused(t.submitModes({ DestinationID: DEST, Mode: 2 }, { family: 'IDP' }), 'BAD_INPUT');
      e = await refused(t.cancel([]), 'BAD_INPUT');
      assert.equal(e.field, 'ids');
      e = await refused(t.cancel(['12', 2 ** 53 + 2]), 'BAD_INPUT');
      assert.match(e.message, /ids\[1\]: the message ID is above 2\^53/);
      e = await refused(t.statusUpdates('yesterday'), 'BAD_INPUT');
      assert.equal(e.field, 'fromUtc');
      await refused(t.submitMessages({ DestinationID: DEST, RawPayload: [1] }), 'BAD_INPUT');
      const b = broker();
      e = await refused(b.removeReferral('abc'), 'BAD_INPUT');
      assert.equal(e.field, 'id');
      e = await refused(b.createContract({ customerId: -1, planDesc: '' }), 'BAD_INPUT');
      assert.match(e.message, /body\.customerId: must be positive; body\.planDesc: must not be empty/);
      await refused(b.devices({ devEui: 'xyz' }), 'BAD_INPUT');
      const a = app();
      e = await refused(a.tags({ page: 0 }), 'BAD_INPUT');
      assert.equal(e.field, 'page');
      e = await refused(a.tags({ search: 'app-demo-token' }), 'BAD_INPUT');
      assert.match(e.message, /never in a URL/);
      assert.deepEqual(sim.server.callsTo().filter((c) => !c.path.startsWith('/_sim')), [], 'no request left');
      // Options are checked when the client is made.
      assert.throws(() => new TerminalClient({ baseUrl: sim.url }), (err) => err.code === 'BAD_INPUT' && err.field === 'credentials');
      assert.throws(() => new TerminalClient({ baseUrl: 'ftp://x', token: 't' }), (err) => err.code === 'BAD_INPUT');
      assert.throws(() => new BrokerClient({ baseUrl: sim.url, clientId: 'c' }), (err) => err.code === 'BAD_INPUT' && err.field === 'credentials');
      assert.throws(() => new AppClient({ baseUrl: sim.appUrl, token: 't', rateLimitCalls: -1 }), (err) => err.code === 'BAD_INPUT' && err.field === 'rateLimitCalls');
    });

    it('waits out a 429 of the simulator\'s limits and retries; with no retries left it is RATE_LIMITED', async function () {
      await start({ rateLimitCalls: 2, rateLimitWindowMs: 3000, maxConcurrent: 0, retryAfter: true });
      // The client does not pace itself (rateLimitCalls 0): the third GET in the window meets the simulator's 429.
      const t = terminals({ rateLimitCalls: 0 });
      const from = '2000-01-01 00:00:00';
      const pages = await Promise.all([t.statusUpdates(from), t.statusUpdates(from), t.statusUpdates(from)]);
      assert.equal(pages.length, 3);
      const statuses = sim.server.callsTo('terminal/status').map((c) => c.status);
      assert.ok(statuses.includes(429), `a 429 was met: ${statuses}`);
      assert.equal(statuses.filter((s) => s === 200).length, 3, `three replies in the end: ${statuses}`);
      assert.ok(t.client().stats.rateLimited >= 1);

      const strict = terminals({ rateLimitCalls: 0, maxRetries: 0 });
      const results = await Promise.allSettled([1, 2, 3, 4].map(() => strict.statusUpdates(from)));
      const failed = results.filter((r) => r.status === 'rejected');
      assert.ok(failed.length >= 1, 'a call meets the limit');
      for (const f of failed) assert.equal(f.reason.code, 'RATE_LIMITED', f.reason.message);
    });

    it('broker and app: contracts, a contract created, devices without session keys, SMS, user, tags and tag config', async function () {
      await start();
      const b = broker();
      const before = await b.listContracts({ pageSize: 2 });
      assert.equal(before.length, 2);
      assert.equal(typeof before[0].id, 'number');
      const made = await b.createContract({ customerId: 3, planDesc: 'client test', monthlyFee: '0.10' });
      assert.equal(typeof made.message, 'string');
      const page = await b.devices({ page: 1, pageSize: 2 });
      assert.equal(page.content.length, 2);
      for (const d of page.content) for (const k of Object.keys(d)) assert.ok(!/^(nwkskey|appskey)$/i.test(k), `no session key: ${k}`);
      const sms = await b.smsRequest(1);
      assert.equal(typeof sms.pendingCount, 'number');
      assert.match(sim.server.callsTo('sms/request')[0].query, /[?&]id=1$/);

      const a = app();
      const user = await a.user();
      assert.equal(user.email, 'demo@example.com');
      const tags = await a.tags({ pageSize: 2 });
      assert.ok(Array.isArray(tags.items));
      assert.match(sim.server.callsTo('app/tags')[0].query, /per_page=2/);
      const conf = await a.tagConfig({ tagId: tags.items[0].id });
      assert.equal(conf.tag_id, tags.items[0].id);
      assert.match(sim.server.callsTo('app/tag-config')[0].query, /tag_id=/);
    });

    it('close() ends the client: a later call is refused without a request', async function () {
      await start();
      const t = terminals();
      await t.statusUpdates('2000-01-01 00:00:00');
      const n = sim.server.callsTo().length;
      await t.close();
      await refused(t.statusUpdates('2000-01-01 00:00:00'), 'BAD_INPUT');
      assert.equal(sim.server.callsTo().length, n);
    });
  });
});
