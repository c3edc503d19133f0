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

  it('a file that is not a regular file (/dev/zero, a FIFO with no writer, a directory) is refused without reading it', async function () {
    const fifo = path.join(dir, 'defs.fifo');
    execFileSync('mkfifo', [fifo]);
    const rss = process.memoryUsage().rss;
    for (const [file, kind] of [['/dev/zero', 'device'], [fifo, 'FIFO'], [dir, 'directory']]) {
      const n = await load([definitionsNode({ xml: '', file })]);
      assert.throws(() => n.get('defs').definitions(), (err) => {
        assert.equal(err.code, 'BAD_INPUT');
        assert.equal(err.message, `file: ${file}: not a regular file (a ${kind}); give the path of a Message Definition File`);
        return true;
      });
      await helper.unload();
    }
    assert.ok(process.memoryUsage().rss - rss < 100 * 1024 * 1024, 'nothing of /dev/zero was read');
  });

  it('a file or pasted XML over 4 MB is refused unread; one under the cap loads', async function () {
    const big = path.join(dir, 'big.idpmsg');
    fs.writeFileSync(big, '');
    fs.truncateSync(big, 31 * 1024 * 1024); // the 31 MB file (sparse: no disk spent)
    const n = await load([definitionsNode({ xml: '', file: big })]);
    assert.throws(() => n.get('defs').definitions(), new RegExp(`^BAD_INPUT: file: ${big.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: 32505856 bytes; a definitions file may hold at most 4194304 bytes$`));
    await helper.unload();
    const pasted = await load([definitionsNode({ xml: `<MessageDefinition><!--${'x'.repeat(4 * 1024 * 1024)}--><Services/></MessageDefinition>` })]);
    assert.throws(() => pasted.get('defs').definitions(), /^BAD_INPUT: xml: 4194361 bytes of pasted XML; at most 4194304 bytes \(as for a file\)$/);
    await helper.unload();
    const ok = await load([definitionsNode({ xml: `<MessageDefinition><!--${'x'.repeat(3 * 1024 * 1024)}--><Services/></MessageDefinition>` })]);
    assert.equal(ok.get('defs').definitions().summary().services, 0);
  });

  it('the largest message of each direction: a setting, 6,400 and 10,000 bytes when absent (older flows)', async function () {
    const n = await load([definitionsNode(), definitionsNode({ id: 'set', maxFromMobileBytes: 300, maxToMobileBytes: '1023' }), definitionsNode({ id: 'blank', maxFromMobileBytes: '', maxToMobileBytes: '' })]);
    assert.deepEqual(n.get('defs').definitions().maxBytes, { return: 6400, forward: 10000 });
    assert.deepEqual(n.get('set').definitions().maxBytes, { return: 300, forward: 1023 });
    assert.deepEqual(n.get('blank').definitions().maxBytes, { return: 6400, forward: 10000 });
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
