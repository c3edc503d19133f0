'use strict';
/**
 * A script on an edge box (test/lib/api/clients.outbox.child.test.js): a TerminalClient's
 * outbox in a folder, `n` messages accepted (payloads [128, 9, i >> 8, i & 255], i from
 * `from`), one line `accepted <i> <key>` on stdout as each send resolves (durable), then
 * `all accepted`; it then waits to be killed.
 *
 *   node outbox-client-child.js <baseUrl> <folder> <from> <n>
 */
const { TerminalClient } = require('../..');

const [baseUrl, folder, from, n] = process.argv.slice(2);
const DEST = '01000001SKYA001';

(async () => {
  const client = new TerminalClient({ baseUrl, clientId: 'demo', clientSecret: 'demo-secret', rateLimitCalls: 0, maxRetries: 0 });
  const ob = await client.outbox({ file: folder });
  for (let i = Number(from); i < Number(from) + Number(n); i++) {
    const RawPayload = Buffer.from([128, 9, i >> 8, i & 255]).toString('base64');
    const { key } = await ob.submitMessages({ DestinationID: DEST, RawPayload }, { meta: { i } });
    process.stdout.write(`accepted ${i} ${key}\n`);
  }
  process.stdout.write('all accepted\n');
  setInterval(() => {}, 60_000);
})().catch((err) => {
  process.stdout.write(`failed ${err.code} ${err.message}\n`);
  process.exit(1);
});
