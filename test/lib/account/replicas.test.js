'use strict';
/**
 * Writes acknowledged through a failover (src/lib/account/redis/replicas.ts), on a scripted
 * connection: what the master says (ROLE) and which master the connection knows before and
 * after each round trip are set by the test, so the moments a real failover gives only by
 * chance (the connection not knowing the new master yet) happen every time. The real
 * failovers are in test/nodes/iotgw-redis.sentinel.failover.redis.test.js.
 */
const assert = require('node:assert/strict');
const { ReplicaAcks } = require('../../../dist/lib/account/redis/replicas');

/**
 * A connection whose master is `script[i].before` when round trip i starts and `script[i].after`
 * once its reply is in, answering ROLE with `script[i].replicas` online replicas and WAIT with
 * `script[i].acks`. Records the events emitted and the WAIT asked for.
 */
function scripted(script) {
  let i = 0;
  let master = script[0].before;
  const emitted = [];
  const asked = [];
  const fakeRedis = () => {
    const step = script[Math.min(i, script.length - 1)];
    const queued = [];
    const p = {
      exists: () => (queued.push('exists'), p),
      role: () => (queued.push('role'), p),
      wait: (n) => {
        asked.push(n);
        queued.push('wait');
        return p;
      },
      exec: async () => {
        master = step.after;
        i++;
        const replicas = Array.from({ length: step.replicas }, (_, k) => ['127.0.0.1', String(7000 + k), '0']);
        const reply = { exists: 1, role: ['master', 0, replicas], wait: step.acks ?? 0 };
        return queued.map((c) => [null, reply[c]]);
      },
    };
    return { pipeline: () => p };
  };
  const conn = {
    label: 'shared state (test)',
    address: '127.0.0.1:6379',
    replicaAckMs: 100,
    master: () => master,
    run: (what, fn) => fn(fakeRedis()),
    emit: (event, ...args) => emitted.push([event, ...args]),
  };
  return { acks: new ReplicaAcks(conn), emitted, asked, next: (s) => script.push(s) };
}

describe('redis replica acknowledgements (replicas.ts)', function () {
  it('a new master with no replica is told about once, though the connection learns its address only during the first round trip', async function () {
    // During a failover: the first write starts before the connection knows the new master
    // (undefined), its reply comes from 127.0.0.1:6380; the next writes know it from the start.
    const c = scripted([
      { before: undefined, after: '127.0.0.1:6380', replicas: 0 },
      { before: '127.0.0.1:6380', after: '127.0.0.1:6380', replicas: 0 },
      { before: '127.0.0.1:6380', after: '127.0.0.1:6380', replicas: 0 },
    ]);
    for (let n = 0; n < 3; n++) await c.acks.acknowledged('writing the mark', 'iotgw:feed:mark', 1000);
    assert.deepEqual(c.emitted, [['alone', '127.0.0.1:6380']]);
  });

  it('a master that gains a replica asks for its acknowledgement again, and says so once', async function () {
    const c = scripted([
      { before: '127.0.0.1:6380', after: '127.0.0.1:6380', replicas: 0 },
      { before: '127.0.0.1:6380', after: '127.0.0.1:6380', replicas: 1, acks: 0 },
      { before: '127.0.0.1:6380', after: '127.0.0.1:6380', replicas: 1, acks: 1 },
    ]);
    await c.acks.acknowledged('writing the mark', 'k', 1000);
    // The replica joined: this round trip asked for no acknowledgement (WAIT 0), so a second one asks for it.
    await c.acks.acknowledged('writing the mark', 'k', 1000);
    await c.acks.acknowledged('writing the mark', 'k', 1000);
    assert.deepEqual(c.emitted, [
      ['alone', '127.0.0.1:6380'],
      ['replicated', '127.0.0.1:6380'],
    ]);
    assert.deepEqual(c.asked, [0, 0, 1, 1], 'WAIT 0 while alone, then WAIT 1 once the replica is known');
  });

  it('a master with a replica that does not acknowledge: SHARED_STATE, nothing told as "alone"', async function () {
    const c = scripted([
      { before: '127.0.0.1:6380', after: '127.0.0.1:6380', replicas: 1, acks: 0 },
      { before: '127.0.0.1:6380', after: '127.0.0.1:6380', replicas: 1, acks: 0 },
    ]);
    await assert.rejects(c.acks.acknowledged('writing the mark', 'k', 1000), (e) => e.code === 'SHARED_STATE' && /no replica acknowledged the write within 100 ms/.test(e.message));
    assert.deepEqual(c.emitted, []);
  });
});
