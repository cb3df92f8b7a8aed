/**
 * Files survive kill -9: a child process (files-crash-child.ts) keeps ~5 MB photos through the
 * real FileKeeper and is killed with SIGKILL the moment it reports the first `keep` resolved,
 * while it writes the next one. Reopened, the store serves the reported file whole (its bytes
 * hash to its id, its size is the one reported, its GPS gone) — on the file store with
 * `fsync: always` and on PostgreSQL — and the write the kill cut short is nowhere to be read:
 * on the file store its temporary file is removed at open.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import exifr from 'exifr';
import { afterAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/core/ports.js';
import { FileStore } from '../../src/store/files/FileStore.js';
import { PostgresStore } from '../../src/store/postgres/PostgresStore.js';
import { silentLogger } from '../helpers/logger.js';
import { testDatabase, type TestDatabase } from '../helpers/postgres.js';

const ROOT = resolve(import.meta.dirname, '../..');
const CHILD = join(ROOT, 'tests/store/files-crash-child.ts');
const ROUNDS = 3;

const dirs: string[] = [];
const dbs: TestDatabase[] = [];
const pg = await testDatabase('files_crash');
if (pg) dbs.push(pg);
afterAll(async () => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  for (const d of dbs) await d.drop().catch(() => undefined);
});

interface Killed {
  id: string;
  size: number;
  stdout: string;
  signal: NodeJS.Signals | null;
}

/** Run the child; SIGKILL it on its first KEPT line, after `delayMs`. */
function keepAndKill(args: string[], delayMs: number): Promise<Killed> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let kept: { id: string; size: number } | null = null;
    child.stdout!.on('data', (d: Buffer) => {
      stdout += d.toString();
      const m = /^KEPT ([0-9a-f]{64}) (\d+)$/m.exec(stdout);
      if (m && !kept) {
        kept = { id: m[1]!, size: Number(m[2]) };
        if (delayMs === 0) child.kill('SIGKILL');
        else setTimeout(() => child.kill('SIGKILL'), delayMs);
      }
    });
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const guard = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', fail);
    child.on('exit', (_code, signal) => {
      clearTimeout(guard);
      if (!kept) return fail(new Error(`the child kept nothing:\n${stdout}\n${stderr}`));
      done({ ...kept, stdout, signal });
    });
  });
}

async function checkWhole(store: Store, k: Killed): Promise<void> {
  const got = await store.readFile(k.id);
  expect(got, `file ${k.id} was reported kept`).not.toBeNull();
  expect(got!.bytes.byteLength).toBe(k.size);
  expect(createHash('sha256').update(got!.bytes).digest('hex')).toBe(k.id);
  expect(got!.meta).toMatchObject({ id: k.id, type: 'image/jpeg', size: k.size });
  expect(await exifr.gps(got!.bytes).catch(() => undefined)).toBeUndefined();
}

describe('files survive kill -9 right after keep resolved', () => {
  it('file store, fsync always: the reported file is whole after a restart; the write cut short is removed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'chorus-files-crash-'));
    dirs.push(dir);
    const reported: Killed[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const k = await keepAndKill(['files', dir, String(round * 10 + 1)], [0, 5, 30][round]!);
      expect(k.signal, k.stdout).toBe('SIGKILL');
      reported.push(k);
      // Whatever the kill cut short is only in .partial/, never under an id.
      const partial = join(dir, 'files', '.partial');
      const left = existsSync(partial) ? readdirSync(partial) : [];
      const store = new FileStore({ dataDir: dir, fsync: 'always', logger: silentLogger });
      await store.open();
      for (const r of reported) await checkWhole(store, r);
      expect(readdirSync(partial)).toEqual([]);
      for (const name of left) expect(await store.readFile(name.slice(0, 64))).toBeNull();
      await store.close();
    }
  }, 120_000);

  it.skipIf(!pg)('PostgreSQL: the reported file is whole after the kill', async () => {
    const reported: Killed[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const k = await keepAndKill(['postgres', pg!.url, String(round * 10 + 2)], [0, 5, 30][round]!);
      expect(k.signal, k.stdout).toBe('SIGKILL');
      reported.push(k);
      const store = new PostgresStore({ url: pg!.url, logger: silentLogger });
      await store.open();
      for (const r of reported) await checkWhole(store, r);
      await store.close();
    }
  }, 120_000);
});
