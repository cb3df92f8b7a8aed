/**
 * Builds the web page (src/channels/web/public) into what the server sends: the scripts bundled
 * and minified by esbuild, with highlight.js split into chunks that load only when a message
 * shows code; the stylesheet minified; every file but index.html named by its content
 * (`app.5XQ2KDJ3.js`), so browsers may keep it for a year; index.html pointing at those names;
 * and each text file stored a second and third time compressed (.br, .gz), so the server never
 * compresses per request. `page.json` lists what to serve; a folder holding one is a built page.
 *
 * Used by scripts/build.cjs (dist/), and by the server itself when it runs from src/ without a
 * build (tsx, tests): `cachedPage` builds into node_modules/.cache keyed by the sources' content,
 * so the tests serve exactly the files a build would ship.
 *
 * CommonJS, like build.cjs, which must run before any ES module is loaded.
 */
'use strict';
const crypto = require('node:crypto');
const fs = require('node:fs');
const { createRequire } = require('node:module');
const os = require('node:os');
const path = require('node:path');
const zlib = require('node:zlib');

const MANIFEST = 'page.json';
/** The page's entry points; each one that exists must be referenced by index.html. */
const ENTRIES = ['app.js', 'app.css'];
/** Copied under a content-hashed name. */
const ASSETS = ['favicon.svg'];
const COMPRESSIBLE = /\.(html|js|css|svg)$/;
/** Browsers the page is written for: ES modules with dynamic import, nesting-free CSS. */
const TARGET = ['es2022', 'chrome111', 'edge111', 'firefox115', 'safari16.4'];
/** Cache entries older than this are removed when a new one is written (none is in use then). */
const CACHE_KEEP_MS = 60 * 60 * 1000;

/** esbuild as installed for the project that holds `srcDir`, or null. */
function findEsbuild(srcDir) {
  try {
    return createRequire(path.join(path.resolve(srcDir), 'index.js'))('esbuild');
  } catch (err) {
    if (err.code === 'MODULE_NOT_FOUND') return null;
    throw err;
  }
}

function shortHash(body) {
  return crypto.createHash('sha256').update(body).digest('hex').slice(0, 10);
}

/**
 * Build the page in `srcDir` into `outDir` (created, must not exist yet). Throws with esbuild's
 * message when a script does not bundle.
 */
function buildPage(srcDir, outDir) {
  srcDir = path.resolve(srcDir);
  const esbuild = findEsbuild(srcDir);
  if (!esbuild) throw new Error('esbuild is not installed here (run `npm install`)');
  fs.mkdirSync(outDir, { recursive: true });
  /** Source name → the name it is served under. */
  const renamed = new Map();
  const preload = [];
  const entries = ENTRIES.filter((f) => fs.existsSync(path.join(srcDir, f)));
  if (entries.length > 0) {
    const r = esbuild.buildSync({
      absWorkingDir: srcDir,
      entryPoints: entries,
      outdir: outDir,
      bundle: true,
      splitting: true,
      format: 'esm',
      platform: 'browser',
      target: TARGET,
      minify: true,
      sourcemap: 'linked',
      // Licence headers of marked, DOMPurify and highlight.js stay with their code.
      legalComments: 'eof',
      entryNames: '[name].[hash]',
      chunkNames: '[name].[hash]',
      metafile: true,
      logLevel: 'silent',
      write: true,
    });
    keepLicenceHeaders(srcDir, r.metafile);
    for (const [file, out] of Object.entries(r.metafile.outputs)) {
      // Languages imported on demand are entry points too; only the page's own are named in HTML.
      if (!entries.includes(out.entryPoint)) continue;
      const served = path.basename(file);
      renamed.set(out.entryPoint, served);
      // The chunks the entry imports right away are fetched together with it, not after it.
      if (served.endsWith('.js')) for (const imp of out.imports) if (imp.kind === 'import-statement') preload.push(path.basename(imp.path));
    }
  }
  for (const name of ASSETS) {
    const from = path.join(srcDir, name);
    if (!fs.existsSync(from)) continue;
    const body = fs.readFileSync(from);
    const ext = path.extname(name);
    const served = `${path.basename(name, ext)}.${shortHash(body)}${ext}`;
    fs.writeFileSync(path.join(outDir, served), body);
    renamed.set(name, served);
  }
  const html = fs.existsSync(path.join(srcDir, 'index.html')) ? pageHtml(fs.readFileSync(path.join(srcDir, 'index.html'), 'utf8'), renamed, preload) : null;
  if (html !== null) fs.writeFileSync(path.join(outDir, 'index.html'), html);

  const files = {};
  for (const name of fs.readdirSync(outDir).sort()) {
    const full = path.join(outDir, name);
    const body = fs.readFileSync(full);
    const entry = { immutable: name !== 'index.html', encodings: [] };
    if (COMPRESSIBLE.test(name)) {
      const br = zlib.brotliCompressSync(body, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: body.length } });
      const gz = zlib.gzipSync(body, { level: 9 });
      // Tiny files can grow when compressed; those are only sent as they are.
      if (br.length < body.length) fs.writeFileSync(`${full}.br`, br), entry.encodings.push('br');
      if (gz.length < body.length) fs.writeFileSync(`${full}.gz`, gz), entry.encodings.push('gzip');
    }
    files[name] = entry;
  }
  fs.writeFileSync(path.join(outDir, MANIFEST), JSON.stringify({ files }, null, 1) + '\n');
}

/**
 * esbuild keeps only comments marked as legal (`/*!`, `@license`); marked's copyright header is
 * a plain comment. A library's leading comment that names a copyright or licence is appended to
 * each output that carries its code, as its licence asks.
 */
function keepLicenceHeaders(srcDir, metafile) {
  for (const [file, out] of Object.entries(metafile.outputs)) {
    if (!file.endsWith('.js')) continue;
    const full = path.resolve(srcDir, file);
    let text = fs.readFileSync(full, 'utf8');
    const headers = [];
    for (const input of Object.keys(out.inputs)) {
      if (!input.includes('node_modules/')) continue;
      const head = /^\s*\/\*\*?([\s\S]*?)\*\//.exec(fs.readFileSync(path.resolve(srcDir, input), 'utf8'))?.[1];
      if (!head || !/copyright|licen[cs]e/i.test(head) || /@license|^!/.test(head)) continue;
      const lines = head.split('\n').map((l) => l.replace(/^\s*\*\s?/, '').trim()).filter(Boolean);
      headers.push(`/*! ${lines.join(' | ')} */`);
    }
    if (headers.length === 0) continue;
    const map = text.lastIndexOf('//# sourceMappingURL=');
    const at = map < 0 ? text.length : map;
    text = `${text.slice(0, at)}${headers.join('\n')}\n${text.slice(at)}`;
    fs.writeFileSync(full, text);
  }
}

/** index.html with the hashed names in place of the sources' and preloads for the first chunks. */
function pageHtml(html, renamed, preload) {
  for (const [from, to] of renamed) {
    const ref = new RegExp(`(\\s(?:src|href)=")/${from.replace(/\./g, '\\.')}"`, 'g');
    if (!ref.test(html)) throw new Error(`index.html does not reference /${from}, so the page would not load it`);
    html = html.replace(ref, `$1/${to}"`);
  }
  const entry = renamed.get('app.js');
  if (entry && preload.length > 0) {
    const links = preload.map((f) => `<link rel="modulepreload" href="/${f}">`).join('\n  ');
    html = html.replace(`<script type="module" src="/${entry}"></script>`, (tag) => `${tag}\n  ${links}`);
  }
  return html;
}

/** Everything the build of `srcDir` depends on: its files, this builder, the installed packages. */
function sourceKey(srcDir) {
  const h = crypto.createHash('sha256');
  const visit = (dir, prefix) => {
    for (const name of fs.readdirSync(dir).sort()) {
      const full = path.join(dir, name);
      if (fs.statSync(full).isDirectory()) visit(full, `${prefix}${name}/`);
      else h.update(prefix + name).update('\0').update(fs.readFileSync(full)).update('\0');
    }
  };
  visit(srcDir, '');
  h.update(fs.readFileSync(__filename));
  const esbuild = findEsbuild(srcDir);
  h.update(esbuild ? esbuild.version : 'none');
  for (let dir = srcDir; ; dir = path.dirname(dir)) {
    const lock = path.join(dir, 'package-lock.json');
    if (fs.existsSync(lock)) {
      h.update(fs.readFileSync(lock));
      break;
    }
    if (path.dirname(dir) === dir) break;
  }
  return h.digest('hex').slice(0, 16);
}

/** Where built pages of `srcDir` are kept: the project's node_modules/.cache, else the temp dir. */
function cacheDir(srcDir) {
  for (let dir = srcDir; path.dirname(dir) !== dir; dir = path.dirname(dir)) {
    const nm = path.join(dir, 'node_modules');
    if (fs.existsSync(nm)) return path.join(nm, '.cache', 'chorus-page');
  }
  return path.join(os.tmpdir(), 'chorus-page');
}

/**
 * The built page for `srcDir`, built once per content: an unchanged source is found in the cache,
 * and processes building at the same moment each finish their own copy and keep the first.
 */
function cachedPage(srcDir) {
  srcDir = path.resolve(srcDir);
  const cache = cacheDir(srcDir);
  const dir = path.join(cache, sourceKey(srcDir));
  if (fs.existsSync(path.join(dir, MANIFEST))) {
    // In use: not old, whatever another build cleaning up may think.
    const now = new Date();
    fs.utimesSync(dir, now, now);
    return dir;
  }
  fs.mkdirSync(cache, { recursive: true });
  const tmp = path.join(cache, `.tmp-${process.pid}-${crypto.randomBytes(4).toString('hex')}`);
  try {
    buildPage(srcDir, tmp);
    try {
      fs.renameSync(tmp, dir);
    } catch (err) {
      // Another process put the same build there first.
      if (!fs.existsSync(path.join(dir, MANIFEST))) throw err;
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  removeOld(cache, dir);
  return dir;
}

function removeOld(cache, keep) {
  const now = Date.now();
  for (const name of fs.readdirSync(cache)) {
    const full = path.join(cache, name);
    if (full === keep) continue;
    try {
      if (now - fs.statSync(full).mtimeMs > CACHE_KEEP_MS) fs.rmSync(full, { recursive: true, force: true });
    } catch {
      // gone already
    }
  }
}

module.exports = { MANIFEST, buildPage, cachedPage, findEsbuild };
