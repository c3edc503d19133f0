'use strict';
/**
 * The fleet dashboard (examples/fleet-dashboard.json, issue 36) in Chromium, against the demo's
 * own Node-RED (scripts/start.js's startDev in a child process, this example only, so its
 * pollers have the simulator account's GET budget to themselves): /dashboard loads with no
 * console error in the page or the map's frame, the terminals table lists the simulator's
 * terminals and sorts, the map holds a marker per terminal that reported a position, both
 * change when the terminals report again, and nothing the page received holds a credential.
 * With IOTGW_SCREENSHOTS=1 it takes docs/images/fleet-dashboard.png (the README's picture).
 */
const assert = require('node:assert/strict');
const path = require('node:path');
const { withoutChromium, SHOTS, IMAGES } = require('../helpers/editor');
const { useDashboardPage } = require('../helpers/demo');

const TITLE = 'fleet dashboard in Chromium (examples/fleet-dashboard.json)';
const EXAMPLE = require('../../examples/fleet-dashboard.json');
/** What must never reach the page: the example's credentials and the simulator's static token. */
const SECRETS = [...Object.values(EXAMPLE.find((n) => n.type === 'iotgw-gateway').credentials).filter((v) => v.length > 6), 'demo-token'];
const TABLE = '#nrdb-ui-widget-fd-table';

/** Polls `fn` every 500 ms until it returns a truthy value; fails with `what` after `ms`. */
async function poll(fn, ms, what) {
  const start = Date.now();
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() - start > ms) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

if (!withoutChromium(TITLE)) {
  describe(TITLE, function () {
    this.timeout(240000);
    let demo;
    let page;
    const received = [];
    // Every mover of the living fleet reports every round (3 s; npm start's: 4 a round, each mover
    // every 18 s), so the map's markers move within a poll of the flow rather than a poll and a lap.
    const watch = (p) => {
      p.on('websocket', (ws) => ws.on('framereceived', (f) => received.push(String(f.payload))));
      p.on('response', (r) => received.push(r.text().catch(() => '')));
    };
    const errors = useDashboardPage({ demo: { reportsPerRound: 24 }, watch }, (d) => ({ demo, page } = d));
    afterEach(function () {
      assert.deepEqual(errors, [], 'no console error in the dashboard or its map');
    });

    const mapFrame = () => page.frames().find((f) => /\/worldmap\/?$/.test(new URL(f.url()).pathname));
    /** The map's markers: {name: [lat, lng]}. */
    const markers = async () => {
      const f = mapFrame();
      if (!f) return {};
      return f.evaluate(() => Object.fromEntries(Object.entries(window.markers || {}).map(([k, m]) => [k, [m.getLatLng().lat, m.getLatLng().lng]])));
    };
    const rows = () => page.$$eval(`${TABLE} tbody tr`, (trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent.trim())));
    const footer = () => page.textContent(`${TABLE} .v-data-table-footer__info`).catch(() => '');

    it('loads at /dashboard (under httpNodeRoot) with its five groups', async function () {
      // /dashboard was redirected under httpNodeRoot; the dashboard then opens its page.
      await poll(() => new URL(page.url()).pathname === '/api/dashboard/fleet', 30000, `the page /api/dashboard/fleet (at ${page.url()})`);
      for (const id of ['fd-table', 'fd-map-frame', 'fd-chart', 'fd-open-table', 'fd-groups-table', 'fd-feeds-table']) {
        await page.waitForSelector(`#nrdb-ui-widget-${id}`, { timeout: 60000 });
      }
      await poll(mapFrame, 30000, "the map's frame");
    });

    it("the table lists the simulator's terminals, sortable", async function () {
      const ids = (await demo.ask('fleet', 'fleet')).fleet;
      assert.ok(ids.length > 1000, `the simulator's fleet (${ids.length})`);
      await poll(async () => (await footer()).endsWith(`of ${ids.length}`), 90000, `the table to count ${ids.length} terminals`);
      const first = await poll(async () => {
        const r = await rows();
        return r.length && r[0][0] === ids[0] && r;
      }, 10000, 'the first terminal in the first row');
      assert.deepEqual(
        first.map((r) => r[0]),
        ids.slice(0, first.length),
      );
      // Sorted by terminal, descending: the last terminal comes first.
      await page.click(`${TABLE} th:has-text("Terminal")`);
      await page.click(`${TABLE} th:has-text("Terminal")`);
      await poll(async () => (await rows())[0]?.[0] === ids[ids.length - 1], 10000, 'the descending sort');
      await page.click(`${TABLE} th:has-text("Terminal")`);
    });

    it('the map holds a marker per terminal that reported a position, and none for another', async function () {
      // The simulator's terminals that reported a position (the held ones online, the living
      // fleet's movers: all of the example's own account), once every mover has, and once the
      // dashboard's button has sent SetReporting, which makes the gateway hold five more
      // terminals that never report: a loaded run met this test only after the flow's own
      // SetReporting (20 s after deploy), and those were taken for reporters (issue 44).
      await page.click('#nrdb-ui-widget-fd-send-button button');
      const { reporters, movers } = await poll(async () => {
        const r = await demo.ask('reporters', 'reporters');
        return r.allReported && r.sent.length >= 5 && r;
      }, 120000, "every mover of the living fleet to report once, and the button's SetReporting to reach five terminals");
      assert.ok(reporters.length > movers.length, `the held terminals report too (${reporters.length} reporters, ${movers.length} movers)`);
      let seen = {};
      const got = await poll(async () => {
        const m = (seen = await markers());
        return reporters.every((id) => id in m) && m;
      }, 120000, `a marker for each reporting terminal (${reporters.length})`).catch((err) => {
        throw new Error(`${err.message}; none yet for ${reporters.filter((id) => !(id in seen)).join(', ')}`);
      });
      const reported = new Set((await demo.ask('reporters', 'reporters')).reporters);
      for (const name of Object.keys(got)) assert.ok(reported.has(name), `${name} has a marker and reported a position`);
      for (const [name, [lat, lng]] of Object.entries(got)) assert.ok(Math.abs(lat) <= 90 && Math.abs(lng) <= 180, `${name}: ${lat}, ${lng}`);
    });

    it('the table and the map change when the terminals report again', async function () {
      // A mover of the living fleet: its marker moves and its row's "last heard" changes.
      const id = (await demo.ask('reporters', 'reporters')).movers[0];
      await page.fill(`${TABLE} input[type="text"]`, id);
      const row = async () => (await rows()).find((r) => r[0] === id);
      const before = await poll(async () => {
        const r = await row();
        return r && r[6] && r;
      }, 60000, `the row of ${id} with a "last heard"`);
      const at = (await markers())[id];
      assert.ok(at, `${id} has a marker`);
      await poll(async () => {
        const r = await row();
        const m = (await markers())[id];
        return r && r[6] !== before[6] && m && (m[0] !== at[0] || m[1] !== at[1]);
      }, 120000, `${id}'s "last heard" and marker to change (were ${before[6]}, ${at})`);
      await page.fill(`${TABLE} input[type="text"]`, '');
    });

    it('holds no credential: not in the page, its frame, or anything it received', async function () {
      const html = [await page.content(), ...(await Promise.all(page.frames().map((f) => f.content().catch(() => ''))))];
      const texts = [...html, ...(await Promise.all(received))];
      assert.ok(texts.length > 5, 'the page received data');
      for (const s of SECRETS) assert.ok(!texts.some((t) => t.includes(s)), `the page received ${s.slice(0, 3)}...`);
      if (SHOTS) {
        await page.waitForTimeout(1000);
        await page.screenshot({ path: path.join(IMAGES, 'fleet-dashboard.png'), fullPage: true });
      }
    });
  });
}
