'use strict';
/**
 * The package's TypeScript types (types/index.d.ts, "types" in package.json): a use of
 * the simulator API compiles under --strict against them and runs against the real
 * simulator (so the declarations name members that exist).
 */
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const Module = require('node:module');

const ROOT = path.resolve(__dirname, '..', '..');

describe('TypeScript types of the package API', function () {
  this.timeout(60000);
  it('package.json "types" points at the declarations, which compile a real use', async function () {
    const pkg = require('../../package.json');
    assert.equal(pkg.types, 'types/index.d.ts');
    assert.ok(pkg.files.includes('types/'));
    const out = fs.mkdtempSync(path.join(os.tmpdir(), 'iotgw-types-'));
    try {
      execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '--strict', '--target', 'ES2022', '--module', 'commonjs', '--types', 'node', '--skipLibCheck', '--ignoreConfig', '--lib', 'ES2022,DOM', '--outDir', out, path.join(ROOT, 'test/fixtures/types-usage.ts')], { stdio: 'pipe' });
      const js = fs.readFileSync(path.join(out, 'types-usage.js'), 'utf8').replace("require(\"../../types\")", 'require("../../dist")');
      const m = new Module(path.join(__dirname, '..', 'fixtures', 'types-usage.js'), module);
      m.filename = path.join(__dirname, '..', 'fixtures', 'types-usage.js');
      m.paths = Module._nodeModulePaths(path.join(__dirname, '..', 'fixtures'));
      m._compile(js, m.filename);
      assert.deepEqual(await m.exports.main(), ['string', 'string', 'number', 'true', 'BAD_INPUT', 'true']);
    } finally {
      fs.rmSync(out, { recursive: true, force: true });
    }
  });
});
