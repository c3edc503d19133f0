'use strict';
/**
 * An edge script's commands through an outbox (docs/client.md, "An outbox for an edge
 * script"), no Node-RED: starts the bundled simulator and takes its link down, accepts three
 * commands into an outbox in a folder and stops (as a script killed during an outage would),
 * brings the link back, and runs again: the commands drain, their outcomes come (priority 0
 * first), and each was created at the gateway once.
 *
 *   npm run build && node examples/scripts/edge-outbox.js
 *
 * From an installed package, require('@iotgateway/node-red-gateway') instead of '../..', give
 * a folder that survives a reboot (/var/lib/<app>/outbox), and your gateway and credentials.
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { startSimulator, TerminalClient } = require('../..');

const DEST = '01000001SKYA001';
// maxRetries 0: a send that cannot reach the gateway goes back to the outbox at once, which
// waits for the link with its own back-off (the client's retries would only delay that).
const client = (sim) => new TerminalClient({ baseUrl: sim.url, clientId: 'demo', clientSecret: 'demo-secret', maxRetries: 0 });

async function firstRun(sim, folder) {
  const t = client(sim);
  const ob = await t.outbox({ file: folder, ttlSeconds: 3600 });
  await ob.submitModes({ DestinationID: DEST, Mode: 1, WakeupInterval: 3 }, { meta: { what: 'wake up more often' } });
  await ob.submitMessages({ DestinationID: DEST, RawPayload: [128, 9, 1] }, { meta: { what: 'open the valve' } });
  await ob.submitMessages({ DestinationID: DEST, RawPayload: [128, 9, 0] }, { priority: 0, meta: { what: 'stop the pump (urgent)' } });
  console.log('first run: accepted, waiting for the link:', ob.state().waiting);
  await t.close(); // closes the outbox too: its entries stay in the folder
}

async function secondRun(sim, folder) {
  const t = client(sim);
  const ob = await t.outbox({ file: folder });
  let n = 0;
  for await (const o of ob.outcomes()) {
    const r = o.results[0];
    console.log(`outcome: ${o.meta.what}:`, o.error ? o.error.code : `gateway ID ${r.ID}, ErrorID ${r.ErrorID}`);
    if (++n === 3) break;
  }
  await t.close();
}

async function main() {
  const sim = await startSimulator({ port: 0 });
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'edge-outbox-'));
  try {
    sim.server.link.refuse(); // the uplink is down
    await firstRun(sim, folder);
    await sim.server.link.up();
    await secondRun(sim, folder);
    const c = sim.terminal.creations;
    console.log(`created at the gateway: ${c.total}, created twice: ${c.duplicates().length}`);
  } finally {
    await sim.close();
    fs.rmSync(folder, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
