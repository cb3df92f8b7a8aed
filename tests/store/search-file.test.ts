/**
 * Search on the file store: the shared search contract, and what only the file store's in-memory
 * index can get wrong — built from a group's log once (a second query reads nothing of it), kept
 * up to date as messages are appended, dropped past its memory bound and rebuilt when needed.
 */
import { afterAll, describe, expect, it, vi } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileStore } from '../../src/store/files/FileStore.js';
import { GroupLog } from '../../src/store/files/GroupLog.js';
import { silentLogger } from '../helpers/logger.js';
import { get, said, searchContract, startApp, writeGroups } from './search-contract.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'chorus-search-'));
  dirs.push(d);
  return d;
}

searchContract('file store', {
  async fresh() {
    const dir = tempDir();
    return () => new FileStore({ dataDir: dir, fsync: 'never', segmentBytes: 16 * 1024, logger: silentLogger });
  },
});

describe('file store: the search index', () => {
  it('reads a group\'s log once, on its first search; later searches read nothing of it, and new messages are found', async () => {
    const dir = tempDir();
    const make = () => new FileStore({ dataDir: dir, fsync: 'never', segmentBytes: 16 * 1024, logger: silentLogger });
    await writeGroups(make(), { g: Array.from({ length: 500 }, (_, i) => said('g', i + 1, `line ${i + 1} about ${i % 2 ? 'apples' : 'pears'}`)) });
    const store = make();
    const app = await startApp(store);
    const scans = vi.spyOn(GroupLog.prototype, 'records');
    try {
      expect((await get(app, '/api/groups/g/search?q=apples&limit=3')).body.results.map((r: any) => r.seq)).toEqual([500, 498, 496]);
      expect(scans).toHaveBeenCalledTimes(1);
      expect(store.search.stats).toEqual({ builds: 1, indexed: 500 });
      expect((await get(app, '/api/groups/g/search?q=pears&limit=2')).body.results.map((r: any) => r.seq)).toEqual([499, 497]);
      expect((await get(app, '/api/search?q=line%2012')).body.results.map((r: any) => r.seq)).toEqual([129, 128, 127, 126, 125, 124, 123, 122, 121, 120, 12]);
      expect(scans).toHaveBeenCalledTimes(1);
      // A message posted now is in the index as soon as it is durable, without reading the log.
      const posted = await fetch(`${app.webUrl}/api/groups/g/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'quinces are new here', author_name: 'Maya' }) });
      expect(posted.status).toBe(202);
      const found = await get(app, '/api/groups/g/search?q=quince');
      expect(found.body.results.map((r: any) => r.text ?? r.snippet)).toEqual(['quinces are new here']);
      expect(scans).toHaveBeenCalledTimes(1);
      expect(store.search.stats.builds).toBe(1);
    } finally {
      scans.mockRestore();
      await app.stop();
    }
  });

  it('drops the least recently searched group past its memory bound and builds it again on its next search', async () => {
    const dir = tempDir();
    const make = () => new FileStore({ dataDir: dir, fsync: 'never', logger: silentLogger, searchIndexBytes: 60_000 });
    const words = (id: string) => Array.from({ length: 200 }, (_, i) => said(id, i + 1, `${id} word${i} common`));
    await writeGroups(make(), { a: words('a'), b: words('b') });
    const store = make();
    const app = await startApp(store);
    try {
      expect((await get(app, '/api/groups/a/search?q=word7')).body.results.length).toBeGreaterThan(0);
      expect(store.search.bytes).toBeLessThanOrEqual(60_000);
      expect((await get(app, '/api/groups/b/search?q=word7')).body.results.length).toBeGreaterThan(0);
      expect(store.search.stats.builds).toBe(2);
      // a was dropped to make room for b: searching it again reads its log again.
      expect((await get(app, '/api/groups/a/search?q=common&limit=1')).body.results.map((r: any) => r.seq)).toEqual([200]);
      expect(store.search.stats.builds).toBe(3);
      expect(store.search.bytes).toBeLessThanOrEqual(60_000);
    } finally {
      await app.stop();
    }
  });
});
