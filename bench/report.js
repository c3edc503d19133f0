'use strict';
/** Renders BENCHMARKS.md from bench/results.json (every number comes from a stored run). */

const yes = (b) => (b === undefined || b === null ? 'n/a' : b ? '**met**' : '**missed**');
const n = (x) => (x === undefined || x === null || Number.isNaN(x) ? 'n/a' : typeof x === 'number' ? x.toLocaleString('en-US') : String(x));

function runLine(f) {
  const r = f.run;
  return `_Run ${r.started} (${r.seconds} s) with \`${r.command}\`; load average before: \`${r.loadBefore}\`, after: \`${r.loadAfter}\`${r.quick ? '; **quick mode: short runs, not a figure to quote**' : ''}._`;
}

function busyNote(f) {
  const busy = f.run.othersBusyPct;
  if (busy === undefined) return '';
  return busy >= 10
    ? `\n> **The machine was busy**: in the 2 s before this figure started (the benchmark itself idle) other processes kept ${busy}% of all ${f.run.machine.nproc} cores busy. CPU-bound numbers (calls/s, records/s, load times) are lower, and noisier, than on an idle machine.\n`
    : `\nIn the 2 s before this figure started, other processes kept ${busy}% of the ${f.run.machine.nproc} cores busy.\n`;
}

function throughput(f) {
  const s = f.setup;
  return `## 1. Useful throughput under the limit

Simulator limit: ${s.calls} calls per ${s.windowS} s per throttle group, at most 3 concurrent, 100 messages a call,
so the most a window can carry is ${s.limitPerWindow} mode messages. A function node offers ${s.offeredPerS} mode messages a
second (one terminal each, cycling over ${n(s.terminals)} prime IDs; more than the limit, so a queue always waits).
The same messages go to two branches in one child Node-RED, each against its own simulator:
**ours** is \`iotgw-terminal-mode\` (lingerMs 50) with the gateway config set to the same limit (${s.calls} calls / ${s.windowS} s,
maxBatchSize 100); **core** is what a user wires without this package, batching too: a \`join\` node (an array of 100
msgs, or what came in 1 s), a \`delay\` node (rate limit, ${s.calls} msgs per ${s.windowS} s, queue all), a function building one
POST \`terminal/mode\` of the joined items, then the core \`http request\` node (keep-alive on).
Counted from the simulators' call logs: messages in accepted calls that started in ${s.measureS} s after a ${s.warmupS} s warm-up
(${s.measureS / s.windowS} windows), and every 429/503 answered during the whole run.

| figure | measured | target | |
| --- | --- | --- | --- |
| ours: messages per window | ${n(f.ours.perWindow)} (${n(Math.round(f.ours.ofLimit * 100))}% of ${s.limitPerWindow}; ${n(f.ours.callsInSpan)} calls, ${n(f.ours.perMinute)} msgs/min) | ≥ 98% of ${s.limitPerWindow} | ${yes(f.ours.perWindow >= 0.98 * s.limitPerWindow)} |
| ours: 429/503 provoked | ${n(f.ours.throttled)} of ${n(f.ours.callsTotal)} calls | 0 | ${yes(f.ours.throttled === 0)} |
| core join + delay + http request: messages per window | ${n(f.core.perWindow)} (${n(f.core.callsInSpan)} calls) | (reference) | |
| core: 429/503 provoked | ${n(f.core.throttled)} of ${n(f.core.callsTotal)} calls | (reference) | |
| ratio ours / core | ${n(f.ratio)}× | | |

${runLine(f)}
${busyNote(f)}`;
}

function overhead(f) {
  if (!f.levels) return `## 2. Overhead with the limits off\n\n(stored in an older format: run \`npm run bench -- overhead\` again)\n`;
  const s = f.levels[0].setup;
  const row = (name, r) => `| ${name} | ${n(r.perSecond)} | ${n(r.itemsPerCall)} | ${n(r.medianMs)} | ${n(r.p99Ms)} | ${n(r.calls)} | ${n(r.errors)} | ${r.cpuMsPerCall === undefined ? 'n/a' : n(r.cpuMsPerCall)} |`;
  const table = (l) => `**${l.setup.concurrency} msgs in flight**

| client | msgs/s | msgs per call (at the simulator) | median ms | p99 ms | msgs counted | errors | client CPU ms/msg |
| --- | --- | --- | --- | --- | --- | --- | --- |
${row('ours (iotgw-terminal-mode), maxBatchSize 1', l.ours)}
${l.oursBatching ? row('ours, as left by a user (maxBatchSize 100, lingerMs 50): batches what comes back together', l.oursBatching) : ''}
${row('floor node (one undici request per msg)', l.floor)}
${row('core http request node', l.core)}
${row('bare undici, outside Node-RED', l.undici)}
`;
  const ratios = f.levels
    .map(
      (l) => `| ours / floor node, ${l.setup.concurrency} in flight | ${n(l.oursOfFloor)} | ≥ 0.9 | ${yes(l.oursOfFloor >= 0.9)} |
| core http request / floor node, ${l.setup.concurrency} in flight (reference) | ${n(l.coreOfFloor)} | | |
| floor node / bare undici, ${l.setup.concurrency} in flight (reference) | ${n(l.floorOfUndici)} | | |`,
    )
    .join('\n');
  return `## 2. Overhead with the limits off: one call per msg, against the floor node

One **call** is the same request for every client: \`POST /api/v1.0/terminal/mode\` with a JSON body of one ModeMessage
and a bearer token, the JSON reply read whole and parsed. C msgs (3, then 16) are kept in flight (closed loop: when one
ends the next starts) for ${s.durationS} s; the first ${s.warmupS} s are not counted${s.warmAllS ? ', and every client first runs ' + s.warmAllS + ' s unmeasured (none is measured in a colder runtime or simulator than another)' : ''}. The simulator (limits off) runs in the
benchmark's process; the Node-RED clients one after the other in one child Node-RED.
- **ours**: a function node sends msgs into \`iotgw-terminal-mode\`; the gateway config has **maxBatchSize 1** (one call per
  msg: the target's comparison), maxConcurrent C and rateLimitCalls 0. Latency: from the function's send to the msg leaving
  the node's output. A second row runs the config as a user leaves it (maxBatchSize 100, lingerMs 50): the C msgs that come
  back from one call are sent on together and batched again (msgs per call counted at the simulator), so it is not one call
  per msg and is shown for reference only.
- **floor node** (the baseline): \`bench/floor-node\`, a minimal Node-RED node doing one undici request per msg (a \`Pool\`
  of C connections) and nothing else: no checks, no exact integers, no status, no limits. No node can cost less per call.
- **core**: function (url, method, headers, JSON payload) → core \`http request\` (keep-alive on, parsed JSON) → function.
- **bare undici**: a \`Pool\` of C connections in a plain node process (no Node-RED), for reference.

${f.levels.map(table).join('\n')}
| figure | measured | target | |
| --- | --- | --- | --- |
${ratios}

${runLine(f)}
${busyNote(f)}`;
}

function burst(f) {
  const rows = f.runs.map((r) => `| ${r.name} | ${n(r.done)} of ${n(r.msgs)} | ${n(r.calls)} | **${n(r.itemsPerCall)}** | ${n(r.msgsPerSecond)} | ${n(r.rejected)} | ${n(r.caught)} |`).join('\n');
  return `## 2b. A burst with the limits off

${n(f.setup.msgs)} msgs (one mode message each) leave one function node at once (one input, ${n(f.setup.msgs)} \`node.send\` calls) in a
child Node-RED; the simulator's rate limit is off. Items per call are counted at the simulator (its call log); msgs/s run
from the burst's start to the last result.
- **ours**: \`iotgw-terminal-mode\`, gateway maxBatchSize ${f.setup.maxBatchSize}, maxConcurrent ${f.setup.maxConcurrent}, rateLimitCalls 0 (the simulator
  refuses more than ${f.setup.maxConcurrent} concurrent calls), with lingerMs 0 and with the default 50.
- **core**: \`join\` (an array of 100 msgs, or what came in 0.05 s) → function (one POST of the joined items) → \`http request\`
  (keep-alive) → function counting the items of each reply: the batching a core user would wire (no concurrency cap).

| client | results | calls | items per call | msgs/s | calls refused | errors caught |
| --- | --- | --- | --- | --- | --- | --- |
${rows}

| figure | measured | target | |
| --- | --- | --- | --- |
${f.runs.filter((r) => r.name.startsWith('ours')).map((r) => `| items per call, ${r.name} | ${n(r.itemsPerCall)} | ≥ 90 | ${yes(r.itemsPerCall >= 90 && r.caught === 0)} |`).join('\n')}

${runLine(f)}
${busyNote(f)}`;
}

function memRuns(runs, unit) {
  const head = `| ${unit} | arrived | s | ${unit}/s | CPU µs per ${unit === 'records' ? 'record' : 'device'} | idle RSS MB | peak RSS MB | **peak above idle MB** | peak heapUsed MB | heapUsed after GC MB | node options |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |`;
  const rows = runs.map(
    (r) =>
      `| ${n(r.size)} | ${n(r.records ?? r.devices)} | ${n(r.seconds)} | ${n(r.recordsPerSecond ?? r.devicesPerSecond)} | ${n(r.cpuUsPerRecord ?? r.cpuUsPerDevice)} | ${n(r.idleRssMB)} | ${n(r.peakRssMB)} | **${n(r.peakAboveIdleMB)}** | ${n(r.peakHeapUsedMB)} | ${n(r.heapUsedAfterGcMB)} | ${r.nodeArgs || 'default'} |`,
  );
  return [head, ...rows].join('\n');
}

function poller(f) {
  const [small, big] = f.runs;
  return `## 3. Status poller: draining a backlog

The simulator (limits off, ${f.setup.replyCap} records a reply) holds a backlog of ${f.setup.sizes.map(n).join(' or ')} closed status records, generated
lazily. A fresh child Node-RED per run: its idle RSS is taken with empty flows after a full GC; then
\`iotgw-status-poller\` (output: one msg per record, startFrom -1d, autoStart) → a function node counting records
(the runs marked "bench-count node": into \`bench/count-node\`, a node that only counts; a function node runs its code in
a vm context per msg, and those writes are most of what piles up in V8's old generation between full GCs).
The baseline (runs marked "baseline: minimal producer"): no poller and no simulator, \`bench/produce-node\` sends the same
number of msgs of the same shape (\`{ topic, payload: status record with StateName/TransportName, statusCode }\`, fresh
objects) with no HTTP, parse or mark into the same counting function node, in lots of 500 (one reply of the poller)
paced as the poller went in the run of the same size (what Node-RED and the function node cost with no node of ours),
and once per size unpaced (a lot per event-loop turn, faster than the poller; shown for reference, not judged by).
Issue 17's goal (≤ 60 MB above idle at 1M) is judged both absolutely and as ours minus the paced baseline's median.
The child's RSS is read from /proc every 50 ms until the last record arrives; records/s and CPU time (user + system of
the child) run from the deploy to the last record. The second pair of runs caps V8's old generation at 80 MB: if the
poller kept records, the big drain would run out of memory there; if the peak only grows with garbage V8 has not
collected yet, both peaks come out alike. "heapUsed after GC" is taken once the drain is over.

${memRuns([...f.runs, ...(f.countRuns || []), ...(f.baselineRuns || []), ...(f.capped || [])], 'records')}

| figure | measured | target | |
| --- | --- | --- | --- |
| peak RSS above idle, ${n(big.size)} records | ${n(big.peakAboveIdleMB)} MB | < 200 MB | ${yes(f.metPeak)} |${
    f.baselineRuns
      ? `
| the same against issue 17's goal | ${n(big.peakAboveIdleMB)} MB | ≤ 60 MB | ${yes(f.metPeak60)} |
| baseline: minimal producer → function node, paced as the poller, peak RSS above idle (median of ${f.baselineRuns.filter((r) => r.size === small.size && r.paced).length} / ${f.baselineRuns.filter((r) => r.size === big.size && r.paced).length} runs), ${n(small.size)} → ${n(big.size)} | ${n(f.baselinePeakMB.small)} → ${n(f.baselinePeakMB.big)} MB (growth ${n(f.baselineGrowthMB)} MB) | (reference) | |
| ours minus the baseline, peak RSS above idle, ${n(small.size)} → ${n(big.size)} | ${n(f.oursMinusBaselineMB.small)} → ${n(f.oursMinusBaselineMB.big)} MB | ≤ 60 MB at ${n(big.size)}, flat | ${yes(f.metPeak60OverBaseline)} / flat ${yes(f.metFlatOverBaseline)} |`
      : ''
  }
| growth of that peak, ${n(small.size)} → ${n(big.size)} (default V8 heap) | ${n(f.growthMB)} MB | flat (≤ 10 MB or 15%) | ${yes(f.metFlat)} |
| the same growth, old generation capped at 80 MB | ${n(f.cappedGrowthMB)} MB | flat | ${yes(f.metFlatCapped)} |${
    f.countRuns
      ? `\n| the same growth (default heap) into a node that only counts (bench/count-node) instead of the function node: ${n(f.countRuns[0].peakAboveIdleMB)} → ${n(f.countRuns[1].peakAboveIdleMB)} MB | ${n(f.countGrowthMB)} MB | flat | ${yes(f.metFlatCount)} |`
      : ''
  }
| heap kept after the drain (after GC), ${n(small.size)} → ${n(big.size)} | ${n(f.retainedGrowthMB)} MB | | |
| records/s (${n(big.size)}) | ${n(big.recordsPerSecond)} | | |
| CPU per record (${n(big.size)}) | ${n(big.cpuUsPerRecord)} µs | | |

${runLine(f)}
${busyNote(f)}`;
}

function inventory(f) {
  const [small, big] = f.runs;
  return `## 4. Inventory: every page of the device list

The simulator's broker area holds ${f.setup.sizes.map(n).join(' or ')} devices (generated on demand, pages wrapped in an array as documented).
A fresh child Node-RED per run: idle RSS as above, then inject → \`iotgw-lorawan-devices\` (all pages, pageSize ${f.setup.pageSize},
session keys redacted) → ${f.setup.downstream}. RSS read every 50 ms until every device arrived; again a second pair
of runs with V8's old generation capped at 80 MB.

${memRuns([...f.runs, ...(f.capped || [])], 'devices')}

| figure | measured | target | |
| --- | --- | --- | --- |
| growth of peak RSS above idle, ${n(small.size)} → ${n(big.size)} (default V8 heap) | ${n(f.growthMB)} MB (${n(small.peakAboveIdleMB)} → ${n(big.peakAboveIdleMB)}) | must not grow (≤ 10 MB or 15%) | ${yes(f.met)} |
| the same, old generation capped at 80 MB | ${n(f.cappedGrowthMB)} MB | must not grow | ${yes(f.metCapped)} |
| heap kept after the walk (after GC), ${n(small.size)} → ${n(big.size)} | ${n(f.retainedGrowthMB)} MB | | |

${runLine(f)}
${busyNote(f)}`;
}

function footprint(f) {
  const l = f.load;
  return `## 5. Footprint on an edge gateway

- **Installed size**: \`npm pack\` of the checkout (${f.tarball.file}: ${n(Math.round(f.tarball.packedBytes / 1024))} kB packed, ${n(f.tarball.entries)} files),
  then \`npm install --omit=dev <tarball>\` in an empty directory; the sum of the file sizes in its node_modules
  (the package and its runtime dependencies; \`du\` disk usage also shown).
- **Load time**, two ways: (a) Node-RED's own start (spawn to the admin API answering) in three user directories:
  without the package, with it and no flow, and with it and a flow of one \`iotgw-gateway\` and ten nodes of ours in
  flows.json; ${f.setup.startRounds} rounds of one start each back to back (the order rotating), the median of the
  per-round differences against "without" (each round saw about the same load; single starts swing by 100 ms or more
  on a busy machine, so the differences of the fastest and of the medians are shown too); (b) in fresh node processes,
  \`require()\` of every node module the package lists plus the call that registers its types (a stub RED), median of
  ${f.setup.rounds}; then the load of every node module (\`dist/nodes/<type>.js\` with the lib files and the
  dependencies it imports) with its real register function, which the registrar (\`dist/nodes.js\`, written by
  \`scripts/registrar.js\`) defers to the creation of the first node of each type.
- **Idle memory**: RSS after a full GC of the three Node-REDs of (a), every round, the median of the per-round differences: what the package adds with no flow of ours, and
  with the flow of ten nodes. Also: the Node-RED with the package, empty flows, then one \`iotgw-gateway\` and ten nodes
  (2 terminal-mode, cancel, 2 status pollers with autoStart off, message tracker, lorawan devices, contract, referral,
  sms request) deployed, 3 s rest, RSS after a full GC; the difference.

| figure | measured | target | |
| --- | --- | --- | --- |
| installed size, package + runtime deps (undici, zod, lossless-json, ioredis, saxes: declared, not bundled): the sum of the file sizes, as npm's "unpacked size" | ${n(f.installedMB)} MB (${n(f.installed.files)} files; du, every file rounded up to a 4 kB block: ${n(Math.round(f.installed.diskBytes / 1024 / 102.4) / 10)} MB) | ≤ 15 MB | ${yes(f.met.size)} |
| load time (a): Node-RED start with the package, no flow of ours − without, median of ${l.redStartWithMs.length} paired rounds | ${n(l.redStartPairedDiffMs)} ms (fastest − fastest: ${n(l.redStartMinDiffMs)} ms; median − median: ${n(l.redStartDiffMs)} ms; with: ${l.redStartWithMs.join(', ')}; without: ${l.redStartWithoutMs.join(', ')} ms) | ≤ 30 ms | ${yes(l.redStartPairedDiffMs <= 30)} |
| load time (b): require + register, ${n(l.typesRegistered)} types | ${n(l.requireRegisterMs)} ms (runs: ${l.requireRegisterRuns.join(', ')}) | ≤ 30 ms | ${yes(l.requireRegisterMs <= 30)} |
${l.redStartFlowPairedDiffMs === undefined ? '' : `| load time (a) with a flow of ten nodes of ours − without, median of ${l.redStartFlowMs.length} paired rounds | ${n(l.redStartFlowPairedDiffMs)} ms (with the flow: ${l.redStartFlowMs.join(', ')} ms) | ≤ 60 ms (issue 26) | ${yes(l.redStartFlowPairedDiffMs <= 60)} |
| load of every node module + its real register function (the first node of each type) | ${n(l.coreLoadMs)} ms | (reference) | |
`}| memory of the loaded package itself (empty flows, with − without) | ${n(f.packageRssMB)} MB RSS${f.rssMB ? ` (RSS with: ${f.rssMB.with.join(', ')}; without: ${f.rssMB.without.join(', ')} MB)` : ''} | ≤ 8 MB | ${yes(f.met.idle)} |
${f.flowRssMB === undefined ? '' : `| memory with the flow of ten nodes of ours − without the package | ${n(f.flowRssMB)} MB RSS${f.rssMB ? ` (with the flow: ${f.rssMB.flow.join(', ')} MB)` : ''} | (reference; also ≤ 8 MB: ${yes(f.flowRssMB <= 8)}) | |
`}| idle memory: one config node + ten nodes deployed on a running Node-RED | ${n(f.idle.addedRssMB)} MB RSS (${n(f.idle.addedHeapMB)} MB heap) | (reference) | |

Installed size by module: ${f.installed.deps.map((d) => `${d.name} ${n(d.kb)} kB`).join(', ')}.
Require time of each runtime dependency alone (median, fresh process): ${Object.entries(l.depRequireMs || {}).map(([k, v]) => `${k} ${v} ms`).join(', ') || 'none'}.
Node-RED listed ${n(l.typesLoadedByRed)} \`iotgw-\` types after loading the installed package.

${runLine(f)}
${busyNote(f)}`;
}

/** Figure 6's rows for the codec's worst cases (bench/lib/codec-worst.js). */
function worstRows(f) {
  const w = f.micro.worst;
  const rows = w.layouts.map(
    (l) =>
      `| one message at the bound: ${l.name} (${n(l.bytes)} bytes, ${n(l.values)} values; worst case ${n(l.worstCase)}), decode + common message format, ${n(l.runs)} runs | CPU median ${n(l.cpuMedianMs)} ms, slowest ${n(l.cpuMaxMs)} ms (wall: median ${n(l.medianMs)} ms, p99 ${n(l.p99Ms)} ms, slowest ${n(l.maxMs)} ms) | < 50 ms | ${yes(l.cpuMaxMs < 50)} |`,
  );
  rows.push(`| a 2 MB message refused before decoding (${w.refuse2MB.code}) | ${n(w.refuse2MB.ms)} ms | (reference) | |`);
  rows.push(`| load of a definitions file at the 4 MB cap (${n(w.load4MB.messages)} messages, ${n(w.load4MB.bytes)} bytes), once at deploy | ${n(w.load4MB.ms)} ms, heap kept ${n(w.load4MB.heapKeptMB)} MB | (reference) | |`);
  return `${rows.join('\n')}\n`;
}

function codec(f) {
  const t = f.micro.telemetry;
  const x = f.micro.thirty;
  const d = f.drain;
  return `## 6. Message definitions codec

\`bench/figures/codec.js\`. Micro figures in a child \`node --expose-gc\` (one core, ~1 s per figure after a warm-up):
the 19-byte SatelliteTelemetry of \`examples/definitions/demo.idpmsg\` and a 30-field message of ${n(x.bytes)} bytes (ints of
3 to 64 bits, booleans, enums, strings, data, an array of 2 elements, an optional field). Heap bytes per decoded message:
100,000 results kept, full GCs around. Drain: a child Node-RED, the simulator with its limits off holding ${n(d.backlog)}
RawPayload-only SatelliteTelemetry messages, \`iotgw-message-poller\` → a counting function node, without and with
definitions (every message decoded into \`msg.fields\` and \`Payload\`), ${d.rounds} alternating rounds each, median.
${f.micro.worst ? `Worst cases (\`bench/lib/codec-worst.js\`): layouts at the load-time bound of ${n(f.micro.worst.maxValues)} values per message, each message
decoded and turned into the common message format as the message poller does; CPU time is what the message costs the event
loop, wall time adds what other processes on the machine took meanwhile.\n` : ''}

| figure | measured | target | |
| --- | --- | --- | --- |
| SatelliteTelemetry decodes/s (compiled message) | ${n(t.decodesPerSecond)} (with the SIN/MIN lookup: ${n(t.decodesWithLookupPerSecond)}) | ≥ 600,000 | ${yes(f.met.telemetry600k)} |
| SatelliteTelemetry decode + common message format/s | ${n(t.decodesWithCmfPerSecond)} | (reference) | |
| SatelliteTelemetry encodes/s | ${n(t.encodesPerSecond)} | (reference) | |
| SatelliteTelemetry heap bytes per decoded message | ${n(t.heapBytesPerDecoded)} | (reference) | |
| 30-field message decodes/s, encodes/s | ${n(x.decodesPerSecond)}, ${n(x.encodesPerSecond)} | (reference) | |
| 30-field message heap bytes per decoded message | ${n(x.heapBytesPerDecoded)} | (reference) | |
| drain of ${n(d.backlog)}: without / with definitions | ${n(d.withoutSeconds)} s / ${n(d.withSeconds)} s (${n(d.addedPct)}% added) | ≤ 20% added | ${yes(f.met.drain20pct)} |
${f.micro.worst ? worstRows(f) : ''}${f.micro.load10k ? `| load of a definitions file of 10,000 messages (${n(Math.round(f.micro.load10k.bytes / 1024))} kB), median of 5 | ${n(f.micro.load10k.medianMs)} ms | < 1 s | ${yes(f.met.load10kUnder1s)} |\n` : ''}
${runLine(f)}
${busyNote(f)}`;
}

function render(stored) {
  const figs = stored.figures;
  const last = stored.last || {};
  const m = last.machine || {};
  const parts = [
    `# Benchmarks

Generated by \`npm run bench\` (\`bench/run.js\`) from the measurements stored in \`bench/results.json\`; every number
below was measured, none is typed in. Run one figure with \`npm run bench -- throughput\` (or overhead, burst, poller,
inventory, footprint, codec): that figure is measured again and this file rewritten with the others as stored, each with
its own date and load. Benchmarks are not tests; they do not run in CI. Everything runs on 127.0.0.1: the gateway
simulator (\`src/simulator\`) and real Node-RED runtimes as child processes (flows deployed through the admin API),
so that memory and load figures are those of a real runtime, not of the benchmark.

**Machine** (last run): ${m.nproc} cores (\`nproc\`), ${m.memoryGiB} GiB memory, CPU \`${m.cpu}\`, ${m.os}; node ${m.node}, Node-RED ${m.nodeRed}.
Last command: \`${last.command}\`, finished ${last.finished} (${last.seconds} s).

## Summary

| # | figure | measured | target | |
| --- | --- | --- | --- | --- |`,
  ];
  const sum = [];
  if (figs.throughput) {
    const f = figs.throughput;
    sum.push(`| 1 | messages per window under ${f.setup.calls} calls/${f.setup.windowS} s | ${n(f.ours.perWindow)} of ${f.setup.limitPerWindow} (${n(Math.round(f.ours.ofLimit * 100))}%), ${n(f.ours.throttled)} × 429; core join + delay + http request: ${n(f.core.perWindow)} (ours / core ${n(f.ratio)}×) | ≥ 98%, zero 429 | ${yes(f.met)} |`);
  }
  if (figs.overhead) {
    const f = figs.overhead;
    if (f.levels) sum.push(`| 2 | one call per msg, limits off: ours / floor node | ${f.levels.map((l) => `${n(l.oursOfFloor)} at ${l.setup.concurrency} in flight (${n(l.ours.perSecond)} vs ${n(l.floor.perSecond)} msgs/s)`).join('; ')} | ≥ 0.9 at 3 and 16 | ${f.levels.map((l) => yes(l.oursOfFloor >= 0.9)).join(' / ')} |`);
  }
  if (figs.burst) {
    const f = figs.burst;
    sum.push(`| 2b | burst of ${n(f.setup.msgs)}, limits off: items per call, msgs/s | ${f.runs.map((r) => `${r.name}: ${n(r.itemsPerCall)} items/call, ${n(r.msgsPerSecond)} msgs/s`).join('; ')} | ≥ 90 items per call | ${yes(f.met)} |`);
  }
  if (figs.poller) {
    const f = figs.poller;
    const [a, b] = f.runs;
    sum.push(`| 3 | poller peak RSS above idle, ${n(a.size)} → ${n(b.size)} records | ${n(a.peakAboveIdleMB)} → ${n(b.peakAboveIdleMB)} MB (capped heap: ${n(f.capped?.[0]?.peakAboveIdleMB)} → ${n(f.capped?.[1]?.peakAboveIdleMB)}); ${n(b.recordsPerSecond)} records/s, ${n(b.cpuUsPerRecord)} µs CPU/record | < 200 MB, flat | ${yes(f.metPeak)} / flat ${yes(f.metFlat)} (capped ${yes(f.metFlatCapped)}) |`);
    if (f.baselineRuns) {
      sum.push(`| 3 | the same at ${n(b.size)}: absolute; baseline (minimal producer → function node, paced as the poller, median); ours minus baseline | ${n(b.peakAboveIdleMB)} MB; ${n(f.baselinePeakMB.big)} MB; ${n(f.oursMinusBaselineMB.big)} MB | ≤ 60 MB (absolute / minus baseline) | ${yes(f.metPeak60)} / ${yes(f.metPeak60OverBaseline)} |`);
    }
  }
  if (figs.inventory) {
    const f = figs.inventory;
    const [a, b] = f.runs;
    sum.push(`| 4 | inventory peak RSS above idle, ${n(a.size)} → ${n(b.size)} devices | ${n(a.peakAboveIdleMB)} → ${n(b.peakAboveIdleMB)} MB (capped heap: ${n(f.capped?.[0]?.peakAboveIdleMB)} → ${n(f.capped?.[1]?.peakAboveIdleMB)}) | no growth | ${yes(f.met)} (capped ${yes(f.metCapped)}) |`);
  }
  if (figs.footprint) {
    const f = figs.footprint;
    sum.push(`| 5 | installed size with dependencies (sum of file sizes) / added start time / added idle RSS | ${n(f.installedMB)} MB / ${n(Math.max(f.load.requireRegisterMs, f.load.redStartPairedDiffMs ?? f.load.redStartDiffMs))} ms / ${n(f.packageRssMB)} MB | ≤ 15 MB installed with its dependencies / ≤ 30 ms / ≤ 8 MB added by the package | ${yes(f.met.size)} / ${yes(f.met.load)} / ${yes(f.met.idle)} |`);
  }
  if (figs.codec) {
    const f = figs.codec;
    sum.push(`| 6 | codec: SatelliteTelemetry decodes/s; drain of ${n(f.drain.backlog)} with definitions | ${n(f.micro.telemetry.decodesPerSecond)}/s; ${n(f.drain.addedPct)}% added | ≥ 600,000/s; ≤ 20% | ${yes(f.met.telemetry600k)} / ${yes(f.met.drain20pct)} |`);
  }
  parts[0] += `\n${sum.join('\n')}\n`;
  if (figs.throughput) parts.push(throughput(figs.throughput));
  if (figs.overhead) parts.push(overhead(figs.overhead));
  if (figs.burst) parts.push(burst(figs.burst));
  if (figs.poller) parts.push(poller(figs.poller));
  if (figs.inventory) parts.push(inventory(figs.inventory));
  if (figs.footprint) parts.push(footprint(figs.footprint));
  if (figs.codec) parts.push(codec(figs.codec));
  parts.push(NOTES);
  parts.push(OWN_SCRIPTS);
  return `${parts.join('\n')}\n`;
}

// Findings of the profiling done when the suite was written (bench/lib/profile-top.js and
// profile-incl.js read a profile taken with BENCH_PROFILE_DIR=dir). Causes, not numbers.
const NOTES = `## Where the misses come from (profiling notes)

Profiles: \`BENCH_PROFILE_DIR=/tmp/prof npm run bench -- overhead\` makes every child Node-RED write a
\`--cpu-prof\` profile; \`node bench/lib/profile-top.js <file>\` lists self time by function and module,
\`node bench/lib/profile-incl.js <file> <regex>...\` the inclusive time of matching functions.
\`BENCH_OVERHEAD_ONLY=ours|core|undici\` runs one client of figure 2; \`BENCH_NODE_ARGS\` passes node options to the child.

- **Batching (2b)**: the batcher used to cut a batch before the call could leave (rate slot only, then the batch waited
  in the concurrency semaphore), so with lingerMs 0 a burst left as one-item calls. Now \`ApiClient.acquireCall\`
  (\`src/lib/transport/http.ts\`) gives the batcher the call's auth headers, a concurrency slot and the group's rate slot (in that
  order, never holding the concurrency slot while a rate window is waited for) and only then is the batch cut
  (\`src/lib/api/batcher.ts\`); a free slot sends a partial batch at once, and lingerMs only applies while a burst is still
  arriving (the queue grew since the last event-loop turn). Tests: \`test/nodes/iotgw-terminal-mode.batching.test.js\` (items per call counted at
  the simulator in a real Node-RED runtime).
- **Overhead (2)**: the baseline is the floor node (\`bench/floor-node\`), not bare undici outside Node-RED: a call
  through Node-RED also costs the runtime's msg passing and the function node that drives the loop, which no node can
  avoid. Each client now runs 6 s unmeasured before any is measured (the first one measured used to pay the runtime's
  and the simulator's cold start alone, and after 3 s both were still getting faster). Profiled for issue 17
  (\`--cpu-prof\` of the child with an unminified bundle): most CPU per call, for both, is the socket write and the
  driving function node. Ours only, before: an AbortController with its listeners, a timer and a response stream
  iterator per call, a new URL per call (twice), the content type parsed again, the list of secrets to cut out rebuilt,
  a promise set per msg, a wasted await in the batcher, an empty query sorted and serialised for the pool key, and
  the bundle's \`__name()\` on closures undici makes per request. Now: one deadline timer per client (every call has
  the same timeout), one listener per caller signal, the reply read whole through undici's \`dispatch\` handler
  interface (size cap on Content-Length and on every chunk), origin, path, content type and secrets cached, a count
  of msgs in flight, and no \`__name()\` in core.js or undici.js (\`scripts/bundle.js\`). Left: the exact-int64 parse
  path (depth check and the 16-digit test, about 0.7 µs more than JSON.parse alone), the zod check (about 0.6 µs),
  lossless-json's serialiser (about 1.2 µs against 0.6 µs), the batcher's and node-kit's bookkeeping, and a few
  promise layers: the guarantees (exact IDs, schema checks, redaction, status, one send or done per msg) cost that.
  Ours can pass the floor (1.42 at 16 in flight in the stored run): the floor node uses undici's \`request()\`, which
  makes a response stream per call and reads it with \`body.json()\`, while ours reads the reply whole through the
  handler interface. Runs taken while other work shared the 2 cores gave 0.73 to 0.94 at 3 in flight (issue 17 notes).
  Tests of the new call path: \`test/lib/transport/http.test.js\` (per-call deadlines, one caller's abort, the size cap with and
  without Content-Length, redaction of a renewed token, CR/LF refused after cached values), \`test/nodes/iotgw-gateway.call-path.test.js\`.
- **Poller (3) and inventory (4)** (issue 17): the heap kept after a drain or walk (after GC) does not grow with the
  size; the peak that grew was garbage in V8's old generation, which grows until the next full GC. Found with the
  sampling heap profiler in the child (\`HeapProfiler.startSampling\` with \`includeObjectsCollectedByMajorGC\`: the
  objects that reached the old generation, by allocation site) and \`--trace-gc-nvp\` (little is promoted: the old
  generation grew by objects V8 allocates there directly). Inventory: \`parseJson\` sent most pages to lossless-json
  because a hex session key held 16 digits in a row (now only a 16-digit number token does), the zod copy of every
  page and \`redactDevice\`'s entry arrays (now a strip schema checks the same fields and the reply itself is sent on;
  \`redactDevice\` copies with for...in). Poller: a copy of every record to decorate it (now in place, on the
  reply's own records) and IDs turned into text with \`String()\` three times per record: V8 keeps every number it
  turns into a string in its number-string cache, allocated in the old generation (now \`toFixed(0)\`,
  \`int64Text\` in \`src/lib/common/int64.ts\`). What is left with one msg per record is mostly the downstream function
  node's: it runs its code in a vm context per msg, and those writes land in the old generation; the runs into
  \`bench/count-node\` (a node that only counts) show the poller's own part.
- **Installed size and start (5)**: since issue 26 nothing is bundled. tsc writes \`dist/\` as readable CommonJS (a
  stack trace names \`dist/lib/transport/http.js\` and \`ApiClient.send\`), and the runtime dependencies (undici, zod,
  lossless-json, ioredis, saxes) are package.json \`dependencies\`, which a user's \`npm ls --all\` and \`npm audit\`
  list (\`test/package/install-route.ci.js\` checks both on the installed tarball). The installed size grew from the
  bundle's 1.8 MB to the figure above, mostly zod (about 8 MB of sources, typings and locales on disk). The start stays
  lazy: Node-RED loads \`dist/nodes.js\` (3 kB, written by \`scripts/registrar.js\`): each type is registered with its
  options (read at build time from the real register functions), and a node's own module (with the lib files and
  dependencies it imports) loads when the first node of that type is created; undici with an account's first request,
  ioredis with the first Redis connection, saxes with the first definitions node (\`test/package/registrar.test.js\`
  checks which file loads when, in a real runtime). Only the admin routes of two dialogs
  (\`dist/nodes/*.routes.js\`, a few lines each) load at start besides the registrar.
`;

// Figures measured by scripts of their own (not stored in results.json), as their engineers ran them on
// 2026-11-23 with the 2 cores shared by other builds and tests (load average 14 to 18). Re-run on a quiet machine.
const OWN_SCRIPTS = `## Figures from their own scripts

These run longer or need more parts (Redis, several runtimes) than \`npm run bench\` does; each line gives the command.
Measured on 2026-11-23 while the 2 cores were shared with other builds and tests (load average 14 to 18): rates are low
bounds, counts are exact.

| figure | command | measured | target | |
| --- | --- | --- | --- | --- |
| from-mobile messages drained per minute (limit 5 GET calls x 500 = 2,500 a minute) | \`npm run build && node bench/from-mobile-drain.js\` (10,000 messages at 10 a second, real limits: 5 calls per 60 s, 3 in flight, 130 s) | 2,460 in the first minute, 2,450 in the second (0.98 of the limit); 15 calls, 0 × 429. Each reply repeats the last second's 10 messages (\`FromUTC\` is inclusive), so 490 new per call | the limit | **met** within the inclusive overlap |
| several instances on one account | \`npm run bench:fleet\` (3 child Node-RED runtimes, Debian redis-server, 1,500 mode messages, simulator limit 5 calls per 6 s, 3 in flight) | \`fleet: 3 instances, 1500 items, 95.0% of the account limit, 0 429s, 0 repeats, 0 lost, takeover 8.8 s\` (15 calls in 12,635 ms against the 12,000 ms the limit allows; 1 token fetch; lease 10 s) | ≥ 95%, 0 429s, 0 repeats, 0 lost, takeover within the lease | **met** |
| status poller against the strict simulator (inclusive \`FromUTC\`, a mark write per reply with fsync) | \`node -e "require('./bench/figures/poller.js')({})"\` (figure 3's script, run alone) | 100,000 records: 2,233 records/s, 51.7 µs CPU/record, peak 92.8 MB above idle; 1,000,000: 3,870 records/s (258 s), 44.7 µs/record, peak 128.8 MB; heap capped at 80 MB: 4,861 and 5,367 records/s, peaks 47.8 and 52.4 MB | < 200 MB; flat | **met** / flat **missed** (capped **met**) |
| terminal inventory of 100,000 terminals, \`iotgw-terminals\` \`pages: all\` (issue 35): RSS of the Node-RED process while the pages stream, and calls per terminal | \`npm run build && node bench/terminals-inventory.js --gc-idle\` (simulator fleet of 100,000 in the bench process, limits off; a child Node-RED: one page of 1,000 first, then every terminal into a function node that counts them; RSS from /proc every 25 ms, the peak while the pages stream against idle, the median of 1 s of samples before the walk; \`--gc-idle\`: the Node-RED process and the floor, a bare \`node\` reading the same pages with fetch and JSON.parse, both run with \`--expose-gc\` and do a full GC right before their idle reading, so idle is the settled size and not wherever the last collection left RSS), 2026-11-26 10:25 to 10:28 UTC, load average 9.5 to 10.3 (other engineers' tests on the 2 cores) | 100 pages, 101 calls (1.01 calls per 1,000 terminals: the floor of one per 1,000, plus the empty page that ends the list), 3.6 to 5.6 s. Peak above idle in five runs: 18.7, 18.1, 15.3, 16.1 and 15.1 MB; the floor measured the same way in the same runs: 41.5 to 44.2 MB. 10,000 terminals (load 8.0 and 8.9): 11.0 and 9.6 MB (floor 7.6 and 7.9). Without \`--gc-idle\` (load 5.4 and 6.8): 22.3 and 18.9 MB; that way the code before this change gave 8.8 to 33.6 MB within minutes, the peak steady at 171 MB and idle anywhere from 137 to 148 MB, which is why the figure is taken with a GC before idle. The change (issue 35, second pass): most pages of the fleet hold a \`LastRegistrationMessageID\` above 2^53, so each 430 kB page went through a quoted full copy of its text before the native parse; now the native parser reads the page as it is and one walk puts back the exact digits (\`src/lib/common/int64.ts\`). Before it, with \`--gc-idle\` at load 0.7 to 0.9: 21.2, 19.4 and 20.1 MB; plain JSON.parse in its place (a diagnostic, digits lost): 15.8 to 16.9. Tried, no gain, not kept: one buffer instead of undici's chunks and Buffer.concat (21.0, 21.1, 19.5), each page sent at once instead of held until the next (22.9, 31.3, 21.1) | ≤ 20 MB above idle while streaming; calls per terminal listed | **met** (15.1 to 18.7 MB, idle after a GC in both processes; the bare fetch + JSON.parse walk 41.5 to 44.2 MB) |
| several instances on one account, with the INFO group in the shared limiter (issue 35) | \`npm run bench:fleet\` as above; then its failover line: 2 instances in sentinel mode (1 master, 1 replica, 3 sentinels) drain a 5,000-record backlog, the master is SIGKILLed at 30% and left dead, as the failover test does since issue 34 (the new master has no replica and acknowledges writes alone). 2026-11-26 10:09, 10:28, 10:29 and 10:29 UTC, load average 19.5, 3.8, 2.1 and 1.7 (other engineers' tests) | \`fleet: 3 instances, 1500 items, 97.2% of the account limit, 0 429s, 0 repeats, 0 lost, takeover 8.7 s\` (15 calls in 12,345 ms), \`96.1%\` (12,481 ms, takeover 9.0 s), \`96.5%\` (12,439 ms, 9.1 s), \`97.3%\` (12,333 ms, 8.1 s); each call 107 to 320 ms past the edge of the window of the call 5 before it (the line \`arrivals\` prints them; 110 to 135 ms in the third window: the 100 ms margin and the call's own time). Failover: \`fleet failover: sentinel, promoted in 2.3 s, takeover 3.5 s, 0 repeats, 0 lost, 0 429s\` (promoted in 2.2 to 2.4 s, takeover 3.5 s in all four) | ≥ 95%, 0 429s, 0 repeats, 0 lost | **met** (96.1 to 97.3%, counts 0). Before (09:50 to 10:01: 94.2, 94.8, 94.2%) the margin was not the cause: a redis-cli MONITOR trace against the simulator's arrivals showed the shared gate taking the account's concurrency slot first and holding it while it waited seconds for its window; the active instance's status poller (GET) held one of the 3 slots across the SEND window's edge, so the 4th and 5th SEND calls of a window came 0.5 to 1.5 s late and the chain of windows carried it to the last call. Now the window's slot first, then the concurrency slot (\`src/lib/transport/http.ts\`; \`test/lib/account/redis.gates.redis.test.js\`) |
| one call per msg with the account's figures kept, the sidebar tab closed and open (issue 27) | \`npm run build && node bench/account-status-cost.js\` (figure 2's script twice; "open": a comms websocket saying iotgw/watch every 5 s as the visible tab does), 2026-11-24 15:02 UTC, load average 0.3 | tab closed: ours/floor 0.94 at 3 in flight (6,848 against 7,270 msgs/s, 0.12 ms CPU/msg) and 0.93 at 16 (10,957 / 11,732, 0.07 ms); tab open: 0.90 (6,248 / 6,937, 0.12 ms) and 0.95 (9,495 / 10,026, 0.08 ms), 21 to 22 figure updates received per run | figure 2 unchanged within noise | **met** (one run each) |
| the demo with the fleet dashboard (issue 36): Node-RED's start, and its RSS with the fleet reporting | \`npm run build && node bench/fleet-dashboard.js [--minutes 10] [--rounds 5]\` (\`npm start\`'s startDev in a child process: the simulator, its living fleet of 3,000 terminals (24 movers reporting) and Node-RED in one process; examples/fleet-dashboard.json only; Chromium showing /dashboard through the run), 2026-11-26 09:42 to 09:55 UTC, load average 5 to 12 (other engineers' tests) | start to flows started, median of 7 alternating rounds (load 5 to 7): 1,644 ms with the dashboard, 1,520 ms with no example (+124 ms; single starts 1,168 to 2,169 ms; an earlier 5 rounds at load 9 to 12 gave 1,494 and 2,040 ms: the load, not the flow, decides); RSS just after the start 161 MB with the dashboard (the inventory of 3,000 arriving), 131 MB without. Ten minutes with the fleet reporting and the page open: 167 MB at the first sample (10 s), 172 MB at 1 min (the peak), 134 MB at 2, 139 at 5, 141.5 at 10 (140 to 141.5 from 7 min on); 78 calls to the simulator, 30 terminals reporting, no red status | (reference) | |
| the outbox's file store (issue 45): durable accepts per second, and 100,000 entries waiting | \`npm run build && node --expose-gc bench/outbox.js\` (the store and engine alone, no Node-RED: a msg is one \`submit/messages\` item with a 16-byte payload; each accept resolves after the fdatasync that covers it; the backlog opened in a fresh process, RSS against that process's idle after a forced GC), 2026-11-27 15:07 UTC, load average 1.4 (other agents' work on the 2 cores) | msgs arriving as a flow sends them, each acknowledged after its fsync, in acceptance order: 53,386/s (74 msgs per fsync); one at a time (the next only once the previous is durable): 3,223/s, bounded by this disk's fdatasync (median 156 µs, p90 188 µs); 64 producers: 51,436/s. 100,000 waiting: 28.8 MB on disk; open() 1,362 ms; RSS above idle 32.1 MB at once (8 MB of it V8's young generation), 22.8 MB settled (typed arrays 15.6 MB, heap +1.3 MB); accepting the 100,000 in one process: 64,356/s, 58.7 MB at once, 28.9 MB settled. Not yet measured: through a Node-RED node (the node layer accepts one msg at a time, so the one-at-a-time figure is its ceiling), the drain after a 30-minute outage | 5,000 msgs/s durably; disk ≤ 64 MB; RSS ≤ 30 MB above idle; start ≤ 2 s longer | rate **met** as a flow sends them, **missed** one at a time (3,223); disk **met**; RSS **met** settled (22.8), **missed** at once (32.1); open **met** (1.4 s) |
| the outbox through a real Node-RED node (issue 45): accepted msgs per second until all are durable, against a minimal durable node | \`npm run build && node bench/outbox-node.js --msgs 20000 --runs 3 --rate-only\` (a child Node-RED, the simulator's link refused so nothing drains; a function node sends 20,000 msgs at once, one \`submit/messages\` item each with a 16-byte RawPayload to 50 destinations; the clock stops when \`iotgw-send-message\` (outbox on) holds all as waiting, each counted only after the fdatasync that covers it; the baselines are \`bench/sync-node\`, a minimal node appending each msg's JSON line and fdatasync'ing it: \`each\` one at a time, \`group\` with group commit; median of 3 runs in one runtime, the first one cold), 2026-11-27 17:22 UTC, load average 6.3. **The machine was busy**: 2 cores shared with 5 other agents' builds and tests | through the node: 19,205 msgs/s (runs 7,621, 19,205, 20,201), 10,000 msgs per fdatasync; the same command on the commit before the node's group commit (one msg per sync; load 3.1): 1,553 msgs/s. Baselines: append + fdatasync one at a time 1,978 msgs/s (3,000 msgs); with group commit 33,768/s. At this rate the cost is CPU (Node-RED's delivery, the node's checks, the msg's JSON kept), not the disk | 5,000 msgs/s durably | **met** (19,205; before: **missed**, 1,553) |
| Node-RED's start with 100,000 entries waiting in an outbox (issue 45) | \`npm run build && node bench/outbox-node.js --start-only --backlog 100000 --starts 5\` (100,000 msgs accepted through the node as above, 35.5 MB on disk (the node keeps each msg's JSON too), Node-RED stopped; then started on that user directory and on one whose outbox is empty, alternated, 5 each: from spawn to "Started flows" in its log, and to the node's first status, \`outbox: 100,000 waiting\` or \`outbox: empty\`; RSS 10 s after spawn after a GC), 2026-11-27 17:32 to 17:34 UTC, load average 5.6 to 7.5 (**busy**, as above) | medians: flows started 1,907 ms with the backlog, 1,417 without (+0.5 s); the node's status 3,564 ms with the backlog, 1,433 without (+2.1 s; single starts +1.2 to +2.4 s, and one start at 8.4 s when the machine stalled); an earlier 3 starts at load 6.3: +1.9 s (3,471 and 1,533 ms). RSS 10 s in: 159.7 MB with the backlog, 137.5 without | at most 2 s longer | flows started **met** (+0.5 s); the backlog shown **missed** by a little on the busy machine (+2.1 s; +1.9 s in the earlier run) |
| the outbox's memory with 100,000 entries waiting, after packing its keys (issue 45) | \`npm run build && node --expose-gc bench/outbox.js\` (as the row above), 2026-11-27 17:31 UTC, load average 5.3 (**busy**, as above) | the typed arrays per 100,000 single-entry msgs (measured by walking the engine and the store): the two key indexes (engine and store, each the 24-byte key, its offset and length, a hash table) 4.09 MB each, msg ids 1.34 MB, 14 columns of the entry table 4.8 MB, the store's place of each record 1.56 MB; V8's young generation is 8 MB at once after the open, 2 MB settled. Cut: the outbox's own keys packed into 16 bytes, a length in one byte a slot, a look-up allocating nothing: typed arrays 15.6 → 13.2 MB (the key indexes 3.05 MB each). RSS above idle after open: 28.9 MB at once, 20.2 settled (other runs of \`--load\` alone: 26.3 to 30.0 at once, 19.3 to 21.1 settled; before the cut, same machine: 29.6 to 30.9 at once, 22.1 to 23.0 settled); open() 2,237 ms at this load. Same run: as a flow sends them 13,351/s (328 per fsync), one at a time 2,119/s (fdatasync median 158 µs, p90 323 µs). Tried, not kept: skipping the full JSON parse of each record at open (the young generation stayed at 8 MB) | RSS ≤ 30 MB above idle | **met** at once in this run (28.9) and settled (20.2); at once within noise of the bound on this busy machine (26.3 to 30.0) |
| the outbox's drain after a 30-minute outage with 2,000 waiting (issue 45) | \`npm run build && OUTAGE_MINUTES=30 node bench/outbox-drain.js --backlog 2000\` (a simulator in the bench process with the gateway's SEND limit, 5 calls per sliding 60 s, 3 in flight; a child Node-RED whose \`iotgw-send-message\` has the outbox on (TTL 2 h) and the account set to the same limit; the link refused (\`sim.server.link.refuse()\`), 2,000 msgs fed through an http-in route (priority 4, 50 destinations), the link kept down 30 min, then up; during the drain a new command (priority 0) every 10 s; the simulator's call log and 429 counter, the flow's outcomes with their times; \`OUTAGE_MINUTES\` takes a shorter outage for a quick check), 2026-11-27 17:15 to 17:49 UTC, load average 4.0 to 4.3 (**busy**, as above) | the full 30-minute run: first send 8.9 s after the link came back (the back-off's wait); then 5 calls of 100 in each of the 4 windows of 60 s (100% of the limit), the rest (25) in the 5th: 22 calls, 2,025 entries, all 2,000 of the backlog drained 249 s after the link came back (the least the limit allows after the first send); **0 × 429**; 2,025 outcomes on output 1, each created once at the gateway (0 duplicates). New commands: 25 fed during the drain, each sent in the first call after it came (ahead of the backlog, priority 0): from input to outcome median 29 s, max 59 s, at most one window of the limit (behind the backlog they would have waited up to 4 min). Quick checks with a 12 to 18 s outage and a 10 s window showed a first call of a single entry (the entry the drain took alone as the outage began); not seen in the 30-minute run, not looked into further | 100% of the SEND limit, 0 × 429, new commands not starved | **met** (100% in every full window, 0 × 429, new commands within one window) |

Figure 3 in the table at the top is the earlier (kinder) simulator's; the strict one serves about 1.25 records per record
emitted (every reply's last second comes again) and the poller writes its mark durably with every reply (7 to 9 ms
per fsync), which is most of the drop from 51,266 records/s.
`;

module.exports = { render };
