#!/usr/bin/env node
/**
 * The `chorus` command. Runs the compiled daemon from dist/ in this one process (no tsx, no child
 * process, so a signal sent to it reaches the daemon), building dist/ first when it is missing or
 * older than src/. An installed image without src/ runs its dist/ as it is.
 *
 * CommonJS (see bin/package.json): Node loads an ES module entry point with the thread pool, so
 * only a CommonJS launcher can still choose the pool's size.
 */
'use strict';
const { existsSync } = require('node:fs');
const path = require('node:path');
const { pathToFileURL } = require('node:url');

// Log syncs run in libuv's pool; more threads let the syncs of many groups share a disk flush.
process.env.UV_THREADPOOL_SIZE ??= '16';

const root = path.resolve(__dirname, '..');
if (existsSync(path.join(root, 'src')) && !require('../scripts/build.cjs').ensureBuilt(root)) {
  process.exit(1);
}
import(pathToFileURL(path.join(root, 'dist', 'main.js')).href).catch((err) => {
  process.stderr.write(`chorus: cannot load dist/main.js: ${err && err.message ? err.message : String(err)}\n`);
  process.exit(1);
});
