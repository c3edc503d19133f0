'use strict';
/**
 * Outbox reconciliation (issue 45, real-services.md "Outbox reconciliation"), against the
 * simulator over loopback: a send whose reply was lost after it arrived is found with the
 * gateway's ID; one refused before it arrived is not-yet until the gateway's clock (and ours,
 * from the call's end: an attempt's time that errs early, a call that ended late, never cut it
 * short) is past the settle time, then absent;
 * identical entries are told apart by count; 150 entries of one lost call take a few GET calls;
 * mode messages reconcile as the others; lost cancels are read back.
 */
const assert = require('node:assert/strict');
const { waitUntil } = require('../../helpers/wait');
const { startSimulator, formatUtc } = require('../../../dist/simulator');
const { TerminalClient } = require('../../../dist/lib/api/clients');
const { reconcile, reconcileCancels, accountGet, modeEntryBody, isAlreadyClosed, DEFAULT_RECONCILE } = require('../../../dist/lib/outbox/reconcile');

const HEADERS = { authorization: 'Bearer demo-token', 'content-type': 'application/json' };
const DEST = '01000001SKYA001';
const OPTS = { settleSeconds: 30, skewSeconds: 5 };

describe('outbox reconciliation (issue 45)', function () {
  this.timeout(60000);
  let sim;
  let client;
  let api;

  beforeEach(async () => {
    sim = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 }, messages: { maxBatch: 200 } });
    client = new TerminalClient({ baseUrl: sim.url, token: 'demo-token', rateLimitCalls: 0 });
    api = accountGet(client);
  });
  afterEach(async () => {
    await client.close();
    await sim.close();
  });

  /** A send as the outbox would make it: the gateway time a moment before, the entries, the call's outcome. */
  async function lostSend(path, body, entries) {
    const attempt = { sentAfterUtc: formatUtc(Math.floor(sim.terminal.now() / 1000)), startedAt: Date.now(), entries };
    const outcome = await fetch(`${sim.url}/api/v1.0/${path}`, { method: 'POST', headers: HEADERS, body: JSON.stringify(body) }).then(
      (r) => r.status,
      (err) => err.cause?.code ?? err.name,
    );
    return { attempt, outcome };
  }

  /** The gateway's clock (and ours) `sec` seconds ahead. */
  function later(sec) {
    sim.terminal.now = () => Date.now() + sec * 1000;
    return { ...OPTS, now: () => Date.now() + sec * 1000 };
  }

  const raw = (...bytes) => Buffer.from([128, 9, ...bytes]).toString('base64');
  const entry = (key, bytes, destination = DEST) => ({ key, destination, body: { RawPayload: [128, 9, ...bytes] } });

  it('a reply lost after the request arrived: the entry is found with the gateway\'s ID', async function () {
    sim.inject({ route: 'terminal/messages', kind: 'lost-reply' });
    const { attempt, outcome } = await lostSend('submit/messages', [{ DestinationID: DEST, RawPayload: raw(1) }], [entry('a', [1])]);
    assert.notEqual(outcome, 200, 'the client saw no reply');
    const [created] = sim.terminal.creations.list();
    const found = await reconcile(api, attempt, OPTS);
    const a = found.get('a');
    assert.deepEqual([a.state, a.id], ['found', Number(created.ids[0])]);
    assert.ok(a.createUtc >= attempt.sentAfterUtc, `${a.createUtc} is not before the attempt`);
  });

  it('a send refused before it arrived: not-yet before the settle time, absent once the gateway\'s clock is past it', async function () {
    sim.server.link.refuse();
    const { attempt, outcome } = await lostSend('submit/messages', [{ DestinationID: DEST, RawPayload: raw(2) }], [entry('a', [2])]);
    assert.equal(outcome, 'ECONNREFUSED');
    await sim.server.link.up();
    assert.deepEqual((await reconcile(api, attempt, OPTS)).get('a'), { state: 'not-yet' });
    assert.deepEqual((await reconcile(api, attempt, later(60))).get('a'), { state: 'absent' });
    assert.equal(sim.terminal.creations.total, 0);
  });

  it("an attempt's gateway time that errs early never cuts the settle time short: not-yet until our clock is past it too", async function () {
    sim.server.link.refuse();
    const { attempt, outcome } = await lostSend('submit/messages', [{ DestinationID: DEST, RawPayload: raw(9) }], [entry('a', [9])]);
    assert.equal(outcome, 'ECONNREFUSED');
    await sim.server.link.up();
    // The gateway time estimated 40 s early (an info/service call that took that long), and the
    // feed has a record of now: the gateway's clock is past that time by the settle time, ours is not.
    attempt.sentAfterUtc = formatUtc(Math.floor(sim.terminal.now() / 1000) - 40);
    await fetch(`${sim.url}/api/v1.0/submit/messages`, { method: 'POST', headers: HEADERS, body: JSON.stringify([{ DestinationID: DEST, RawPayload: raw(10) }]) });
    assert.deepEqual((await reconcile(api, attempt, OPTS)).get('a'), { state: 'not-yet' });
    assert.deepEqual((await reconcile(api, attempt, later(60))).get('a'), { state: 'absent' });
  });

  it('a send whose call ended a minute after it started (held in the account\'s limiter, a slow link): the settle time counts from the call\'s end', async function () {
    sim.server.link.refuse();
    const { attempt, outcome } = await lostSend('submit/messages', [{ DestinationID: DEST, RawPayload: raw(11) }], [entry('a', [11])]);
    assert.equal(outcome, 'ECONNREFUSED');
    await sim.server.link.up();
    // Started (and its gateway time read) a minute ago, the call ended now without an answer.
    attempt.startedAt = Date.now() - 60_000;
    attempt.sentAfterUtc = formatUtc(Math.floor(sim.terminal.now() / 1000) - 61);
    attempt.endedAt = Date.now();
    await fetch(`${sim.url}/api/v1.0/submit/messages`, { method: 'POST', headers: HEADERS, body: JSON.stringify([{ DestinationID: DEST, RawPayload: raw(12) }]) });
    assert.deepEqual((await reconcile(api, attempt, OPTS)).get('a'), { state: 'not-yet' });
    assert.deepEqual((await reconcile(api, attempt, later(60))).get('a'), { state: 'absent' });
  });

  it('identical entries are told apart by count: one created is one found (the first) and one absent; two created, both found, earliest first', async function () {
    const { attempt } = await lostSend('submit/messages', [{ DestinationID: DEST, RawPayload: raw(3) }], [entry('a', [3]), entry('b', [3])]);
    const one = await reconcile(api, attempt, later(60));
    assert.equal(one.get('a').state, 'found');
    assert.deepEqual(one.get('b'), { state: 'absent' });
    sim.terminal.now = Date.now;
    const { attempt: twice } = await lostSend('submit/messages', [4, 4].map(() => ({ DestinationID: DEST, RawPayload: raw(4) })), [entry('c', [4]), entry('d', [4]), entry('e', [4], '01000003SKYB003')]);
    const two = await reconcile(api, twice, later(60));
    const ids = sim.terminal.creations.list().find((c) => c.RawPayload === raw(4)).ids.map(Number);
    assert.deepEqual([two.get('c').id, two.get('d').id], ids);
    assert.deepEqual(two.get('e'), { state: 'absent' }, 'the same payload to another destination is not a match');
  });

  it('150 entries of one lost call are found with a few GET calls (the feed, then get/fw_messages 100 IDs a call)', async function () {
    sim.inject({ route: 'terminal/messages', kind: 'lost-reply' });
    const items = Array.from({ length: 150 }, (_, i) => ({ DestinationID: DEST, RawPayload: raw(i >> 8, i & 255) }));
    const { attempt } = await lostSend('submit/messages', items, items.map((_, i) => entry(`k${i}`, [i >> 8, i & 255])));
    assert.equal(sim.terminal.creations.total, 150);
    sim.server.clearCalls();
    const found = await reconcile(api, attempt, OPTS);
    const byPayload = new Map(sim.terminal.creations.list().map((c) => [c.RawPayload, Number(c.ids[0])]));
    items.forEach((it, i) => assert.deepEqual([found.get(`k${i}`).state, found.get(`k${i}`).id], ['found', byPayload.get(it.RawPayload)]));
    const gets = sim.server.callsTo().filter((c) => c.method === 'GET');
    assert.equal(gets.filter((c) => c.route === 'terminal/fw_messages').length, 2);
    assert.ok(gets.length <= 4, `GET calls: ${gets.map((c) => c.route).join(', ')}`);
  });

  it('a mode message reconciles as the others (modeEntryBody); a message created before the attempt is no match', async function () {
    await fetch(`${sim.url}/api/v1.0/terminal/mode`, { method: 'POST', headers: HEADERS, body: JSON.stringify([{ DestinationID: DEST, Mode: 1, WakeupInterval: 3 }]) });
    sim.terminal.now = () => Date.now() + 20_000;
    const mode = { key: 'm', destination: DEST, body: modeEntryBody(1, 3) };
    const { attempt } = await lostSend('terminal/mode', [{ DestinationID: DEST, Mode: 1, WakeupInterval: 3 }], [mode]);
    const found = await reconcile(api, attempt, later(80));
    const ids = sim.terminal.creations.list()[0].ids.map(Number);
    assert.equal(ids.length, 2);
    assert.deepEqual([found.get('m').state, found.get('m').id], ['found', ids[1]], 'the later one, not the one made 20 s before the attempt');
  });

  // real-services.md: "many records can share one second, more than a reply holds". A record
  // past a crowded second's first reply cannot be fetched: an entry with no match is unknown.
  it('a crowded second hides a lost send\'s records (simulator crowdStatusRecords): unknown, naming the second, never absent', async function () {
    sim.terminal.configure({ crowdStatusRecords: 600 });
    sim.inject({ route: 'terminal/messages', kind: 'lost-reply' });
    const { attempt, outcome } = await lostSend('submit/messages', [{ DestinationID: DEST, RawPayload: raw(20) }], [entry('a', [20])]);
    assert.notEqual(outcome, 200, 'the client saw no reply');
    const [created] = sim.terminal.creations.list();
    assert.equal(created.count, 1, 'the gateway created it');
    const second = formatUtc(sim.terminal.messages.get(String(created.ids[0])).createSec);
    assert.deepEqual((await reconcile(api, attempt, OPTS)).get('a'), { state: 'not-yet' }, 'before the settle time: not-yet, as ever');
    const a = (await reconcile(api, attempt, later(60))).get('a');
    assert.equal(a.state, 'unknown', `created, its record unread: ${JSON.stringify(a)}`);
    assert.match(a.why, new RegExp(`more than 500 records in ${second}\\b.*whether it was created cannot be told`));
  });

  it('the scan steps one second past a crowded second: a match in a later second is found', async function () {
    const now = Math.floor(sim.terminal.now() / 1000);
    sim.terminal.addStatusRecords(600, now - 2);
    sim.inject({ route: 'terminal/messages', kind: 'lost-reply' });
    const { attempt } = await lostSend('submit/messages', [{ DestinationID: DEST, RawPayload: raw(21) }], [entry('a', [21])]);
    const [created] = sim.terminal.creations.list();
    const a = (await reconcile(api, attempt, later(60))).get('a');
    assert.deepEqual([a.state, a.id], ['found', Number(created.ids[0])]);
  });

  it('a scan cut at maxPages before the settle point: unknown; a crowded second past the settle point changes nothing (absent)', async function () {
    sim.server.link.refuse();
    const { attempt, outcome } = await lostSend('submit/messages', [{ DestinationID: DEST, RawPayload: raw(22) }], [entry('a', [22])]);
    assert.equal(outcome, 'ECONNREFUSED');
    await sim.server.link.up();
    const sec = Math.floor(sim.terminal.now() / 1000);
    for (let s = sec - 4; s <= sec + 10; s++) sim.terminal.addStatusRecords(300, s);
    const cut = (await reconcile(api, attempt, { ...later(60), maxPages: 3 })).get('a');
    assert.equal(cut.state, 'unknown', JSON.stringify(cut));
    assert.match(cut.why, /more than 3 replies long before .*whether it was created cannot be told/);
    sim.terminal.addStatusRecords(600, sec + 45);
    assert.deepEqual((await reconcile(api, attempt, { ...later(60), maxPages: 40 })).get('a'), { state: 'absent' }, 'read to the settle point and past it');
    assert.equal(sim.terminal.creations.total, 0);
  });

  it('lost cancels: the messages\' states say cancelled, still open, or closed otherwise; a second cancel cancels nothing', async function () {
    sim.terminal.configure({ receivedAfterMs: 1, sendingAfterMs: 1 });
    const sent = await (await fetch(`${sim.url}/api/v1.0/submit/messages`, { method: 'POST', headers: HEADERS, body: JSON.stringify([{ DestinationID: DEST, RawPayload: raw(9) }]) })).json();
    const delivered = String(sent.Submissions[0].ID);
    sim.terminal.configure({ receivedAfterMs: 3_600_000, sendingAfterMs: 3_600_000 });
    const open = await (await fetch(`${sim.url}/api/v1.0/submit/messages`, { method: 'POST', headers: HEADERS, body: JSON.stringify([1, 2].map((b) => ({ DestinationID: DEST, RawPayload: raw(10, b) }))) })).json();
    const [cancelled, stillOpen] = open.Submissions.map((s) => String(s.ID));
    sim.inject({ route: 'terminal/cancel', kind: 'lost-reply' });
    await lostSend('submit/cancellations', [cancelled], []);
    const again = await (await fetch(`${sim.url}/api/v1.0/submit/cancellations`, { method: 'POST', headers: HEADERS, body: JSON.stringify([cancelled]) })).json();
    assert.equal(isAlreadyClosed(again.Cancellations[0].ErrorID), true);
    await waitUntil(() => (sim.terminal.tick(), sim.terminal.messages.get(delivered).state === 1), 30000, 'the first message delivered');
    const states = await reconcileCancels(api, [cancelled, stillOpen, delivered, '999999999']);
    assert.deepEqual(Object.fromEntries(states), {
      [cancelled]: { state: 'cancelled' },
      [stillOpen]: { state: 'open', State: 0 },
      [delivered]: { state: 'closed', State: 1 },
      999999999: { state: 'unknown' },
    });
    assert.deepEqual(sim.terminal.creations.describe(false).cancelledTwice, []);
    assert.deepEqual(DEFAULT_RECONCILE, OPTS);
  });
});
