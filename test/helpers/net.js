'use strict';
/**
 * Loopback network fixtures shared by the tests and the other helpers: a free port (also a
 * dead one: nothing listens there once it is returned), a server listening on loopback that
 * closes with its connections, a CONNECT proxy, and the proxy
 * variables of the environment set for one test and put back after it.
 */
const http = require('node:http');
const net = require('node:net');

/** A loopback port that was free a moment ago (nothing listens at it: a dead port too). */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/**
 * Listens with `server` (an http or net server) on a free loopback port and keeps its
 * connections: `{url, close()}`, where close() destroys the connections still open (a
 * keep-alive one or a socket a test left hanging) and then closes the server.
 */
async function listenLoopback(server) {
  const sockets = new Set();
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((r) => server.close(r));
    },
  };
}

/**
 * A CONNECT proxy on loopback. `route(host, port)` gives the [host, port] a tunnel to the
 * requested target really goes to, or null for a 502 (default: the target itself). Every
 * CONNECT is recorded in `connects` ({target, auth}); other requests get 405.
 */
async function connectProxy(route = (host, port) => [host, port]) {
  const connects = [];
  const server = http.createServer((req, res) => res.writeHead(405).end());
  server.on('connect', (req, socket, head) => {
    connects.push({ target: req.url, auth: req.headers['proxy-authorization'] });
    const [host, port] = req.url.split(':');
    const to = route(host, Number(port));
    if (!to) {
      socket.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
      return;
    }
    const up = net.connect(to[1], to[0], () => {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      up.write(head);
      up.pipe(socket);
      socket.pipe(up);
    });
    up.on('error', () => socket.destroy());
    socket.on('error', () => up.destroy());
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    connects,
    port: server.address().port,
    close() {
      server.closeAllConnections();
      server.close();
    },
  };
}

const PROXY_VARS = ['http_proxy', 'HTTP_PROXY', 'https_proxy', 'HTTPS_PROXY', 'no_proxy', 'NO_PROXY'];

/** Clears every proxy variable of this process's environment and sets `vars`; returns restore(). */
function setProxyEnv(vars) {
  const saved = {};
  for (const k of PROXY_VARS) {
    saved[k] = process.env[k];
    delete process.env[k];
  }
  Object.assign(process.env, vars);
  return () => {
    for (const k of PROXY_VARS) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
  };
}

/** A child process's environment with every proxy variable set to `proxy` and no no_proxy. */
function proxiedEnv(proxy, base = process.env) {
  const env = { ...base, http_proxy: proxy, HTTP_PROXY: proxy, https_proxy: proxy, HTTPS_PROXY: proxy };
  delete env.no_proxy;
  delete env.NO_PROXY;
  return env;
}

/** A child process's environment that sends nothing through a proxy (loopback only). */
function directEnv(base = process.env) {
  return { ...base, http_proxy: '', https_proxy: '', HTTP_PROXY: '', HTTPS_PROXY: '', NO_PROXY: '127.0.0.1,localhost' };
}

module.exports = { freePort, listenLoopback, connectProxy, setProxyEnv, proxiedEnv, directEnv, PROXY_VARS };
