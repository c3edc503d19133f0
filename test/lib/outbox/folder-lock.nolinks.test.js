'use strict';
/**
 * The folder lock where the file system has no hard links (FAT, some network shares: link()
 * fails EPERM/ENOTSUP/ENOSYS): the lock file is then created with 'wx' (folder-lock.ts,
 * createWx). fs/promises' link() is replaced for the test (no such file system can be mounted
 * here); everything else is the real disk. It takes a free folder, takes over a dead holder's
 * lock, is refused by a live holder and leaves no temporary file behind.
 */
const assert = require('node:assert/strict');
const fs = require('node:fs');
const fsp = require('node:fs/promises');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const sinon = require('sinon');
const { FolderLock, isFolderInUse } = require('../../../dist/lib/outbox/folder-lock');

const lockFiles = (dir) => fs.readdirSync(dir).filter((n) => n.startsWith('lock')).sort();
const read = (dir, n) => JSON.parse(fs.readFileSync(path.join(dir, n), 'utf8'));

/** A pid that was alive a moment ago and is not now. */
async function deadPid() {
  const c = spawn(process.execPath, ['-e', '0']);
  const pid = c.pid;
  await new Promise((r) => c.on('exit', r));
  return pid;
}

/** A holder record as folder-lock.ts writes it. */
const holder = (pid) => JSON.stringify({ pid, host: os.hostname(), at: Date.now(), token: 'other0000000000000000000' });

describe('outbox folder lock without hard links (created with wx)', function () {
  let dir;
  let links;
  beforeEach(function () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iotgw-nolinks-'));
    links = 0;
    sinon.replace(fsp, 'link', async () => {
      links++;
      throw Object.assign(new Error('EPERM: operation not permitted, link'), { code: 'EPERM' });
    });
  });
  afterEach(function () {
    sinon.restore();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('takes a free folder: lock.1 names this process, no temporary file left; release leaves it free', async function () {
    const lock = await FolderLock.acquire(dir);
    try {
      assert.ok(links >= 1, 'the hard link was tried first');
      assert.deepEqual(lockFiles(dir), ['lock.1']);
      assert.equal(read(dir, 'lock.1').pid, process.pid);
    } finally {
      await lock.release();
    }
    assert.deepEqual(lockFiles(dir), ['lock.1']);
    assert.equal(read(dir, 'lock.1').free, true);
  });

  it("takes over a dead holder's lock (lock.2, the dead one's removed)", async function () {
    fs.writeFileSync(path.join(dir, 'lock.1'), holder(await deadPid()));
    const lock = await FolderLock.acquire(dir);
    try {
      assert.deepEqual(lockFiles(dir), ['lock.2']);
      assert.equal(read(dir, 'lock.2').pid, process.pid);
    } finally {
      await lock.release();
    }
  });

  it('is refused by a live holder (STORAGE naming its pid, in use), and creates nothing', async function () {
    const live = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)']);
    try {
      fs.writeFileSync(path.join(dir, 'lock.1'), holder(live.pid));
      const err = await FolderLock.acquire(dir).then(() => undefined, (e) => e);
      assert.ok(err, 'refused');
      assert.equal(err.code, 'STORAGE');
      assert.match(err.message, new RegExp(`in use by another process \\(pid ${live.pid}\\)`));
      assert.equal(isFolderInUse(err), true);
      assert.deepEqual(lockFiles(dir), ['lock.1']);
    } finally {
      live.kill('SIGKILL');
    }
  });
});
