'use strict';
/**
 * Issue 16: `npm start -- --host 0.0.0.0` must not serve Node-RED with no login, nor the
 * simulator's control routes, to the network. scripts/start.js runs as a child process
 * (one Node-RED per process); nothing in these tests listens beyond 127.0.0.1: the
 * refusals happen before anything listens.
 */
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { isLoopbackHost, adminAuthFromEnv, checkHost } = require('../../scripts/start');

const START = path.join(__dirname, '..', '..', 'scripts', 'start.js');

/** Runs start.js; resolves with {code, out, err} when it exits, or {child, out} once it prints the editor URL. */
function run(args, env, { untilReady = false } = {}) {
  const clean = { ...process.env };
  for (const k of Object.keys(clean)) if (k.startsWith('IOTGW_ADMIN_')) delete clean[k];
  const child = spawn(process.execPath, [START, ...args], { env: { ...clean, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`start.js did not finish: ${out} ${err}`));
    }, 60000);
    child.on('exit', (code) => {
      clearTimeout(t);
      resolve({ code, out, err });
    });
    if (untilReady) {
      child.stdout.on('data', () => {
        if (/Press Ctrl-C/.test(out)) {
          clearTimeout(t);
          resolve({ child, out, err: () => err });
        }
      });
    }
  });
}

describe('npm start --host guard (issue 16)', function () {
  this.timeout(90000);
  let dir;
  beforeEach(function () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iotgw-start-'));
  });
  afterEach(function () {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('knows loopback hosts', function () {
    for (const h of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]', 'dev.localhost']) assert.ok(isLoopbackHost(h), h);
    for (const h of ['0.0.0.0', '::', '192.168.1.10', '10.0.0.1', 'example.com', '']) assert.ok(!isLoopbackHost(h), h);
  });

  it('refuses a non-loopback host with no admin password, allows it with one', function () {
    assert.throws(() => checkHost('0.0.0.0', undefined), /refusing --host 0\.0\.0\.0.*IOTGW_ADMIN_PASSWORD/);
    assert.doesNotThrow(() => checkHost('127.0.0.1', undefined));
    const auth = adminAuthFromEnv({ IOTGW_ADMIN_PASSWORD: 'correct horse' }, () => require(require.resolve('bcryptjs', { paths: [path.dirname(require.resolve('node-red/package.json'))] })));
    assert.equal(auth.type, 'credentials');
    assert.equal(auth.users[0].username, 'admin');
    assert.match(auth.users[0].password, /^\$2[aby]\$10\$/, 'stored as a bcrypt hash, never as typed');
    assert.doesNotThrow(() => checkHost('0.0.0.0', auth));
    assert.equal(adminAuthFromEnv({}, () => assert.fail('no hashing without a password')), undefined);
    assert.throws(() => adminAuthFromEnv({ IOTGW_ADMIN_PASSWORD_HASH: 'plain' }, () => null), /not a bcrypt hash/);
    assert.throws(() => adminAuthFromEnv({ IOTGW_ADMIN_PASSWORD: 'short' }, () => null), /at least 8/);
  });

  for (const host of ['0.0.0.0', '::', '192.0.2.1']) {
    it(`node scripts/start.js --host ${host} with no admin password exits 1 before listening`, async function () {
      const r = await run(['--host', host, '--port', '0', '--sim-port', '0', '--user-dir', dir, '--no-examples']);
      assert.equal(r.code, 1, r.out + r.err);
      assert.match(r.err, /refusing --host/);
      assert.doesNotMatch(r.out, /Node-RED editor:|Simulator:/, 'nothing was started');
    });
  }

  it('with IOTGW_ADMIN_PASSWORD the editor asks for a login, and the simulator listens on 127.0.0.1 only', async function () {
    const r = await run(['--host', '127.0.0.1', '--port', '0', '--sim-port', '0', '--user-dir', dir, '--no-examples'], { IOTGW_ADMIN_PASSWORD: 'correct horse' }, { untilReady: true });
    try {
      assert.ok(r.child, `start.js exited: ${r.out} ${r.err}`);
      assert.match(r.out, /Editor login: on/);
      const url = /Node-RED editor: (\S+)/.exec(r.out)[1];
      const simUrl = /Simulator: (\S+)/.exec(r.out)[1];
      assert.equal(new URL(simUrl).hostname, '127.0.0.1');
      const flows = await fetch(new URL('flows', url));
      assert.equal(flows.status, 401, 'no flows without a login');
      const token = await fetch(new URL('auth/token', url), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_id: 'node-red-admin', grant_type: 'password', scope: '*', username: 'admin', password: 'correct horse' }),
      });
      assert.equal(token.status, 200, 'the password logs in');
      const { access_token: access } = await token.json();
      const authed = await fetch(new URL('flows', url), { headers: { authorization: `Bearer ${access}` } });
      assert.equal(authed.status, 200);
    } finally {
      if (r.child) {
        const exited = new Promise((res) => r.child.on('exit', res));
        r.child.kill('SIGINT');
        await exited;
      }
    }
  });
});
