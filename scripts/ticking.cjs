/**
 * Runs one command and says, every few seconds on stderr, that it is still running:
 * `node scripts/ticking.cjs <label> <command> [args…]`. The command's own output is passed
 * through to stdout when it ends, and its exit code is this process's.
 *
 * Why a process of its own: the launcher builds synchronously before it loads the daemon (see
 * bin/chorus.js), so it cannot run a timer while the compiler works. The first start compiles for
 * up to a minute on a small machine, and a silent minute looks like a hang.
 */
'use strict';
const { spawn } = require('node:child_process');

const TICK_MS = 10_000;
const [label, command, ...args] = process.argv.slice(2);
const started = Date.now();
const timer = setInterval(() => {
  process.stderr.write(`chorus:   … still ${label} (${Math.round((Date.now() - started) / 1000)} s)\n`);
}, TICK_MS);
const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
const out = [];
child.stdout.on('data', (b) => out.push(b));
child.stderr.on('data', (b) => out.push(b));
child.on('error', (err) => {
  clearInterval(timer);
  process.stdout.write(`cannot run ${command}: ${err.message}\n`);
  process.exitCode = 1;
});
child.on('close', (code, signal) => {
  clearInterval(timer);
  process.stdout.write(Buffer.concat(out));
  process.exitCode = code ?? (signal ? 1 : 0);
});
