'use strict';
/**
 * The simulator's link faults (issue 45), seen from a plain fetch client over loopback: a
 * refused link (ECONNREFUSED, then the same port again), a black hole (the client times out,
 * nothing handled), a reply lost after the request was handled (a socket error, and the
 * message exists), a held reply (handled, answered later), random windows, and the counts of
 * what was created by destination and payload.
 */
const assert = require('node:assert/strict');
const net = require('node:net');
const { startSimulator } = require('../../dist/simulator');
const { waitUntil } = require('../helpers/wait');

const DEMO = { authorization: 'Bearer demo-token', 'content-type': 'application/json' };
const DEST = '01000001SKYA001';
const RAW = Buffer.from([128, 9, 4, 2]).toString('base64');

async function call(sim, method, path, body, opts = {}) {
  const r = await fetch(`${sim.url}/api/v1.0/${path}`, { method, headers: DEMO, body: body === undefined ? undefined : JSON.stringify(body), ...opts });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : undefined };
}

const send = (sim, raw = RAW, opts) => call(sim, 'POST', 'submit/messages', [{ DestinationID: DEST, RawPayload: raw }], opts);

/** The code of a fetch failure (undici puts the socket's error in `cause`). */
async function failureOf(p) {
  try {
    await p;
  } catch (err) {
    return err.name === 'TimeoutError' ? 'TimeoutError' : (err.cause?.code ?? err.code ?? err.name);
  }
  return 'answered';
}

const control = async (sim, method, path, body) => (await fetch(`${sim.url}/_sim/${path}`, { method, body: body && JSON.stringify(body) })).json();

describe('the simulator: link faults (issue 45)', function () {
  this.timeout(60000);
  let sim;
  afterEach(async () => sim && (await sim.close()));

  it('a refused link: ECONNREFUSED while it lasts, then the same port answers again (in-process and over /_sim/link)', async function () {
    sim = await startSimulator({ terminal: { rateLimitCalls: 0 } });
    const port = sim.server.port;
    assert.equal((await send(sim)).status, 200);
    sim.server.link.refuse();
    assert.equal(await failureOf(send(sim)), 'ECONNREFUSED');
    await sim.server.link.up();
    assert.equal(sim.server.port, port);
    assert.equal((await send(sim)).status, 200);
    // Over the control route: it needs forMs, and ends by itself.
    assert.match((await control(sim, 'POST', 'link', { state: 'refused' })).error, /forMs/);
    await control(sim, 'POST', 'link', { state: 'refused', forMs: 3000 });
    let answered = 2;
    const outcome = async () => {
      const r = await failureOf(send(sim));
      if (r === 'answered') answered++;
      return r;
    };
    await waitUntil(async () => (await outcome()) === 'ECONNREFUSED', 30000, 'the link refused');
    await waitUntil(async () => (await outcome()) === 'answered', 30000, 'the link back on the same port');
    assert.equal(sim.terminal.creations.count(DEST, { RawPayload: RAW }), answered, 'only the calls that got through created a message');
  });

  it('a black hole: the request is read, never handled nor answered, until the client gives up; control calls still answer', async function () {
    sim = await startSimulator({ terminal: { rateLimitCalls: 0 } });
    sim.server.link.blackHole();
    assert.equal(await failureOf(send(sim, RAW, { signal: AbortSignal.timeout(1000) })), 'TimeoutError');
    assert.equal(sim.server.link.swallowed, 1);
    assert.equal(sim.terminal.creations.total, 0, 'nothing handled');
    assert.equal((await control(sim, 'GET', 'link')).state, 'black-hole');
    // A connection that carried a request in the window stays silent after it.
    const sock = net.connect(sim.server.port, '127.0.0.1');
    let got = '';
    sock.on('data', (d) => (got += d));
    await new Promise((r) => sock.once('connect', r));
    const get = `GET /api/v1.0/info/service HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer demo-token\r\n\r\n`;
    sock.write(get);
    await waitUntil(() => sim.server.link.swallowed === 2, 30000, 'the raw request swallowed');
    await sim.server.link.up();
    sock.write(get);
    await waitUntil(() => sim.server.link.swallowed === 3, 30000, 'the request after the window swallowed too');
    assert.equal(got, '', 'no answer on a connection stuck in the black hole');
    sock.destroy();
    assert.equal((await send(sim)).status, 200, 'a new connection after the window is answered');
  });

  it('a reply lost after arrival: the client sees a socket error, and the message exists in get/fw_messages', async function () {
    sim = await startSimulator({ terminal: { rateLimitCalls: 0 } });
    sim.inject({ route: 'terminal/messages', kind: 'lost-reply' });
    const code = await failureOf(send(sim));
    assert.ok(['UND_ERR_SOCKET', 'ECONNRESET'].includes(code), code);
    const [created] = sim.terminal.creations.list();
    assert.equal(created.count, 1);
    const found = await call(sim, 'GET', `get/fw_messages?IDList=${created.ids[0]}`);
    assert.equal(found.body.Messages[0].DestinationID, DEST);
    assert.equal(found.body.Messages[0].RawPayload, RAW);
    // As 'before': dropped unhandled.
    sim.inject({ route: 'terminal/messages', kind: 'lost-reply', phase: 'before' });
    assert.notEqual(await failureOf(send(sim, 'gAkEAw==')), 'answered');
    assert.equal(sim.terminal.creations.count(DEST, { RawPayload: 'gAkEAw==' }), 0);
  });

  it('a held reply: handled at once, answered when released, or after delayMs; a client that gives up leaves the message created', async function () {
    sim = await startSimulator({ terminal: { rateLimitCalls: 0 } });
    sim.inject({ route: 'terminal/messages', kind: 'hold' });
    const pending = send(sim);
    await waitUntil(() => sim.server.held === 1, 30000, 'the reply held');
    assert.equal(sim.terminal.creations.count(DEST, { RawPayload: RAW }), 1, 'handled before the reply');
    assert.deepEqual(await control(sim, 'POST', 'faults/release'), { released: 1 });
    const r = await pending;
    assert.equal(r.status, 200);
    assert.equal(String(r.body.Submissions[0].ID), sim.terminal.creations.list()[0].ids[0]);
    sim.inject({ route: 'terminal/messages', kind: 'hold', delayMs: 120000 });
    assert.equal(await failureOf(send(sim, 'gAkEAw==', { signal: AbortSignal.timeout(500) })), 'TimeoutError');
    assert.equal(sim.terminal.creations.count(DEST, { RawPayload: 'gAkEAw==' }), 1);
    await waitUntil(() => sim.server.held === 0, 30000, 'the held reply gone with its client');
  });

  it('random windows (linkChaos, seeded) open both kinds and end', async function () {
    sim = await startSimulator({ linkChaos: { seed: 3, upMs: [50, 100], downMs: [50, 100] } });
    await waitUntil(() => sim.server.link.windows.refused >= 2 && sim.server.link.windows['black-hole'] >= 2, 30000, 'windows of both kinds', { detail: () => JSON.stringify(sim.server.link.describe()) });
    await control(sim, 'POST', 'link', { chaos: null }).catch(() => undefined);
    sim.server.link.stopChaos();
    await sim.server.link.up();
    assert.equal((await control(sim, 'GET', 'link')).chaos, false);
  });

  it('counts creations by destination and payload (mode, messages, to_multiple) and cancellations by ID', async function () {
    sim = await startSimulator({ terminal: { rateLimitCalls: 0 } });
    await send(sim);
    await send(sim);
    await call(sim, 'POST', 'submit/messages', [{ DestinationID: DEST, Payload: { SIN: 128, MIN: 1, IsForward: true, Fields: [{ Name: 'a', Type: 'unsignedint', Value: '1' }] } }]);
    await call(sim, 'POST', 'submit/to_multiple', { Message: { RawPayload: RAW }, Destinations: ['01000003SKYB003'] });
    const mode = await call(sim, 'POST', 'terminal/mode', [{ DestinationID: DEST, Mode: 1, WakeupInterval: 2 }]);
    const c = sim.terminal.creations;
    assert.equal(c.count(` ${DEST.toLowerCase()} `, { RawPayload: [128, 9, 4, 2] }), 2);
    assert.equal(c.count(DEST, { Payload: { Fields: [{ Value: '1', Type: 'unsignedint', Name: 'a' }], IsForward: true, MIN: 1, SIN: 128 } }), 1);
    assert.equal(c.count('01000003SKYB003', { RawPayload: RAW }), 1);
    assert.equal(c.count(DEST, { RawPayload: [0, 70, 1, 2] }), 1, 'a mode message as get/fw_messages shows it');
    const id = String(mode.body.Submissions[0].ID);
    await call(sim, 'POST', 'submit/cancellations', [id]);
    const again = await call(sim, 'POST', 'submit/cancellations', [id]);
    assert.equal(again.body.Cancellations[0].ErrorID, 107, 'a second cancel: MESSAGE_ALREADY_CLOSED, nothing cancelled');
    const seen = await control(sim, 'GET', 'creations?all=true');
    assert.equal(seen.total, 5);
    assert.equal(seen.duplicates.length, 1);
    assert.equal(seen.duplicates[0].count, 2);
    assert.deepEqual(seen.cancellations, [{ ID: id, asked: 2, cancelled: 1 }]);
    assert.deepEqual(seen.cancelledTwice, []);
  });
});
