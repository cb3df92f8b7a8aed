/**
 * The file store on real files: append and page back over many segments,
 * records replayed after a restart, group commit, checkpoints never ahead of the log, torn tails
 * cut, damaged files reported and never written over, newer formats refused, failed writes that
 * leave nothing behind.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, appendFileSync, truncateSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { GroupCheckpoint } from '../../src/core/records.js';
import { StoreFormatError, StoreUnavailableError } from '../../src/core/errors.js';
import { FileStore } from '../../src/store/files/FileStore.js';
import { peekGroups } from '../../src/store/files/peek.js';
import { truncateBack, writeFully, type WriteFn } from '../../src/store/files/writeFully.js';
import { CapturingLogger, silentLogger } from '../helpers/logger.js';
import { HEAD, all, entry, pageBack, rec, storeContract } from './store-contract.js';
import { roomsContract } from './rooms-contract.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) {
    chmodSync(d, 0o755);
    rmSync(d, { recursive: true, force: true });
  }
});

/** The error Linux gives a write on a full disk. */
function enospc(): Error {
  return Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', errno: -28, syscall: 'write' });
}

/** NUL bytes in every file under `dir`, by file. */
function nulBytes(dir: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const name of readdirSync(dir, { recursive: true }) as string[]) {
    if (!statSync(join(dir, name)).isFile()) continue;
    const n = readFileSync(join(dir, name)).filter((b) => b === 0).length;
    if (n) out[name] = n;
  }
  return out;
}

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'chorus-store-'));
  dirs.push(d);
  return d;
}

storeContract('file store', {
  async fresh() {
    const dir = tempDir();
    // Small segments, so the contract's history spans many of them.
    return () => new FileStore({ dataDir: dir, fsync: 'never', segmentBytes: 2048, logger: silentLogger });
  },
});
roomsContract('file store', {
  async fresh() {
    const dir = tempDir();
    return () => new FileStore({ dataDir: dir, fsync: 'never', segmentBytes: 2048, logger: silentLogger });
  },
});

describe('file store: the log', () => {
  it('rotates segments named after their first entry and pages back across them after a restart', async () => {
    const dir = tempDir();
    const store = new FileStore({ dataDir: dir, fsync: 'never', segmentBytes: 2048, logger: silentLogger });
    await store.open();
    await store.append('g', rec(1, { head: HEAD }));
    for (let i = 1; i <= 400; i++) await store.append('g', rec(i + 1, { entries: [entry(i)] }));
    await store.close();
    const segments = readdirSync(join(dir, 'groups', 'g', 'log'));
    expect(segments.length).toBeGreaterThan(10);
    // Each segment is named after the first entry seq it holds.
    expect(segments[0]).toBe('000000000001.jsonl');
    const again = new FileStore({ dataDir: dir, fsync: 'never', segmentBytes: 2048, logger: silentLogger });
    await again.open();
    expect(await pageBack(again, 'g', 37)).toEqual(Array.from({ length: 400 }, (_, i) => i + 1));
    await again.close();
  });

  it('group commit: appends of one tick across groups share a write and a sync per file', async () => {
    const dir = tempDir();
    const store = new FileStore({ dataDir: dir, fsync: 'always', logger: silentLogger });
    await store.open();
    const ids = Array.from({ length: 10 }, (_, i) => `g${i}`);
    await Promise.all(ids.map((id) => store.append(id, rec(1, { head: { ...HEAD, id } }))));
    const before = { ...store.stats };
    await Promise.all(ids.flatMap((id) => Array.from({ length: 5 }, (_, k) => store.append(id, rec(k + 2, { entries: [entry(k + 1)] })))));
    expect(store.stats.appends - before.appends).toBe(50);
    expect(store.stats.flushes - before.flushes).toBe(1);
    expect(store.stats.fsyncs - before.fsyncs).toBe(10);
    await store.close();
  });

  it('writes a checkpoint only once the records it covers are durable, and replays only what follows it', async () => {
    const dir = tempDir();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let hold = false;
    const store = new FileStore({ dataDir: dir, fsync: 'always', logger: silentLogger, beforeWrite: async () => (hold ? gate : undefined) });
    await store.open();
    await store.append('g', rec(1, { head: HEAD }));
    hold = true;
    const slow = store.append('g', rec(2, { entries: [entry(1)] }));
    const cp: GroupCheckpoint = { version: 2, n: 2, head: HEAD, nextSeq: 2, rounds: [], sessions: [], seen: [['p1', 1]], undelivered: [] };
    const written = store.checkpoint('g', cp);
    await new Promise((r) => setTimeout(r, 30));
    expect(existsSync(join(dir, 'groups', 'g', 'state.json'))).toBe(false);
    release();
    await slow;
    await written;
    expect(JSON.parse(readFileSync(join(dir, 'groups', 'g', 'state.json'), 'utf8')).n).toBe(2);
    hold = false;
    await store.append('g', rec(3, { entries: [entry(2)] }));
    await store.close();

    const again = new FileStore({ dataDir: dir, fsync: 'always', logger: silentLogger });
    const { groups } = await again.open();
    expect(groups[0]!.checkpoint?.n).toBe(2);
    expect((await all(groups[0]!)).map((r) => r.n)).toEqual([3]);
    await again.close();
  });

  it('refuses ids that could escape the data directory', async () => {
    const store = new FileStore({ dataDir: tempDir(), fsync: 'never', logger: silentLogger });
    await store.open();
    for (const bad of ['../x', 'a/b', '.hidden', 'UPPER', '']) await expect(store.append(bad, rec(1))).rejects.toThrow(/unsafe/);
  });
});

describe('file store: damage and crashes', () => {
  it('cuts a torn last line, keeps its bytes aside, and loses no complete record', async () => {
    const dir = tempDir();
    const store = new FileStore({ dataDir: dir, fsync: 'always', logger: silentLogger });
    await store.open();
    await store.append('g', rec(1, { head: HEAD }));
    await store.append('g', rec(2, { entries: [entry(1)] }));
    await store.close();
    const seg = join(dir, 'groups', 'g', 'log', '000000000001.jsonl');
    const good = readFileSync(seg);
    appendFileSync(seg, '{"v":1,"n":3,"ts":5,"entries":[{"id":"g.2","se');
    const log = new CapturingLogger();
    const again = new FileStore({ dataDir: dir, fsync: 'always', logger: log });
    const { groups } = await again.open();
    expect((await all(groups[0]!)).map((r) => r.n)).toEqual([1, 2]);
    expect(readFileSync(seg)).toEqual(good);
    const torn = readdirSync(join(dir, 'groups', 'g', 'log')).filter((n) => n.includes('.torn-'));
    expect(torn).toHaveLength(1);
    expect(readFileSync(join(dir, 'groups', 'g', 'log', torn[0]!), 'utf8')).toContain('"n":3');
    expect(log.text()).toMatch(/torn last line/);
    // The log goes on after the cut point on a clean line.
    await again.append('g', rec(3, { entries: [entry(2)] }));
    await again.close();
    const third = new FileStore({ dataDir: dir, fsync: 'always', logger: silentLogger });
    expect((await all((await third.open()).groups[0]!)).map((r) => r.n)).toEqual([1, 2, 3]);
  });

  it('skips and names a damaged line in the middle without rewriting the file', async () => {
    const dir = tempDir();
    const logDir = join(dir, 'groups', 'g', 'log');
    mkdirSync(logDir, { recursive: true });
    const lines = [JSON.stringify(rec(1, { head: HEAD })), '{not json', JSON.stringify({ v: 1, n: 'three' }), JSON.stringify(rec(4, { entries: [entry(1)] }))];
    const text = lines.join('\n') + '\n';
    writeFileSync(join(logDir, '000000000001.jsonl'), text);
    const log = new CapturingLogger();
    const store = new FileStore({ dataDir: dir, fsync: 'never', logger: log });
    const { groups } = await store.open();
    expect((await all(groups[0]!)).map((r) => r.n)).toEqual([1, 4]);
    const errors = log.lines.filter((l) => l.level === 'error');
    expect(errors.map((e) => (e.obj as { line: number }).line)).toEqual([2, 3]);
    expect(JSON.stringify(errors)).toContain('000000000001.jsonl');
    expect(readFileSync(join(logDir, '000000000001.jsonl'), 'utf8')).toBe(text);
  });

  it('moves a damaged checkpoint aside with one line naming it, and replays the whole log', async () => {
    for (const damage of ['{"version":2,', '{"version":2,"n":1,"head":null}']) {
      const dir = tempDir();
      const store = new FileStore({ dataDir: dir, fsync: 'never', logger: silentLogger });
      await store.open();
      await store.append('g', rec(1, { head: HEAD }));
      await store.append('g', rec(2, { entries: [entry(1)] }));
      await store.close();
      writeFileSync(join(dir, 'groups', 'g', 'state.json'), damage);
      const log = new CapturingLogger();
      const again = new FileStore({ dataDir: dir, fsync: 'never', logger: log });
      const { groups } = await again.open();
      expect(groups[0]!.checkpoint).toBeNull();
      expect((await all(groups[0]!)).map((r) => r.n)).toEqual([1, 2]);
      const errors = log.lines.filter((l) => l.level === 'error');
      expect(errors).toHaveLength(1);
      expect(JSON.stringify(errors[0])).toContain('state.json');
      const aside = readdirSync(join(dir, 'groups', 'g')).filter((n) => n.startsWith('state.json.corrupt-'));
      expect(aside).toHaveLength(1);
      expect(readFileSync(join(dir, 'groups', 'g', aside[0]!), 'utf8')).toBe(damage);
    }
  });

  it('refuses data written by a newer Chorus instead of misreading it', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'chorus-data.json'), '{"format": 3}');
    await expect(new FileStore({ dataDir: dir, fsync: 'never', logger: silentLogger }).open()).rejects.toThrow(StoreFormatError);
    await expect(new FileStore({ dataDir: dir, fsync: 'never', logger: silentLogger }).open()).rejects.toThrow(/newer Chorus \(format 3\)/);

    const dir2 = tempDir();
    mkdirSync(join(dir2, 'groups', 'g', 'log'), { recursive: true });
    writeFileSync(join(dir2, 'groups', 'g', 'log', '000000000001.jsonl'), JSON.stringify({ v: 3, n: 1, ts: 0 }) + '\n');
    await expect(new FileStore({ dataDir: dir2, fsync: 'never', logger: silentLogger }).open()).rejects.toThrow(/record version 3/);
  });

  it('a group that cannot be read is reported and left alone', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'groups', 'g'), { recursive: true });
    // A log directory that is a file: readdir fails with ENOTDIR (root ignores permission bits).
    writeFileSync(join(dir, 'groups', 'g', 'log'), 'not a directory');
    const log = new CapturingLogger();
    const store = new FileStore({ dataDir: dir, fsync: 'never', logger: log });
    const { groups, unreadable } = await store.open();
    expect(groups).toEqual([]);
    expect(unreadable).toEqual(['g']);
    expect(log.text()).toMatch(/cannot be read/);
    expect(readFileSync(join(dir, 'groups', 'g', 'log'), 'utf8')).toBe('not a directory');
  });

  it('a group that cannot be read is refused every write (nothing is written over it) until it reads back', async () => {
    const dir = tempDir();
    const store = new FileStore({ dataDir: dir, fsync: 'always', logger: silentLogger });
    await store.open();
    await store.append('g', rec(1, { head: HEAD }));
    await store.close();
    // Its checkpoint replaced by a directory: the log reads, the group as a whole does not.
    const state = join(dir, 'groups', 'g', 'state.json');
    mkdirSync(state);
    const seg = join(dir, 'groups', 'g', 'log', '000000000001.jsonl');
    const kept = readFileSync(seg);
    const again = new FileStore({ dataDir: dir, fsync: 'always', logger: silentLogger });
    const { groups, unreadable } = await again.open();
    expect(groups).toEqual([]);
    expect(unreadable).toEqual(['g']);
    await expect(again.append('g', rec(2, { entries: [entry(1)] }))).rejects.toThrow(StoreUnavailableError);
    // A checkpoint waits (it is dropped when the group is read back), and is never written.
    const cp = again.checkpoint('g', { version: 2, n: 2, head: HEAD, nextSeq: 2, rounds: [], sessions: [], seen: [], undelivered: [] });
    await again.flush();
    expect(readFileSync(seg)).toEqual(kept);
    expect(readdirSync(state)).toEqual([]);
    // Refusing the group's writes does not make the store unready.
    expect(again.health()).toMatchObject({ writable: true, error: null, unreadableGroups: [{ group: 'g' }] });
    // Repaired: the group reads back and takes writes again.
    rmSync(state, { recursive: true });
    expect((await all(await again.reopen('g'))).map((r) => r.n)).toEqual([1]);
    await cp;
    expect(existsSync(state)).toBe(false);
    await again.append('g', rec(2, { entries: [entry(1)] }));
    await again.close();
  });
  it('a log that ends before its checkpoint (empty, cut short, missing) is named in one error line, not loaded, and left untouched', async () => {
    const cases: Array<{ damage: (seg: string, dir: string) => void; problem: RegExp; file: string }> = [
      { damage: (seg) => truncateSync(seg, 0), problem: /the log is empty \(0 bytes\), but the checkpoint .*state\.json covers records 1 to 3/, file: '000000000001.jsonl' },
      { damage: (seg) => truncateSync(seg, readFileSync(seg, 'utf8').split('\n').slice(0, 2).join('\n').length + 1), problem: /the log ends at record 2, but the checkpoint .*covers records up to 3/, file: '000000000001.jsonl' },
      { damage: (_seg, dir) => rmSync(join(dir, 'groups', 'g', 'log'), { recursive: true }), problem: /the log is missing/, file: join('g', 'log') },
    ];
    for (const c of cases) {
      const dir = tempDir();
      const store = new FileStore({ dataDir: dir, fsync: 'always', logger: silentLogger });
      await store.open();
      await store.append('g', rec(1, { head: HEAD }));
      await store.append('g', rec(2, { entries: [entry(1)] }));
      await store.append('g', rec(3, { entries: [entry(2)] }));
      await store.append('h', rec(1, { head: { ...HEAD, id: 'h', chatId: 'h' } }));
      const cp: GroupCheckpoint = { version: 2, n: 3, head: HEAD, nextSeq: 3, rounds: [], sessions: [], seen: [['p1', 1], ['p2', 1]], undelivered: [] };
      await store.checkpoint('g', cp);
      await store.close();
      const seg = join(dir, 'groups', 'g', 'log', '000000000001.jsonl');
      c.damage(seg, dir);
      const files = () => Object.fromEntries((readdirSync(join(dir, 'groups', 'g'), { recursive: true }) as string[]).sort().map((n) => [n, statSync(join(dir, 'groups', 'g', n)).isFile() ? readFileSync(join(dir, 'groups', 'g', n), 'utf8') : 'dir']));
      const before = files();

      const log = new CapturingLogger();
      const again = new FileStore({ dataDir: dir, fsync: 'always', logger: log });
      const { groups, unreadable } = await again.open();
      expect(groups.map((g) => g.id)).toEqual(['h']);
      expect(unreadable).toEqual(['g']);
      const errors = log.lines.filter((l) => l.level === 'error' || l.level === 'warn');
      expect(errors).toHaveLength(1);
      expect(errors[0]!.msg).toMatch(/damaged; left untouched and not loaded/);
      expect(JSON.stringify(errors[0]!.obj)).toContain(c.file);
      expect((errors[0]!.obj as { problem: string }).problem).toMatch(c.problem);
      // Reported, without making the store unready: every other group works.
      expect(again.health()).toEqual({ writable: true, error: null, unreadableGroups: [{ group: 'g', problem: expect.stringMatching(c.problem) }] });
      await expect(again.append('g', rec(4, { entries: [entry(3)] }))).rejects.toThrow(StoreUnavailableError);
      await again.append('h', rec(2, { entries: [entry(1)] }));
      await again.close();
      expect(files()).toEqual(before);
      // `chorus doctor` (read-only) names it too.
      const peek = await peekGroups(dir);
      expect(peek.damaged).toEqual([{ id: 'g', problem: expect.stringMatching(/covers records/) }]);
      expect(peek.groups.map((g) => g.id)).toEqual(['h']);
    }
  });

  it('says only what it knows of a torn tail: after a crash its write never completed; NUL padding is named, cut and kept aside; at a reopen after a refused write it was never acknowledged', async () => {
    const dir = tempDir();
    let full = false;
    const log = new CapturingLogger();
    const store = new FileStore({
      dataDir: dir,
      fsync: 'always',
      logger: log,
      beforeWrite: async (_path, data, fh) => {
        if (!full) return;
        // Half the record lands, and it cannot be taken back.
        await fh.write(data.subarray(0, Math.floor(data.length / 2)));
        fh.truncate = () => Promise.reject(Object.assign(new Error('EIO: i/o error, ftruncate'), { code: 'EIO' }));
        throw enospc();
      },
    });
    await store.open();
    await store.append('g', rec(1, { head: HEAD }));
    await store.append('g', rec(2, { entries: [entry(1)] }));
    const seg = join(dir, 'groups', 'g', 'log', '000000000001.jsonl');
    const good = readFileSync(seg);
    full = true;
    await expect(store.append('g', rec(3, { entries: [entry(2)] }))).rejects.toThrow(/ENOSPC/);
    full = false;
    expect(readFileSync(seg).length).toBeGreaterThan(good.length);
    const reopened = await store.reopen('g');
    expect((await all(reopened)).map((r) => r.n)).toEqual([1, 2]);
    expect(readFileSync(seg)).toEqual(good);
    const atReopen = log.lines.filter((l) => /torn/.test(l.msg ?? ''));
    expect(atReopen.map((l) => l.msg)).toEqual(['cut a torn last line of a log (never acknowledged: it lies past the last acknowledged write)']);
    await store.close();

    // What an older Chorus could leave after a full disk: part of a record, then NUL bytes up to
    // the length it believed it had written. Nothing tells whether that record was acknowledged.
    appendFileSync(seg, Buffer.concat([Buffer.from('{"v":1,"n":3,"ts":5,"entries":[{"id":"g.2","se'), Buffer.alloc(300)]));
    const log2 = new CapturingLogger();
    const again = new FileStore({ dataDir: dir, fsync: 'always', logger: log2 });
    const { groups } = await again.open();
    expect((await all(groups[0]!)).map((r) => r.n)).toEqual([1, 2]);
    expect(readFileSync(seg)).toEqual(good);
    const torn = readdirSync(join(dir, 'groups', 'g', 'log')).filter((n) => n.includes('.torn-'));
    const padded = torn.map((n) => readFileSync(join(dir, 'groups', 'g', 'log', n))).find((b) => b.includes(0));
    expect(padded?.toString('utf8')).toContain('"n":3');
    const line = log2.lines.find((l) => /torn/.test(l.msg ?? ''))!;
    expect(line.msg).toMatch(/its write never completed/);
    expect(line.msg).toMatch(/NUL bytes/);
    expect(line.msg).not.toMatch(/never acknowledged/);
    expect(line.obj).toMatchObject({ nulBytes: 300 });
    // The log goes on from the clean end.
    await again.append('g', rec(3, { entries: [entry(2)] }));
    await again.close();
    const third = new FileStore({ dataDir: dir, fsync: 'always', logger: silentLogger });
    expect((await all((await third.open()).groups[0]!)).map((r) => r.n)).toEqual([1, 2, 3]);
    await third.close();
    // The padding lives on only in the file kept aside.
    expect(Object.keys(nulBytes(join(dir, 'groups', 'g', 'log'))).filter((n) => !n.includes('.torn-'))).toEqual([]);
  });
});

describe('file store: failed writes', () => {
  it('a write that fails half-way leaves no partial line, refuses the group until reopened, and spares the others', async () => {
    const dir = tempDir();
    let full = false;
    const store = new FileStore({
      dataDir: dir,
      fsync: 'always',
      logger: silentLogger,
      beforeWrite: async (path, data, fh) => {
        if (!full || !path.includes('/g/')) return;
        await fh.write(data.subarray(0, Math.floor(data.length / 2)));
        throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      },
    });
    await store.open();
    await store.append('g', rec(1, { head: HEAD }));
    await store.append('h', rec(1, { head: { ...HEAD, id: 'h' } }));
    const seg = join(dir, 'groups', 'g', 'log', '000000000001.jsonl');
    const before = readFileSync(seg);
    full = true;
    await expect(store.append('g', rec(2, { entries: [entry(1)] }))).rejects.toThrow(StoreUnavailableError);
    await expect(store.append('g', rec(2, { entries: [entry(1)] }))).rejects.toThrow(/ENOSPC/);
    expect(store.health()).toEqual({ writable: false, error: expect.stringContaining('ENOSPC') });
    expect(readFileSync(seg)).toEqual(before);
    await store.append('h', rec(2, { entries: [entry(1)] }));
    expect(store.health().writable).toBe(true);
    full = false;
    const reopened = await store.reopen('g');
    expect((await all(reopened)).map((r) => r.n)).toEqual([1]);
    await store.append('g', rec(2, { entries: [entry(1)] }));
    expect((await store.readEntries('g', { limit: 5 })).map((e) => e.seq)).toEqual([1]);
    await store.close();
  });

  it('a write the disk takes only part of (Linux on a full disk) is refused, not acknowledged; nothing of it stays, no NUL byte is written, and the group recovers once space returns', async () => {
    const dir = tempDir();
    let full = false;
    const patched = new WeakSet<FileHandle>();
    const store = new FileStore({
      dataDir: dir,
      fsync: 'always',
      logger: silentLogger,
      // g's file handle turns into one that behaves like a full disk: a write takes part of what
      // it is given and says so in bytesWritten; the next one fails with ENOSPC.
      beforeWrite: async (path, _data, fh) => {
        if (!path.includes('/g/') || patched.has(fh)) return;
        patched.add(fh);
        const real = fh.write.bind(fh) as (b: Buffer, o: number, l: number) => Promise<{ bytesWritten: number; buffer: Buffer }>;
        let took = false;
        (fh as unknown as { write: unknown }).write = async (b: Buffer, o = 0, l = b.length - o) => {
          if (!full) return real(b, o, l);
          if (took) throw enospc();
          took = true;
          return real(b, o, Math.max(1, Math.floor(l / 3)));
        };
      },
    });
    await store.open();
    await store.append('g', rec(1, { head: HEAD }));
    await store.append('g', rec(2, { entries: [entry(1)] }));
    const seg = join(dir, 'groups', 'g', 'log', '000000000001.jsonl');
    const good = readFileSync(seg);
    full = true;
    const third = store.append('g', rec(3, { entries: [entry(2)] })).then(() => 'acknowledged', (e: unknown) => e);
    await third;
    const fourth = await store.append('g', rec(4, { entries: [entry(3)] })).then(() => 'acknowledged', (e: unknown) => e);
    expect(nulBytes(dir)).toEqual({});
    expect(readFileSync(seg)).toEqual(good);
    expect(await third).toBeInstanceOf(StoreUnavailableError);
    expect(String(await third)).toMatch(/ENOSPC/);
    expect(fourth).toBeInstanceOf(StoreUnavailableError);
    expect(store.health()).toEqual({ writable: false, error: expect.stringContaining('ENOSPC') });

    // Space is back: the group reads back what was acknowledged, and goes on.
    full = false;
    expect((await all(await store.reopen('g'))).map((r) => r.n)).toEqual([1, 2]);
    await store.append('g', rec(3, { entries: [entry(2)] }));
    expect(store.health().writable).toBe(true);
    await store.close();
    const again = new FileStore({ dataDir: dir, fsync: 'always', logger: silentLogger });
    expect((await all((await again.open()).groups[0]!)).map((r) => r.n)).toEqual([1, 2, 3]);
    await again.close();
    expect(nulBytes(dir)).toEqual({});
    expect(readdirSync(join(dir, 'groups', 'g', 'log')).filter((n) => n.includes('.torn-'))).toEqual([]);
  });

  it('every other write is checked whole too: the write probe, a checkpoint and the format file refuse a part-written file and leave none behind', async () => {
    let full = false;
    const shortOnce = new Set<string>();
    const write: WriteFn = async (fh, data, offset, length, path) => {
      if (!full) return fh.write(data, offset, length);
      if (shortOnce.has(path)) throw enospc();
      shortOnce.add(path);
      return fh.write(data, offset, Math.max(1, Math.floor(length / 2)));
    };
    const dir = tempDir();
    const log = new CapturingLogger();
    const store = new FileStore({ dataDir: dir, fsync: 'always', logger: log, write });
    await store.open();
    await store.append('g', rec(1, { head: HEAD }));
    await store.append('g', rec(2, { entries: [entry(1)] }));
    const cp: GroupCheckpoint = { version: 2, n: 2, head: HEAD, nextSeq: 2, rounds: [], sessions: [], seen: [['p1', 1]], undelivered: [] };
    await store.checkpoint('g', cp);
    const state = join(dir, 'groups', 'g', 'state.json');
    const written = readFileSync(state, 'utf8');

    full = true;
    await expect(store.checkWritable()).rejects.toThrow(StoreUnavailableError);
    expect(readdirSync(dir).filter((n) => n.startsWith('.write-probe'))).toEqual([]);
    await store.checkpoint('g', { ...cp, seen: [['p1', 1], ['p9', 2]] });
    expect(readFileSync(state, 'utf8')).toBe(written);
    expect(readdirSync(join(dir, 'groups', 'g')).filter((n) => n.endsWith('.tmp'))).toEqual([]);
    expect(log.text()).toMatch(/could not write a checkpoint/);

    full = false;
    shortOnce.clear();
    await store.checkWritable();
    await store.close();

    // A first start on a full disk: no half-written format file that would stop every later start.
    const fresh = tempDir();
    full = true;
    await expect(new FileStore({ dataDir: fresh, fsync: 'always', logger: silentLogger, write }).open()).rejects.toThrow(/ENOSPC/);
    expect(readdirSync(fresh).filter((n) => n !== 'groups')).toEqual([]);
    full = false;
    await new FileStore({ dataDir: fresh, fsync: 'always', logger: silentLogger, write }).open();
  });

  it('writeFully writes again what a write did not take; truncateBack never makes a file longer', async () => {
    const path = join(tempDir(), 'f');
    const fh = await open(path, 'a+');
    try {
      const bits: number[] = [];
      await writeFully(fh, Buffer.from('0123456789'), path, async (h, d, o, l) => {
        bits.push(Math.min(l, 3));
        return h.write(d, o, Math.min(l, 3));
      });
      expect(bits).toEqual([3, 3, 3, 1]);
      expect(readFileSync(path, 'utf8')).toBe('0123456789');
      // A write that takes nothing without an error would loop for ever: it is a failure.
      await expect(writeFully(fh, Buffer.from('x'), path, async () => ({ bytesWritten: 0 }))).rejects.toThrow(/short write/);
      expect(await truncateBack(fh, 100)).toBe(10);
      expect(statSync(path).size).toBe(10);
      expect(await truncateBack(fh, 4)).toBe(4);
      expect(readFileSync(path, 'utf8')).toBe('0123');
    } finally {
      await fh.close();
    }
  });

  it('checkWritable fails on a data directory that cannot take files', async () => {
    const dir = tempDir();
    const store = new FileStore({ dataDir: dir, fsync: 'always', logger: silentLogger });
    await store.open();
    await store.checkWritable();
    // Replace the directory by a file: nothing can be created in it, even by root.
    rmSync(dir, { recursive: true, force: true });
    writeFileSync(dir, 'x');
    await expect(store.checkWritable()).rejects.toThrow(StoreUnavailableError);
    rmSync(dir);
    mkdirSync(dir);
  });
});
