/**
 * The PostgreSQL store's backend: the log is `chorus_records`, one row per record, inserted and
 * never changed; `chorus_entries` serves pages of history; `chorus_checkpoints` holds one
 * checkpoint per group. A batch, from every group, is one transaction (at most MAX_BATCH
 * records): acknowledged means committed.
 *
 * What only a database can get wrong is handled here: a fence (the cluster's lease check) inside
 * the transaction refuses groups this instance no longer owns while the rest commits; when the
 * answer to a COMMIT is lost the store finds out whether it landed instead of guessing; and when
 * the server rolled a batch back for one group's sake (a second writer took its record number),
 * each group is tried alone, so only that one is refused.
 */
import type { Attachment, StoredFile } from '../../core/fileTypes.js';
import { hostname } from 'node:os';
import type pg from 'pg';
import type { Logger, SearchFound, SearchRequest, StoredGroup } from '../../core/ports.js';
import type { GroupCheckpoint, GroupRecord } from '../../core/records.js';
import type { TranscriptEntry } from '../../core/types.js';
import { StoreUnavailableError, describeError } from '../../core/errors.js';
import { FencedError, type GroupWrite, type LogBackend } from '../LogBackend.js';
import { CHECKPOINT_VERSION, parseCheckpoint, parseRecord } from '../logSchema.js';
import { migrate } from './migrations.js';
import { deletePgFile, putPgFile, readPgFile } from './pgFiles.js';
import { backfillSearch, entryOf, searchEntries, type EntryRow } from './search.js';
import { WriteFailure, definiteRollback, lostCommitOutcome, pgAppend, writeRows, type PgAppend, type WriteHooks } from './pgWrite.js';

/** Counters, read by the benchmarks. */
export interface PostgresStoreStats {
  appends: number;
  bytes: number;
  /** Transactions that committed appends. */
  commits: number;
  checkpoints: number;
  checkpointBytes: number;
}

export interface PgBackendOptions extends WriteHooks {
  pool: pg.Pool;
  /** End the pool on close (the store made it). */
  ownPool: boolean;
  logger: Logger;
  /** Records read per query while replaying a group (default 500). */
  pageSize?: number | undefined;
}

/** Most appends in one transaction: it stays a few hundred rows however deep the queue gets. */
const MAX_BATCH = 500;

export class PgBackend implements LogBackend<PgAppend> {
  readonly writeFailedMessage = 'could not write a group to the database; its changes are refused until it is reloaded';
  readonly maxBatch = MAX_BATCH;
  readonly stats: PostgresStoreStats = { appends: 0, bytes: 0, commits: 0, checkpoints: 0, checkpointBytes: 0 };
  /** Groups known to have a `chorus_groups` row (never deleted, so never forgotten). */
  private readonly listed = new Set<string>();
  private readonly probeId = `${hostname()}:${process.pid}`;
  /** The start's pass giving older entries their search vectors (search.ts); awaited by close. */
  searchBackfill: Promise<number> = Promise.resolve(0);
  /** A fence means a cluster: other instances append too, so no one instance knows every file reference. */
  readonly sharedWriters: boolean;
  private damaged = 0;

  constructor(private readonly o: PgBackendOptions) {
    this.sharedWriters = o.fence !== undefined;
  }

  get pool(): pg.Pool {
    return this.o.pool;
  }

  async open(): Promise<{ groups: string[]; unreadable: string[] }> {
    await migrate(this.o.pool, this.o.logger);
    const { rows } = await this.o.pool.query<{ id: string }>('SELECT id FROM chorus_groups ORDER BY id');
    for (const r of rows) this.listed.add(r.id);
    // In the background: a large history must not hold up the start (search misses it meanwhile).
    this.searchBackfill = backfillSearch(this.o.pool, this.o.logger);
    return { groups: rows.map((r) => r.id), unreadable: [] };
  }

  async load(id: string): Promise<StoredGroup> {
    const checkpoint = await this.readCheckpoint(id);
    const after = checkpoint?.n ?? 0;
    return { id, checkpoint, records: () => this.records(id, after) };
  }

  private async readCheckpoint(id: string): Promise<GroupCheckpoint | null> {
    const { rows } = await this.o.pool.query<{ n: string; version: number; body: unknown }>('SELECT n, version, body FROM chorus_checkpoints WHERE group_id = $1', [id]);
    const row = rows[0];
    if (!row) return null;
    const res = parseCheckpoint(row.body, `the checkpoint of group ${id}`, row.version);
    if ('checkpoint' in res && res.checkpoint.n === Number(row.n)) return res.checkpoint;
    // Only a shortcut: the log has everything. The row stays (nothing is deleted); the next checkpoint replaces it.
    this.o.logger.error({ group: id, problem: 'problem' in res ? res.problem : 'n does not match its row' }, 'checkpoint is damaged; ignored, replaying the whole log');
    return null;
  }

  /**
   * The group's records after `afterN`, in order, read page by page (memory stays flat). `name`:
   * log each damaged record; a second read of the same log (the file references' sweep) only
   * counts them, since the group's own read has named them already.
   */
  private async *records(id: string, afterN: number, name = true): AsyncGenerator<GroupRecord> {
    const size = this.o.pageSize ?? 500;
    let last = afterN;
    for (;;) {
      const { rows } = await this.o.pool.query<{ n: string; v: number; body: unknown }>(
        'SELECT n, v, body FROM chorus_records WHERE group_id = $1 AND n > $2 ORDER BY n LIMIT $3',
        [id, last, size],
      );
      for (const row of rows) {
        last = Number(row.n);
        const res = parseRecord(row.body, `group ${id} record ${row.n}`, row.v);
        if ('problem' in res) {
          this.damaged++;
          if (name) this.o.logger.error({ group: id, n: last, problem: res.problem }, 'damaged log record skipped');
          continue;
        }
        yield res.record;
      }
      if (rows.length < size) return;
    }
  }

  prepare(groupId: string, record: GroupRecord): PgAppend {
    return pgAppend(groupId, record);
  }

  async write(batch: ReadonlyArray<GroupWrite<PgAppend>>): Promise<ReadonlyMap<string, unknown>> {
    const refused = new Map<string, unknown>();
    const items = batch.flatMap((g) => g.records);
    try {
      this.written(items, await this.commit(items), refused);
    } catch (failure) {
      if (await this.landedAfterLostCommit(items, failure, refused)) return refused;
      const err = failure instanceof WriteFailure ? failure.cause : failure;
      if (batch.length > 1 && definiteRollback(err)) {
        // Nothing was kept; one group's problem (a duplicate n from a second writer, bad data)
        // must not refuse the others: try each group alone.
        for (const g of batch) {
          try {
            this.written(g.records, await this.commit(g.records), refused);
          } catch (e) {
            // The retry's commit answer can be lost too: the same check, or an append that did
            // land would be refused.
            if (!(await this.landedAfterLostCommit(g.records, e, refused))) refused.set(g.groupId, e instanceof WriteFailure ? e.cause : e);
          }
        }
      } else {
        for (const g of batch) refused.set(g.groupId, err);
      }
    }
    return refused;
  }

  /** One transaction; returns the groups the fence refused. */
  private async commit(items: PgAppend[]): Promise<ReadonlySet<string>> {
    const fenced = await writeRows(this.o.pool, items, this.o, this.listed);
    const rows = items.filter((i) => !fenced.has(i.groupId));
    for (const it of rows) this.listed.add(it.groupId);
    this.stats.commits++;
    this.stats.appends += rows.length;
    for (const it of rows) this.stats.bytes += it.body.length;
    return fenced;
  }

  /** Note the groups the fence refused: nothing of theirs was written. */
  private written(items: PgAppend[], fenced: ReadonlySet<string>, refused: Map<string, unknown>): void {
    for (const id of fenced) if (items.some((i) => i.groupId === id)) refused.set(id, new FencedError(`group ${id} is no longer owned by this instance; nothing was written`));
  }

  /**
   * The connection was lost after the commit was sent: find out whether it landed. True when it
   * did (the groups it left out were fenced, and are noted in `refused`); false when the appends
   * were not written, or it cannot be told (the caller refuses them; a reload shows whatever did land).
   */
  private async landedAfterLostCommit(items: PgAppend[], failure: unknown, refused: Map<string, unknown>): Promise<boolean> {
    const unknown = failure instanceof WriteFailure ? failure.unknown : null;
    if (!unknown) return false;
    const err = failure instanceof WriteFailure ? failure.cause : failure;
    const landed = await lostCommitOutcome(this.o.pool, unknown.rows, unknown.pid);
    if (landed === 'committed') {
      const sent = new Set(unknown.rows);
      for (const it of unknown.rows) this.listed.add(it.groupId);
      this.o.logger.warn({ err: describeError(err), appends: unknown.rows.length }, 'lost the database connection while committing; the commit had landed, so the appends stand');
      this.written(items, new Set(items.filter((i) => !sent.has(i)).map((i) => i.groupId)), refused);
      return true;
    }
    if (landed === 'unknown') this.o.logger.error({ err: describeError(err) }, 'lost the database connection while committing and could not find out whether it landed; the appends are refused (a reload shows whatever did land)');
    return false;
  }

  async writeCheckpoint(groupId: string, n: number, text: string): Promise<void> {
    // Never replaced by an older one (a slow write racing a newer one, another instance).
    await this.o.pool.query(
      `INSERT INTO chorus_checkpoints (group_id, n, version, body) VALUES ($1, $2, $3, $4::json)
       ON CONFLICT (group_id) DO UPDATE SET n = EXCLUDED.n, version = EXCLUDED.version, body = EXCLUDED.body, written_at = now()
       WHERE chorus_checkpoints.n < EXCLUDED.n`,
      [groupId, n, CHECKPOINT_VERSION, text],
    );
    this.stats.checkpoints++;
    this.stats.checkpointBytes += text.length;
  }

  async readEntries(groupId: string, range: { beforeSeq?: number | undefined; afterSeq?: number | undefined; limit: number }): Promise<TranscriptEntry[]> {
    if (range.limit <= 0) return [];
    type Row = EntryRow;
    let rows: Row[];
    if (range.afterSeq !== undefined) {
      rows = (await this.o.pool.query<Row>('SELECT entry, delivery, posted_ids, copies, edit FROM chorus_entries WHERE group_id = $1 AND seq > $2 ORDER BY seq LIMIT $3', [groupId, range.afterSeq, range.limit])).rows;
    } else {
      const before = range.beforeSeq ?? Number.MAX_SAFE_INTEGER;
      rows = (await this.o.pool.query<Row>('SELECT entry, delivery, posted_ids, copies, edit FROM chorus_entries WHERE group_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3', [groupId, before, range.limit])).rows.reverse();
    }
    return rows.map(entryOf);
  }

  searchEntries(req: SearchRequest): Promise<SearchFound[]> {
    return searchEntries(this.o.pool, req);
  }

  /** Shared files are rows of `chorus_files` (pgFiles.ts), each committed on its own. */
  putFile(meta: Attachment, bytes: Uint8Array): Promise<void> {
    return putPgFile(this.o.pool, meta, bytes);
  }

  readFile(id: string): Promise<StoredFile | null> {
    return readPgFile(this.o.pool, id, this.o.logger);
  }

  allRecords(groupId: string): AsyncIterable<GroupRecord> {
    return this.records(groupId, 0, false);
  }

  deleteFile(id: string): Promise<void> {
    return deletePgFile(this.o.pool, id);
  }

  damagedRecords(): number {
    return this.damaged;
  }

  async checkWritable(): Promise<void> {
    try {
      await this.o.pool.query('INSERT INTO chorus_probe (instance, at) VALUES ($1, now()) ON CONFLICT (instance) DO UPDATE SET at = now()', [this.probeId]);
    } catch (err) {
      throw new StoreUnavailableError(`the database does not take writes: ${describeError(err)}`, { cause: err });
    }
  }

  async close(): Promise<void> {
    await this.searchBackfill;
    if (this.o.ownPool) await this.o.pool.end();
  }
}
