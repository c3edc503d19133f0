'use strict';
/**
 * Accepts in flight (issue 45): Node-RED hands a node msgs as fast as they come, so the
 * node calls accept() for each at once, not waiting for the ones before; the file store's
 * group commit lets the msgs that arrive during one fsync share the next. Each accept must
 * resolve only after an fsync that covers it, in call order, and the store must keep them
 * in that order (their seqs), also when the outbox is full and each must first drop the
 * oldest (whenFull drop-oldest).
 */
const assert = require('node:assert/strict');
const fsp = require('node:fs/promises');
const { FakeGateway, tmpDir, openOutbox, entries } = require('./fake-gateway');
const { FileOutboxStore } = require('../../../dist/lib/outbox/file-store');

/** node:fs/promises with the log's fdatasyncs counted: started and done. */
function countingFs(count) {
  return {
    mkdir: fsp.mkdir, readdir: fsp.readdir, rename: fsp.rename, unlink: fsp.unlink,
    open: async (...args) => {
      const fh = await fsp.open(...args);
      const datasync = fh.datasync.bind(fh);
      fh.datasync = async () => {
        count.started++;
        await datasync();
        count.done++;
      };
      return fh;
    },
  };
}

/** The msgs a fresh store finds in dir, in their seq order: their msgIds. */
async function storedOrder(dir) {
  const s = new FileOutboxStore(dir);
  try {
    const opened = await s.open();
    const seqOf = new Map(opened.entries.map((e) => [e.msgKey, e.seq]));
    return opened.msgs.sort((a, b) => seqOf.get(a.key) - seqOf.get(b.key)).map((m) => m.msgId);
  } finally {
    await s.close();
  }
}

describe('outbox accepts in flight (issue 45)', function () {
  this.timeout(60000);

  it('msgs accepted as they come: each acknowledged after an fsync begun after its call, in call order, fsyncs shared', async function () {
    const gw = new FakeGateway();
    gw.mode = 'down';
    const count = { started: 0, done: 0 };
    const dir = tmpDir();
    const ob = await openOutbox(dir, gw, { backoffMs: { first: 60000, max: 60000 } }, { fs: countingFs(count) });
    const acks = [];
    const all = [];
    const call = (i) => {
      const startedAtCall = count.started;
      all.push(ob.accept(`m${i}`, { i }, entries(1)).then(() => acks.push({ i, startedAtCall, doneAtAck: count.done })));
    };
    for (let i = 0; i < 300; i++) {
      call(i);
      if (i % 3 === 0) call(`${i}b`); // two in one turn, now and then
      await new Promise((r) => setImmediate(r)); // the next msg comes in the next turn
    }
    await Promise.all(all);
    const called = [];
    for (let i = 0; i < 300; i++) called.push(...(i % 3 === 0 ? [i, `${i}b`] : [i]));
    assert.deepEqual(acks.map((a) => a.i), called, 'acknowledged in call order');
    for (const a of acks) assert.ok(a.doneAtAck >= a.startedAtCall + 1, `msg ${a.i} acknowledged after an fsync that began after its call`);
    assert.ok(count.started < called.length, `${called.length} accepts took ${count.started} fsyncs`);
    await ob.close();
    assert.deepEqual(await storedOrder(dir), called.map((i) => `m${i}`), 'kept in call order');
  });

  it('whenFull drop-oldest: accepts in flight, each dropping the oldest, keep their call order', async function () {
    const gw = new FakeGateway();
    gw.mode = 'down';
    const dir = tmpDir();
    const ob = await openOutbox(dir, gw, { maxEntries: 4, whenFull: 'drop-oldest', backoffMs: { first: 60000, max: 60000 } });
    for (let i = 0; i < 4; i++) await ob.accept(`old${i}`, {}, entries(1));
    const acks = [];
    const all = [];
    for (let i = 0; i < 12; i++) all.push(ob.accept(`new${i}`, {}, entries(i % 4 === 0 ? 2 : 1)).then(() => acks.push(i)));
    await Promise.all(all);
    assert.deepEqual(acks, [...Array(12).keys()], 'acknowledged in call order');
    await ob.close();
    const kept = await storedOrder(dir);
    const sorted = [...kept].sort((a, b) => Number(a.slice(3)) - Number(b.slice(3)));
    assert.deepEqual(kept, sorted, `kept in call order: ${kept.join(' ')}`);
    assert.ok(kept.includes('new11'), 'the last accepted is kept');
  });
});
