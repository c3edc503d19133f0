'use strict';
/**
 * The suite's own servers and a port taken under them (issue 34: a second `.ci/run` beside this
 * one, or an outgoing connection's local port, can take a port a helper found free a moment
 * before). A real redis-server whose port is held by another listener when it restarts: it
 * starts once the port is let go, instead of failing the test that restarted it.
 */
const assert = require('node:assert/strict');
const net = require('node:net');
const { describeRedis, RedisServer, cli, findRedisServer } = require('../helpers/redis');

describeRedis('test helpers: a port taken under a server (redis-server)', function () {
  let server;
  afterEach(async () => server && (await server.destroy()));

  it('a redis-server restarted while another listener holds its port starts on it once the port is free', async function () {
    server = await new RedisServer(findRedisServer()).start();
    const port = server.port;
    await server.stop();
    const holder = net.createServer();
    await new Promise((resolve, reject) => holder.once('error', reject).listen(port, '127.0.0.1', resolve));
    // The holder lets the port go after the first try has failed on it.
    const released = new Promise((r) =>
      setTimeout(() => {
        holder.close();
        r();
      }, 1200),
    );
    await server.start();
    await released;
    assert.equal(server.port, port, 'the same port as before the restart');
    assert.equal(cli(port, 'ping'), 'PONG');
    assert.match(server.output, /Address already in use/, 'the first try met the held port');
  });
});
