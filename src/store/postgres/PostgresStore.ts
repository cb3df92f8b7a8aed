/**
 * The PostgreSQL Store: the group-commit layer (../GroupCommit.ts) over the PostgreSQL backend
 * (PgBackend.ts), with the same promises as the file store, on one database that several Chorus
 * instances may share.
 *
 * - Acknowledged = committed: an append resolves only after COMMIT returned (with the server's
 *   default `synchronous_commit = on`, that is after the WAL is flushed).
 * - Group commit: the appends of a tick, from every group, go into one transaction; one is in
 *   flight at a time, so a group's records commit in `n` order.
 * - Cluster hooks (used by `src/cluster/`): `fence` runs inside the append transaction and can
 *   refuse groups this instance no longer owns; `beforeCommit` adds work to the same transaction.
 *   A group taken over is read back with `reopen`, like a group after a failed write.
 */
import pg from 'pg';
import type { Logger } from '../../core/ports.js';
import { describeError } from '../../core/errors.js';
import { GroupCommit } from '../GroupCommit.js';
import { PgBackend, type PostgresStoreStats } from './PgBackend.js';
import type { PgAppend, WriteHooks } from './pgWrite.js';

export { FencedError } from '../LogBackend.js';
export type { PostgresStoreStats };

export interface PostgresStoreOptions extends WriteHooks {
  /** Connection string; the store creates its own pool and ends it on `close`. */
  url?: string | undefined;
  /** A pool shared with others (the cluster); the store never ends it. */
  pool?: pg.Pool | undefined;
  logger: Logger;
  /** Records read per query while replaying a group (default 500). */
  pageSize?: number | undefined;
}

export class PostgresStore extends GroupCommit<PgAppend> {
  readonly pool: pg.Pool;
  /** Counters, read by the benchmarks. */
  readonly stats: PostgresStoreStats;

  constructor(o: PostgresStoreOptions) {
    const ownPool = !o.pool;
    const pool = o.pool ?? createPool(o);
    const backend = new PgBackend({ pool, ownPool, logger: o.logger, fence: o.fence, beforeCommit: o.beforeCommit, pageSize: o.pageSize });
    super(backend, o.logger);
    this.pool = pool;
    this.stats = backend.stats;
  }
}

function createPool(o: PostgresStoreOptions): pg.Pool {
  if (!o.url) throw new Error('storage.url is required for storage.kind "postgres"');
  // A database that does not answer fails a request within seconds instead of hanging it.
  const pool = new pg.Pool({ connectionString: o.url, max: 8, connectionTimeoutMillis: 5_000, query_timeout: 30_000, application_name: 'chorus' });
  // An idle connection that dies (server restart) must not crash the process; the next query
  // reconnects. (A shared pool's owner listens itself.)
  pool.on('error', (err) => o.logger.warn({ err: describeError(err) }, 'an idle database connection failed; it is replaced on next use'));
  return pool;
}
