/**
 * Versioned schema migrations for the PostgreSQL store (and the cluster tables that share its
 * database). They run at every start, in one transaction behind an advisory lock, so several
 * instances starting together apply each migration exactly once and none of them sees a half-built
 * schema. A database migrated by a newer Chorus (a version this one does not know) is refused, like
 * a `data_dir` of a newer format.
 */
import type pg from 'pg';
import type { Logger } from '../../core/ports.js';
import { StoreFormatError } from '../../core/errors.js';
import { STORE_SQL } from './schema.js';
import { CLUSTER_SQL } from '../../cluster/schema.js';
import { DEAD_LETTERS_SQL } from './deadLetters.js';
import { SEARCH_SQL } from './search.js';
import { FILES_SQL } from './pgFiles.js';

export interface Migration {
  version: number;
  name: string;
  /** May hold several statements; runs inside the migrating transaction. */
  sql: string;
}

/** In version order; a new migration is a new line at the end, never an edit of an old one. */
export const MIGRATIONS: readonly Migration[] = [
  { version: 1, name: 'store', sql: STORE_SQL },
  // Leases, instances and the inbox of several instances sharing the database (src/cluster/).
  { version: 2, name: 'cluster', sql: CLUSTER_SQL },
  // Inbound items a channel can never hand over (malformed platform updates), kept for an operator.
  { version: 3, name: 'dead letters', sql: DEAD_LETTERS_SQL },
  // Full-text search over the messages (search.ts); older rows get their vectors at start.
  { version: 4, name: 'search', sql: SEARCH_SQL },
  // The latest edit or deletion of an entry (pgWrite.ts), applied to it when it is read.
  { version: 5, name: 'entry edits', sql: 'ALTER TABLE chorus_entries ADD COLUMN edit json;' },
  // Shared files, content-addressed, one row each (pgFiles.ts).
  { version: 6, name: 'files', sql: FILES_SQL },
  // The latest delivery outcome of each copy of an entry in the room's other chats (pgWrite.ts).
  { version: 7, name: 'entry copies', sql: 'ALTER TABLE chorus_entries ADD COLUMN IF NOT EXISTS copies jsonb;' },
];

/** Key of the transaction-level advisory lock held while migrating ("Chor", 1). */
export const MIGRATION_LOCK: readonly [number, number] = [0x43686f72, 1];

const CREATE_TABLE = `CREATE TABLE IF NOT EXISTS chorus_schema_migrations (
  version integer PRIMARY KEY,
  name text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
)`;

/** Bring the database up to the newest known schema; returns the versions applied now. */
export async function migrate(pool: pg.Pool, logger: Logger, migrations: readonly Migration[] = MIGRATIONS): Promise<{ applied: number[] }> {
  const known = migrations.at(-1)?.version ?? 0;
  const client = await pool.connect();
  let broken: unknown;
  // A connection ended by the server between queries emits 'error': keep it from crashing the process.
  const onError = (err: Error) => (broken ??= err);
  client.on('error', onError);
  try {
    await client.query('BEGIN');
    // Held until COMMIT/ROLLBACK: a second instance waits here, then finds the work done.
    await client.query('SELECT pg_advisory_xact_lock($1, $2)', [...MIGRATION_LOCK]);
    await client.query(CREATE_TABLE);
    const { rows } = await client.query<{ version: number; name: string }>('SELECT version, name FROM chorus_schema_migrations ORDER BY version');
    const newest = rows.at(-1);
    if (newest && newest.version > known) {
      throw new StoreFormatError(
        `the database was written by a newer Chorus (schema version ${newest.version}, "${newest.name}"); this version knows up to ${known}. Upgrade Chorus or point storage.url elsewhere.`,
      );
    }
    const done = new Set(rows.map((r) => r.version));
    const applied: number[] = [];
    for (const m of migrations) {
      if (done.has(m.version)) continue;
      await client.query(m.sql);
      await client.query('INSERT INTO chorus_schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
      applied.push(m.version);
    }
    await client.query('COMMIT');
    if (applied.length > 0) logger.info({ applied, schemaVersion: known }, 'database schema migrated');
    return { applied };
  } catch (err) {
    broken = err;
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.off('error', onError);
    // A connection whose transaction state is unknown is not handed to anyone else.
    client.release(broken instanceof StoreFormatError ? undefined : (broken as Error | undefined));
  }
}
