'use strict';
/**
 * iotgw-gateway-call against the simulator (issue 35): any call under /api/v{version}/ with
 * the account's token and limits; terminal/reset with its body as the simulator recorded it;
 * a top-level ErrorID named from the live catalogue (its text bounded, control characters
 * escaped); a POST never sent again once it may have arrived (a reset, a 503), and sent again
 * after a 429; and every path that could leave the base refused before anything is sent.
 */
const assert = require('node:assert/strict');
const { simulatorPerTest, gatewayNode, load, until, collect, catchAll, recordWarnings } = require('../helpers/harness');
const { TerminalClient } = require('../../dist');

describe('iotgw-gateway-call against the simulator', function () {
  let sim;
  simulatorPerTest({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 } }, (s) => (sim = s));

  const flow = (props = {}, gw = {}) => [
    gatewayNode(sim, gw),
    { id: 'call', type: 'iotgw-gateway-call', gateway: 'gw', method: 'GET', path: 'info/service', group: '', ...props, wires: [['out']] },
    { id: 'out', type: 'helper' },
    ...catchAll(),
  ];

  it('GET a path with msg.query, the token of the account; the reply as msg.payload', async function () {
    const n = await load(flow());
    const out = collect(n.get('out'));
    n.get('call').receive({ query: { GetErrorCodes: 'true' }, keep: 2 });
    await until(() => out.length === 1);
    assert.equal(out[0].statusCode, 200);
    assert.equal(out[0].keep, 2);
    assert.ok(out[0].payload.ErrorCodes.length > 0);
    const call = sim.server.callsTo('terminal/info')[0];
    assert.match(call.headers.authorization, /^Bearer /);
  });

  it('POST terminal/reset through the node: the simulator records the body it got', async function () {
    const n = await load(flow({ method: 'POST', path: 'terminal/reset' }));
    const out = collect(n.get('out'));
    const caught = collect(n.get('caught'));
    n.get('call').receive({ payload: { DestinationID: '01000001SKYA001', ResetType: 1, UserMessageID: 9223372036854775807n } });
    await until(() => out.length === 1 || caught.length === 1);
    assert.deepEqual(caught.map((c) => c.error.message), []);
    const resets = sim.server.callsTo('terminal/command-reset');
    assert.equal(resets.length, 1);
    assert.equal(resets[0].body, '{"DestinationID":"01000001SKYA001","ResetType":1,"UserMessageID":9223372036854775807}');
    assert.equal(sim.terminal.commands.commands.length, 1);
    assert.deepEqual(sim.terminal.commands.commands[0].body, { DestinationID: '01000001SKYA001', ResetType: 1, UserMessageID: '9223372036854775807' });
    assert.deepEqual(out[0].payload, { ErrorID: 0 });
  });

  it('msg.path overrides the setting (with a warning); a top-level ErrorID is GATEWAY_ERROR named from the live catalogue', async function () {
    const n = await load(flow({ path: 'info/service' }));
    const caught = collect(n.get('caught'));
    const warns = recordWarnings(n.get('call'));
    n.get('call').receive({ path: 'info/terminals', query: { PageSize: 5000 } });
    await until(() => caught.length === 1);
    const e = caught[0].error;
    assert.equal(e.code, 'GATEWAY_ERROR');
    assert.match(e.message, /ErrorID 109 \(INVALID_PAGE_SIZE/);
    assert.ok(warns.some((w) => /overrides/.test(String(w))));
    assert.equal(sim.server.callsTo('terminal/inventory').length, 1);
  });

  it('never sends a POST again once it may have arrived (the connection reset after the request)', async function () {
    const n = await load(flow({ method: 'POST', path: 'terminal/mode' }, { maxRetries: 3 }));
    const caught = collect(n.get('caught'));
    sim.server.inject({ route: 'terminal/mode', reset: true, times: 1 });
    n.get('call').receive({ payload: [{ DestinationID: '01000001SKYA001', Mode: 0, WakeupInterval: 0 }] });
    await until(() => caught.length === 1, 20000);
    assert.equal(sim.server.callsTo('terminal/mode').length, 1, 'sent once');
  });

  it('a POST answered 503 after the gateway did the work is sent once (RATE_LIMITED, said); a POST refused with 429 goes again after the wait (issue 43)', async function () {
    const n = await load(flow({ method: 'POST', path: 'terminal/reset' }, { maxRetries: 3, rateLimitWindowSeconds: 1 }));
    const out = collect(n.get('out'));
    const caught = collect(n.get('caught'));
    // A proxy that answers 503 once the gateway has done the reset, every time.
    sim.server.inject({ route: 'terminal/command-reset', phase: 'after', status: 503, body: { Message: 'Service Unavailable' }, times: Infinity });
    n.get('call').receive({ payload: { DestinationID: '01000001SKYA001', ResetType: 1 } });
    await until(() => caught.length === 1, 30000, 'the 503 to end the msg');
    assert.equal(sim.server.callsTo('terminal/command-reset').length, 1, 'sent once');
    assert.equal(sim.terminal.commands.commands.length, 1, 'one reset done');
    assert.equal(caught[0].error.code, 'RATE_LIMITED');
    assert.match(caught[0].error.message, /HTTP 503.*not sent again/);
    sim.server.clearFaults();
    // A 429 says the request was refused before any work: it goes again after the wait.
    sim.server.inject({ route: 'terminal/command-reset', kind: 'rate-limit', retryAfter: 1, times: 1 });
    n.get('call').receive({ payload: { DestinationID: '01000001SKYA001', ResetType: 1 } });
    await until(() => out.length === 1 || caught.length === 2, 30000, 'the 429 msg to end');
    assert.deepEqual(caught.slice(1).map((c) => c.error.message), []);
    assert.equal(sim.server.callsTo('terminal/command-reset').length, 3, 'the refused POST and its one resend');
    assert.equal(sim.terminal.commands.commands.length, 2, 'one more reset done');
  });

  it('a catalogue name and description of 1 MB with HTML, ESC and CRLF reach the message and err.errorName bounded, control characters escaped (issue 43)', async function () {
    const big = '<img src=x onerror=alert(1)>\u001b[31m\r\nX-Injected: 1\r\n' + 'A'.repeat(1024 * 1024);
    // Served to the node's account and to a TerminalClient, once each.
    sim.server.inject({ route: 'terminal/info', status: 200, body: { ErrorID: 0, Version: '1', ErrorCodes: [{ ID: 109, Name: big, Description: big }] }, times: 2 });
    const n = await load(flow({ path: 'info/terminals' }));
    const caught = collect(n.get('caught'));
    n.get('call').receive({ query: { PageSize: 5000 } });
    await until(() => caught.length === 1, 30000);
    assert.equal(caught[0].error.code, 'GATEWAY_ERROR');
    const client = new TerminalClient({ baseUrl: sim.url, token: 'demo-token', rateLimitCalls: 0 });
    const e = await client.call({ method: 'GET', path: 'info/terminals', query: { PageSize: 5000 } }).then(
      () => assert.fail('no error'),
      (err) => err,
    );
    await client.close();
    assert.equal(e.errorId, 109);
    for (const [what, text] of [['msg.error.message', caught[0].error.message], ['err.message', e.message], ['err.errorName', e.errorName]]) {
      assert.ok(text.length < 1200, `${what}: ${text.length} chars`);
      assert.ok(![...text].some((ch) => ch < ' ' || ch === '\u007f'), `${what}: no control character`);
      assert.ok(text.includes('<img src=x onerror=alert(1)>\\u001b[31m\\r\\nX-Injected: 1\\r\\n'), `${what}: the text as sent, its escapes visible: ${text.slice(0, 120)}`);
      assert.match(text, /\(1048\d{3} chars\)/, `${what}: says how long it was`);
    }
    assert.equal(sim.server.faults.length, 0, 'the catalogue was asked once by each');
  });

  it('bad input (a path leaving the base, a method other than GET or POST, a body that is not JSON data) is BAD_INPUT; nothing is sent', async function () {
    const paths = ['../auth/token', 'info/../../x', '%2e%2e/auth/token', 'info/%2E%2E/x', 'https://evil.example/x', 'http:x', 'javascript:alert(1)', '//evil.example/x', 'info\\..\\x', 'a//b', './info/service', 'info/service?x=1', 'info/service#f', ''];
    const n = await load(flow({ method: 'POST', path: '' }));
    const caught = collect(n.get('caught'));
    for (const p of paths) n.get('call').receive({ path: p, payload: {} });
    await until(() => caught.length === paths.length);
    caught.forEach((c, i) => {
      assert.equal(c.error.code, 'BAD_INPUT', paths[i]);
      assert.match(c.error.message, /(msg\.)?path: /, paths[i]);
    });
    const cyclic = {};
    cyclic.self = cyclic;
    n.get('call').receive({ path: 'terminal/reset', payload: cyclic });
    await until(() => caught.length === paths.length + 1);
    assert.match(caught.at(-1).error.message, /msg\.payload/);
    assert.equal(sim.server.callsTo().length, 0, 'no request reached the simulator');
  });

  for (const method of ['DELETE', 'PUT', 'get ', '']) {
    it(`method ${JSON.stringify(method)}: ${method.trim().toUpperCase() === 'GET' || method === '' ? 'taken as GET' : 'BAD_INPUT, nothing sent'}`, async function () {
      const n = await load(flow({ method }));
      const out = collect(n.get('out'));
      const caught = collect(n.get('caught'));
      n.get('call').receive({});
      await until(() => out.length + caught.length === 1);
      if (method === 'DELETE' || method === 'PUT') {
        assert.equal(caught[0].error.code, 'BAD_INPUT');
        assert.match(caught[0].error.message, /method: must be GET or POST/);
        assert.equal(sim.server.callsTo().length, 0);
      } else assert.equal(out.length, 1);
    });
  }
});
