'use strict';
/**
 * Figure 4: all pages of the LoRaWAN device inventory through iotgw-lorawan-devices.
 *
 * For each size (10,000 and 100,000 devices): a fresh simulator in this process (broker
 * area, deviceCount = size, devices generated on demand, page wrapped in an array as
 * documented), a fresh child Node-RED, its idle RSS (empty flows, after a full GC),
 * then: inject -> iotgw-lorawan-devices (allPages, pageSize PAGE, keys redacted) ->
 * function that counts devices and pages (no join node: a join would hold the whole
 * inventory by design). RSS sampled every 50 ms from /proc until every device arrived.
 */
const { ChildRed, makeUserDir } = require('../lib/red');
const { measurePeak } = require('../lib/peak');
const { sim, r1, gatewayConfig } = require('../lib/util');

const PAGE = 100;

async function walk(size, timeoutMs, nodeArgs = []) {
  const { startSimulator } = sim();
  const s = await startSimulator({ terminal: { rateLimitCalls: 0, maxConcurrent: 0 }, broker: { deviceCount: size } });
  s.server.maxCallLog = 100;
  const red = new ChildRed(makeUserDir('link'), { nodeArgs });
  try {
    await red.start();
    const m = await measurePeak(red, {
      size,
      nodes: [
        gatewayConfig(s.url, { rateLimitCalls: 0, maxConcurrent: 3 }),
        { id: 'go', type: 'inject', once: true, onceDelay: '0.2', props: [{ p: 'payload' }], payload: '', payloadType: 'date', wires: [['devices']] },
        { id: 'devices', type: 'iotgw-lorawan-devices', gateway: 'gw', customerId: '', devEui: '', receivable: '', page: 1, pageSize: PAGE, allPages: true, includeKeys: false, wires: [['count']] },
        { id: 'count', type: 'function', func: "const b = global.get('bench'); b.inc('devices', msg.payload.length); b.inc('pages'); return null;", outputs: 0, wires: [] },
      ],
      got: (st) => st.counters.devices || 0,
      timeoutMs,
      what: 'devices',
    });
    return { size, devices: m.count, pages: m.stats.counters.pages || 0, errors: m.errors, seconds: m.seconds, devicesPerSecond: m.perSecond, cpuUsPerDevice: m.cpuUsPerItem, ...m.mem };
  } finally {
    await red.stop();
    await s.close();
  }
}

module.exports = async function inventory(opts = {}) {
  const sizes = opts.quick ? [2_000, 10_000] : [10_000, 100_000];
  const runs = [];
  for (const size of sizes) runs.push(await walk(size, 240_000));
  // The same walks with V8's old generation capped at 80 MB (see poller.js).
  const CAP = '--max-old-space-size=80';
  const capped = [];
  for (const size of sizes) capped.push({ ...(await walk(size, 240_000, [CAP])), nodeArgs: CAP });
  const [small, big] = runs;
  const growth = r1(big.peakAboveIdleMB - small.peakAboveIdleMB);
  const cappedGrowth = r1(capped[1].peakAboveIdleMB - capped[0].peakAboveIdleMB);
  return {
    figure: 'inventory',
    setup: { pageSize: PAGE, sizes, downstream: 'a function node counting devices (no join)' },
    runs,
    capped,
    growthMB: growth,
    cappedGrowthMB: cappedGrowth,
    retainedGrowthMB: r1(big.heapUsedAfterGcMB - small.heapUsedAfterGcMB),
    met: big.devices === big.size && growth <= Math.max(10, 0.15 * small.peakAboveIdleMB),
    metCapped: capped[1].devices === big.size && cappedGrowth <= Math.max(10, 0.15 * capped[0].peakAboveIdleMB),
  };
};
// One walk alone (e.g. node -e "require('./bench/figures/inventory.js').walk(1e5, 24e4).then(console.log)").
module.exports.walk = walk;
