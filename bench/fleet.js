#!/usr/bin/env node
'use strict';
/**
 * npm run bench:fleet (issue 19)
 *
 * Three Node-RED runtimes (child processes) run the same flow on one gateway account shared
 * through a real redis-server (Debian's, on a free loopback port, no persistence), against
 * the simulator's real sliding window at a scaled limit (5 calls per 6 s, 3 in flight):
 * 1,500 mode messages spread over the three instances (batched per instance to 100 items a
 * call), then a SIGKILL of the instance whose status poller is active while it drains a
 * backlog. Last line:
 *   fleet: 3 instances, N items, X% of the account limit, N 429s, N repeats, N lost, takeover N s
 * X%: the shortest time the account's limit allows for the calls made (a burst of 5, then 5
 * every 6 s) over the time they took (first call to last). repeats: items submitted more
 * than once; lost: items never answered; takeover: from the SIGKILL to the standby's first
 * record. A benchmark reports what it measures and exits 0.
 *
 * Then a failover line (issue 28): two instances in sentinel mode (one master, one
 * replica, three sentinels) drain a backlog; the master is SIGKILLed and left dead (as the
 * failover test does since issue 34):
 *   fleet failover: sentinel, promoted in N s, takeover N s, N repeats, N lost
 * promoted: from the SIGKILL to the sentinels naming the replica master; takeover: from the
 * SIGKILL to the first record emitted after it (the new master has no replica online, so it
 * acknowledges writes alone and the drain goes on); repeats: records emitted twice.
 */
const { startSimulator } = require('../dist/simulator');
const { waitFor, recordLines, childGateway, statusPoller, RedFleet } = require('../test/helpers/child-red');
const { RedisServer, SentinelSet, findRedisServer } = require('../test/helpers/redis');

const INSTANCES = 3;
const ITEMS = 1500;
const LIMIT = { calls: 5, windowMs: 6000 };
const BACKLOG = 5000;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function flows(sim, redisUrl) {
  return [
    { id: 'tab1', type: 'tab', label: 'fleet' },
    { id: 'r', type: 'iotgw-redis', url: redisUrl, keyPrefix: 'bench:' },
    childGateway(sim, { rateLimitCalls: LIMIT.calls, rateLimitWindowSeconds: LIMIT.windowMs / 1000, timeoutSeconds: 30, redis: 'r' }),
    { id: 'in1', z: 'tab1', type: 'http in', url: '/submit', method: 'post', wires: [['split1', 'resp1']] },
    { id: 'resp1', z: 'tab1', type: 'http response', statusCode: '204', wires: [] },
    { id: 'split1', z: 'tab1', type: 'function', func: 'for (const item of msg.payload) node.send({ payload: item });\nreturn null;', outputs: 1, wires: [['mode1']] },
    { id: 'mode1', z: 'tab1', type: 'iotgw-terminal-mode', gateway: 'gw1', mode: 0, wakeupInterval: 0, family: 'any', wires: [['ok1'], ['ok1']] },
    {
      id: 'ok1',
      z: 'tab1',
      type: 'function',
      func: "for (const r of msg.payload) global.get('append')('item ' + r.DestinationID + '\\n');\nreturn null;",
      outputs: 0,
      wires: [],
    },
    { id: 'catch1', z: 'tab1', type: 'catch', scope: ['mode1'], uncaught: false, wires: [['err1']] },
    { id: 'err1', z: 'tab1', type: 'function', func: "global.get('append')('error ' + (msg.error && msg.error.code) + '\\n');\nreturn null;", outputs: 0, wires: [] },
    statusPoller('rec1'),
    { id: 'rec1', z: 'tab1', type: 'function', func: "global.get('append')('record ' + env.get('IOTGW_TAG') + ' ' + msg.topic + '\\n');\nreturn null;", outputs: 0, wires: [] },
  ];
}

async function main() {
  const bin = findRedisServer();
  if (!bin) {
    console.log('fleet: redis-server not found (apt package redis-server); not measured');
    return;
  }
  const redis = await new RedisServer(bin).start();
  const sim = await startSimulator({ terminal: { rateLimitCalls: LIMIT.calls, rateLimitWindowMs: LIMIT.windowMs, maxConcurrent: 3 } });
  sim.terminal.configure({ acceptUnknownTerminals: true });
  const fleet = new RedFleet('iotgw-fleet-bench-');
  const { recordsFile, reds } = fleet;
  try {
    for (let i = 0; i < INSTANCES; i++) {
      const red = await fleet.start(String.fromCharCode(65 + i));
      await red.deploy(flows(sim, redis.url));
    }
    await sleep(1500);
    // 1,500 items spread over the instances, all at once.
    const dest = (i) => `4${String(i).padStart(7, '0')}SKY${(i % 65536).toString(16).toUpperCase().padStart(4, '0')}`;
    const per = Math.ceil(ITEMS / INSTANCES);
    await Promise.all(
      reds.map((red, k) => {
        const items = [];
        for (let i = k * per; i < Math.min(ITEMS, (k + 1) * per); i++) items.push({ DestinationID: dest(i), Mode: 1, WakeupInterval: 2 });
        return fetch(`${red.url}/submit`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(items) });
      }),
    );
    const answered = () => recordLines(recordsFile).filter((l) => l[0] === 'item' || l[0] === 'error').length;
    await waitFor(() => answered() >= ITEMS, 180000, 'every item answered').catch((e) => console.error(String(e)));
    const calls = sim.server.callsTo('terminal/mode');
    const submitted = new Map();
    for (const c of calls) if (c.status === 200) for (const it of JSON.parse(c.body)) submitted.set(it.DestinationID, (submitted.get(it.DestinationID) ?? 0) + 1);
    const repeats = [...submitted.values()].filter((n) => n > 1).length;
    const answeredIds = new Set(recordLines(recordsFile).filter((l) => l[0] === 'item').map((l) => l[1]));
    let lost = 0;
    for (let i = 0; i < ITEMS; i++) if (!answeredIds.has(dest(i))) lost++;
    const times = calls.map((c) => c.at).sort((a, b) => a - b);
    const n = calls.length;
    const ideal = (Math.ceil(n / LIMIT.calls) - 1) * LIMIT.windowMs;
    const span = times.length === n && n > 1 ? times[n - 1] - times[0] : NaN;
    const pct = ideal === 0 ? 100 : (100 * ideal) / span;

    // Takeover: a backlog for the pollers, then SIGKILL the active one.
    sim.terminal.seedBacklog(BACKLOG);
    await waitFor(() => recordLines(recordsFile).filter((l) => l[0] === 'record').length >= 600, 60000, 'the active poller to drain');
    const active = recordLines(recordsFile).find((l) => l[0] === 'record')[1];
    const victim = reds.find((r) => r.tag === active);
    const tKill = Date.now();
    await victim.kill('SIGKILL');
    await waitFor(() => recordLines(recordsFile).some((l) => l[0] === 'record' && l[1] !== active), 60000, 'a standby to take over').catch((e) => console.error(String(e)));
    const takeover = (Date.now() - tKill) / 1000;
    // Each call against the call LIMIT.calls before it: the window's edge is LIMIT.windowMs after that one's arrival.
    const over = times.slice(LIMIT.calls).map((t, i) => t - times[i] - LIMIT.windowMs);
    console.log(`arrivals (ms from the first): ${times.map((t) => t - times[0]).join(' ')}; each past the window edge of the call ${LIMIT.calls} before it by ${over.join(' ')} ms`);
    console.log(`calls ${n}, first to last ${Math.round(span)} ms, shortest the limit allows ${ideal} ms; token fetches ${sim.server.callsTo('terminal/auth').length}; active poller ${active}`);
    console.log(
      `fleet: ${INSTANCES} instances, ${ITEMS} items, ${pct.toFixed(1)}% of the account limit, ${sim.terminal.counters.throttled} 429s, ${repeats} repeats, ${lost} lost, takeover ${takeover.toFixed(1)} s`,
    );
  } finally {
    await fleet.close();
    await sim.close();
    await redis.destroy();
  }
}

async function failover() {
  const set = await new SentinelSet().start();
  const sim = await startSimulator({ terminal: { rateLimitCalls: 2, rateLimitWindowMs: 1000, maxConcurrent: 3 } });
  sim.terminal.seedBacklog(BACKLOG);
  const fleet = new RedFleet('iotgw-fleet-failover-');
  try {
    const flow = [
      { id: 'tab1', type: 'tab', label: 'fleet' },
      { id: 'r', type: 'iotgw-redis', mode: 'sentinel', sentinels: set.sentinelList, masterName: set.name, url: 'redis://127.0.0.1:6379/0', keyPrefix: 'failover:' },
      childGateway(sim, { rateLimitCalls: 2, rateLimitWindowSeconds: 1, redis: 'r' }),
      statusPoller('rec1'),
      { id: 'rec1', z: 'tab1', type: 'function', func: "global.get('append')(env.get('IOTGW_TAG') + ' ' + msg.topic + ' ' + Date.now() + '\\n');\nreturn null;", outputs: 0, wires: [] },
    ];
    for (const tag of ['A', 'B']) await (await fleet.start(tag)).deploy(flow);
    await waitFor(() => recordLines(fleet.recordsFile).length >= BACKLOG * 0.3, 60000, '30% of the backlog');
    const tKill = Date.now();
    const { failoverMs } = await set.killMaster();
    await waitFor(() => recordLines(fleet.recordsFile).some((l) => Number(l[2]) > tKill + failoverMs), 60000, 'a record after the failover').catch((e) => console.error(String(e)));
    const after = recordLines(fleet.recordsFile).filter((l) => Number(l[2]) > tKill + failoverMs);
    const takeover = after.length ? (Math.min(...after.map((l) => Number(l[2]))) - tKill) / 1000 : NaN;
    await waitFor(() => new Set(recordLines(fleet.recordsFile).map((l) => l[1])).size >= BACKLOG, 90000, 'the backlog to drain').catch((e) => console.error(String(e)));
    const lines = recordLines(fleet.recordsFile);
    const ids = new Set(lines.map((l) => l[1]));
    console.log(`fleet failover: sentinel, promoted in ${(failoverMs / 1000).toFixed(1)} s, takeover ${takeover.toFixed(1)} s, ${lines.length - ids.size} repeats, ${BACKLOG - ids.size} lost, ${sim.terminal.counters.throttled} 429s`);
  } finally {
    await fleet.close();
    await sim.close();
    await set.destroy();
  }
}

(process.env.IOTGW_BENCH_FAILOVER_ONLY ? Promise.resolve() : main()).then(() => (findRedisServer() ? failover() : undefined)).catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
