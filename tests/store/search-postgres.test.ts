/**
 * Search on the PostgreSQL store (a real server, tests/helpers/postgres.ts): the shared search
 * contract, and the start's pass that gives messages written before the search migration their
 * search vectors.
 */
import { afterAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { PostgresStore } from '../../src/store/postgres/PostgresStore.js';
import { silentLogger } from '../helpers/logger.js';
import { testDatabase, type TestDatabase } from '../helpers/postgres.js';
import { get, said, searchContract, startApp, writeGroups } from './search-contract.js';

const made: TestDatabase[] = [];
const probe = await testDatabase('search');
if (probe) made.push(probe);
afterAll(async () => {
  for (const d of made) await d.drop().catch(() => undefined);
});

async function freshUrl(): Promise<string> {
  const d = (await testDatabase('search'))!;
  made.push(d);
  return d.url;
}

describe.skipIf(!probe)('postgres store: search', () => {
  searchContract('postgres store', {
    async fresh() {
      const url = await freshUrl();
      return () => new PostgresStore({ url, logger: silentLogger });
    },
  });

  it('messages written before the search migration are indexed by a pass at start, and found', async () => {
    const url = await freshUrl();
    await writeGroups(new PostgresStore({ url, logger: silentLogger }), { g: Array.from({ length: 1500 }, (_, i) => said('g', i + 1, i === 9 ? 'an old Écureuil' : `row ${i}`)) });
    // As a database of the version before: no vectors yet.
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      await admin.query('UPDATE chorus_entries SET search = NULL');
    } finally {
      await admin.end();
    }
    const store = new PostgresStore({ url, logger: silentLogger });
    const app = await startApp(store);
    try {
      await (store as unknown as { backend: { searchBackfill: Promise<number> } }).backend.searchBackfill;
      expect((await get(app, '/api/groups/g/search?q=ecureuil')).body.results.map((r: { seq: number }) => r.seq)).toEqual([10]);
    } finally {
      await app.stop();
    }
    const check = new pg.Client({ connectionString: url });
    await check.connect();
    try {
      expect((await check.query('SELECT count(*)::int AS c FROM chorus_entries WHERE search IS NULL')).rows[0].c).toBe(0);
    } finally {
      await check.end();
    }
  });
});
