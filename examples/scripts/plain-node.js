'use strict';
/**
 * The typed clients from plain Node.js, no Node-RED: starts the bundled simulator, then
 * sets a terminal's mode, sends it a message, reads the status feed, cancels, lists LoRaWAN
 * contracts and devices, and asks the application API for its user.
 *
 *   npm run build && node examples/scripts/plain-node.js
 *
 * From an installed package, require('@iotgateway/node-red-gateway') instead of '../..',
 * and point the clients at your own gateway and credentials.
 */
const { startSimulator, TerminalClient, BrokerClient, AppClient, GatewayError } = require('../..');

async function main() {
  const sim = await startSimulator({ port: 0 });
  // The simulator's demo credentials; rate limits as the real gateway's (5 calls a minute per group).
  const terminals = new TerminalClient({ baseUrl: sim.url, clientId: 'demo', clientSecret: 'demo-secret' });
  const broker = new BrokerClient({ baseUrl: sim.url, clientId: 'sim-client', accessToken: 'sim-access-token' });
  const app = new AppClient({ baseUrl: sim.appUrl, token: 'app-demo-token' });
  try {
    const from = new Date(Date.now() - 60_000);
    const [mode] = await terminals.submitModes({ DestinationID: '01000001SKYA001', Mode: 1, WakeupInterval: 3, UserMessageID: '9007199254740993' });
    console.log('mode submitted:', mode);
    const sent = await terminals.submitMessages([{ DestinationID: '01000001SKYA001', RawPayload: Buffer.from([128, 1, 42]) }]);
    console.log('message submitted:', sent[0]);
    const status = await terminals.statusUpdates(from);
    console.log('status updates:', status.records.map((r) => `${r.ID} ${r.StateName}`), 'next from', status.nextFromUtc);
    const cancelled = await terminals.cancel(sent);
    console.log('cancelled:', cancelled.map((c) => `${c.ID} ${c.CancellationStatusName ?? c.ErrorName ?? c.CancellationStatus}`));
    try {
      await terminals.submitModes({ DestinationID: '', Mode: 9 });
    } catch (err) {
      if (!(err instanceof GatewayError)) throw err;
      console.log('refused before any request:', err.code, err.message);
    }
    console.log('contracts:', (await broker.listContracts({ pageSize: 5 })).map((c) => `${c.id} ${c.planDesc}`));
    const devices = await broker.devices({ pageSize: 3 });
    console.log('devices:', devices.content.map((d) => d.devEui), 'of', devices.totalElements);
    const user = await app.user();
    console.log('app user:', user.email ?? user.name ?? user.id);
  } finally {
    await Promise.all([terminals.close(), broker.close(), app.close()]);
    await sim.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
