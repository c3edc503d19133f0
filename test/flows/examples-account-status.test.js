'use strict';
/**
 * examples/account-status-alerts.json in the real runtime against the simulator: the account
 * status node reads the example's gateway account, and the switch's two rules send a msg to
 * "feed behind" when a feed's behindSeconds passes 120 and to "throttled" when a group had a 429.
 */
const assert = require('node:assert/strict');
const { simulatorPerTest, until, collect, loadExample } = require('../helpers/harness');

const CORE = ['common/20-inject.js', 'common/90-comment.js', 'function/10-switch.js'].map((f) => require(`@node-red/nodes/core/${f}`));
const FILE = 'account-status-alerts.json';

describe('example flow: account status alerts', function () {
  this.timeout(20000);
  let sim;
  simulatorPerTest({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 } }, (s) => (sim = s));

  const loadStatusExample = async () => (await loadExample(FILE, CORE, (c) => c.type === 'iotgw-gateway' && (c.baseUrl = sim.url))).get;

  it('reads the account: the groups debug gets the figures, no alert on a quiet account', async function () {
    const get = await loadStatusExample();
    const groups = collect(get('iotgw-ex-acct-groups'));
    const behind = collect(get('iotgw-ex-acct-behind'));
    const throttled = collect(get('iotgw-ex-acct-throttled'));
    get('iotgw-ex-acct-now').receive({ payload: Date.now() });
    await until(() => groups.length === 1, 5000, 'a reading');
    assert.deepEqual(Object.keys(groups[0].payload.groups), ['SEND', 'GET', 'INFO']);
    assert.equal(groups[0].payload.groups.SEND.limit, 5);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(behind.length + throttled.length, 0);
  });

  it('the switch alerts on a feed behind by more than 120 s and on a throttled group', async function () {
    const get = await loadStatusExample();
    const behind = collect(get('iotgw-ex-acct-behind'));
    const throttled = collect(get('iotgw-ex-acct-throttled'));
    const group = (t) => ({ limit: 5, windowSeconds: 60, used: 5, waiting: 2, inFlight: 0, throttled: t });
    const feed = (s) => ({ type: 'status', node: 'p', state: 'active', mark: '2026-01-01 00:00:00', behindSeconds: s, emittedLastMinute: 0 });
    const sw = get('iotgw-ex-acct-switch');
    sw.receive({ payload: { groups: { SEND: group(0), GET: group(0) }, feeds: [feed(30)] } });
    sw.receive({ payload: { groups: { SEND: group(0), GET: group(0) }, feeds: [feed(30), feed(300)] } });
    sw.receive({ payload: { groups: { SEND: group(0), GET: group(1) }, feeds: [] } });
    await until(() => behind.length === 1 && throttled.length === 1, 5000, 'one alert of each');
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(behind.length, 1);
    assert.equal(throttled.length, 1);
    assert.equal(behind[0].payload.feeds[1].behindSeconds, 300);
    assert.equal(throttled[0].payload.groups.GET.throttled, 1);
  });

  it('a feed that has not polled yet (behindSeconds null) is no alert and no error', async function () {
    // The account status node emits at once when the flows start, before a poller's first poll:
    // JSONata refuses to compare null ("must evaluate to numeric or string values"), which the
    // demo's log showed as an [error] line when the machine was slow to poll.
    const get = await loadStatusExample();
    const alerts = collect(get('iotgw-ex-acct-behind'));
    const throttled = collect(get('iotgw-ex-acct-throttled'));
    const sw = get('iotgw-ex-acct-switch');
    const errors = [];
    sw.on('call:error', (call) => errors.push(String(call.args[0])));
    const feed = { type: 'status', node: 'p', state: 'active', mark: null, behindSeconds: null, emittedLastMinute: 0 };
    const group = { limit: 5, windowSeconds: 60, used: 0, waiting: 0, inFlight: 0, throttled: 0 };
    sw.receive({ payload: { groups: { SEND: group, GET: group }, feeds: [feed] } });
    sw.receive({ payload: { groups: { SEND: group, GET: group }, feeds: [feed, { ...feed, behindSeconds: 300 }] } });
    await until(() => alerts.length === 1 || errors.length > 0, 5000, 'the alert for the feed behind');
    assert.deepEqual(errors, []);
    assert.equal(alerts.length, 1);
    assert.equal(throttled.length, 0);
    assert.equal(alerts[0].payload.feeds[1].behindSeconds, 300);
  });
});
