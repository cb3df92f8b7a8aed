/**
 * Builds `dist/` from `src/` only: TypeScript compiled by tsc (tsconfig.build.json) plus the web
 * page, bundled and precompressed by build-page.cjs. The new build is written next to
 * node_modules and swapped in at the end, so a daemon running from the old `dist/` never loads a
 * half-written module.
 *
 * `node scripts/build.cjs` builds; `--if-stale` builds only when a source is newer than the last
 * build. The launcher (bin/chorus.js) calls `ensureBuilt` before every start.
 *
 * CommonJS on purpose: the launcher must run before any ES module is loaded (see bin/chorus.js).
 */
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const { createRequire } = require('node:module');
const path = require('node:path');
const { buildPage, findEsbuild } = require('./build-page.cjs');

const STAMP = '.build-stamp';
/** Files outside src/ whose change changes the output (the lock file: the page bundles packages). */
const CONFIG_FILES = ['tsconfig.json', 'tsconfig.build.json', 'package-lock.json', 'scripts/build-page.cjs'];

/** Newest modification time (ms) under `dir`, 0 when it does not exist. */
function newestMtime(dir) {
  let newest = 0;
  let entries;
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const e of entries) {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) newest = Math.max(newest, newestMtime(full));
    else newest = Math.max(newest, fs.statSync(full).mtimeMs);
  }
  // A deleted file changes nothing's mtime but its folder's.
  return Math.max(newest, fs.statSync(dir).mtimeMs);
}

/** Why `dist/` must be rebuilt, or null when it is current. */
function staleReason(root) {
  let built;
  try {
    built = fs.statSync(path.join(root, 'dist', STAMP)).mtimeMs;
  } catch {
    return 'no build yet';
  }
  if (newestMtime(path.join(root, 'src')) > built) return 'src/ changed since the last build';
  for (const f of CONFIG_FILES) {
    try {
      if (fs.statSync(path.join(root, f)).mtimeMs > built) return `${f} changed since the last build`;
    } catch {
      // optional file
    }
  }
  return null;
}

/** The TypeScript compiler of this project, or null when it is not installed (npm ci --omit=dev). */
function findTsc(root) {
  try {
    return createRequire(path.join(root, 'package.json')).resolve('typescript/bin/tsc');
  } catch {
    return null;
  }
}

/** What the build needs and is not installed (npm ci --omit=dev leaves TypeScript out), or null. */
function missingTool(root) {
  if (!findTsc(root)) return 'TypeScript is not installed here (run `npm install`, or build where dev dependencies are installed)';
  if (!findEsbuild(path.join(root, 'src'))) return 'esbuild is not installed here (run `npm install`)';
  return null;
}

/**
 * Compile into a fresh folder and swap it in as `dist/`. Returns { ok, output }; on failure
 * `dist/` is left as it was.
 */
function build(root, log = () => undefined) {
  const missing = missingTool(root);
  if (missing) return { ok: false, output: missing };
  const tsc = findTsc(root);
  const started = new Date();
  const cache = path.join(root, 'node_modules', '.cache', 'chorus-build');
  const next = path.join(cache, `dist-${process.pid}`);
  fs.mkdirSync(cache, { recursive: true });
  removeAbandoned(cache);
  fs.rmSync(next, { recursive: true, force: true });
  log('chorus: [1/2] compiling TypeScript (src/ → dist/)…');
  const compile = [tsc, '-p', path.join(root, 'tsconfig.build.json'), '--outDir', next];
  const r = spawnSync(process.execPath, [path.join(__dirname, 'ticking.cjs'), 'compiling', process.execPath, ...compile], {
    cwd: root,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const output = `${r.stdout ?? ''}${r.stderr ?? ''}`.trim();
  if (r.status !== 0) {
    fs.rmSync(next, { recursive: true, force: true });
    return { ok: false, output: output || `tsc exited with ${r.status ?? r.signal}` };
  }
  const pub = path.join(root, 'src', 'channels', 'web', 'public');
  if (fs.existsSync(pub)) {
    log('chorus: [2/2] bundling the web page…');
    try {
      buildPage(pub, path.join(next, 'channels', 'web', 'public'));
    } catch (err) {
      fs.rmSync(next, { recursive: true, force: true });
      return { ok: false, output: `the web page did not build: ${err && err.message ? err.message : String(err)}` };
    }
  }
  // The stamp carries the time the build started: a source saved during the build counts as newer.
  const stamp = path.join(next, STAMP);
  fs.writeFileSync(stamp, `built from src/ by scripts/build.cjs at ${started.toISOString()}\n`);
  fs.utimesSync(stamp, started, started);
  swapIn(next, path.join(root, 'dist'));
  return { ok: true, output };
}

/** Builds left behind by a build that was killed: their process is gone. */
function removeAbandoned(cache) {
  for (const name of fs.readdirSync(cache)) {
    const pid = Number(/^dist-(\d+)$/.exec(name)?.[1]);
    if (!pid || pid === process.pid) continue;
    try {
      process.kill(pid, 0);
    } catch (err) {
      if (err.code === 'ESRCH') fs.rmSync(path.join(cache, name), { recursive: true, force: true });
    }
  }
}

/** Replace `dist` with `next` by renames (copying when they sit on different file systems). */
function swapIn(next, dist) {
  // Beside dist/, so this rename never crosses file systems; it lives for a moment only.
  const old = `${dist}.old-${process.pid}`;
  if (fs.existsSync(dist)) fs.renameSync(dist, old);
  try {
    fs.renameSync(next, dist);
  } catch (err) {
    if (err.code !== 'EXDEV') throw err;
    fs.cpSync(next, dist, { recursive: true });
    fs.rmSync(next, { recursive: true, force: true });
  }
  fs.rmSync(old, { recursive: true, force: true });
}

/**
 * Build when `dist/` is missing or older than its sources. Returns false when there is nothing
 * runnable; a stale build that cannot be rebuilt (no TypeScript) still runs, with a warning.
 */
function ensureBuilt(root, log = (line) => process.stderr.write(line + '\n')) {
  if (staleReason(root) === null) return true;
  // Two starts at once (two `npm start`, or tests starting daemons side by side) must not both
  // build: the second would swap dist/ out from under the first one's daemon as it loads.
  const release = takeBuildLock(root, log);
  try {
    return buildIfStale(root, log);
  } finally {
    release();
  }
}

function buildIfStale(root, log) {
  const reason = staleReason(root);
  if (reason === null) return true;
  const first = reason === 'no build yet';
  log(`chorus: building dist/ (${reason})${first ? ': once, before the first start; about a minute on a small machine' : ''}…`);
  const started = Date.now();
  const r = build(root, log);
  if (r.ok) {
    log(`chorus: built in ${Math.max(1, Math.round((Date.now() - started) / 1000))} s`);
    return true;
  }
  const haveOld = fs.existsSync(path.join(root, 'dist', 'main.js'));
  if (haveOld && missingTool(root)) {
    log(`chorus: ${r.output}; running the existing dist/ build`);
    return true;
  }
  log(`chorus: the build failed, so Chorus did not start:\n${r.output}`);
  return false;
}

/** A lock file's holder that is gone (killed mid-build), or one that never wrote its pid. */
function abandonedLock(lock) {
  let text;
  let age;
  try {
    text = fs.readFileSync(lock, 'utf8').trim();
    age = Date.now() - fs.statSync(lock).mtimeMs;
  } catch {
    return false; // released meanwhile: the next attempt takes it
  }
  const pid = Number(text);
  if (!pid) return age > LOCK_UNWRITTEN_MS;
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return err.code === 'ESRCH';
  }
}

const LOCK_POLL_MS = 200;
/** A lock file still empty after this long belongs to a process that died between create and write. */
const LOCK_UNWRITTEN_MS = 10_000;

/** Wait (synchronously: the launcher runs before anything else) until this process holds the build lock. */
function takeBuildLock(root, log) {
  // Beside dist/: one lock per installation (node_modules may be shared by several).
  const lock = path.join(root, '.dist-build.lock');
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
  let told = false;
  for (;;) {
    try {
      const fd = fs.openSync(lock, 'wx');
      fs.writeSync(fd, String(process.pid));
      fs.closeSync(fd);
      return () => fs.rmSync(lock, { force: true });
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
    }
    if (abandonedLock(lock)) {
      fs.rmSync(lock, { force: true });
      continue;
    }
    if (!told) log('chorus: another build of dist/ is running; waiting for it…');
    told = true;
    Atomics.wait(sleeper, 0, 0, LOCK_POLL_MS);
  }
}

module.exports = { build, ensureBuilt, staleReason };

if (require.main === module) {
  const root = path.resolve(__dirname, '..');
  if (process.argv.includes('--if-stale')) {
    process.exitCode = ensureBuilt(root) ? 0 : 1;
  } else {
    const r = build(root, (line) => process.stderr.write(line + '\n'));
    if (r.output) process.stderr.write(r.output + '\n');
    process.exitCode = r.ok ? 0 : 1;
  }
}
