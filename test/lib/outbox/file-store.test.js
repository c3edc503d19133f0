'use strict';
/**
 * The outbox's file store (issue 45): a torn last record and a corrupt middle record cost
 * those records alone (counted once: the log is rewritten clean), compaction keeps the
 * files bounded as entries end, and the framing reads the same however it is chunked.
 */
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const zlib = require('node:zlib');
const { tmpDir } = require('./fake-gateway');
const { FileOutboxStore } = require('../../../dist/lib/outbox/file-store');
const { frame, crc32Table, LogScanner } = require('../../../dist/lib/outbox/log');

const msg = (key, pad = '') => ({ key, msgId: key, json: { topic: key, pad }, acceptedAt: 1, entryIds: [`${key}/0`] });
const entry = (key, n) => ({ id: `${key}/0`, msgKey: key, kind: 'message', item: { n }, priority: 4, seq: 0, acceptedAt: 1, expiresAt: 9e15, attempts: 0, state: { phase: 'waiting' } });
const logOf = (dir) => path.join(dir, fs.readdirSync(dir).find((n) => /^log\.\d+$/.test(n)));

/** What a fresh store finds in `dir` (then closed). */
async function reopen(dir) {
  const s = new FileOutboxStore(dir);
  try {
    return await s.open();
  } finally {
    await s.close();
  }
}

async function storeWith(dir, keys) {
  const s = new FileOutboxStore(dir);
  await s.open();
  for (const [i, k] of keys.entries()) await s.accept(msg(k), [entry(k, i)]);
  await s.close();
}

describe('outbox file store (issue 45)', function () {
  this.timeout(60000);

  it('a torn last record costs that record alone, reported once', async function () {
    const dir = tmpDir('store');
    await storeWith(dir, ['a', 'b', 'c']);
    const torn = frame({ t: 'a', k: 'd', m: 'd', at: 1, j: {}, s: 3, e: [{ k: 'message', i: { n: 3 }, p: 4, x: 9e15 }] });
    fs.appendFileSync(logOf(dir), torn.subarray(0, torn.length - 5));
    const s = new FileOutboxStore(dir);
    const opened = await s.open();
    assert.deepEqual(opened.lost, { torn: 1, corrupt: 0 });
    assert.deepEqual(opened.msgs.map((m) => m.key), ['a', 'b', 'c']);
    assert.equal(opened.nextSeq, 3);
    await s.accept(msg('e'), [entry('e', 4)]);
    await s.close();
    const again = await reopen(dir);
    assert.deepEqual(again.lost, { torn: 0, corrupt: 0 }, 'the damage is counted once');
    assert.deepEqual(again.msgs.map((m) => m.key), ['a', 'b', 'c', 'e']);
  });

  it('a corrupt middle record costs that record alone: the ones before and after it are read', async function () {
    const dir = tmpDir('store');
    await storeWith(dir, ['a', 'b', 'c']);
    const file = logOf(dir);
    const buf = fs.readFileSync(file);
    const second = buf.indexOf(Buffer.from('"k":"b"'));
    buf[second + 2] ^= 0x20; // one bit of b's record
    fs.writeFileSync(file, buf);
    const s = new FileOutboxStore(dir);
    const opened = await s.open();
    assert.deepEqual(opened.lost, { torn: 0, corrupt: 1 });
    assert.deepEqual(opened.msgs.map((m) => m.key), ['a', 'c']);
    const items = await s.load(['a/0', 'c/0']);
    assert.deepEqual([...items.values()], [{ n: 0 }, { n: 2 }]);
    await s.close();
    assert.deepEqual((await reopen(dir)).lost, { torn: 0, corrupt: 0 });
  });

  it('a restart finds sending, ended and waiting-again entries, with attempts', async function () {
    const dir = tmpDir('store');
    const s = new FileOutboxStore(dir);
    await s.open();
    for (const k of ['a', 'b', 'c', 'd']) await s.accept(msg(k), [entry(k, 1)]);
    await s.markSending(['a/0', 'b/0', 'c/0'], { id: 'x1', startedAt: 5, gatewayTime: '2026-01-01 00:00:00' });
    await s.end([{ id: 'a/0', outcome: { result: 'accepted', gatewayId: '9223372036854775807', at: 6 } }]);
    await s.backToWaiting(['b/0']);
    await s.forget(['d']);
    await s.close();
    const opened = await reopen(dir);
    const by = Object.fromEntries(opened.entries.map((e) => [e.id, e]));
    assert.deepEqual(Object.keys(by), ['a/0', 'b/0', 'c/0']);
    assert.deepEqual(by['a/0'].state, { phase: 'ended', outcome: { result: 'accepted', gatewayId: '9223372036854775807', at: 6 } });
    assert.equal(by['a/0'].sentAt, 5);
    assert.deepEqual([by['b/0'].state.phase, by['b/0'].attempts], ['waiting', 1]);
    assert.deepEqual(by['c/0'].state, { phase: 'sending', attempt: { id: 'x1', startedAt: 5, gatewayTime: '2026-01-01 00:00:00' } });
  });

  it('compaction keeps the log bounded as msgs are forgotten, and keeps what lives (states included)', async function () {
    const dir = tmpDir('store');
    const s = new FileOutboxStore(dir, { compactMinBytes: 64 * 1024 });
    await s.open();
    await s.accept(msg('keep'), [entry('keep', 0)]);
    await s.markSending(['keep/0'], { id: 'k', startedAt: 1 });
    let biggest = 0;
    for (let i = 0; i < 3000; i++) {
      const k = `m${i}`;
      await Promise.all([s.accept(msg(k, 'x'.repeat(200)), [entry(k, i)])]);
      await s.end([{ id: `${k}/0`, outcome: { result: 'accepted', gatewayId: String(i), at: 1 } }]);
      await s.forget([k]);
      biggest = Math.max(biggest, s.figures().storedBytes);
    }
    assert.ok(biggest < 200 * 1024, `the log stayed small: ${biggest} bytes at most (3000 msgs of 300+ bytes went through it)`);
    assert.deepEqual(fs.readdirSync(dir).filter((n) => n.startsWith('log.')).length, 1, 'one log file');
    assert.deepEqual([...(await s.load(['keep/0'])).values()], [{ n: 0 }]);
    await s.close();
    const opened = await reopen(dir);
    assert.deepEqual(opened.entries.map((e) => [e.id, e.state.phase, e.attempts]), [['keep/0', 'sending', 1]]);
    assert.ok(opened.nextSeq >= 3001, 'seqs never go back after a compaction');
  });

  it('the framing: the table crc32 equals zlib\'s, and any chunking reads the same records and damage', function () {
    const sample = Buffer.from('{"t":"a","k":"x"} héllo');
    if (zlib.crc32) assert.equal(crc32Table(sample), zlib.crc32(sample));
    assert.equal(crc32Table(Buffer.from('123456789')), 0xcbf43926);
    const recs = Array.from({ length: 50 }, (_, i) => frame({ i, pad: 'y'.repeat(i * 7) }));
    const all = Buffer.concat([...recs.slice(0, 20), Buffer.from('garbage'), ...recs.slice(20), recs[0].subarray(0, 9)]);
    const read = (chunk) => {
      const got = [];
      const sc = new LogScanner((off, size, body) => got.push(JSON.parse(body.toString()).i));
      for (let p = 0; p < all.length; p += chunk) sc.push(all.subarray(p, p + chunk));
      sc.end();
      return { got, corrupt: sc.corrupt, torn: sc.torn };
    };
    const whole = read(all.length);
    assert.deepEqual(whole, { got: Array.from({ length: 50 }, (_, i) => i), corrupt: 1, torn: 1 });
    for (const chunk of [1, 3, 11, 64, 1000]) assert.deepEqual(read(chunk), whole, `chunks of ${chunk}`);
  });
});
