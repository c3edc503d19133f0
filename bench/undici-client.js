'use strict';
/**
 * The bare undici client of figure 2, in its own process (as the Node-RED runtimes are):
 * CONC loops, each sending one POST terminal/mode with one ModeMessage, bearer token,
 * JSON body, then reading and JSON-parsing the whole reply; for DURATION ms.
 * Prints {ends: [...], lat: [...], errors} as JSON on stdout.
 */
const { Pool } = require('undici');

async function main() {
  const [origin, conc, durationMs] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4])];
  const pool = new Pool(origin, { connections: conc, keepAliveTimeout: 30_000 });
  const ends = [];
  const lat = [];
  let errors = 0;
  let i = 0;
  const stopAt = Date.now() + durationMs;
  const now = () => {
    const t = process.hrtime();
    return t[0] * 1e3 + t[1] / 1e6;
  };
  async function loop() {
    while (Date.now() < stopAt && ends.length < 2_000_000) {
      const n = i++ % 5000;
      const id = String(10000000 + n).padStart(8, '0') + 'SKY' + n.toString(16).toUpperCase().padStart(4, '0');
      const t0 = now();
      try {
        const res = await pool.request({
          path: '/api/v1.0/terminal/mode',
          method: 'POST',
          headers: { authorization: 'Bearer demo-token', 'content-type': 'application/json', accept: 'application/json' },
          body: JSON.stringify([{ DestinationID: id, Mode: 0, WakeupInterval: 0 }]),
        });
        const body = await res.body.json();
        if (res.statusCode !== 200 || !body.Submissions) errors++;
      } catch {
        errors++;
      }
      lat.push(now() - t0);
      ends.push(Date.now());
    }
  }
  await Promise.all(Array.from({ length: conc }, loop));
  await pool.close();
  process.stdout.write(JSON.stringify({ ends, lat, errors }));
}
main().catch((e) => {
  process.stderr.write(String(e && e.stack));
  process.exit(1);
});
