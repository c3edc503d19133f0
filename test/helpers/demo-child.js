'use strict';
/**
 * Child process for the demo's tests (test/package/start-demo.test.js, the fleet dashboard's):
 * `npm start`'s startDev (scripts/start.js) on free ports and a fresh user dir (argv[2]),
 * with whatever proxy the environment names; argv[3], when given, is JSON of more startDev
 * options (`only`, `settings`, `demo`). It reports to the parent over IPC: every node status
 * change, Node-RED's runtime events (`runtime-state`: missing types), and on request the
 * simulator's call count ('calls'), the requests it has not answered yet ('open'), its inventory ('fleet'), the terminals that reported a position ('reporters'), a msg handed to a node
 * (`{receive: {id, msg}}`) or the result of deploying examples (`{deploy: [names]}`:
 * every example named, whatever its types). Node-RED's log goes to stdout as with `npm start`.
 */
const path = require('path');
const { startDev, loadExamples, buildFlows } = require('../../scripts/start');

(async () => {
  const extra = process.argv[3] ? JSON.parse(process.argv[3]) : {};
  const nrPath = process.env.IOTGW_NODE_RED_PATH ? path.resolve(process.env.IOTGW_NODE_RED_PATH) : path.dirname(require.resolve('node-red/package.json'));
  const { events } = require(require.resolve('@node-red/util', { paths: [nrPath] }));
  events.on('node-status', (e) => process.send({ status: { id: e.id, status: e.status } }));
  events.on('runtime-event', (e) => process.send({ runtimeEvent: { id: e.id, payload: e.payload } }));
  const dev = await startDev({ port: 0, simPort: 0, userDir: process.argv[2], reset: true, ...extra });
  const names = {};
  dev.RED.nodes.eachNode((n) => (names[n.id] = `${n.type} "${n.name || n.id}"`));
  const { url, simUrl, dashboardUrl, deployed, skipped } = dev;
  process.send({ ready: true, names, deployed, skipped, url, simUrl, dashboardUrl });
  process.on('message', (m) => {
    if (m === 'calls') process.send({ calls: dev.sim.server.calls.length });
    // The requests the simulator has received and not yet answered.
    if (m === 'open') process.send({ open: dev.sim.server.calls.filter((c) => c.status === 0).length });
    // The simulator's inventory in PrimeID order (the demo account, a super account, sees it all).
    if (m === 'fleet') process.send({ fleet: dev.sim.terminal.fleet.page(undefined, 1e6, () => true).map((s) => s.id) });
    // The terminals that have reported a position to the demo account, from the simulator's log
    // of from-mobile messages visible now (a SatelliteTelemetry report, which every reporting
    // terminal sends: the held ones online, the living fleet's movers of src/simulator/fleet-demo.ts).
    // Not "every terminal the gateway holds": a fleet terminal the flow sent a message to is
    // held from then on but never reports. `allReported`: every mover of the account has; `sent`:
    // the terminals the flow sent a general to-mobile message.
    if (m === 'reporters') {
      const gw = dev.sim.terminal;
      const now = gw.now();
      const reported = new Set(gw.mobile.fromMobile.items.filter((r) => r.account === 'demo' && r.name === 'SatelliteTelemetry' && r.visibleAt <= now).map((r) => r.MobileID));
      const movers = gw.demo.positions().filter((p) => p.account === 'demo').map((p) => p.PrimeID);
      const sent = gw.mobile.toMobile.map((t) => t.DestinationID);
      process.send({ reporters: [...reported], movers, allReported: movers.every((id) => reported.has(id)), sent });
    }
    // A msg handed to one node as if a wire brought it (`{receive: {id, msg}}`): a test feeds an
    // example's function node what the gateway's nodes would not let through.
    if (m && m.receive) {
      const node = dev.RED.nodes.getNode(m.receive.id);
      if (node) node.receive(m.receive.msg);
      process.send({ received: Boolean(node) });
    }
    if (m === 'stop') dev.stop().then(() => process.exit(0));
    if (m && m.deploy) {
      const flows = buildFlows(loadExamples().filter((ex) => m.deploy.includes(ex.name)), dev.sim.url);
      dev.RED.runtime.flows.setFlows({ flows: { flows }, deploymentType: 'full' }).then(
        () => process.send({ deployed: flows.length }),
        (err) => process.send({ deployed: 0, error: String(err && err.message) }),
      );
    }
  });
})().catch((err) => {
  console.error(err);
  process.exit(1);
});
