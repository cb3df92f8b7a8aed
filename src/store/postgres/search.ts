/**
 * Search in the PostgreSQL store: a `tsvector` column on `chorus_entries` with a GIN index
 * (migration 4). The tokens are folded in code (core/text/search.ts) and stored as they are
 * (`array_to_tsvector`), and a query is a tsquery of those same folded terms, each a prefix
 * (`'term':*`), all required. The database's parser and locale never touch the words, so the
 * PostgreSQL store finds exactly what the file store finds (`Café` for `cafe`, `Ёлка` for
 * `елка`) whatever the database's locale. Notices, decisions and commands get an empty vector.
 *
 * Entries written before migration 4 have none: a pass at start (in the background, a batch at a
 * time, through a partial index of the rows still without one) gives them theirs.
 */
import type pg from 'pg';
import type { Logger, SearchFound, SearchRequest } from '../../core/ports.js';
import type { TranscriptEntry } from '../../core/types.js';
import type { ChatCopy } from '../../core/roomTypes.js';
import { describeError } from '../../core/errors.js';
import { searchTokens, searchable } from '../../core/text/search.js';
import type { EntryEdit } from '../../core/records.js';
import { applyEntryEdit } from '../../core/groups/entryEdit.js';

export const SEARCH_SQL = `
ALTER TABLE chorus_entries ADD COLUMN search tsvector;
CREATE INDEX chorus_entries_search ON chorus_entries USING gin (search);
CREATE INDEX chorus_entries_unsearchable ON chorus_entries (group_id, seq) WHERE search IS NULL;
`;

/** The tokens of an entry, space separated ('' for what search never finds): the `search` column's input. */
export function searchColumn(e: Pick<TranscriptEntry, 'kind' | 'text' | 'hiddenFromAgents'>): string {
  return searchable(e) ? searchTokens(e.text).join(' ') : '';
}

/** SQL turning `searchColumn`'s text into the column's value. */
export const SEARCH_VECTOR = (param: string) => `array_to_tsvector(string_to_array(${param}, ' '))`;

/** Give every entry written before migration 4 its search vector; resolves with how many it did. */
export async function backfillSearch(pool: pg.Pool, logger: Logger): Promise<number> {
  let done = 0;
  try {
    for (;;) {
      const { rows } = await pool.query<{ group_id: string; seq: string; entry: TranscriptEntry; edit: EntryEdit | null }>(
        'SELECT group_id, seq, entry, edit FROM chorus_entries WHERE search IS NULL ORDER BY group_id, seq LIMIT 1000',
      );
      for (const r of rows) if (r.edit) applyEntryEdit(r.entry, r.edit);
      if (rows.length === 0) break;
      await pool.query(
        `UPDATE chorus_entries c SET search = ${SEARCH_VECTOR('u.s')}
           FROM unnest($1::text[], $2::bigint[], $3::text[]) AS u(g, seq, s)
          WHERE c.group_id = u.g AND c.seq = u.seq AND c.search IS NULL`,
        [rows.map((r) => r.group_id), rows.map((r) => r.seq), rows.map((r) => searchColumn(r.entry))],
      );
      done += rows.length;
    }
    if (done > 0) logger.info({ entries: done }, 'older messages indexed for search');
  } catch (err) {
    // Only search misses them until the next start tries again; nothing else depends on it.
    logger.warn({ err: describeError(err), entries: done }, 'could not index older messages for search; the next start tries again');
  }
  return done;
}

/** The newest matches, with their latest delivery state. */
export async function searchEntries(pool: pg.Pool, req: SearchRequest): Promise<SearchFound[]> {
  // Terms are runs of letters and digits only: nothing in them can break the tsquery literal.
  const tsquery = req.terms.map((t) => `'${t}':*`).join(' & ');
  const values: unknown[] = [req.groupIds, tsquery, req.limit];
  let after = '';
  if (req.before) {
    values.push(req.before.ts, req.before.groupId, req.before.seq);
    after = `AND ((entry->>'ts')::float8, group_id COLLATE "C", seq) < ($4::float8, $5::text COLLATE "C", $6::bigint)`;
  }
  type Row = EntryRow & { group_id: string };
  const { rows } = await pool.query<Row>(
    `SELECT group_id, entry, delivery, posted_ids, copies, edit FROM chorus_entries
      WHERE group_id = ANY($1::text[]) AND search @@ $2::tsquery ${after}
      ORDER BY (entry->>'ts')::float8 DESC, group_id COLLATE "C" DESC, seq DESC
      LIMIT $3`,
    values,
  );
  return rows.map((r) => ({ groupId: r.group_id, entry: entryOf(r) })).filter((f) => !f.entry.deleted);
}

/** A row of `chorus_entries` as read back. */
export interface EntryRow {
  entry: TranscriptEntry;
  delivery: string | null;
  posted_ids: string[] | null;
  /** The latest outcome of each copy in another chat of the room, by chat key (migration 7). */
  copies: Record<string, ChatCopy> | null;
  edit: EntryEdit | null;
}

/** The entry of a row with the latest delivery state of its home post and of each copy, and its edit, applied. */
export function entryOf(r: EntryRow): TranscriptEntry {
  const e = r.entry;
  if (r.delivery !== null) e.delivery = r.delivery as TranscriptEntry['delivery'];
  if (r.posted_ids !== null) e.postedIds = r.posted_ids;
  // Each outcome lands on its own chat's copy, over what the entry was written with (a pending copy).
  if (r.copies !== null) for (const [chat, c] of Object.entries(r.copies)) e.copies = { ...e.copies, [chat]: { ...e.copies?.[chat], ...c } };
  if (r.edit !== null) applyEntryEdit(e, r.edit);
  return e;
}
