/**
 * What a place that keeps group logs (a directory of files, a PostgreSQL database) must do for
 * the group-commit layer (GroupCommit.ts) to turn it into a Store. The layer owns everything the
 * two stores promise alike — batching, a failed group refusing writes until it is reloaded,
 * checkpoints never ahead of the log, health, flush — so a backend only moves bytes: it writes a
 * batch of records, reads records and entries back, keeps one checkpoint per group, and lists
 * the groups it holds.
 */
import type { SearchFound, SearchRequest, StoredGroup } from '../core/ports.js';
import type { GroupRecord } from '../core/records.js';
import type { TranscriptEntry } from '../core/types.js';
import type { Attachment, StoredFile } from '../core/fileTypes.js';
import { StoreUnavailableError } from '../core/errors.js';

/**
 * Another writer owns the group now (its lease moved on): the append was not written. Not a
 * failure of the store — it stays ready — but the group is refused here until it is reloaded.
 */
export class FencedError extends StoreUnavailableError {}

/** One group's share of a batch: its records, in `n` order, as `prepare` serialised them. */
export interface GroupWrite<P> {
  groupId: string;
  records: P[];
}

export interface LogBackend<P> {
  /** Log line when a write of a group failed (the group's changes are refused until reloaded). */
  readonly writeFailedMessage: string;
  /** Most appends handed to one `write` (Infinity: all that are waiting). */
  readonly maxBatch: number;

  /**
   * Make the place ready (format check, migrations) and list the groups it holds. `unreadable`:
   * groups already found unreadable while getting ready (named in the log by the backend).
   */
  open(): Promise<{ groups: string[]; unreadable: string[] }>;
  /** A group's newest checkpoint and a way to read its records after it. Throws when unreadable. */
  load(groupId: string): Promise<StoredGroup>;
  /**
   * A group that could not be loaded at open: its problem, to be left out and named in health
   * (the backend logs it), or null to fail the whole open. Without it every error fails the open.
   */
  unreadable?(groupId: string, err: unknown): string | null;
  /** Why this id can never be written here (say, it cannot be a file name), or null. */
  idProblem?(groupId: string): string | null;

  /** Serialise a record when it is appended: the caller may change its objects afterwards. */
  prepare(groupId: string, record: GroupRecord): P;
  /**
   * Make a batch durable: every record whole or not at all, each group's in order. Resolves with
   * the groups whose records were not written and why (a `FencedError` for a group another writer
   * owns); every other group's records are durable. A rejection refuses the whole batch.
   */
  write(batch: ReadonlyArray<GroupWrite<P>>): Promise<ReadonlyMap<string, unknown>>;
  /** Replace the group's checkpoint (`text`, covering records up to `n`). Throws on failure. */
  writeCheckpoint(groupId: string, n: number, text: string): Promise<void>;

  readEntries(groupId: string, range: { beforeSeq?: number | undefined; afterSeq?: number | undefined; limit: number }): Promise<TranscriptEntry[]>;
  /** See `Store.searchEntries`: only durable entries, newest first. */
  searchEntries(req: SearchRequest): Promise<SearchFound[]>;
  /** See `Store.putFile`: durable when resolved, whole or not at all, never replaced once kept. */
  putFile(meta: Attachment, bytes: Uint8Array): Promise<void>;
  /** See `Store.readFile`. */
  readFile(id: string): Promise<StoredFile | null>;
  /**
   * Collecting files no message carries any more (fileRefs.ts) needs the two below; a backend
   * without them keeps every file. `sharedWriters`: other processes append to the same place
   * (a cluster), so this one cannot know every reference: nothing is collected.
   */
  readonly sharedWriters?: boolean | undefined;
  /** Every record of a group, from the first, in order. */
  allRecords?(groupId: string): AsyncIterable<GroupRecord>;
  /** Remove a kept file for good (one that is not there is no error). */
  deleteFile?(id: string): Promise<void>;
  /** Records found damaged and skipped while reading so far (their references are unknown). */
  damagedRecords?(): number;
  /** A small durable write; throws StoreUnavailableError when the place takes no writes. */
  checkWritable(): Promise<void>;
  close(): Promise<void>;
}
