'use strict';
/**
 * A process on an outbox folder (test/lib/outbox/folder-lock.test.js): it says `ready`, then
 * opens the folder's file store when told `go` on stdin (at once with `--now`), and says
 * `held` or `refused <code> <message>`; told `close`, it closes the store and says `closed`.
 * It then waits to be killed (or for stdin to end). `--refresh=<ms>`: the store's lockRefreshMs.
 *
 *   node outbox-lock-child.js <folder> [--now] [--refresh=<ms>]
 */
const readline = require('node:readline');
const { FileOutboxStore } = require('../../dist/lib/outbox/file-store');

const [folder, ...flags] = process.argv.slice(2);
const now = flags.includes('--now') ? '--now' : undefined;
const refresh = flags.find((f) => f.startsWith('--refresh='));
const store = new FileOutboxStore(folder, refresh ? { lockRefreshMs: Number(refresh.slice('--refresh='.length)) } : {});
const say = (line) => process.stdout.write(`${line}\n`);

async function open() {
  try {
    await store.open();
    say('held');
  } catch (err) {
    say(`refused ${err.code} ${String(err.message).replace(/\n/g, ' ')}`);
  }
}

readline.createInterface({ input: process.stdin }).on('line', (line) => {
  if (line === 'go') void open();
  if (line === 'close') void store.close().then(() => say('closed'));
});
setInterval(() => {}, 60_000);
say('ready');
if (now === '--now') void open();
