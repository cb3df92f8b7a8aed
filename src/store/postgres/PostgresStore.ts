/**
 * The PostgreSQL Store: the same port and the same promises as the file store, on one
 * database that several Chorus instances may share.
 *
 * - The log is `chorus_records`, one row per record, inserted and never changed. A record and
 *   everything derived from it (its transcript entries, the delivery outcomes it carries) are
 *   written by one statement in one transaction: a crash keeps all of it or none of it.
 * - Acknowledged = committed: an append resolves only after COMMIT returned (with the server's
 *   default `synchronous_commit = on`, that is after the WAL is flushed).
 * - Group commit: every append of a tick, from every group, goes into one transaction. One batch is
 *   in flight at a time, so a group's records commit in `n` order.
 * - After a failed write the group refuses appends until the core reloads it (`reopen`), exactly
 *   like the file store, so nothing is ever written on top of a state the core no longer knows.
 * - Cluster hooks (used by `src/cluster/`): `fence` runs inside the append transaction and can
 *   refuse groups this instance no longer owns; `beforeCommit` adds work to the same transaction;
 *   `loadGroup` / `unloadGroup` load and forget one group when ownership moves.
 */
import { hostname } from 'node:os';
import pg from 'pg';
import type { GroupCheckpoint, GroupRecord, Logger, Store, StoredGroup } from '../../core/ports.js';
import type { TranscriptEntry } from '../../core/types.js';
import { StoreUnavailableError, describeError } from '../../core/errors.js';
import { CHECKPOINT_VERSION, parseCheckpoint, parseRecord } from '../logSchema.js';
import { migrate } from './migrations.js';

export interface PostgresStoreOptions {
  /** Connection string; the store creates its own pool and ends it on `close`. */
  url?: string | undefined;
  /** A pool shared with others (the cluster); the store never ends it. */
  pool?: pg.Pool | undefined;
  logger: Logger;
  /** true (default): `open` returns every group. false: `open` only migrates; groups come from `loadGroup`. */
  loadAllOnOpen?: boolean | undefined;
  /**
   * Fencing: runs inside the append transaction, before the inserts, with the groups of the batch.
   * Returns the ids this instance may no longer write: their appends fail with `FencedError`, the
   * rest of the batch commits.
   */
  fence?: ((tx: pg.PoolClient, groupIds: readonly string[]) => Promise<Iterable<string>>) | undefined;
  /** Runs inside the append transaction after the inserts, right before COMMIT. */
  beforeCommit?: ((tx: pg.PoolClient, batch: ReadonlyArray<{ groupId: string; record: GroupRecord }>) => Promise<void>) | undefined;
  /** Records read per query while replaying a group (default 500). */
  pageSize?: number | undefined;
}

/** Counters, read by the benchmarks. */
export interface PostgresStoreStats {
  appends: number;
  bytes: number;
  /** Transactions that committed appends. */
  commits: number;
  checkpoints: number;
  checkpointBytes: number;
}

/** This instance no longer owns the group (its lease moved on): the append was not written. */
export class FencedError extends StoreUnavailableError {}

interface PendingAppend {
  groupId: string;
  n: number;
  v: number;
  ts: number;
  body: string;
  /** The record's entries, serialised when `append` was called. */
  entries: Array<{ seq: number; json: string }>;
  delivery: Array<{ seq: number; delivery: string; posted: string | null }>;
  resolve: () => void;
  reject: (err: unknown) => void;
}

interface GroupState {
  failed: Error | null;
  /** Highest record n known to be committed by this instance since the group was (re)loaded. */
  durableN: number;
}

/** A failed batch write; `unknown` is set when its commit was sent and the answer was lost. */
class WriteFailure extends Error {
  constructor(
    override readonly cause: unknown,
    readonly unknown: { rows: PendingAppend[]; pid: number | null } | null,
  ) {
    super(describeError(cause));
  }
}

/** Most appends in one transaction. */
const MAX_BATCH = 500;

/** Server errors after which the transaction is known to be rolled back (not a lost connection). */
function definiteRollback(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || code.length !== 5) return false;
  // 08: connection exception, 57: operator intervention (shutdown, terminated backend), XX: internal.
  return !['08', '57', '53', '58', 'XX'].includes(code.slice(0, 2));
}

export class PostgresStore implements Store {
  readonly pool: pg.Pool;
  readonly stats: PostgresStoreStats = { appends: 0, bytes: 0, commits: 0, checkpoints: 0, checkpointBytes: 0 };
  private readonly ownPool: boolean;
  private readonly groups = new Map<string, GroupState>();
  /** Groups known to have a `chorus_groups` row (never deleted, so never forgotten). */
  private readonly listed = new Set<string>();
  private queued: PendingAppend[] = [];
  private readonly waitingCheckpoints = new Map<string, { n: number; text: string; resolve: () => void }>();
  private readonly checkpointWrites = new Map<string, Promise<void>>();
  private flushing: Promise<void> | null = null;
  private scheduled = false;
  private writeError: string | null = null;
  private closed = false;
  private readonly probeId = `${hostname()}:${process.pid}`;

  constructor(private readonly o: PostgresStoreOptions) {
    if (o.pool) {
      this.pool = o.pool;
      this.ownPool = false;
    } else {
      if (!o.url) throw new Error('storage.url is required for storage.kind "postgres"');
      // A database that does not answer fails a request within seconds instead of hanging it.
      this.pool = new pg.Pool({ connectionString: o.url, max: 8, connectionTimeoutMillis: 5_000, query_timeout: 30_000, application_name: 'chorus' });
      this.ownPool = true;
      // An idle connection that dies (server restart) must not crash the process; the next query
      // reconnects. (A shared pool's owner listens itself.)
      this.pool.on('error', (err) => this.o.logger.warn({ err: describeError(err) }, 'an idle database connection failed; it is replaced on next use'));
    }
  }

  async open(): Promise<{ groups: StoredGroup[]; unreadable: string[] }> {
    await migrate(this.pool, this.o.logger);
    if (this.o.loadAllOnOpen === false) return { groups: [], unreadable: [] };
    const groups: StoredGroup[] = [];
    for (const id of await this.groupIds()) groups.push(await this.load(id));
    return { groups, unreadable: [] };
  }

  /** Every group ever written. */
  async groupIds(): Promise<string[]> {
    const { rows } = await this.pool.query<{ id: string }>('SELECT id FROM chorus_groups ORDER BY id');
    for (const r of rows) this.listed.add(r.id);
    return rows.map((r) => r.id);
  }

  /** Load one group (when this instance takes it over): null when it was never written. */
  async loadGroup(id: string): Promise<StoredGroup | null> {
    const { rowCount } = await this.pool.query('SELECT 1 FROM chorus_groups WHERE id = $1', [id]);
    if (!rowCount) {
      this.unloadGroup(id);
      return null;
    }
    this.listed.add(id);
    return this.reopen(id);
  }

  /** Forget one group's write state (this instance gave it up). */
  unloadGroup(id: string): void {
    this.groups.delete(id);
    this.waitingCheckpoints.get(id)?.resolve();
    this.waitingCheckpoints.delete(id);
  }

  private async load(id: string): Promise<StoredGroup> {
    this.groups.set(id, { failed: null, durableN: 0 });
    const checkpoint = await this.readCheckpoint(id);
    const after = checkpoint?.n ?? 0;
    return { id, checkpoint, records: () => this.records(id, after) };
  }

  private async readCheckpoint(id: string): Promise<GroupCheckpoint | null> {
    const { rows } = await this.pool.query<{ n: string; version: number; body: unknown }>('SELECT n, version, body FROM chorus_checkpoints WHERE group_id = $1', [id]);
    const row = rows[0];
    if (!row) return null;
    const res = parseCheckpoint(row.body, `the checkpoint of group ${id}`, row.version);
    if ('checkpoint' in res && res.checkpoint.n === Number(row.n)) return res.checkpoint;
    // Only a shortcut: the log has everything. The row stays (nothing is deleted); the next checkpoint replaces it.
    this.o.logger.error({ group: id, problem: 'problem' in res ? res.problem : 'n does not match its row' }, 'checkpoint is damaged; ignored, replaying the whole log');
    return null;
  }

  /** The group's records after `afterN`, in order, read page by page (memory stays flat). */
  private async *records(id: string, afterN: number): AsyncGenerator<GroupRecord> {
    const size = this.o.pageSize ?? 500;
    let last = afterN;
    for (;;) {
      const { rows } = await this.pool.query<{ n: string; v: number; body: unknown }>(
        'SELECT n, v, body FROM chorus_records WHERE group_id = $1 AND n > $2 ORDER BY n LIMIT $3',
        [id, last, size],
      );
      for (const row of rows) {
        last = Number(row.n);
        const res = parseRecord(row.body, `group ${id} record ${row.n}`, row.v);
        if ('problem' in res) {
          this.o.logger.error({ group: id, n: last, problem: res.problem }, 'damaged log record skipped');
          continue;
        }
        yield res.record;
      }
      if (rows.length < size) return;
    }
  }

  append(groupId: string, record: GroupRecord): Promise<void> {
    if (this.closed) return Promise.reject(new StoreUnavailableError('store is closed'));
    const st = this.groups.get(groupId);
    if (st?.failed) return Promise.reject(this.refusal(groupId, st.failed));
    // Serialised now: the caller's objects may change before the batch is written.
    const body = JSON.stringify(record);
    const entries = (record.entries ?? []).map((e) => ({ seq: e.seq, json: JSON.stringify(e) }));
    const delivery = (record.delivery ?? []).map((d) => ({ seq: d.seq, delivery: d.delivery, posted: d.postedIds ? JSON.stringify(d.postedIds) : null }));
    return new Promise<void>((resolve, reject) => {
      this.queued.push({ groupId, n: record.n, v: record.v, ts: record.ts, body, entries, delivery, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.flushing) return;
    this.scheduled = true;
    // Let every append of this tick join the batch.
    setImmediate(() => {
      this.scheduled = false;
      this.flushing = this.flushLoop().finally(() => {
        this.flushing = null;
        if (this.queued.length > 0) this.schedule();
      });
    });
  }

  private async flushLoop(): Promise<void> {
    while (this.queued.length > 0) {
      // Bounded, so one transaction stays a few hundred rows however deep the queue gets; the
      // rest follows in the next one, in order.
      const batch = this.queued.splice(0, MAX_BATCH);
      await this.commitBatch(batch);
    }
  }

  private async commitBatch(batch: PendingAppend[]): Promise<void> {
    const items: PendingAppend[] = [];
    for (const it of batch) {
      const st = this.state(it.groupId);
      // A group that failed earlier in this batch's queue is refused as a whole.
      if (st.failed) it.reject(this.refusal(it.groupId, st.failed));
      else items.push(it);
    }
    if (items.length === 0) return;
    try {
      const fenced = await this.write(items);
      this.settle(items, fenced);
    } catch (failure) {
      const err = failure instanceof WriteFailure ? failure.cause : failure;
      if (await this.settledAfterLostCommit(items, failure)) return;
      const ids = [...new Set(items.map((i) => i.groupId))];
      if (ids.length > 1 && definiteRollback(err)) {
        // Nothing was kept; one group's problem (a duplicate n from a second writer, bad data)
        // must not refuse the others: try each group alone.
        for (const id of ids) {
          const mine = items.filter((i) => i.groupId === id);
          try {
            this.settle(mine, await this.write(mine));
          } catch (e) {
            // The retry's commit answer can be lost too: the same check, or an append that did
            // land would be refused.
            if (!(await this.settledAfterLostCommit(mine, e))) this.failAll(mine, e instanceof WriteFailure ? e.cause : e);
          }
        }
      } else {
        this.failAll(items, err);
      }
    }
  }

  /**
   * The connection was lost after the commit was sent: find out whether it landed. True when it
   * did and the appends were settled (resolved, or refused as fenced); false when they were not
   * written, or it cannot be told (the caller refuses them; a reload shows whatever did land).
   */
  private async settledAfterLostCommit(items: PendingAppend[], failure: unknown): Promise<boolean> {
    const unknown = failure instanceof WriteFailure ? failure.unknown : null;
    if (!unknown) return false;
    const err = failure instanceof WriteFailure ? failure.cause : failure;
    const landed = await this.outcome(unknown.rows, unknown.pid);
    if (landed === 'committed') {
      const written = new Set(unknown.rows);
      const fenced = new Set(items.filter((i) => !written.has(i)).map((i) => i.groupId));
      this.o.logger.warn({ err: describeError(err), appends: unknown.rows.length }, 'lost the database connection while committing; the commit had landed, so the appends stand');
      this.settle(items, fenced);
      return true;
    }
    if (landed === 'unknown') this.o.logger.error({ err: describeError(err) }, 'lost the database connection while committing and could not find out whether it landed; the appends are refused (a reload shows whatever did land)');
    return false;
  }

  /** Resolve the committed appends, refuse the fenced ones. */
  private settle(items: PendingAppend[], fenced: ReadonlySet<string>): void {
    for (const id of fenced) {
      const err = new FencedError(`group ${id} is no longer owned by this instance; nothing was written`);
      this.fail(id, err);
      for (const it of items) if (it.groupId === id) it.reject(err);
    }
    const done = new Set<string>();
    for (const it of items) {
      if (fenced.has(it.groupId)) continue;
      this.writeError = null;
      const st = this.state(it.groupId);
      st.durableN = Math.max(st.durableN, it.n);
      done.add(it.groupId);
      it.resolve();
    }
    for (const id of done) this.releaseCheckpoint(id);
  }

  private failAll(items: PendingAppend[], err: unknown): void {
    for (const id of new Set(items.map((i) => i.groupId))) this.fail(id, err);
    for (const it of items) it.reject(this.refusal(it.groupId, err));
  }

  /**
   * One transaction for the whole batch: the group rows, the records, their entries and the
   * delivery outcomes of earlier entries. Without hooks it is a single statement (its own
   * transaction, one round trip). Returns the groups refused by the fence.
   */
  private async write(items: PendingAppend[]): Promise<ReadonlySet<string>> {
    const client = await this.pool.connect().catch((err: unknown) => {
      throw new StoreUnavailableError(`cannot reach the database: ${describeError(err)}`, { cause: err });
    });
    // The server process of this connection (from the protocol's BackendKeyData), for `outcome`.
    const pid = (client as unknown as { processID?: number | null }).processID ?? null;
    let sent: PendingAppend[] | null = null;
    const hooks = this.o.fence !== undefined || this.o.beforeCommit !== undefined;
    let broken: unknown;
    // The server may end a checked-out connection between queries (terminated, restarted): pg then
    // emits 'error' on the client, which would crash the process without a listener.
    const onError = (err: Error) => (broken ??= err);
    client.on('error', onError);
    try {
      let fenced = new Set<string>();
      let rows = items;
      if (hooks) await client.query('BEGIN');
      if (this.o.fence) {
        fenced = new Set(await this.o.fence(client, [...new Set(items.map((i) => i.groupId))]));
        rows = items.filter((i) => !fenced.has(i.groupId));
      }
      if (rows.length > 0) {
        const { text, values } = this.insertStatement(rows);
        // Without hooks this statement is its own transaction: once sent, it may commit.
        if (!hooks) sent = rows;
        await client.query(text, values);
      }
      if (this.o.beforeCommit && rows.length > 0) await this.o.beforeCommit(client, rows.map((i) => ({ groupId: i.groupId, record: JSON.parse(i.body) as GroupRecord })));
      if (hooks) {
        sent = rows;
        await client.query('COMMIT');
      }
      for (const it of rows) this.listed.add(it.groupId);
      this.stats.commits++;
      this.stats.appends += rows.length;
      for (const it of rows) this.stats.bytes += it.body.length;
      return fenced;
    } catch (err) {
      broken = err;
      if (hooks) await client.query('ROLLBACK').catch(() => undefined);
      throw new WriteFailure(err, sent !== null && sent.length > 0 && !definiteRollback(err) ? { rows: sent, pid } : null);
    } finally {
      client.off('error', onError);
      // A connection that saw an error is closed rather than reused in an unknown state.
      client.release(broken instanceof Error ? broken : broken === undefined ? undefined : new Error(String(broken)));
    }
  }

  /**
   * Whether a transaction whose connection was lost after COMMIT was sent did commit. The server
   * process that ran it is ended first and waited for (a commit in progress finishes or not,
   * atomically), so the answer cannot change afterwards; then its records are looked up.
   */
  private async outcome(rows: PendingAppend[], pid: number | null): Promise<'committed' | 'rolled back' | 'unknown'> {
    if (pid === null) return 'unknown';
    try {
      const deadline = Date.now() + 10_000;
      for (;;) {
        // Only a process of this database user (never another application's connection).
        const { rowCount } = await this.pool.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = $1 AND usename = current_user', [pid]);
        if (!rowCount) break;
        if (Date.now() > deadline) return 'unknown';
        await new Promise((r) => setTimeout(r, 20));
      }
      // The very same records (a `json` column keeps its text as written), not just the same
      // numbers: another instance that took a group over may have written its own record n since.
      const { rows: found } = await this.pool.query<{ c: number }>(
        `SELECT count(*)::int AS c FROM chorus_records r JOIN unnest($1::text[], $2::bigint[], $3::text[]) AS k(group_id, n, body)
           ON r.group_id = k.group_id AND r.n = k.n AND r.body::text = k.body`,
        [rows.map((i) => i.groupId), rows.map((i) => i.n), rows.map((i) => i.body)],
      );
      const c = found[0]?.c ?? -1;
      // One transaction: all of its records or none of them.
      return c === rows.length ? 'committed' : c === 0 ? 'rolled back' : 'unknown';
    } catch {
      return 'unknown';
    }
  }

  private insertStatement(items: PendingAppend[]): { text: string; values: unknown[] } {
    const newGroups = [...new Set(items.map((i) => i.groupId).filter((id) => !this.listed.has(id)))];
    const rec = { g: [] as string[], n: [] as number[], v: [] as number[], ts: [] as number[], body: [] as string[] };
    const ent = { g: [] as string[], seq: [] as number[], n: [] as number[], entry: [] as string[], delivery: [] as Array<string | null>, posted: [] as Array<string | null> };
    const inBatch = new Map<string, number>();
    const later = new Map<string, { g: string; seq: number; delivery: string; posted: string | null }>();
    for (const it of items) {
      rec.g.push(it.groupId);
      rec.n.push(it.n);
      rec.v.push(it.v);
      rec.ts.push(Math.round(it.ts));
      rec.body.push(it.body);
      for (const e of it.entries) {
        inBatch.set(`${it.groupId}\u0000${e.seq}`, ent.g.length);
        ent.g.push(it.groupId);
        ent.seq.push(e.seq);
        ent.n.push(it.n);
        ent.entry.push(e.json);
        ent.delivery.push(null);
        ent.posted.push(null);
      }
      for (const d of it.delivery) {
        const key = `${it.groupId}\u0000${d.seq}`;
        const posted = d.posted;
        const k = inBatch.get(key);
        // An outcome for an entry of this same batch goes straight into its row.
        if (k !== undefined) {
          ent.delivery[k] = d.delivery;
          if (posted !== null) ent.posted[k] = posted;
        } else {
          const prev = later.get(key);
          later.set(key, { g: it.groupId, seq: d.seq, delivery: d.delivery, posted: posted ?? prev?.posted ?? null });
        }
      }
    }
    const del = [...later.values()];
    const text = `WITH
  g AS (INSERT INTO chorus_groups (id) SELECT unnest($1::text[]) ON CONFLICT (id) DO NOTHING),
  r AS (INSERT INTO chorus_records (group_id, n, v, ts, body)
        SELECT * FROM unnest($2::text[], $3::bigint[], $4::smallint[], $5::bigint[], $6::json[])),
  e AS (INSERT INTO chorus_entries (group_id, seq, n, entry, delivery, posted_ids)
        SELECT * FROM unnest($7::text[], $8::bigint[], $9::bigint[], $10::json[], $11::text[], $12::json[])),
  d AS (UPDATE chorus_entries c SET delivery = u.delivery, posted_ids = COALESCE(u.posted_ids, c.posted_ids)
        FROM unnest($13::text[], $14::bigint[], $15::text[], $16::json[]) AS u(group_id, seq, delivery, posted_ids)
        WHERE c.group_id = u.group_id AND c.seq = u.seq)
SELECT 1`;
    return {
      text,
      values: [
        newGroups,
        rec.g, rec.n, rec.v, rec.ts, rec.body,
        ent.g, ent.seq, ent.n, ent.entry, ent.delivery, ent.posted,
        del.map((d) => d.g), del.map((d) => d.seq), del.map((d) => d.delivery), del.map((d) => d.posted),
      ],
    };
  }

  private state(id: string): GroupState {
    let st = this.groups.get(id);
    if (!st) this.groups.set(id, (st = { failed: null, durableN: 0 }));
    return st;
  }

  private fail(id: string, err: unknown): void {
    const st = this.state(id);
    st.failed = err instanceof Error ? err : new Error(String(err));
    if (err instanceof FencedError) {
      // Losing a group to another instance is not a store failure: /readyz stays ready.
      this.o.logger.warn({ group: id }, 'append refused: the group is owned by another instance now');
      return;
    }
    this.writeError = `group ${id}: ${describeError(err)}`;
    this.o.logger.error({ group: id, err: describeError(err) }, 'could not write a group to the database; its changes are refused until it is reloaded');
  }

  private refusal(id: string, err: unknown): StoreUnavailableError {
    if (err instanceof FencedError) return err;
    return new StoreUnavailableError(`cannot write group ${id}: ${describeError(err)}`, { cause: err });
  }

  async reopen(groupId: string): Promise<StoredGroup> {
    this.waitingCheckpoints.get(groupId)?.resolve();
    this.waitingCheckpoints.delete(groupId);
    return this.load(groupId);
  }

  checkpoint(groupId: string, cp: GroupCheckpoint): Promise<void> {
    if (this.closed) return Promise.resolve();
    // Serialised now (the core hands over live objects), written once every record it covers is
    // committed; only the newest waiting one is kept.
    this.waitingCheckpoints.get(groupId)?.resolve();
    return new Promise<void>((resolve) => {
      this.waitingCheckpoints.set(groupId, { n: cp.n, text: JSON.stringify(cp), resolve });
      this.releaseCheckpoint(groupId);
    });
  }

  private releaseCheckpoint(groupId: string): void {
    const w = this.waitingCheckpoints.get(groupId);
    const st = this.groups.get(groupId);
    if (!w || !st || st.failed || st.durableN < w.n) return;
    this.waitingCheckpoints.delete(groupId);
    const prev = this.checkpointWrites.get(groupId) ?? Promise.resolve();
    const next = prev.then(() => this.writeCheckpoint(groupId, w.n, w.text)).finally(w.resolve);
    this.checkpointWrites.set(groupId, next);
    void next.finally(() => {
      if (this.checkpointWrites.get(groupId) === next) this.checkpointWrites.delete(groupId);
    });
  }

  private async writeCheckpoint(groupId: string, n: number, text: string): Promise<void> {
    try {
      // Never replaced by an older one (a slow write racing a newer one, another instance).
      await this.pool.query(
        `INSERT INTO chorus_checkpoints (group_id, n, version, body) VALUES ($1, $2, $3, $4::json)
         ON CONFLICT (group_id) DO UPDATE SET n = EXCLUDED.n, version = EXCLUDED.version, body = EXCLUDED.body, written_at = now()
         WHERE chorus_checkpoints.n < EXCLUDED.n`,
        [groupId, n, CHECKPOINT_VERSION, text],
      );
      this.stats.checkpoints++;
      this.stats.checkpointBytes += text.length;
    } catch (err) {
      // Only a shortcut for the next start: the log still has everything.
      this.o.logger.warn({ group: groupId, err: describeError(err) }, 'could not write a checkpoint; the next start replays more of the log');
    }
  }

  async readEntries(groupId: string, range: { beforeSeq?: number | undefined; afterSeq?: number | undefined; limit: number }): Promise<TranscriptEntry[]> {
    if (range.limit <= 0) return [];
    type Row = { entry: TranscriptEntry; delivery: string | null; posted_ids: string[] | null };
    let rows: Row[];
    if (range.afterSeq !== undefined) {
      rows = (await this.pool.query<Row>('SELECT entry, delivery, posted_ids FROM chorus_entries WHERE group_id = $1 AND seq > $2 ORDER BY seq LIMIT $3', [groupId, range.afterSeq, range.limit])).rows;
    } else {
      const before = range.beforeSeq ?? Number.MAX_SAFE_INTEGER;
      rows = (await this.pool.query<Row>('SELECT entry, delivery, posted_ids FROM chorus_entries WHERE group_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3', [groupId, before, range.limit])).rows.reverse();
    }
    return rows.map((r) => {
      const e = r.entry;
      if (r.delivery !== null) e.delivery = r.delivery as TranscriptEntry['delivery'];
      if (r.posted_ids !== null) e.postedIds = r.posted_ids;
      return e;
    });
  }

  async checkWritable(): Promise<void> {
    try {
      await this.pool.query('INSERT INTO chorus_probe (instance, at) VALUES ($1, now()) ON CONFLICT (instance) DO UPDATE SET at = now()', [this.probeId]);
    } catch (err) {
      throw new StoreUnavailableError(`the database does not take writes: ${describeError(err)}`, { cause: err });
    }
  }

  health(): { writable: boolean; error: string | null } {
    return { writable: this.writeError === null, error: this.writeError };
  }

  async flush(): Promise<void> {
    for (;;) {
      if (this.flushing) await this.flushing;
      else if (this.scheduled || this.queued.length > 0) await new Promise((r) => setImmediate(r));
      else break;
    }
    await Promise.all([...this.checkpointWrites.values()]);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await this.flush();
    this.closed = true;
    for (const w of this.waitingCheckpoints.values()) w.resolve();
    this.waitingCheckpoints.clear();
    if (this.ownPool) await this.pool.end();
  }
}
