'use strict';
/**
 * The chaos files' verdict on outcomes given again across a kill (test/helpers/outbox-chaos.js,
 * repeatsNotLast): an outbox emits a msg's outcome, then writes that it was given, in emission
 * order, so a kill catches only the msgs an outbox gave last in that life. A repeat before a
 * msg given once (in the same life and outbox) is a defect the chaos runs must report.
 */
const assert = require('node:assert/strict');
const { repeatsNotLast } = require('../helpers/outbox-chaos');

/** Records as the recorder writes them, one line each; `kill` marks the end of a life. */
function run(lines) {
  const records = { lines: [], torn: 0 };
  const lifeEnds = [];
  for (const l of lines) {
    if (l === 'kill') lifeEnds.push(records.lines.length);
    else records.lines.push({ t: l.t ?? 'ok', id: l.id });
  }
  return { records, lifeOf: (line) => lifeEnds.filter((n) => n <= line).length };
}
const kindOf = (id) => id.split('-')[0];

describe('outbox chaos verdict: outcomes given again across a kill', function () {
  it('accepts any number given again when each is among the last its outbox gave before the kill', function () {
    const { records, lifeOf } = run([
      { id: 'send-1' }, { id: 'mode-1' }, { id: 'send-2' }, { id: 'send-3' }, { id: 'mode-2' }, 'kill',
      { id: 'send-2' }, { id: 'send-3' }, { id: 'mode-2' }, { id: 'send-4' },
    ]);
    assert.deepEqual(repeatsNotLast(records, new Set(['send-2', 'send-3', 'mode-2']), kindOf, lifeOf), []);
  });

  it('reports a msg given again when a later one of the same outbox and life was given once', function () {
    const { records, lifeOf } = run([{ id: 'send-1' }, { id: 'send-2' }, { id: 'mode-1' }, 'kill', { id: 'send-1' }]);
    assert.deepEqual(repeatsNotLast(records, new Set(['send-1']), kindOf, lifeOf), ['life 0, outbox send: send-2 given once after send-1 was given again']);
  });

  it('counts output 2 among the outcomes, not a caught error (another path, another order)', function () {
    const { records, lifeOf } = run([{ id: 'send-1' }, { id: 'send-2', t: 'err' }, { id: 'send-3', t: 'rej' }, 'kill', { id: 'send-1' }]);
    assert.deepEqual(repeatsNotLast(records, new Set(['send-1']), kindOf, lifeOf), ['life 0, outbox send: send-3 given once after send-1 was given again']);
  });
});
