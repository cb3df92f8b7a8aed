/**
 * Building the PostgreSQL store together with the cluster that shares its database and pool:
 * the store refuses any append the cluster's fence does not allow.
 */
import { hostname } from 'node:os';
import pg from 'pg';
import type { Registry } from 'prom-client';
import type { ChorusConfig } from '../config/schema.js';
import type { Logger } from '../core/ports.js';
import { describeError } from '../core/errors.js';
import { PostgresStore } from '../store/postgres/PostgresStore.js';
import { PgDeadLetters } from '../store/postgres/deadLetters.js';
import { PgCluster } from './PgCluster.js';

export interface PostgresParts {
  store: PostgresStore;
  cluster: PgCluster;
  /** Dead letters go to the same database, where every instance's operator finds them. */
  deadLetters: PgDeadLetters;
  /** Ends the shared pool (after the store and the cluster are closed). */
  end(): Promise<void>;
}

/** `cluster.instance_id`, or host name and process id (unique per running process). */
export function instanceIdFor(config: ChorusConfig): string {
  return config.cluster.instance_id ?? `${hostname()}:${process.pid}`;
}

export function createPostgresParts(config: ChorusConfig, logger: Logger, registry?: Registry): PostgresParts {
  const url = (config.storage as { url?: string | null }).url;
  if (!url) throw new Error('storage.url is required for storage.kind "postgres" (e.g. "${DATABASE_URL}")');
  // A database that does not answer fails a request within seconds instead of hanging it.
  const pool = new pg.Pool({ connectionString: url, max: 10, connectionTimeoutMillis: 5_000, query_timeout: 30_000, application_name: 'chorus' });
  pool.on('error', (err) => logger.warn({ err: describeError(err) }, 'an idle database connection failed; it is replaced on next use'));
  let cluster: PgCluster | undefined;
  const store = new PostgresStore({
    pool,
    logger: logger.child({ part: 'store' }),
    fence: (tx, ids) => cluster!.fence(tx, ids),
  });
  cluster = new PgCluster({
    pool,
    connectionString: url,
    instanceId: instanceIdFor(config),
    leaseSeconds: config.cluster.lease_seconds,
    store,
    logger,
    registry,
  });
  return { store, cluster, deadLetters: new PgDeadLetters(pool), end: () => pool.end() };
}
