/**
 * The build that `npm start` runs when dist/ is missing or stale (scripts/build.cjs), on a small
 * project in a temporary folder: it compiles src/ only, builds the page (bundled, hashed names,
 * precompressed), rebuilds when a source is newer than the last build (also when one was
 * deleted), and leaves the last good dist/ in place when the compiler or the bundler fails.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';

interface BuildModule {
  staleReason(root: string): string | null;
  ensureBuilt(root: string, log?: (line: string) => void): boolean;
  build(root: string): { ok: boolean; output: string };
}
const { staleReason, ensureBuilt, build } = createRequire(import.meta.url)('../../scripts/build.cjs') as BuildModule;
const REPO = resolve(import.meta.dirname, '../..');
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function project(): string {
  const root = mkdtempSync(join(tmpdir(), 'chorus-build-'));
  dirs.push(root);
  // The repository's TypeScript, as an installed project would have it.
  symlinkSync(join(REPO, 'node_modules'), join(root, 'node_modules'), 'dir');
  writeFileSync(join(root, 'package.json'), '{ "type": "module" }\n');
  writeFileSync(
    join(root, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, types: [], skipLibCheck: true, noEmit: true }, include: ['src/**/*.ts', 'tests/**/*.ts'] }),
  );
  writeFileSync(join(root, 'tsconfig.build.json'), JSON.stringify({ extends: './tsconfig.json', compilerOptions: { rootDir: 'src', outDir: 'dist', noEmit: false }, include: ['src/**/*.ts'] }));
  mkdirSync(join(root, 'src', 'channels', 'web', 'public'), { recursive: true });
  mkdirSync(join(root, 'tests'));
  writeFileSync(join(root, 'src', 'main.ts'), 'export const version: number = 1;\n');
  writeFileSync(join(root, 'src', 'extra.ts'), 'export const extra = "x";\n');
  writeFileSync(join(root, 'src', 'channels', 'web', 'public', 'index.html'), '<!doctype html><title>t</title>\n');
  writeFileSync(join(root, 'tests', 'a.test.ts'), 'export const t = 1;\n');
  return root;
}

/**
 * Put the last build a minute in the past and every input before it, so that whatever the test
 * changes next is newer than the build, as an edit made after a build would be.
 */
function settle(root: string): void {
  const inputs = new Date(Date.now() - 120_000);
  const visit = (p: string) => {
    if (statSync(p).isDirectory()) for (const name of readdirSync(p)) visit(join(p, name));
    utimesSync(p, inputs, inputs);
  };
  visit(join(root, 'src'));
  for (const f of ['tsconfig.json', 'tsconfig.build.json']) utimesSync(join(root, f), inputs, inputs);
  const built = new Date(Date.now() - 60_000);
  utimesSync(join(root, 'dist', '.build-stamp'), built, built);
}

describe('build when missing or stale', () => {
  it('builds src/ only with the page files, then only when a source changed', () => {
    const root = project();
    const log: string[] = [];
    expect(staleReason(root)).toBe('no build yet');
    expect(ensureBuilt(root, (l) => log.push(l))).toBe(true);
    expect(readFileSync(join(root, 'dist', 'main.js'), 'utf8')).toContain('version = 1');
    expect(existsSync(join(root, 'dist', 'channels', 'web', 'public', 'index.html'))).toBe(true);
    expect(existsSync(join(root, 'dist', 'tests'))).toBe(false);
    expect(existsSync(join(root, 'dist', 'a.test.js'))).toBe(false);
    // What it does and how far it is, since the first build takes a while.
    expect(log).toEqual([
      'chorus: building dist/ (no build yet): once, before the first start; about a minute on a small machine…',
      'chorus: [1/2] compiling TypeScript (src/ → dist/)…',
      'chorus: [2/2] bundling the web page…',
      expect.stringMatching(/^chorus: built in \d+ s$/),
    ]);

    // Current: nothing to do.
    expect(staleReason(root)).toBeNull();
    settle(root);
    expect(staleReason(root)).toBeNull();
    expect(ensureBuilt(root, (l) => log.push(l))).toBe(true);
    expect(log).toHaveLength(4);

    // An edited source is newer than the build.
    writeFileSync(join(root, 'src', 'main.ts'), 'export const version: number = 2;\n');
    expect(staleReason(root)).toBe('src/ changed since the last build');
    expect(ensureBuilt(root, (l) => log.push(l))).toBe(true);
    expect(readFileSync(join(root, 'dist', 'main.js'), 'utf8')).toContain('version = 2');

    // A deleted source: its folder changed; the clean build drops the old output.
    settle(root);
    expect(staleReason(root)).toBeNull();
    unlinkSync(join(root, 'src', 'extra.ts'));
    expect(staleReason(root)).toBe('src/ changed since the last build');
    expect(ensureBuilt(root, () => undefined)).toBe(true);
    expect(existsSync(join(root, 'dist', 'extra.js'))).toBe(false);

    // A changed compiler setting counts too.
    settle(root);
    expect(staleReason(root)).toBeNull();
    writeFileSync(join(root, 'tsconfig.build.json'), readFileSync(join(root, 'tsconfig.build.json')));
    expect(staleReason(root)).toBe('tsconfig.build.json changed since the last build');
  }, 60_000);

  it('a source that does not compile stops the start and keeps the last good dist/', () => {
    const root = project();
    expect(ensureBuilt(root, () => undefined)).toBe(true);
    settle(root);
    writeFileSync(join(root, 'src', 'main.ts'), 'export const version: number = "two";\n');
    const log: string[] = [];
    expect(ensureBuilt(root, (l) => log.push(l))).toBe(false);
    expect(log.join('\n')).toMatch(/the build failed, so Chorus did not start:[\s\S]*src\/main\.ts.*TS2322/);
    expect(readFileSync(join(root, 'dist', 'main.js'), 'utf8')).toContain('version = 1');
  }, 60_000);
});

/** `ensureBuilt` in a process of its own, as `npm start` runs it; resolves with what it logged. */
function startInChild(root: string): Promise<{ code: number | null; log: string }> {
  const script = `process.exitCode = require(${JSON.stringify(join(REPO, 'scripts', 'build.cjs'))}).ensureBuilt(${JSON.stringify(root)}) ? 0 : 1`;
  return new Promise((done) => {
    const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    child.stderr.on('data', (d: Buffer) => (log += d.toString()));
    child.on('exit', (code) => done({ code, log }));
  });
}

describe('two starts at once', () => {
  it('build once: the second waits for the first and finds dist/ current', async () => {
    const root = project();
    const [a, b] = await Promise.all([startInChild(root), startInChild(root)]);
    expect(a.code, a.log).toBe(0);
    expect(b.code, b.log).toBe(0);
    const compiles = `${a.log}${b.log}`.match(/compiling TypeScript/g) ?? [];
    expect(compiles).toHaveLength(1);
    expect(readFileSync(join(root, 'dist', 'main.js'), 'utf8')).toContain('version = 1');
    expect(existsSync(join(root, '.dist-build.lock'))).toBe(false);
  }, 120_000);

  it('a lock left by a build that was killed does not stop the next start', () => {
    const root = project();
    const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    writeFileSync(join(root, '.dist-build.lock'), gone.stdout);
    expect(ensureBuilt(root, () => undefined)).toBe(true);
    expect(readFileSync(join(root, 'dist', 'main.js'), 'utf8')).toContain('version = 1');
    expect(existsSync(join(root, '.dist-build.lock'))).toBe(false);
  }, 60_000);
});

/** A page like the real one, small: a script with a module of its own, a library, a lazy part. */
function pageProject(): string {
  const root = project();
  const pub = join(root, 'src', 'channels', 'web', 'public');
  writeFileSync(
    join(pub, 'index.html'),
    '<!doctype html>\n<html><head><title>t</title>\n  <link rel="icon" href="/favicon.svg" type="image/svg+xml">\n  <link rel="stylesheet" href="/app.css">\n  <script type="module" src="/app.js"></script>\n</head><body></body></html>\n',
  );
  writeFileSync(join(pub, 'app.js'), "import { greet } from './greet.js';\nimport { Marked } from 'marked';\ndocument.body.append(greet(new Marked().parse('**hi**')));\ndocument.body.onclick = () => import('./lazy.js').then((m) => m.later());\n");
  writeFileSync(join(pub, 'greet.js'), "export function greet(text) {\n  const wordyVariableName = 'Hello ' + text;\n  return wordyVariableName;\n}\n");
  writeFileSync(join(pub, 'lazy.js'), "export function later() {\n  return 'LAZY-PART-OF-THE-PAGE';\n}\n");
  writeFileSync(join(pub, 'app.css'), Array.from({ length: 20 }, (_, i) => `.item-${i} {\n  color: #333333;\n  margin: ${i}px;\n}\n`).join(''));
  writeFileSync(join(pub, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><circle cx="8" cy="8" r="7" fill="#2563eb"/></svg>\n'.repeat(3));
  return root;
}

describe('the page in dist/', () => {
  it('is bundled and minified under hashed names, each text file also brotli- and gzip-compressed', () => {
    const root = pageProject();
    const r = build(root);
    expect(r.ok, r.output).toBe(true);
    const out = join(root, 'dist', 'channels', 'web', 'public');
    const manifest = JSON.parse(readFileSync(join(out, 'page.json'), 'utf8')) as { files: Record<string, { immutable: boolean; encodings: string[] }> };
    const names = Object.keys(manifest.files);
    // Nothing under its source name but index.html; no source module shipped on its own.
    for (const gone of ['app.js', 'app.css', 'favicon.svg', 'greet.js']) expect(existsSync(join(out, gone)), gone).toBe(false);
    const html = readFileSync(join(out, 'index.html'), 'utf8');
    const refs = [...html.matchAll(/\s(?:src|href)="\/([^"]+)"/g)].map((m) => m[1]!);
    expect(refs.map((f) => f.replace(/\.[A-Za-z0-9]{8,10}\./, '.#.')).sort()).toEqual(['app.#.css', 'app.#.js', 'favicon.#.svg']);
    for (const f of refs) expect(names).toContain(f);
    expect(manifest.files['index.html']!.immutable).toBe(false);
    for (const f of refs) expect(manifest.files[f]!.immutable).toBe(true);

    const script = refs.find((f) => f.endsWith('.js'))!;
    const js = readFileSync(join(out, script), 'utf8');
    expect(js).toContain('Hello ');
    expect(js).not.toContain('wordyVariableName');
    expect(js.length).toBeGreaterThan(1024);
    // The library is inside, with its licence; the part loaded on demand is not.
    expect(js).toMatch(/\/\*! marked v[\d.]+ .*MIT License/);
    expect(js).not.toContain('LAZY-PART-OF-THE-PAGE');
    const lazy = names.find((f) => /^lazy\.\w+\.js$/.test(f))!;
    expect(readFileSync(join(out, lazy), 'utf8')).toContain('LAZY-PART-OF-THE-PAGE');
    expect(readFileSync(join(out, refs.find((f) => f.endsWith('.css'))!), 'utf8')).not.toContain('\n  color');

    for (const f of names.filter((n) => /\.(html|js|css|svg)$/.test(n))) {
      const plain = readFileSync(join(out, f));
      const { encodings } = manifest.files[f]!;
      // A few bytes may not get smaller compressed: those are only stored as they are.
      if (plain.length > 1024) expect(encodings, f).toEqual(['br', 'gzip']);
      if (encodings.includes('br')) expect(brotliDecompressSync(readFileSync(join(out, f + '.br'))).equals(plain), f).toBe(true);
      if (encodings.includes('gzip')) expect(gunzipSync(readFileSync(join(out, f + '.gz'))).equals(plain), f).toBe(true);
      for (const [enc, suffix] of [['br', '.br'], ['gzip', '.gz']] as const) expect(existsSync(join(out, f + suffix)), f + suffix).toBe(encodings.includes(enc));
    }

    // The same source builds the same names; a changed one, a new name.
    const first = new Set(names);
    expect(build(root).ok).toBe(true);
    expect(new Set(Object.keys(JSON.parse(readFileSync(join(out, 'page.json'), 'utf8')).files))).toEqual(first);
    writeFileSync(join(root, 'src', 'channels', 'web', 'public', 'greet.js'), "export const greet = (t) => 'Hi ' + t;\n");
    expect(build(root).ok).toBe(true);
    const again = readFileSync(join(out, 'index.html'), 'utf8');
    expect(again).not.toContain(script);
    expect(again).toContain(refs.find((f) => f.endsWith('.css'))!);
  }, 60_000);

  it('a page that does not bundle stops the start and keeps the last good dist/', () => {
    const root = pageProject();
    expect(ensureBuilt(root, () => undefined)).toBe(true);
    settle(root);
    const pub = join(root, 'src', 'channels', 'web', 'public');
    writeFileSync(join(pub, 'greet.js'), 'export function greet(text) {\n');
    const log: string[] = [];
    expect(ensureBuilt(root, (l) => log.push(l))).toBe(false);
    expect(log.join('\n')).toMatch(/the build failed, so Chorus did not start:[\s\S]*the web page did not build[\s\S]*greet\.js/);
    expect(existsSync(join(root, 'dist', 'main.js'))).toBe(true);
    expect(existsSync(join(root, 'dist', 'channels', 'web', 'public', 'page.json'))).toBe(true);

    // index.html must load the script it is built with, or the page would be blank.
    writeFileSync(join(pub, 'greet.js'), 'export const greet = (t) => t;\n');
    writeFileSync(join(pub, 'index.html'), '<!doctype html><title>t</title><link rel="stylesheet" href="/app.css"><link rel="icon" href="/favicon.svg">\n');
    const r = build(root);
    expect(r.ok).toBe(false);
    expect(r.output).toContain('index.html does not reference /app.js');
  }, 60_000);
});
