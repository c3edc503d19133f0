'use strict';
/** iotgw-definitions in a real Node-RED runtime: pasted or by path, refused at deploy, shared, saxes loaded lazily. */
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { helper, load } = require('../helpers/harness');
const { definitionsNode, fixtureText } = require('../helpers/codec');

describe('iotgw-definitions (config node)', function () {
  let dir;
  before(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iotgw-defs-'))));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));
  beforeEach(async () => new Promise((r) => helper.startServer(r)));
  afterEach(async function () {
    await helper.unload();
    await new Promise((r) => helper.stopServer(r));
  });

  it('pasted XML and a file (relative to the user directory) are both loaded', async function () {
    fs.writeFileSync(path.join(dir, 'kinds.idpmsg'), fixtureText('all-kinds.idpmsg'));
    helper.settings({ userDir: dir });
    try {
      const n = await load([definitionsNode({ file: 'kinds.idpmsg' })]);
      const defs = n.get('defs').definitions();
      assert.equal(defs.find(255, 1, 'return').def.name, 'SatelliteTelemetry');
      assert.equal(defs.find(10, 1, 'return').def.name, 'Kinds');
      assert.deepEqual(defs.summary(), { services: 2, forward: 4, return: 6, fields: 45 });
    } finally {
      helper.settings({ userDir: undefined });
    }
  });

  it('a bad file is refused at deploy naming file, line and element; every use then refuses with it', async function () {
    const bad = fixtureText('all-kinds.idpmsg').replace('<Size>3</Size></Field>', '<Size>0</Size></Field>');
    const n = await load([definitionsNode({ xml: bad })]);
    const node = n.get('defs');
    assert.throws(() => node.definitions(), (err) => {
      assert.equal(err.code, 'BAD_INPUT');
      assert.match(err.message, /^pasted XML, line \d+: Service "kinds" \(SIN 10\) > ReturnMessages > Message "Kinds" \(MIN 1\) > Field "u3": <Size> must be a whole number from 1 to 64, not "0"/);
      return true;
    });
    await helper.unload();
    const missing = await load([definitionsNode({ xml: '', file: path.join(dir, 'nope.idpmsg') })]);
    assert.throws(() => missing.get('defs').definitions(), /nope\.idpmsg: cannot be read \(ENOENT\)/);
    await helper.unload();
    const empty = await load([definitionsNode({ xml: '  ' })]);
    assert.throws(() => empty.get('defs').definitions(), /no message definitions/);
  });

  it('Node-RED starts without saxes: it loads with the first definitions node', function () {
    // A child process: a fresh module cache, the registrar as Node-RED loads it at start.
    const root = path.join(__dirname, '..', '..');
    const code = `
      const saxes = () => Object.keys(require.cache).some((f) => f.includes('node_modules/saxes/'));
      const types = {};
      const RED = { nodes: { registerType: (t, ctor) => (types[t] = ctor), createNode: () => {} }, settings: {}, _: (k) => k };
      const reg = require(${JSON.stringify(path.join(root, 'dist/nodes.js'))});
      for (const k of Object.keys(reg)) reg[k](RED);
      const atStart = saxes();
      const node = { on() {}, log() {}, error() {} };
      types['iotgw-definitions'].call(node, { id: 'd', xml: '<MessageDefinition><Services/></MessageDefinition>', file: '' });
      process.stdout.write(JSON.stringify({ atStart, after: saxes(), ok: typeof node.definitions === 'function' && node.definitions().summary().services === 0 }));`;
    const out = JSON.parse(execFileSync(process.execPath, ['-e', code], { encoding: 'utf8' }));
    assert.deepEqual(out, { atStart: false, after: true, ok: true });
  });
});
