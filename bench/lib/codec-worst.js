'use strict';
/**
 * The codec's worst cases (issue 34; docs/security.md, "The codec's bounds"): how long one
 * message can hold the event loop. Layouts right at the load-time bound (20,000 values in
 * a message of the largest size), each decoded and turned into the common message format
 * as the message poller does, many times: the median and the slowest, wall and CPU. Also:
 * refusing a 2 MB message, and loading a 4 MB definitions file (the cap).
 *
 *   node --expose-gc bench/lib/codec-worst.js        (prints JSON; figure 6 runs it in its child)
 */
const path = require('node:path');

const ROOT = path.join(__dirname, '..', '..');
const f = (type, name, extra = '') => `<Field xsi:type="${type}"><Name>${name}</Name>${extra}</Field>`;
const file = (fields) =>
  `<MessageDefinition xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><Services><Service><Name>w</Name><SIN>200</SIN><ReturnMessages><Message><Name>W</Name><MIN>1</MIN><Fields>${fields}</Fields></Message></ReturnMessages></Service></Services></MessageDefinition>`;
const items = (n) => `<Items>${Array.from({ length: n }, (_, i) => `<string>i${i}</string>`).join('')}</Items>`;

/** [name, layout XML, fields filling it]: each as close to the bound (`max` values) as its Sizes allow. */
function layouts(max) {
  const flat = Math.floor((max - 2) / 2); // 1 (message) + 1 (array) + 2 per element
  let nest = 1;
  while (2 + (nest + 1) * (2 + 2 * (nest + 1)) <= max) nest++; // 1 + 1 + s (2 + 2s)
  const masks = Math.floor((max - 2) / 34); // 1 + 1 + 34 per element (object, mask, 32 items)
  return [
    [`an array of ${flat.toLocaleString('en-US')} booleans`, f('ArrayField', 'a', `<Size>${flat}</Size><Fields>${f('BooleanField', 'b')}</Fields>`), () => ({ a: Array.from({ length: flat }, (_, i) => ({ b: i % 2 === 0 })) })],
    [
      `the issue's nested arrays of booleans, Size ${nest}`,
      f('ArrayField', 'outer', `<Size>${nest}</Size><Fields>${f('ArrayField', 'inner', `<Size>${nest}</Size><Fields>${f('BooleanField', 'b')}</Fields>`)}</Fields>`),
      () => ({ outer: Array.from({ length: nest }, () => ({ inner: Array.from({ length: nest }, () => ({ b: true })) })) }),
    ],
    [
      `an array of ${masks.toLocaleString('en-US')} bitmasks of 32 items, all set`,
      f('ArrayField', 'a', `<Size>${masks}</Size><Fields>${f('BitmaskListField', 'm', `<Size>32</Size>${items(32)}<Fields></Fields>`)}</Fields>`),
      () => ({ a: Array.from({ length: masks }, () => ({ m: Object.fromEntries(Array.from({ length: 32 }, (_, i) => [`i${i}`, {}])) })) }),
    ],
    ['an array of 6,395 empty strings', f('ArrayField', 'a', `<Size>32767</Size><Fields>${f('StringField', 's', '<Size>3</Size>')}</Fields>`), () => ({ a: Array.from({ length: 6395 }, () => ({ s: '' })) })],
  ];
}

function measure(runs) {
  const { loadDefinitions, toCmf, worstCase, MAX_VALUES } = require(path.join(ROOT, 'dist/lib/codec'));
  const count = (v) => (Array.isArray(v) ? v.reduce((n, e) => n + 1 + count(e), 0) : v && typeof v === 'object' && !Buffer.isBuffer(v) ? Object.values(v).reduce((n, e) => n + 1 + count(e), 0) : 0);
  const LAYOUTS = layouts(MAX_VALUES);
  const results = LAYOUTS.map(([name, xml, fill]) => {
    const defs = loadDefinitions([{ text: file(xml), source: name }]);
    const m = defs.find(200, 1, 'return');
    const bytes = m.encode(fill());
    const once = () => {
      const d = defs.decode(bytes, 'return');
      return toCmf(d.message, d.fields);
    };
    for (let i = 0; i < 20; i++) once();
    const wall = [];
    const cpu = [];
    for (let i = 0; i < runs; i++) {
      const c0 = process.cpuUsage();
      const t0 = process.hrtime.bigint();
      once();
      wall.push(Number(process.hrtime.bigint() - t0) / 1e6);
      const c = process.cpuUsage(c0);
      cpu.push((c.user + c.system) / 1000);
    }
    wall.sort((a, b) => a - b);
    cpu.sort((a, b) => a - b);
    const r = (x) => Math.round(x * 100) / 100;
    return { name, bytes: bytes.length, values: count(defs.decode(bytes, 'return').fields), worstCase: worstCase(m.def, 6400).values, runs, medianMs: r(wall[runs >> 1]), p99Ms: r(wall[Math.floor(runs * 0.99)]), maxMs: r(wall[runs - 1]), cpuMedianMs: r(cpu[runs >> 1]), cpuMaxMs: r(cpu[runs - 1]) };
  });
  // A 2 MB message refused before decoding.
  const defs = loadDefinitions([{ text: file(LAYOUTS[1][1]), source: 'refuse' }]);
  const big = Buffer.concat([Buffer.from([200, 1]), Buffer.alloc(2 * 1024 * 1024 - 2, 0xff)]);
  const t0 = process.hrtime.bigint();
  let refused = '';
  try {
    defs.decode(big, 'return');
  } catch (e) {
    refused = e.code;
  }
  const refuseMs = Number(process.hrtime.bigint() - t0) / 1e6;
  // A definitions file just under the 4 MB cap: messages of four fields, as many as fit.
  const msg = (sin, min) => `<Message><Name>m${min}</Name><MIN>${min}</MIN><Fields>${f('UnsignedIntField', 'a', '<Size>12</Size>')}${f('SignedIntField', 'b', '<Size>20</Size>')}${f('StringField', 'c', '<Size>20</Size>')}${f('EnumField', 'd', `<Size>2</Size>${items(2)}`)}</Fields></Message>`;
  const services = [];
  let size = 0;
  for (let sin = 0; sin < 256 && size < 4 * 1024 * 1024 - 60_000; sin++) {
    const s = `<Service><Name>s${sin}</Name><SIN>${sin}</SIN><ReturnMessages>${Array.from({ length: 256 }, (_, min) => msg(sin, min)).join('')}</ReturnMessages></Service>`;
    if (size + s.length > 4 * 1024 * 1024 - 200) break;
    services.push(s);
    size += s.length;
  }
  const capFile = `<MessageDefinition xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><Services>${services.join('')}</Services></MessageDefinition>`;
  global.gc?.();
  const h0 = process.memoryUsage().heapUsed;
  const l0 = process.hrtime.bigint();
  const loaded = loadDefinitions([{ text: capFile, source: 'cap' }]);
  const loadMs = Number(process.hrtime.bigint() - l0) / 1e6;
  global.gc?.();
  return {
    maxValues: MAX_VALUES,
    layouts: results,
    refuse2MB: { code: refused, ms: Math.round(refuseMs * 1000) / 1000 },
    load4MB: { bytes: Buffer.byteLength(capFile), messages: loaded.summary().return, ms: Math.round(loadMs), heapKeptMB: Math.round((process.memoryUsage().heapUsed - h0) / 1048576) },
  };
}

module.exports = { measure };

if (require.main === module) process.stdout.write(`${JSON.stringify(measure(Number(process.argv[2]) || 200), null, 1)}\n`);
