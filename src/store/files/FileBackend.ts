/**
 * The file store's backend: one append-only log per group (see GroupLog) and a checkpoint
 * (`state.json`) beside it, under `data_dir/groups/<id>/`. A batch is one write per group file
 * (written whole, see writeFully), then one `fdatasync` per file written, all in parallel, and
 * only then is any of it reported durable. A write that fails is cut back to the last whole
 * record, so the next record starts on a clean line and nothing refused can reappear at a start.
 * Shared files are kept beside the logs, under `data_dir/files/` (keptFiles.ts).
 */
import type { Attachment, StoredFile } from '../../core/fileTypes.js';
import { mkdir, open, readdir, rm, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger, SearchFound, SearchRequest, StoredGroup } from '../../core/ports.js';
import type { EntryEdit, GroupRecord } from '../../core/records.js';
import type { TranscriptEntry } from '../../core/types.js';
import { StoreUnavailableError, describeError } from '../../core/errors.js';
import { changesText } from '../../core/groups/entryEdit.js';
import { newestFirst, searchable } from '../../core/text/search.js';
import type { GroupWrite, LogBackend } from '../LogBackend.js';
import { checkFormat, segmentName } from './format.js';
import { GroupLog } from './GroupLog.js';
import { KeptFiles } from './keptFiles.js';
import { DamagedGroupError, checkLogReaches, readCheckpoint } from './groupFiles.js';
import { migrateV1 } from './migrateV1.js';
import { SearchIndexes, type IndexedEdit, type IndexedEntry } from './searchIndex.js';
import { spanOf, type RecordSpan } from './segmentIndex.js';
import { plainWrite, replaceFile, truncateBack, writeFully, type WriteFn } from './writeFully.js';

const SAFE_ID = /^[a-z0-9][a-z0-9_-]{0,79}$/;

export interface FileBackendOptions {
  dataDir: string;
  /** `always`: fdatasync before an append resolves (survives power loss); `never`: the OS decides. */
  fsync: 'always' | 'never';
  /** Rotate a segment once it is this large (default 8 MiB). */
  segmentBytes?: number | undefined;
  logger: Logger;
  /** Test hook: runs before each write; may write part of `data` itself and throw (a full disk). */
  beforeWrite?: ((path: string, data: Buffer, fh: import('node:fs/promises').FileHandle) => Promise<void>) | undefined;
  /** Test hook: every write(2) of the store goes through it; it may take less than asked, as a full disk does. */
  write?: WriteFn | undefined;
  /** Heap the search indexes may take before the least recently searched are dropped (default 64 MiB). */
  searchIndexBytes?: number | undefined;
}

/** Write counters, read by the benchmarks. */
export interface FileStoreStats {
  appends: number;
  bytes: number;
  fsyncs: number;
  flushes: number;
  checkpoints: number;
  checkpointBytes: number;
}

/** A record as it is appended: its line, and what the segment index needs to know of it. */
export interface FileAppend {
  line: string;
  span: RecordSpan;
  /** Its searchable entries, for a search index of the group once they are durable. */
  found: IndexedEntry[];
  /** Its edits and deletions, for the same index. */
  edits: IndexedEdit[];
}

/** One group's part of a batch that reached its file (not yet synced). */
interface Written {
  id: string;
  log: GroupLog;
  /** The file's size before this write, to take it back if the sync fails. */
  before: number;
}

export class FileBackend implements LogBackend<FileAppend> {
  readonly writeFailedMessage = 'could not write a group log; its changes are refused until it is reloaded';
  readonly maxBatch = Infinity;
  readonly stats: FileStoreStats = { appends: 0, bytes: 0, fsyncs: 0, flushes: 0, checkpoints: 0, checkpointBytes: 0 };
  private readonly logs = new Map<string, GroupLog>();
  private readonly segmentBytes: number;
  private readonly writeFn: WriteFn;
  readonly search: SearchIndexes;
  /** Shared files, content-addressed under `data_dir/files/` (keptFiles.ts). */
  readonly files: KeptFiles;

  constructor(private readonly o: FileBackendOptions) {
    this.segmentBytes = o.segmentBytes ?? 8 * 1024 * 1024;
    this.writeFn = o.write ?? plainWrite;
    this.search = new SearchIndexes(o.searchIndexBytes ?? 64 * 1024 * 1024);
    this.files = new KeptFiles({ dataDir: o.dataDir, fsync: o.fsync, logger: o.logger, write: o.write });
  }

  private get groupsDir(): string {
    return join(this.o.dataDir, 'groups');
  }

  async open(): Promise<{ groups: string[]; unreadable: string[] }> {
    await mkdir(this.groupsDir, { recursive: true });
    await checkFormat(this.o.dataDir, this.writeFn);
    await this.files.open();
    const unreadable = await migrateV1(this.o.dataDir, this.o.logger, (id, records) => this.writeMigrated(id, records));
    const groups: string[] = [];
    for (const name of (await readdir(this.groupsDir)).sort()) {
      if (name.startsWith('.')) {
        // A migration that died half-way: its source files are still in place and migrate again.
        if (name.endsWith('.migrating')) await rm(join(this.groupsDir, name), { recursive: true, force: true });
        continue;
      }
      if (SAFE_ID.test(name)) groups.push(name);
    }
    return { groups, unreadable };
  }

  unreadable(id: string, err: unknown): string {
    if (err instanceof DamagedGroupError) {
      this.o.logger.error({ group: id, path: err.path, problem: err.problem }, 'group data is damaged; left untouched and not loaded');
      return err.message;
    }
    this.o.logger.error({ group: id, path: join(this.groupsDir, id), err: describeError(err) }, 'group data cannot be read; left untouched and not loaded');
    return describeError(err);
  }

  idProblem(id: string): string | null {
    return SAFE_ID.test(id) ? null : `unsafe group id for a file name: ${JSON.stringify(id).slice(0, 40)}`;
  }

  /**
   * Read one group's checkpoint and log; the log is scanned (torn tail cut) here. When this
   * process wrote the group before (a reopen after a refused write), it knows where its last
   * acknowledged write ended, and the torn-tail line can say whether the cut was acknowledged.
   */
  async load(id: string): Promise<StoredGroup> {
    const old = this.logs.get(id);
    this.logs.delete(id);
    // Its index may hold what a failed write left: built again from the log on the next search.
    this.search.drop(id);
    await old?.close();
    const dir = join(this.groupsDir, id);
    const log = new GroupLog(id, dir, this.o.logger);
    await log.scan(old?.acked ?? undefined);
    this.logs.set(id, log);
    const checkpoint = await readCheckpoint(join(dir, 'state.json'), this.o.logger);
    if (checkpoint) await checkLogReaches(log, checkpoint.n);
    return { id, checkpoint, records: () => log.records(checkpoint?.n ?? 0) };
  }

  prepare(_groupId: string, record: GroupRecord): FileAppend {
    const found = (record.entries ?? []).filter(searchable).map((e) => ({ seq: e.seq, ts: e.ts, text: e.text }));
    // A reaction keeps the text as it was: only edits that change it reach the search index.
    const edits = (record.edits ?? []).filter(changesText).map(indexedEdit);
    return { line: `${JSON.stringify(record)}\n`, span: spanOf(record), found, edits };
  }

  async write(batch: ReadonlyArray<GroupWrite<FileAppend>>): Promise<ReadonlyMap<string, unknown>> {
    this.stats.flushes++;
    const refused = new Map<string, unknown>();
    const written = (await Promise.all(batch.map((g) => this.writeGroup(g, refused)))).filter((w): w is Written => w !== null);
    if (this.o.fsync === 'always') {
      await Promise.all(
        written.map(async (w) => {
          try {
            await w.log.fh!.datasync();
            this.stats.fsyncs++;
          } catch (err) {
            // Whether the data reached the disk is unknown: take it back, so a refused record
            // cannot reappear at the next start.
            await truncateBack(w.log.fh!, w.before).catch(() => undefined);
            refused.set(w.id, err);
          }
        }),
      );
    }
    for (const w of written) if (!refused.has(w.id)) w.log.acked = { path: w.log.activePath!, size: w.log.size };
    for (const g of batch) {
      if (refused.has(g.groupId)) this.search.drop(g.groupId);
      else this.search.appended(g.groupId, g.records.flatMap((r) => r.found), g.records.flatMap((r) => r.edits));
    }
    return refused;
  }

  /** One write for every record of a group in the batch. Null when it failed (noted in `refused`). */
  private async writeGroup(g: GroupWrite<FileAppend>, refused: Map<string, unknown>): Promise<Written | null> {
    let log = this.logs.get(g.groupId);
    if (!log) {
      log = new GroupLog(g.groupId, join(this.groupsDir, g.groupId), this.o.logger);
      this.logs.set(g.groupId, log);
    }
    const data = Buffer.from(g.records.map((r) => r.line).join(''), 'utf8');
    let before = log.size;
    try {
      if (!log.fh) {
        await mkdir(log.logDir, { recursive: true });
        const { created } = await log.openActive();
        if (created && this.o.fsync === 'always') await syncDirs([log.logDir, log.dir, this.groupsDir]);
      }
      if (await log.rotateIfFull(this.segmentBytes)) {
        if (this.o.fsync === 'always') await syncDirs([log.logDir]);
      }
      before = log.size;
      if (this.o.beforeWrite) await this.o.beforeWrite(log.activePath!, data, log.fh!);
      await writeFully(log.fh!, data, log.activePath!, this.writeFn);
    } catch (err) {
      // Leave no partial line behind: the next record must start on a clean line. Back to the
      // length before this write, which held only whole records, and never past the real end.
      if (log.fh) await truncateBack(log.fh, before).catch(() => undefined);
      refused.set(g.groupId, err);
      return null;
    }
    log.noted(g.records.map((r) => ({ span: r.span, bytes: Buffer.byteLength(r.line) })));
    this.stats.appends += g.records.length;
    this.stats.bytes += data.length;
    return { id: g.groupId, log, before };
  }

  async writeCheckpoint(groupId: string, _n: number, text: string): Promise<void> {
    await replaceFile(join(this.groupsDir, groupId, 'state.json'), text, this.writeFn);
    this.stats.checkpoints++;
    this.stats.checkpointBytes += Buffer.byteLength(text);
  }

  async readEntries(groupId: string, range: { beforeSeq?: number | undefined; afterSeq?: number | undefined; limit: number }): Promise<TranscriptEntry[]> {
    const log = this.logs.get(groupId);
    return log ? log.entries(range) : [];
  }

  /**
   * Each group's index (searchIndex.ts) names the newest matches; only those entries are read
   * back, one positional read each, with their latest delivery state.
   */
  async searchEntries(req: SearchRequest): Promise<SearchFound[]> {
    const places = [];
    for (const id of req.groupIds) {
      const log = this.logs.get(id);
      if (!log) continue;
      const index = await this.search.index(id, async (add, edit) => {
        for await (const rec of log.records(0)) {
          for (const e of rec.entries ?? []) if (searchable(e)) add({ seq: e.seq, ts: e.ts, text: e.text });
          for (const ed of rec.edits ?? []) if (changesText(ed)) edit(indexedEdit(ed));
        }
      });
      places.push(...index.match(req.terms, id, req.before, req.limit));
    }
    places.sort(newestFirst);
    const out: SearchFound[] = [];
    for (const p of places.slice(0, req.limit)) {
      const [entry] = await this.logs.get(p.groupId)!.entries({ afterSeq: p.seq - 1, limit: 1 });
      if (entry?.seq === p.seq && !entry.deleted) out.push({ groupId: p.groupId, entry });
    }
    return out;
  }

  putFile(meta: Attachment, bytes: Uint8Array): Promise<void> {
    return this.files.put(meta, bytes);
  }

  async *allRecords(groupId: string): AsyncGenerator<GroupRecord> {
    const log = this.logs.get(groupId);
    if (log) yield* log.records(0);
  }

  deleteFile(id: string): Promise<void> {
    return this.files.remove(id);
  }

  damagedRecords(): number {
    let n = 0;
    for (const log of this.logs.values()) n += log.damagedLines;
    return n;
  }

  readFile(id: string): Promise<StoredFile | null> {
    return this.files.read(id);
  }

  async checkWritable(): Promise<void> {
    const path = join(this.o.dataDir, `.write-probe-${process.pid}`);
    try {
      const fh = await open(path, 'w');
      try {
        await writeFully(fh, Buffer.from('probe\n'), path, this.writeFn);
        if (this.o.fsync === 'always') await fh.datasync();
      } finally {
        await fh.close();
      }
      await unlink(path);
    } catch (err) {
      await unlink(path).catch(() => undefined);
      throw new StoreUnavailableError(`data_dir is not writable: ${describeError(err)}`, { cause: err });
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.logs.values()].map((l) => l.close()));
  }

  /** Migration writes a group's whole log at once into a fresh directory (see migrateV1). */
  private async writeMigrated(dir: string, records: GroupRecord[]): Promise<void> {
    await mkdir(join(dir, 'log'), { recursive: true });
    const path = join(dir, 'log', segmentName(1));
    const fh = await open(path, 'w');
    try {
      await writeFully(fh, Buffer.from(records.map((r) => `${JSON.stringify(r)}\n`).join(''), 'utf8'), path, this.writeFn);
      await fh.datasync();
    } finally {
      await fh.close();
    }
    await syncDirs([join(dir, 'log'), dir]);
  }
}

/** What the search index needs of an edit: the new text, or null for a deletion. */
function indexedEdit(ed: EntryEdit): IndexedEdit {
  return { seq: ed.seq, text: ed.deleted ? null : (ed.text ?? null) };
}

/** fsync directories so newly created entries in them survive a power cut. */
async function syncDirs(dirs: string[]): Promise<void> {
  for (const d of dirs) {
    const fh = await open(d, 'r');
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  }
}
