'use strict';
/**
 * Issue 17 (memory of a long drain or walk): the status poller and the device list check a
 * reply with a strip schema of the same fields (`checkReply`) and send the reply itself on,
 * instead of zod's copy of it. These prove that this accepts and refuses exactly what the
 * loose reply schemas accept and refuse, with the same BAD_RESPONSE text, and that what is
 * sent on equals zod's copy; plus the redaction and ID text helpers the paths use.
 */
const assert = require('node:assert/strict');
const { parseReply, checkReply, statusReply, statusReplyCheck, statusRecordCheck, STATUS_TIME } = require('../../../dist/lib/api/terminal');
const { readRecords, MalformedRecord } = require('../../../dist/lib/api/records');
const { devicePageReply, devicePageReplyCheck, devicePageOf, redactDevice } = require('../../../dist/lib/api/broker');
const { int64Text } = require('../../../dist/lib/common/int64');
const { statusKey } = require('../../../dist/nodes/iotgw-status-poller');

const outcome = (fn) => {
  try {
    return { ok: fn() };
  } catch (err) {
    return { code: err.code, message: err.message };
  }
};

const record = (over = {}) => ({ ID: 10000000001, IsClosed: true, State: 1, CreateUTC: '2026-11-23 13:26:15', StatusUTC: '2026-11-23 13:27:15', Transport: 1, ReferenceNumber: 1, AccountID: 'demo', Extra: { a: [1] }, ...over });
const device = (over = {}) => ({ id: 1, devEui: '70b3d5e75e000000', tags: ['a'], status: 'ACTIVE', customer: { id: 1, name: 'x' }, nwkskey: 'k1', AppSKey: 'k2', appKey: 'k3', NwkKey: 'k4', other: { nwkskey: 'nested stays' }, ...over });
const page = (content, over = {}) => ({ content, pageable: { pageNumber: 0, pageSize: 100 }, totalElements: content.length, totalPages: 1, last: true, first: true, number: 0, size: 100, empty: content.length === 0, sort: { sorted: false }, ...over });

describe('reply checks without copies (issue 17)', function () {
  it('status replies: checkReply and each record\'s check accept and refuse what parseReply does, and return the reply unchanged (issue 34: a bad record is that record, not the reply)', function () {
    const cases = [
      { ErrorID: 0, NextFromUTC: '2026-11-23 13:27:19', Statuses: [record(), record({ ID: '9223372036854775807' }), record({ RegionName: null, ErrorID: 0 })] },
      { ErrorID: 0, NextFromUTC: null, Statuses: null },
      { ErrorID: 0 },
      { ErrorID: 0, Statuses: [record({ ID: 1.5 })] },
      { ErrorID: 0, Statuses: [record({ ID: '12a' })] },
      { ErrorID: 0, Statuses: [record({ State: 'x' })] },
      { ErrorID: 0, Statuses: [record(), record({ StatusUTC: 5 })] },
      { ErrorID: 'x' },
      { Statuses: {} },
      [],
      null,
    ];
    let perRecord = 0;
    for (const body of cases) {
      const copy = outcome(() => parseReply(statusReply, structuredClone(body), 'GET x'));
      const mine = outcome(() => checkReply(statusReplyCheck, body, 'GET x'));
      const bad = /^GET x: unexpected reply at Statuses\.(\d+)\.(\S+): (.*)$/.exec(copy.message ?? '');
      if (!bad) {
        assert.deepEqual(mine, copy, JSON.stringify(body));
        if (mine.ok !== undefined) assert.equal(mine.ok, body);
        if (mine.ok) assert.ok(readRecords(statusRecordCheck, body.Statuses, STATUS_TIME).every((r, i) => r === body.Statuses[i]), 'each good record is itself');
        continue;
      }
      // One bad record: the reply passes, that record (first refused) is a MalformedRecord naming the field, the others are themselves.
      perRecord++;
      assert.equal(mine.ok, body, JSON.stringify(body));
      const recs = readRecords(statusRecordCheck, body.Statuses, STATUS_TIME);
      const i = Number(bad[1]);
      assert.ok(recs[i] instanceof MalformedRecord, JSON.stringify(body));
      assert.equal(recs[i].why, `${bad[2]}: ${bad[3]}`);
      assert.equal(recs[i].raw, body.Statuses[i]);
      assert.equal(recs[i].time, body.Statuses[i].StatusUTC);
      recs.forEach((r, j) => j !== i && assert.equal(r, body.Statuses[j]));
    }
    assert.equal(perRecord, 4, 'the four cases of one bad record');
  });

  it('device pages (bare or in the documented array): the same acceptance, text and content as devicePageReply', function () {
    const cases = [
      [page([device(), device({ id: null, tags: null, customer: null })])],
      page([device()]),
      [page([])],
      [page([device({ devEui: 5 })])],
      [page([device(), device({ customer: { id: 'x' } })])],
      [page([device({ tags: [1] })])],
      [page([device()], { last: 'yes' })],
      [page([device()]), page([device()])],
      [{ content: 'x' }],
      'x',
    ];
    for (const body of cases) {
      const copy = outcome(() => parseReply(devicePageReply, structuredClone(body), 'GET d'));
      const mine = outcome(() => devicePageOf(checkReply(devicePageReplyCheck, body, 'GET d')));
      assert.deepEqual(mine, copy, JSON.stringify(body));
    }
  });

  it('redactDevice drops the key fields in any spelling at the top level only, and copies', function () {
    const d = device();
    const r = redactDevice(d);
    assert.deepEqual(r, { id: 1, devEui: '70b3d5e75e000000', tags: ['a'], status: 'ACTIVE', customer: { id: 1, name: 'x' }, other: { nwkskey: 'nested stays' } });
    assert.notEqual(r, d);
    assert.equal(d.nwkskey, 'k1');
    const inherited = Object.assign(Object.create({ inheritedKey: 1 }), { a: 1 });
    assert.deepEqual(Object.keys(redactDevice(inherited)), ['a']);
  });

  it('int64Text writes an ID as String() does; statusKey is unchanged by it', function () {
    for (const v of [0, -0, 1, -1, 10000000001, 9007199254740991, -9007199254740991, 1.5, NaN, Infinity, 1e21, 123e20, '9223372036854775807', '-12', null, undefined, true]) {
      assert.equal(int64Text(v), String(v), String(v));
    }
    assert.equal(statusKey({ ID: 10000000001, State: 1, StatusUTC: '2026-11-23 13:27:15' }), '10000000001|1|2026-11-23 13:27:15');
    assert.equal(statusKey({ ID: '9223372036854775807', State: 2, StatusUTC: null }), '9223372036854775807|2|null');
  });
});
