/**
 * The build that `npm start` runs when dist/ is missing or stale (scripts/build.cjs), on a small
 * project in a temporary folder: it compiles src/ only, copies the page's files, rebuilds when a
 * source is newer than the last build (also when one was deleted), and leaves the last good
 * dist/ in place when the compiler fails.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

interface BuildModule {
  staleReason(root: string): string | null;
  ensureBuilt(root: string, log?: (line: string) => void): boolean;
}
const { staleReason, ensureBuilt } = createRequire(import.meta.url)('../../scripts/build.cjs') as BuildModule;
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
    expect(log).toEqual(['chorus: building dist/ (no build yet)…']);

    // Current: nothing to do.
    expect(staleReason(root)).toBeNull();
    settle(root);
    expect(staleReason(root)).toBeNull();
    expect(ensureBuilt(root, (l) => log.push(l))).toBe(true);
    expect(log).toHaveLength(1);

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
