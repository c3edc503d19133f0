'use strict';
/**
 * A `rediss://` connection through the reply guard (issue 43): the guard hands ioredis a
 * stream of its own in front of the TLS socket, so the TLS handshake's 'secureConnect' must
 * pass through it, and verification must stay on. A real redis-server with a TLS port and a
 * certificate made for the test (openssl, 127.0.0.1).
 */
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { RedisServer, findRedisServer, freePort } = require('../../../helpers/redis');
const { RedisConnection } = require('../../../../dist/lib/account/redis');

const bin = findRedisServer();
const openssl = ['/usr/bin/openssl', '/usr/local/bin/openssl'].find((f) => fs.existsSync(f));

const TITLE = 'a rediss:// connection through the reply guard (real redis-server with TLS)';

if (!bin || !openssl) {
  // As describeRedis: pending on a developer's machine without them, a failure under CI=true.
  describe(TITLE, () => {
    if (process.env.CI === 'true') it('needs redis-server and openssl', () => assert.fail('redis-server or openssl not found (.ci/run installs redis-server)'));
    else it('needs redis-server and openssl (not installed: pending)');
  });
} else describe(TITLE, function () {
  this.timeout(30000);
  let dir;
  let server;
  let tlsPort;
  let cert;
  const open = [];

  before(async function () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iotgw-redis-tls-'));
    cert = path.join(dir, 'cert.pem');
    const key = path.join(dir, 'key.pem');
    execFileSync(openssl, ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
    tlsPort = await freePort();
    server = new RedisServer(bin, { args: ['--tls-port', String(tlsPort), '--tls-cert-file', cert, '--tls-key-file', key, '--tls-ca-cert-file', cert, '--tls-auth-clients', 'no'] });
    await server.start();
  });

  afterEach(async function () {
    while (open.length) await open.pop().close();
  });

  after(async function () {
    if (server) await server.destroy();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  const connect = (tls) => {
    const c = new RedisConnection({ url: `rediss://127.0.0.1:${tlsPort}/0`, keyPrefix: 'tls:', commandTimeoutMs: 5000, ...(tls ? { tls } : {}) });
    c.on('failure', () => {});
    open.push(c);
    return c;
  };

  it('writes and reads over TLS with the CA of a tls-config node', async function () {
    const warnings = [];
    const onWarning = (w) => warnings.push(`${w.code}: ${w.message}`);
    process.on('warning', onWarning);
    try {
      const c = connect({ ca: fs.readFileSync(cert) });
      await c.run('a test write', (r) => r.set('tls:k', 'over tls'), { timeoutMs: 20000 });
      assert.equal(await c.run('a test read', (r) => r.get('tls:k'), { timeoutMs: 20000 }), 'over tls');
      await new Promise((r) => setImmediate(r));
    } finally {
      process.off('warning', onWarning);
    }
    // An address is no server name (RFC 6066): Node warned (DEP0123) when the URL's host went into SNI.
    assert.deepEqual(warnings.filter((w) => /ServerName|DEP0123/.test(w)), []);
  });

  it('refuses a server whose certificate it cannot verify (verification stays on): SHARED_STATE', async function () {
    const c = connect(undefined);
    await assert.rejects(
      c.run('a test read', (r) => r.get('tls:k'), { timeoutMs: 3000 }),
      (err) => err.code === 'SHARED_STATE',
    );
  });
});
