'use strict';
/** The simulator's command (dist/simulator/cli.js) as a child process, for tests of its switches. */
const { spawn } = require('node:child_process');
const path = require('node:path');

const CLI = path.join(__dirname, '..', '..', 'dist', 'simulator', 'cli.js');

/**
 * Starts `iotgw-simulator args` and resolves `{cli, url}` once it prints its gateway base URL
 * (with the base path, when one is set). The caller kills `cli` (SIGTERM) when done.
 */
async function spawnSimulator(args, bin = CLI) {
  const cli = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    const url = await new Promise((resolve, reject) => {
      let out = '';
      cli.stdout.on('data', (d) => {
        out += d;
        const m = /gateway base URL: (http:\/\/127\.0\.0\.1:\d+\S*)\n/.exec(out);
        if (m) resolve(m[1]);
      });
      cli.on('exit', (code) => reject(new Error(`the simulator exited ${code}`)));
    });
    return { cli, url };
  } catch (err) {
    cli.kill('SIGTERM');
    throw err;
  }
}

module.exports = { spawnSimulator, CLI };
