/**
 * Shared files in PostgreSQL: one row per file in `chorus_files`, keyed by its id (the SHA-256 of
 * its bytes), bytes and meta in the same row so one INSERT keeps both or neither. The INSERT is a
 * statement of its own, so it has committed (and, with the server's default
 * `synchronous_commit = on`, reached the WAL on disk) when `put` resolves. Keeping bytes already
 * kept changes nothing; the row's name is the first sender's and is never shown (each message
 * names its files in its entry). A row is deleted only when no message carries the file any more
 * (fileCollector.ts; never in a cluster). Every read checks the bytes against the id, so a row
 * changed by hand or by a damaged disk is never served.
 *
 * The bytes go to the server whole, as one parameter: PostgreSQL takes a `bytea` value in one
 * message. What that holds in memory is one file at a time per keep, within the budget the
 * uploads share (`limits.upload_bytes_in_flight`, FileKeeper.ts).
 */
import type pg from 'pg';
import type { Attachment, AttachmentType, StoredFile } from '../../core/fileTypes.js';
import type { Logger } from '../../core/ports.js';
import { StoreUnavailableError, describeError } from '../../core/errors.js';
import { FILE_ID, checkFileToKeep, storedFileProblem } from '../fileCheck.js';

/**
 * Migration 6. `bytes` is stored uncompressed (STORAGE EXTERNAL): images and PDFs are compressed
 * already, so PostgreSQL's own compression would spend CPU on every write to save nothing.
 */
export const FILES_SQL = `
CREATE TABLE chorus_files (
  id text PRIMARY KEY CHECK (id ~ '^[0-9a-f]{64}$'),
  name text NOT NULL,
  type text NOT NULL,
  size integer NOT NULL CHECK (size >= 0),
  width integer,
  height integer,
  bytes bytea NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE chorus_files ALTER COLUMN bytes SET STORAGE EXTERNAL;
`;

/**
 * Keep a file. A row already there stays as it is, unless its bytes no longer hash to its id:
 * then they are replaced by the right ones (the name it was first kept under stays).
 */
export async function putPgFile(pool: pg.Pool, meta: Attachment, bytes: Uint8Array): Promise<void> {
  checkFileToKeep(meta, bytes);
  try {
    await pool.query(
      `INSERT INTO chorus_files (id, name, type, size, width, height, bytes) VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (id) DO UPDATE SET bytes = EXCLUDED.bytes, size = EXCLUDED.size
       WHERE encode(sha256(chorus_files.bytes), 'hex') <> chorus_files.id`,
      [meta.id, meta.name, meta.type, meta.size, meta.width ?? null, meta.height ?? null, Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)],
    );
  } catch (err) {
    // Not committed, or not known to be: refused. Keeping it again is harmless either way.
    throw new StoreUnavailableError(`cannot keep file ${meta.id} in the database: ${describeError(err)}`, { cause: err });
  }
}

export async function deletePgFile(pool: pg.Pool, id: string): Promise<void> {
  try {
    await pool.query('DELETE FROM chorus_files WHERE id = $1', [id]);
  } catch (err) {
    const why = `cannot remove file ${id} from the database: ${describeError(err)}`;
    throw new StoreUnavailableError(why, { cause: err });
  }
}

interface FileRow {
  id: string;
  name: string;
  type: string;
  size: number;
  width: number | null;
  height: number | null;
  bytes: Buffer;
}

/** A kept file, checked against its id; null when there is none, or when it is damaged (logged). */
export async function readPgFile(pool: pg.Pool, id: string, logger: Logger): Promise<StoredFile | null> {
  if (!FILE_ID.test(id)) return null;
  let row: FileRow | undefined;
  try {
    row = (await pool.query<FileRow>('SELECT id, name, type, size, width, height, bytes FROM chorus_files WHERE id = $1', [id])).rows[0];
  } catch (err) {
    throw new StoreUnavailableError(`cannot read file ${id} from the database: ${describeError(err)}`, { cause: err });
  }
  if (!row) return null;
  const meta: Attachment = {
    id: row.id,
    name: row.name,
    type: row.type as AttachmentType,
    size: row.size,
    sha256: row.id,
    ...(row.width !== null && row.height !== null ? { width: row.width, height: row.height } : {}),
  };
  const bytes = new Uint8Array(row.bytes.buffer, row.bytes.byteOffset, row.bytes.byteLength);
  const problem = storedFileProblem(id, meta, bytes);
  if (problem) {
    logger.error({ file: id, problem }, 'a kept file is damaged in the database; it is not served (the row is kept as it is)');
    return null;
  }
  return { meta, bytes };
}
