/**
 * Shared files in the file store: the Store contract for files, and what only files on disk can
 * get wrong — the layout (one file per kept file, a header line then the bytes), a write cut
 * short (a temporary file in `files/.partial/`, never read, removed at open), bytes damaged or
 * cut at their place, short writes and ENOSPC, and a real full or read-only disk (tmpfs).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { StoreUnavailableError } from '../../src/core/errors.js';
import { FileStore } from '../../src/store/files/FileStore.js';
import { plainWrite, type WriteFn } from '../../src/store/files/writeFully.js';
import { CapturingLogger, silentLogger } from '../helpers/logger.js';
import { filesContract, metaOf, someBytes } from './files-contract.js';
import { collectContract } from './files-collect-contract.js';

const dirs: string[] = [];
const mounts: string[] = [];
afterAll(() => {
  for (const m of mounts) {
    try {
      execFileSync('umount', ['-l', m], { stdio: 'pipe' });
    } catch {
      // Already gone.
    }
  }
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'chorus-files-'));
  dirs.push(d);
  return d;
}

function enospc(): Error {
  return Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', errno: -28, syscall: 'write' });
}

/** Every file under `dir/files`, relative, hidden folders included. */
function filesUnder(dir: string): string[] {
  const root = join(dir, 'files');
  if (!existsSync(root)) return [];
  return (readdirSync(root, { recursive: true }) as string[]).filter((n) => statSync(join(root, n)).isFile()).sort();
}

const pathOf = (dir: string, id: string) => join(dir, 'files', id.slice(0, 2), id);

/** A write hook: writes of kept files (not group logs) fail once `broken.on`, after `takeFirst` bytes. */
function breakableWrite(broken: { on: boolean; takeFirst?: number }): WriteFn {
  return async (fh, data, offset, length, path) => {
    if (broken.on && path.includes(`${join('files', '.partial')}`)) {
      if (broken.takeFirst && broken.takeFirst > 0) {
        const n = Math.min(broken.takeFirst, length);
        broken.takeFirst = 0;
        return plainWrite(fh, data, offset, n, path);
      }
      throw enospc();
    }
    return plainWrite(fh, data, offset, length, path);
  };
}

filesContract('file store', {
  async fresh() {
    const dir = tempDir();
    const broken = { on: false };
    return {
      make: (logger = silentLogger) => new FileStore({ dataDir: dir, fsync: 'always', logger, write: breakableWrite(broken) }),
      count: async () => filesUnder(dir).filter((n) => !n.startsWith('.partial')).length,
      async damage(id) {
        const p = pathOf(dir, id);
        const b = readFileSync(p);
        b[b.length - 100]! ^= 0x01;
        writeFileSync(p, b);
      },
      async breakWrites() {
        broken.on = true;
        return async () => {
          broken.on = false;
        };
      },
    };
  },
});

collectContract('file store', {
  async fresh() {
    const dir = tempDir();
    return {
      make: () => new FileStore({ dataDir: dir, fsync: 'always', logger: silentLogger }),
      has: async (id) => existsSync(pathOf(dir, id)),
      async damageLog(g) {
        const logDir = join(dir, 'groups', g, 'log');
        for (const name of readdirSync(logDir)) {
          const p = join(logDir, name);
          const text = readFileSync(p, 'utf8');
          // Same length, no longer JSON: a line the store skips and names.
          writeFileSync(p, text.replace(/\{([^\n]*words only)/, '#$1'));
        }
      },
    };
  },
});

describe('file store: files on disk', () => {
  it('one file per kept file under files/<two hex digits>/<id>: a header line with the meta, then the bytes as they are', async () => {
    const dir = tempDir();
    const store = new FileStore({ dataDir: dir, fsync: 'always', logger: silentLogger });
    await store.open();
    const bytes = someBytes(70_000, 1);
    const meta = metaOf(bytes, 'graph "q3".png');
    await store.putFile(meta, bytes);
    expect(filesUnder(dir)).toEqual([join(meta.id.slice(0, 2), meta.id)]);
    const raw = readFileSync(pathOf(dir, meta.id));
    const nl = raw.indexOf(0x0a);
    expect(raw.subarray(0, nl).toString()).toBe(`chorus-file 1 ${JSON.stringify(meta)}`);
    expect(raw.subarray(nl + 1).equals(Buffer.from(bytes))).toBe(true);
    // With fsync never too: the same layout, whole.
    const loose = new FileStore({ dataDir: dir, fsync: 'never', logger: silentLogger });
    await loose.open();
    const more = someBytes(1000, 2);
    await loose.putFile(metaOf(more), more);
    expect(Buffer.from((await loose.readFile(metaOf(more).id))!.bytes).equals(Buffer.from(more))).toBe(true);
    await loose.close();
    await store.close();
  });

  it('a write cut short by a crash leaves only a temporary file: never read, removed at the next open', async () => {
    const dir = tempDir();
    const first = new FileStore({ dataDir: dir, fsync: 'always', logger: silentLogger });
    await first.open();
    await first.close();
    const bytes = someBytes(400_000, 3);
    const meta = metaOf(bytes);
    // What a kill -9 in the middle of keeping it leaves: half the bytes, in .partial/.
    const whole = Buffer.concat([Buffer.from(`chorus-file 1 ${JSON.stringify(meta)}\n`), Buffer.from(bytes)]);
    const torn = join(dir, 'files', '.partial', `${meta.id}.4242.1`);
    writeFileSync(torn, whole.subarray(0, 123_456));
    const logger = new CapturingLogger();
    const store = new FileStore({ dataDir: dir, fsync: 'always', logger });
    await store.open();
    expect(existsSync(torn)).toBe(false);
    expect(readdirSync(join(dir, 'files', '.partial'))).toEqual([]);
    expect(logger.text()).toMatch(/warn removed file writes a crash cut short.*"count":1/);
    expect(await store.readFile(meta.id)).toBeNull();
    await store.putFile(meta, bytes);
    expect(Buffer.from((await store.readFile(meta.id))!.bytes).equals(Buffer.from(bytes))).toBe(true);
    await store.close();
  });

  it('a file cut short in its place (a power cut with fsync never) is not served; kept again, the cut copy is moved aside, never deleted', async () => {
    const dir = tempDir();
    const store = new FileStore({ dataDir: dir, fsync: 'never', logger: silentLogger });
    await store.open();
    const bytes = someBytes(100_000, 4);
    const meta = metaOf(bytes, 'original.png');
    await store.putFile(meta, bytes);
    truncateSync(pathOf(dir, meta.id), 60_000);
    const logger = new CapturingLogger();
    const again = new FileStore({ dataDir: dir, fsync: 'always', logger });
    await again.open();
    expect(await again.readFile(meta.id)).toBeNull();
    expect(logger.text()).toMatch(/its meta says 100000 bytes but it holds/);
    // Not a header at all: damaged as well, not a crash.
    mkdirSync(join(dir, 'files', '11'));
    writeFileSync(pathOf(dir, '1'.repeat(64)), 'garbage');
    expect(await again.readFile('1'.repeat(64))).toBeNull();
    await again.putFile(metaOf(bytes, 'resent.png'), bytes);
    const got = await again.readFile(meta.id);
    expect(got?.meta.name).toBe('original.png');
    expect(Buffer.from(got!.bytes).equals(Buffer.from(bytes))).toBe(true);
    const aside = readdirSync(join(dir, 'files', meta.id.slice(0, 2))).filter((n) => n.startsWith(`${meta.id}.damaged-`));
    expect(aside).toHaveLength(1);
    expect(statSync(join(dir, 'files', meta.id.slice(0, 2), aside[0]!)).size).toBe(60_000);
    await again.close();
    await store.close();
  });

  it('a write the disk takes only part of, then ENOSPC: refused, nothing readable, no temporary file left', async () => {
    const dir = tempDir();
    const broken = { on: false, takeFirst: 0 };
    const store = new FileStore({ dataDir: dir, fsync: 'always', logger: silentLogger, write: breakableWrite(broken) });
    await store.open();
    const bytes = someBytes(3_000_000, 5);
    broken.on = true;
    broken.takeFirst = 1_000_000;
    const err = await store.putFile(metaOf(bytes), bytes).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect(String(err)).toMatch(/ENOSPC/);
    expect(await store.readFile(metaOf(bytes).id)).toBeNull();
    expect(filesUnder(dir)).toEqual([]);
    broken.on = false;
    await store.putFile(metaOf(bytes), bytes);
    expect(filesUnder(dir)).toEqual([join(metaOf(bytes).id.slice(0, 2), metaOf(bytes).id)]);
    await store.close();
  });
});

/** A tmpfs of `size` at a fresh directory; null (with why) where mounting is not allowed. */
function tmpfs(size: string): { dir: string } | { problem: string } {
  const dir = join(tempDir(), 'mnt');
  mkdirSync(dir);
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (err) {
    const e = err as { stderr?: Buffer; message: string };
    return { problem: (e.stderr?.toString().trim() || e.message).split('\n')[0]! };
  }
  mounts.push(dir);
  return { dir };
}

describe('file store: files on a real full or read-only disk (tmpfs)', () => {
  it('a file larger than the free space is refused, leaves nothing behind, and smaller ones are kept; a read-only disk refuses too', async (ctx) => {
    const m = tmpfs('2m');
    if ('problem' in m) {
      if (process.env.CHORUS_REQUIRE_TMPFS === '1') throw new Error(`CHORUS_REQUIRE_TMPFS=1 but tmpfs cannot be mounted: ${m.problem}`);
      console.warn(`skipped: cannot mount tmpfs (${m.problem})`);
      return ctx.skip();
    }
    const store = new FileStore({ dataDir: m.dir, fsync: 'always', logger: silentLogger });
    await store.open();
    const big = someBytes(3 * 1024 * 1024, 6);
    const err = await store.putFile(metaOf(big), big).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect(String(err)).toMatch(/ENOSPC|short write/);
    expect(await store.readFile(metaOf(big).id)).toBeNull();
    expect(filesUnder(m.dir)).toEqual([]);
    const small = someBytes(500_000, 7);
    await store.putFile(metaOf(small), small);
    expect(Buffer.from((await store.readFile(metaOf(small).id))!.bytes).equals(Buffer.from(small))).toBe(true);

    execFileSync('mount', ['-o', 'remount,ro', m.dir], { stdio: 'pipe' });
    const other = someBytes(1000, 8);
    const ro = await store.putFile(metaOf(other), other).catch((e: unknown) => e);
    expect(ro).toBeInstanceOf(StoreUnavailableError);
    expect(String(ro)).toMatch(/EROFS/);
    expect(await store.readFile(metaOf(other).id)).toBeNull();
    // What was kept before is still served.
    expect((await store.readFile(metaOf(small).id))?.meta.size).toBe(500_000);
    await store.close();
  });
});
