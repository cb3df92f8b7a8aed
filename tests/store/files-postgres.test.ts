/**
 * Shared files in the PostgreSQL store (a real server, tests/helpers/postgres.ts): the Store
 * contract for files, the table migration 6 makes, and a database that turns read-only under a
 * running store (its writes refused, nothing kept, the files kept before still served).
 */
import { afterAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import type { Store } from '../../src/core/ports.js';
import { StoreUnavailableError } from '../../src/core/errors.js';
import { PostgresStore } from '../../src/store/postgres/PostgresStore.js';
import { MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { silentLogger } from '../helpers/logger.js';
import { testDatabase, type TestDatabase } from '../helpers/postgres.js';
import { filesContract, metaOf, someBytes } from './files-contract.js';
import { collectContract } from './files-collect-contract.js';

const made: TestDatabase[] = [];
const probe = await testDatabase('files');
if (probe) made.push(probe);
afterAll(async () => {
  for (const d of made) await d.drop().catch(() => undefined);
});

async function freshUrl(): Promise<string> {
  const d = (await testDatabase('files'))!;
  made.push(d);
  return d.url;
}

async function sql<T extends pg.QueryResultRow = pg.QueryResultRow>(url: string, text: string, values: unknown[] = []): Promise<T[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<T>(text, values)).rows;
  } finally {
    await c.end();
  }
}

/**
 * Make the database read-only for new transactions and end the store's connections, so the pool
 * reconnects into read-only sessions: what a failed-over primary or a full disk looks like.
 */
async function readOnly(url: string, on: boolean): Promise<void> {
  const db = new URL(url).pathname.slice(1);
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    // This session itself starts read-only once the database is: it opts out to undo it.
    await c.query('SET default_transaction_read_only = off');
    await c.query(`ALTER DATABASE "${db}" SET default_transaction_read_only = ${on ? 'on' : 'off'}`);
    await c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()');
  } finally {
    await c.end();
  }
}

describe.skipIf(!probe)('postgres store: files', () => {
  // One instance on its own database (no cluster fence): it sees every reference.
  collectContract('postgres store', {
    async fresh() {
      const url = await freshUrl();
      return {
        make: () => new PostgresStore({ url, logger: silentLogger }),
        has: async (id) => (await sql(url, 'SELECT 1 FROM chorus_files WHERE id = $1', [id])).length === 1,
        async damageLog(g) {
          const text = `UPDATE chorus_records SET body = '{"v":2}'
            WHERE group_id = $1 AND body::text LIKE '%words only%'`;
          await sql(url, text, [g]);
        },
      };
    },
  });
  filesContract('postgres store', {
    async fresh() {
      const url = await freshUrl();
      return {
        make: (logger = silentLogger) => new PostgresStore({ url, logger }),
        count: async () => (await sql<{ n: number }>(url, 'SELECT count(*)::int AS n FROM chorus_files'))[0]!.n,
        async damage(id) {
          await sql(url, 'UPDATE chorus_files SET bytes = set_byte(bytes, 17, get_byte(bytes, 17) # 1) WHERE id = $1', [id]);
        },
        async breakWrites(_store: Store) {
          await readOnly(url, true);
          return () => readOnly(url, false);
        },
      };
    },
  });

  it('migration 6 makes chorus_files: one row per file, its bytes stored as they are', async () => {
    const url = await freshUrl();
    const store = new PostgresStore({ url, logger: silentLogger });
    await store.open();
    const bytes = someBytes(1_000_000, 11);
    const meta = metaOf(bytes, 'scan.pdf', { type: 'application/pdf', width: undefined, height: undefined });
    await store.putFile(meta, bytes);
    const [row] = await sql<{ name: string; type: string; size: number; width: number | null; same: boolean; storage: string }>(
      url,
      `SELECT name, type, size, width, encode(sha256(bytes), 'hex') = id AS same,
              (SELECT attstorage FROM pg_attribute WHERE attrelid = 'chorus_files'::regclass AND attname = 'bytes') AS storage
       FROM chorus_files WHERE id = $1`,
      [meta.id],
    );
    expect(row).toEqual({ name: 'scan.pdf', type: 'application/pdf', size: 1_000_000, width: null, same: true, storage: 'e' });
    const [v] = await sql<{ version: number }>(url, 'SELECT max(version) AS version FROM chorus_schema_migrations');
    expect(v!.version).toBe(MIGRATIONS.at(-1)!.version);
    await store.close();
  });

  it('a database that turns read-only under a running store: keeping is refused and leaves nothing; kept files are still served', async () => {
    const url = await freshUrl();
    const store = new PostgresStore({ url, logger: silentLogger });
    await store.open();
    const before = someBytes(10_000, 12);
    await store.putFile(metaOf(before), before);
    await readOnly(url, true);
    try {
      const bytes = someBytes(10_000, 13);
      // The first try may meet a connection that was ended, the next a read-only session: both refused.
      for (let i = 0; i < 2; i++) {
        const err = await store.putFile(metaOf(bytes), bytes).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(StoreUnavailableError);
      }
      expect(String(await store.putFile(metaOf(bytes), bytes).catch((e: unknown) => e))).toMatch(/read-only/);
      expect(await store.readFile(metaOf(bytes).id)).toBeNull();
      expect(Buffer.from((await store.readFile(metaOf(before).id))!.bytes).equals(Buffer.from(before))).toBe(true);
    } finally {
      await readOnly(url, false);
    }
    await store.close();
  });
});
