'use strict';
/**
 * Issue 43, finding 3: the fleet dashboard example (examples/fleet-dashboard.json) in Chromium,
 * fed gateway strings holding HTML (`<img src=x onerror=...>` and `<script>`): no script runs in
 * the page or the map's frame, and the text shows as typed where it is shown. Two paths, each
 * proving its own part:
 *
 * 1. Through the gateway: the simulator serves every from-mobile message with the MobileID
 *    `<img ...>`. The message poller refuses it for its form (BAD_RESPONSE, a malformed
 *    record): no marker, nothing runs. (Before: a marker named by it, whose popup ran it.)
 * 2. Past the nodes' checks, for the example itself (defence in depth): its function nodes are
 *    handed msgs as their wires would bring them, holding HTML in a MobileID (positions), a
 *    PrimeID and the free-text status fields the gateway defines no form for (`Description`,
 *    `LastRegionName`: the terminal nodes pass them on as received), and in a DestinationID, a
 *    state and an outcome (the open messages). The map's markers, popups and tooltips, both
 *    tables and the summary line show the text as typed; nothing runs. Before, the map wrote a
 *    MobileID into its popup as HTML and the onerror ran.
 *
 * "Runs" is watched in every frame: the payloads log `xss-...` to the console (Chromium reports
 * the map frame's console on the page) and an `<img src=x>` would also be an element of a frame.
 */
const assert = require('node:assert/strict');
const { withoutChromium } = require('../helpers/editor');
const { useDashboardPage } = require('../helpers/demo');
const { waitUntil } = require('../helpers/wait');

const TITLE = 'fleet dashboard in Chromium: gateway strings holding HTML (issue 43)';
const IMG = "<img src=x onerror=console.log('xss-img')>";
const SCRIPT = "<script>console.log('xss-script')</script>";
const TABLE = '#nrdb-ui-widget-fd-table';
const OPEN_TABLE = '#nrdb-ui-widget-fd-open-table';

/** What `fn` gives once it is truthy, looked at every 500 ms (waitUntil's limit and message). */
async function until(fn, ms, what) {
  let v;
  await waitUntil(async () => (v = await fn()), ms, what, { every: 500 });
  return v;
}

if (!withoutChromium(TITLE)) {
  describe(TITLE, function () {
    this.timeout(240000);
    const ran = [];
    // A payload that ran says so on the console (of any frame: the page's listener hears the map's too).
    const watch = (p) => p.on('console', (m) => /xss-/.test(m.text()) && ran.push(`${m.type()}: ${m.text()}`));
    let demo;
    let page;
    const errors = useDashboardPage({ watch }, (d) => ({ demo, page } = d));
    before(async function () {
      await page.waitForSelector(TABLE, { timeout: 60000 });
      await until(() => mapFrame(), 60000, "the map's frame");
    });
    afterEach(async function () {
      const imgs = await Promise.all(page.frames().map((f) => f.evaluate(() => document.querySelectorAll('img[src="x"]').length).catch(() => 0)));
      assert.deepEqual(ran, [], 'no payload ran in the page or its frames');
      assert.deepEqual(imgs.filter((n) => n > 0), [], 'no <img src=x> element in any frame');
      assert.deepEqual(errors, [], 'no console error in the dashboard or its map');
    });

    // A frame's URL is empty until it starts loading.
    const mapFrame = () => page.frames().find((f) => /^https?:\/\/[^/]+\/(.*\/)?worldmap\/?$/.test(f.url()));
    const markerKeys = async () => (await mapFrame().evaluate(() => Object.keys(window.markers || {}))) ?? [];
    const rows = (table) => page.$$eval(`${table} tbody tr`, (trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent.trim())));
    const feed = (id, msg) => demo.ask({ receive: { id, msg } }, 'received').then((r) => assert.ok(r.received, `node ${id} is deployed`));

    it('through the gateway: a MobileID holding HTML is refused by the message poller (BAD_RESPONSE), so no marker takes it', async function () {
      const faults = `${demo.info.simUrl}/_sim/faults`;
      const res = await fetch(faults, { method: 'POST', body: JSON.stringify({ route: 'terminal/re_messages', kind: 'wrong-types', patch: { 'Messages.*.MobileID': IMG }, times: 'all' }) });
      assert.equal(res.status, 200, await res.text());
      const refused = /from-mobile message of the reply is malformed \(\W*MobileID/;
      try {
        // Either outcome ends the wait: the poller's report, or (as before) a marker named by the string.
        await waitUntil(async () => refused.test(demo.log()) || (await markerKeys()).some((k) => k.includes('onerror')), 120000, 'the message poller to read a reply whose MobileIDs hold HTML', { every: 500 });
      } finally {
        await fetch(faults, { method: 'DELETE' });
      }
      assert.deepEqual((await markerKeys()).filter((k) => /[<>&"' ]/.test(k)), [], 'no marker named by the string');
      assert.match(demo.log(), refused, 'the poller reported the malformed message');
    });

    it("past the nodes' checks: the example shows a MobileID, a PrimeID and status fields holding HTML as typed, and runs nothing", async function () {
      // The map: two markers named by HTML (what the poller would refuse), with HTML in the popup's other fields too.
      const report = (MobileID, lat) => ({ topic: MobileID, payload: { ID: 1, MobileID, MessageUTC: SCRIPT, ReceiveUTC: '2026-11-27 10:00:00', SIN: 255 }, fields: { latitude: lat * 60000, longitude: -6000, speed: IMG, heading: 90 } });
      await feed('fd-positions', report(IMG, 51.5));
      await feed('fd-positions', report(SCRIPT, 48.8));
      // The terminals table: a PrimeID and the free-text fields the nodes pass on as received.
      await feed('fd-fleet', { topic: 'ZZXSS001', payload: { PrimeID: 'ZZXSS001', Description: `${IMG} ${SCRIPT}`, LastRegionName: SCRIPT, LastRegistrationUTC: '' } });
      await feed('fd-fleet', { topic: IMG, payload: { PrimeID: IMG, Description: 'a PrimeID holding HTML' } });
      // The open messages: a DestinationID, a state and an outcome holding HTML (the summary line is a ui-text).
      await feed('fd-open', { payload: [{ ID: 990001, DestinationID: IMG, ErrorID: 0 }, { ID: 990002, DestinationID: SCRIPT, ErrorID: 0 }] });
      await feed('fd-open', { payload: { ID: 990002, State: 8, StateName: IMG, StatusUTC: SCRIPT } });
      await feed('fd-open', { payload: { ID: 990003, outcome: IMG, StateName: SCRIPT } });

      // The map: a marker for each, whose key holds no markup; popups and tooltips opened show the text as typed.
      const odd = await until(async () => {
        const k = (await markerKeys()).filter((key) => !/^[A-Za-z0-9]+$/.test(key));
        return k.length >= 2 && k;
      }, 60000, 'the two markers named by HTML');
      const shown = await mapFrame().evaluate((keys) => keys.map((k) => {
        const m = window.markers[k];
        m.openPopup();
        m.openTooltip();
        const popup = m.getPopup() && m.getPopup().getElement();
        const tip = m.getTooltip() && m.getTooltip().getElement();
        return { popup: popup ? popup.textContent : null, tooltip: tip ? tip.textContent : null, elements: popup ? popup.querySelectorAll('img, script').length : -1 };
      }), odd);
      await page.waitForTimeout(1000); // an image that cannot load has had its chance to fail
      assert.deepEqual(ran, [], 'nothing ran with the popups open');
      assert.equal(odd.length, 2, odd.join(', '));
      for (const k of odd) assert.match(k, /^[A-Za-z0-9_.%-]+$/, 'a key of letters, digits and escapes');
      const texts = shown.map((s) => s.tooltip).sort();
      assert.deepEqual(texts, [IMG, SCRIPT].sort(), 'the tooltips show the MobileIDs as typed');
      for (const s of shown) {
        assert.ok(s.popup.includes(s.tooltip), `the popup shows the MobileID as typed: ${s.popup}`);
        assert.ok(s.popup.includes(SCRIPT) && s.popup.includes(IMG), `the popup shows the report time and speed as typed: ${s.popup}`);
        assert.equal(s.elements, 0, 'no element made of the text');
      }

      // The terminals table (ui-table): the PrimeID and the status fields as typed.
      await page.fill(`${TABLE} input[type="text"]`, 'onerror');
      const found = await until(async () => {
        const r = await rows(TABLE);
        return r.length >= 2 && r;
      }, 60000, 'the rows holding HTML in the terminals table');
      assert.ok(found.some((r) => r[0] === IMG), `a row for the PrimeID as typed: ${JSON.stringify(found)}`);
      assert.ok(found.some((r) => r[0] === 'ZZXSS001' && r[1] === `${IMG} ${SCRIPT}` && r[3] === SCRIPT), `the description and region as typed: ${JSON.stringify(found)}`);
      await page.fill(`${TABLE} input[type="text"]`, '');

      // The open messages (ui-table) and their summary line (ui-text).
      const open = await until(async () => {
        const r = await rows(OPEN_TABLE);
        return r.some((x) => x[0] === '990002' && x[2] === IMG) && r;
      }, 60000, 'the open messages holding HTML');
      assert.ok(open.some((r) => r[0] === '990001' && r[1] === IMG), JSON.stringify(open));
      assert.ok(open.some((r) => r[0] === '990002' && r[1] === SCRIPT && r[4] === SCRIPT), JSON.stringify(open));
      await until(async () => (await page.textContent('#nrdb-ui-widget-fd-open-text')).includes(`last closed 990003: ${IMG} (${SCRIPT})`), 60000, 'the summary line showing the outcome as typed');
      // Whatever was to run has had its chance: the popups are open, the rows drawn.
      await page.waitForTimeout(2000);
    });
  });
}
