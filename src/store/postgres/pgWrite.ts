/**
 * Writing a batch of records to PostgreSQL: one transaction holding the group rows, the records,
 * their entries and the delivery outcomes of earlier entries (one statement, without hooks), and
 * finding out whether such a transaction committed when the answer to its COMMIT was lost.
 */
import type pg from 'pg';
import type { GroupRecord } from '../../core/records.js';
import { StoreUnavailableError, describeError } from '../../core/errors.js';
import type { TranscriptEntry } from '../../core/types.js';
import { applyEntryEdit, changesText } from '../../core/groups/entryEdit.js';
import { SEARCH_VECTOR, searchColumn } from './search.js';

/** One record as it is appended, serialised when `append` was called. */
export interface PgAppend {
  groupId: string;
  n: number;
  v: number;
  ts: number;
  body: string;
  /** The record's entries, with their search tokens (search.ts). */
  entries: Array<{ seq: number; json: string; search: string }>;
  /** Outcomes of posts of earlier entries: the home chat's (`chat` null) or a copy's in another chat of the room. */
  delivery: Array<{ seq: number; delivery: string; posted: string | null; chat: string | null; via: string | null }>;
  /**
   * Edits of earlier entries: the edit (it describes the entry's whole edit state) and the search
   * tokens of the new text, null when the edit keeps the text as it was (a reaction).
   */
  edits: Array<{ seq: number; json: string; search: string | null }>;
}

export function pgAppend(groupId: string, record: GroupRecord): PgAppend {
  return {
    groupId,
    n: record.n,
    v: record.v,
    ts: record.ts,
    body: JSON.stringify(record),
    entries: (record.entries ?? []).map((e) => ({ seq: e.seq, json: JSON.stringify(e), search: searchColumn(e) })),
    delivery: (record.delivery ?? []).map((d) => ({ seq: d.seq, delivery: d.delivery, posted: d.postedIds ? JSON.stringify(d.postedIds) : null, chat: d.chat ?? null, via: d.chat && d.via ? d.via : null })),
    edits: (record.edits ?? []).map((ed) => ({ seq: ed.seq, json: JSON.stringify(ed), search: ed.deleted ? '' : changesText(ed) ? searchTokensOf(ed.text ?? '') : null })),
  };
}

/** The search column's input for a new text (as searchColumn gives it for a message). */
function searchTokensOf(text: string): string {
  return searchColumn({ kind: 'human', text });
}

export interface WriteHooks {
  /** Runs first inside the transaction; returns the groups this instance may no longer write. */
  fence?: ((tx: pg.PoolClient, groupIds: readonly string[]) => Promise<Iterable<string>>) | undefined;
  /** Runs inside the transaction after the inserts, right before COMMIT. */
  beforeCommit?: ((tx: pg.PoolClient, batch: ReadonlyArray<{ groupId: string; record: GroupRecord }>) => Promise<void>) | undefined;
}

/** A failed batch write; `unknown` is set when its commit was sent and the answer was lost. */
export class WriteFailure extends Error {
  constructor(
    override readonly cause: unknown,
    readonly unknown: { rows: PgAppend[]; pid: number | null } | null,
  ) {
    super(describeError(cause));
  }
}

/** Server errors after which the transaction is known to be rolled back (not a lost connection). */
export function definiteRollback(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || code.length !== 5) return false;
  // 08: connection exception, 57: operator intervention (shutdown, terminated backend), XX: internal.
  return !['08', '57', '53', '58', 'XX'].includes(code.slice(0, 2));
}

/**
 * One transaction for `items`. Without hooks it is a single statement (its own transaction, one
 * round trip). Returns the groups refused by the fence (nothing of theirs was written); throws a
 * WriteFailure. `listed`: groups known to have a `chorus_groups` row already.
 */
export async function writeRows(pool: pg.Pool, items: PgAppend[], hooks: WriteHooks, listed: ReadonlySet<string>): Promise<ReadonlySet<string>> {
  const client = await pool.connect().catch((err: unknown) => {
    throw new StoreUnavailableError(`cannot reach the database: ${describeError(err)}`, { cause: err });
  });
  // The server process of this connection (from the protocol's BackendKeyData), for `lostCommitOutcome`.
  const pid = (client as unknown as { processID?: number | null }).processID ?? null;
  let sent: PgAppend[] | null = null;
  const inTx = hooks.fence !== undefined || hooks.beforeCommit !== undefined;
  let broken: unknown;
  // The server may end a checked-out connection between queries (terminated, restarted): pg then
  // emits 'error' on the client, which would crash the process without a listener.
  const onError = (err: Error) => (broken ??= err);
  client.on('error', onError);
  try {
    let fenced = new Set<string>();
    let rows = items;
    if (inTx) await client.query('BEGIN');
    if (hooks.fence) {
      fenced = new Set(await hooks.fence(client, [...new Set(items.map((i) => i.groupId))]));
      rows = items.filter((i) => !fenced.has(i.groupId));
    }
    if (rows.length > 0) {
      const { text, values } = insertStatement(rows, listed);
      // Without hooks this statement is its own transaction: once sent, it may commit.
      if (!inTx) sent = rows;
      await client.query(text, values);
    }
    if (hooks.beforeCommit && rows.length > 0) await hooks.beforeCommit(client, rows.map((i) => ({ groupId: i.groupId, record: JSON.parse(i.body) as GroupRecord })));
    if (inTx) {
      sent = rows;
      await client.query('COMMIT');
    }
    return fenced;
  } catch (err) {
    broken = err;
    if (inTx) await client.query('ROLLBACK').catch(() => undefined);
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
export async function lostCommitOutcome(pool: pg.Pool, rows: PgAppend[], pid: number | null): Promise<'committed' | 'rolled back' | 'unknown'> {
  if (pid === null) return 'unknown';
  try {
    const deadline = Date.now() + 10_000;
    for (;;) {
      // Only a process of this database user (never another application's connection).
      const { rowCount } = await pool.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = $1 AND usename = current_user', [pid]);
      if (!rowCount) break;
      if (Date.now() > deadline) return 'unknown';
      await new Promise((r) => setTimeout(r, 20));
    }
    // The very same records (a `json` column keeps its text as written), not just the same
    // numbers: another instance that took a group over may have written its own record n since.
    const { rows: found } = await pool.query<{ c: number }>(
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

/** The outcomes of an entry's copies written by one batch, by chat: what the `copies` column takes. */
type CopyOutcomes = Record<string, { delivery: string; ids?: string[]; via?: string }>;

/**
 * One copy's outcome after the ones before it in the batch, as `applyOutcome` gives it: ids and
 * the identity that posted them kept when a later outcome has none (the UPDATE merges keys the same way).
 */
function addCopy(to: CopyOutcomes | null, d: { chat: string; delivery: string; posted: string | null; via: string | null }): CopyOutcomes {
  const out = to ?? {};
  out[d.chat] = { ...out[d.chat], delivery: d.delivery, ...(d.posted !== null ? { ids: JSON.parse(d.posted) as string[] } : {}), ...(d.via !== null ? { via: d.via } : {}) };
  return out;
}

/** What a batch changes of an entry written by an earlier one: each field null when the batch leaves it. */
interface Later {
  g: string;
  seq: number;
  delivery: string | null;
  posted: string | null;
  copies: CopyOutcomes | null;
  edit: string | null;
  search: string | null;
}

/**
 * The one statement that writes a batch: new group rows, records, entries, and what changed of
 * entries written earlier. Every change of one earlier entry is one row of one UPDATE: a statement
 * that updated the same row from two of its parts would keep only one of them.
 */
function insertStatement(items: PgAppend[], listed: ReadonlySet<string>): { text: string; values: unknown[] } {
  const newGroups = [...new Set(items.map((i) => i.groupId).filter((id) => !listed.has(id)))];
  const rec = { g: [] as string[], n: [] as number[], v: [] as number[], ts: [] as number[], body: [] as string[] };
  const ent = { g: [] as string[], seq: [] as number[], n: [] as number[], entry: [] as string[], delivery: [] as Array<string | null>, posted: [] as Array<string | null>, copies: [] as Array<CopyOutcomes | null>, search: [] as string[] };
  const inBatch = new Map<string, number>();
  const later = new Map<string, Later>();
  const laterOf = (g: string, seq: number, key: string): Later => {
    let l = later.get(key);
    if (!l) later.set(key, (l = { g, seq, delivery: null, posted: null, copies: null, edit: null, search: null }));
    return l;
  };
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
      ent.search.push(e.search);
      ent.delivery.push(null);
      ent.posted.push(null);
      ent.copies.push(null);
    }
    for (const d of it.delivery) {
      const key = `${it.groupId}\u0000${d.seq}`;
      const k = inBatch.get(key);
      // An outcome for an entry of this same batch goes straight into its row.
      if (k !== undefined) {
        if (d.chat !== null) ent.copies[k] = addCopy(ent.copies[k] ?? null, { ...d, chat: d.chat });
        else {
          ent.delivery[k] = d.delivery;
          if (d.posted !== null) ent.posted[k] = d.posted;
        }
      } else {
        const l = laterOf(it.groupId, d.seq, key);
        if (d.chat !== null) l.copies = addCopy(l.copies, { ...d, chat: d.chat });
        else {
          l.delivery = d.delivery;
          if (d.posted !== null) l.posted = d.posted;
        }
      }
    }
    for (const ed of it.edits) {
      const key = `${it.groupId}\u0000${ed.seq}`;
      const k = inBatch.get(key);
      // An edit of an entry of this same batch is written into its row; of an earlier one, the
      // latest per entry (each describes the whole edit state) goes into the row's `edit` column.
      if (k !== undefined) {
        const entry = JSON.parse(ent.entry[k]!) as TranscriptEntry;
        applyEntryEdit(entry, JSON.parse(ed.json));
        ent.entry[k] = JSON.stringify(entry);
        ent.search[k] = searchColumn(entry);
      } else {
        const l = laterOf(it.groupId, ed.seq, key);
        // A reaction after a text edit of the same batch keeps that edit's words.
        l.search = ed.search ?? l.search;
        l.edit = ed.json;
      }
    }
  }
  const up = [...later.values()];
  const json = (c: CopyOutcomes | null) => (c === null ? null : JSON.stringify(c));
  // A copy's outcome is merged into what earlier batches left of that chat's copy alone (ids kept
  // when the new outcome has none); the home chat's `delivery` / `posted_ids` never move with it.
  const text = `WITH
  g AS (INSERT INTO chorus_groups (id) SELECT unnest($1::text[]) ON CONFLICT (id) DO NOTHING),
  r AS (INSERT INTO chorus_records (group_id, n, v, ts, body)
        SELECT * FROM unnest($2::text[], $3::bigint[], $4::smallint[], $5::bigint[], $6::json[])),
  e AS (INSERT INTO chorus_entries (group_id, seq, n, entry, delivery, posted_ids, copies, search)
        SELECT u.g, u.seq, u.n, u.entry, u.delivery, u.posted, u.copies, ${SEARCH_VECTOR('u.s')}
          FROM unnest($7::text[], $8::bigint[], $9::bigint[], $10::json[], $11::text[], $12::json[], $13::jsonb[], $14::text[]) AS u(g, seq, n, entry, delivery, posted, copies, s)),
  x AS (UPDATE chorus_entries c SET
          delivery = COALESCE(u.delivery, c.delivery),
          posted_ids = COALESCE(u.posted, c.posted_ids),
          copies = CASE WHEN u.copies IS NULL THEN c.copies
                   ELSE COALESCE(c.copies, '{}'::jsonb) || (SELECT jsonb_object_agg(k.key, COALESCE(c.copies -> k.key, '{}'::jsonb) || k.value) FROM jsonb_each(u.copies) AS k) END,
          edit = COALESCE(u.edit, c.edit),
          search = CASE WHEN c.search = ''::tsvector OR u.s IS NULL THEN c.search ELSE ${SEARCH_VECTOR('u.s')} END
        FROM unnest($15::text[], $16::bigint[], $17::text[], $18::json[], $19::jsonb[], $20::json[], $21::text[]) AS u(group_id, seq, delivery, posted, copies, edit, s)
        WHERE c.group_id = u.group_id AND c.seq = u.seq)
SELECT 1`;
  return {
    text,
    values: [
      newGroups,
      rec.g, rec.n, rec.v, rec.ts, rec.body,
      ent.g, ent.seq, ent.n, ent.entry, ent.delivery, ent.posted, ent.copies.map(json), ent.search,
      up.map((l) => l.g), up.map((l) => l.seq), up.map((l) => l.delivery), up.map((l) => l.posted), up.map((l) => json(l.copies)), up.map((l) => l.edit), up.map((l) => l.search),
    ],
  };
}
