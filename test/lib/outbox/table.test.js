'use strict';
/**
 * The outbox's compact index (issue 45: 100,000 waiting within 30 MB): strings kept as bytes
 * in arena chunks (rewritten when mostly dead), a hash index over them (grown, with
 * deletions), and the engine's entry table whose slots move down when mostly free, the
 * send queue following them: what is found, in what order, after each of these.
 */
const assert = require('node:assert/strict');
const { StringColumn, KeyIndex } = require('../../../dist/lib/outbox/strings');
const { EntryTable, WAITING, OUT } = require('../../../dist/lib/outbox/table');
const { SendQueue } = require('../../../dist/lib/outbox/queue');

describe('outbox compact index (issue 45)', function () {
  this.timeout(60000);

  it('a StringColumn gives back every string set (UTF-8, long ones, moved ones), also after its arena is rewritten', function () {
    const c = new StringColumn();
    const long = 'é'.repeat(70000); // over one 64 kB chunk
    for (let i = 0; i < 30000; i++) c.set(i, `string ${i} ${'x'.repeat(60)}`);
    c.set(30000, long);
    c.set(30001, '');
    const full = new StringColumn();
    full.set(0, 'y'.repeat(65536)); // a chunk filled to its last byte, then an empty string and another
    full.set(1, '');
    full.set(2, 'z');
    assert.deepEqual([full.get(0).length, full.get(1), full.get(2)], [65536, '', 'z']);
    for (let i = 0; i < 30000; i++) if (i % 10) c.clear(i); // ~2 MB dead: the next set rewrites
    c.set(30002, 'après');
    for (let i = 0; i < 30000; i++) assert.equal(c.get(i), i % 10 ? undefined : `string ${i} ${'x'.repeat(60)}`);
    assert.equal(c.get(30000), long);
    assert.equal(c.get(30001), '');
    assert.equal(c.get(30002), 'après');
    c.move(30002, 5);
    assert.equal(c.get(5), 'après');
    assert.equal(c.get(30002), undefined);
    assert.ok(c.equals(30000, Buffer.from(long)));
    assert.ok(!c.equals(30001, Buffer.from('x')));
  });

  it('a KeyIndex finds every key after growing, deleting (tombstones) and slots moved', function () {
    const k = new KeyIndex();
    for (let i = 0; i < 50000; i++) k.set(`key-${i}`, i);
    for (let i = 0; i < 50000; i += 2) assert.equal(k.delete(`key-${i}`), i);
    assert.equal(k.size, 25000);
    for (let i = 50000; i < 60000; i++) k.set(`key-${i}`, i); // into tombstones, and grown
    for (let i = 0; i < 60000; i++) assert.equal(k.get(`key-${i}`), i < 50000 && i % 2 === 0 ? undefined : i, `key-${i}`);
    // Slots move down (a compaction): the odd ones below 50000 to i >> 1.
    const map = new Int32Array(60000).fill(-1);
    let to = 0;
    for (let i = 0; i < 60000; i++) if (i >= 50000 || i % 2) map[i] = to++;
    k.remap(map);
    for (let i = 0; i < 60000; i++) if (map[i] >= 0) assert.equal(k.get(`key-${i}`), map[i]);
    for (let i = 0; i < 60000; i++) if (map[i] >= 0) assert.equal(k.keyAt(map[i]), `key-${i}`);
    assert.equal(k.delete('nothing'), undefined);
  });

  it("a KeyIndex keeps the outbox's own keys packed and gives back every key as it was set", function () {
    const { makeKey } = require('../../../dist/lib/outbox/keys');
    const k = new KeyIndex();
    const own = Array.from({ length: 3000 }, (_, i) => makeKey(1764000000000 + i * 997));
    const odd = ['\u0001abc', '\u0002', '\u0001' + 'x'.repeat(15), 'zzzzzzzzz-zzzzzzz-zzzzzz', '000000000-0000000-000000', 'ZZZZZZZZZ-zzzzzzz-zzzzzz', 'é'.repeat(300), '', 'k'];
    const all = [...own, ...odd];
    all.forEach((key, i) => k.set(key, i));
    all.forEach((key, i) => {
      assert.equal(k.get(key), i, JSON.stringify(key));
      assert.equal(k.keyAt(i), key);
    });
    assert.equal(k.keys.bytesOf(0).length, 16, 'an own key takes 16 bytes');
    assert.equal(k.get('zzzzzzzzz-zzzzzzz-zzzzzy'), undefined);
    for (let i = 0; i < own.length; i += 2) assert.equal(k.delete(own[i]), i);
    all.forEach((key, i) => assert.equal(k.get(key), i < own.length && i % 2 === 0 ? undefined : i));
  });

  it('the entry table compacts when mostly free: ids, states, msgs and the queue\'s order survive the move', function () {
    const t = new EntryTable();
    const q = new SendQueue(t);
    let seq = 0;
    const keys = [];
    for (let m = 0; m < 12000; m++) {
      const n = m % 3 === 0 ? 2 : 1;
      const key = `k${String(m).padStart(6, '0')}`;
      keys.push(key);
      const first = t.add({
        key, msgId: `id-${m}`, acceptedAt: 1000 + m, bytes: 100 + m,
        entries: Array.from({ length: n }, () => ({ kind: m % 5 ? 'message' : 'cancel', priority: m % 10, seq: seq++, expiresAt: 9e15, attempts: 0 })),
      });
      for (let i = 0; i < n; i++) q.insert(first + i);
    }
    // Most msgs go (their slots free); a kept one is out (sending) with its state in `extra`.
    const kept = keys.filter((_, m) => m % 7 === 0);
    const gone = q.removeWhere((s) => !kept.includes(t.keyOf(t.firstOf(s))));
    assert.ok(gone.length > 9000);
    for (const key of keys) if (!kept.includes(key)) t.remove(key);
    const outSlot = t.slotOf(`${kept[3]}/0`);
    q.removeWhere((s) => s === outSlot);
    const out = t.entry(outSlot);
    out.attempts = 2;
    out.state = { phase: 'sending', attempt: { id: 'a1', startedAt: 5 } };
    t.record(outSlot, out, OUT);
    assert.ok(t.sparse(), 'mostly free');
    const before = [];
    for (let s = q.takeRun(1e9, () => true); s.length; s = []) for (const x of s) before.push(t.entry(x));
    for (const e of before) q.insert(t.slotOf(e.id));
    q.remap(t.compact());
    assert.ok(!t.sparse());
    assert.equal(t.top, t.used);
    const after = q.takeRun(1e9, () => true).map((s) => t.entry(s));
    assert.deepEqual(after, before, 'the same entries, in the same order (priority, then seq)');
    for (const key of kept) {
      const first = t.byKey.get(key);
      assert.equal(t.keyOf(first), key);
      assert.equal(t.msgIds.get(first), `id-${Number(key.slice(1))}`);
      assert.equal(t.acceptedAt.get(first), 1000 + Number(key.slice(1)));
    }
    const moved = t.entry(t.slotOf(`${kept[3]}/0`));
    assert.deepEqual([moved.attempts, moved.state.phase], [2, 'sending']);
    assert.equal(t.phase.get(t.slotOf(`${kept[3]}/0`)), OUT);
    assert.equal(t.phase.get(t.slotOf(`${kept[1]}/0`)), WAITING);
  });
});
