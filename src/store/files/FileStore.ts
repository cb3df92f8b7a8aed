/**
 * The file Store: one append-only log per group (see GroupLog) and a checkpoint
 * (`state.json`) beside it. Appends made while a flush is running are gathered and written
 * together: one write per group file (written whole, see writeFully), then one `fdatasync` per
 * file written, all in parallel (group commit across groups), and only then does anyone hear
 * "durable". A checkpoint is written only after every record it covers is durable, so it can
 * never be ahead of the log.
 */
import { mkdir, open, readdir, rm, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { GroupCheckpoint, GroupRecord, Logger, Store, StoredGroup, UnreadableGroup } from '../../core/ports.js';
import type { TranscriptEntry } from '../../core/types.js';
import { StoreFormatError, StoreUnavailableError, describeError } from '../../core/errors.js';
import { GroupLog } from './GroupLog.js';
import { migrateV1 } from './migrateV1.js';
import { checkFormat, segmentName } from './format.js';
import { DamagedGroupError, checkLogReaches, readCheckpoint } from './groupFiles.js';
import { plainWrite, replaceFile, truncateBack, writeFully, type WriteFn } from './writeFully.js';

const SAFE_ID = /^[a-z0-9][a-z0-9_-]{0,79}$/;

export interface FileStoreOptions {
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

interface PendingAppend {
  line: string;
  rec: GroupRecord;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** One group's part of a flush that reached the file (not yet synced). */
interface Written {
  id: string;
  items: PendingAppend[];
  log: GroupLog;
  /** The file's size before this write, to take it back if the sync fails. */
  before: number;
}

export class FileStore implements Store {
  readonly stats: FileStoreStats = { appends: 0, bytes: 0, fsyncs: 0, flushes: 0, checkpoints: 0, checkpointBytes: 0 };
  private readonly logs = new Map<string, GroupLog>();
  private readonly queued = new Map<string, PendingAppend[]>();
  private readonly durableN = new Map<string, number>();
  private readonly waitingCheckpoints = new Map<string, { n: number; text: string; resolve: () => void }>();
  private readonly checkpointWrites = new Map<string, Promise<void>>();
  private flushing: Promise<void> | null = null;
  private scheduled = false;
  private writeError: string | null = null;
  private closed = false;
  private readonly segmentBytes: number;
  private readonly write: WriteFn;
  /** Groups found unreadable or damaged at open, with what is wrong (for `/readyz`). */
  private readonly unreadable = new Map<string, string>();

  constructor(private readonly o: FileStoreOptions) {
    this.segmentBytes = o.segmentBytes ?? 8 * 1024 * 1024;
    this.write = o.write ?? plainWrite;
  }

  private get groupsDir(): string {
    return join(this.o.dataDir, 'groups');
  }

  async open(): Promise<{ groups: StoredGroup[]; unreadable: string[] }> {
    await mkdir(this.groupsDir, { recursive: true });
    await checkFormat(this.o.dataDir, this.write);
    const unreadable = await migrateV1(this.o.dataDir, this.o.logger, (id, records) => this.writeMigrated(id, records));
    const groups: StoredGroup[] = [];
    for (const name of (await readdir(this.groupsDir)).sort()) {
      if (name.startsWith('.')) {
        // A migration that died half-way: its source files are still in place and migrate again.
        if (name.endsWith('.migrating')) await rm(join(this.groupsDir, name), { recursive: true, force: true });
        continue;
      }
      if (!SAFE_ID.test(name)) continue;
      try {
        groups.push(await this.load(name));
      } catch (err) {
        if (err instanceof StoreFormatError) throw err;
        unreadable.push(name);
        this.unreadable.set(name, err instanceof DamagedGroupError ? err.message : describeError(err));
        if (err instanceof DamagedGroupError) this.o.logger.error({ group: name, path: err.path, problem: err.problem }, 'group data is damaged; left untouched and not loaded');
        else this.o.logger.error({ group: name, path: join(this.groupsDir, name), err: describeError(err) }, 'group data cannot be read; left untouched and not loaded');
      }
    }
    return { groups, unreadable };
  }

  /**
   * Read one group's checkpoint and log; the log is scanned (torn tail cut) here. `acked`: where
   * this process's last acknowledged write to the group ended, when it knows (a reopen).
   */
  private async load(id: string, acked?: { path: string; size: number }): Promise<StoredGroup> {
    const dir = join(this.groupsDir, id);
    const log = new GroupLog(id, dir, this.o.logger);
    await log.scan(acked);
    const old = this.logs.get(id);
    if (old) await old.close();
    this.logs.set(id, log);
    const checkpoint = await readCheckpoint(join(dir, 'state.json'), this.o.logger);
    if (checkpoint) await checkLogReaches(log, checkpoint.n);
    this.durableN.set(id, 0);
    return { id, checkpoint, records: () => log.records(checkpoint?.n ?? 0) };
  }

  append(groupId: string, record: GroupRecord): Promise<void> {
    if (this.closed) return Promise.reject(new StoreUnavailableError('store is closed'));
    if (!SAFE_ID.test(groupId)) return Promise.reject(new Error(`unsafe group id for a file name: ${JSON.stringify(groupId).slice(0, 40)}`));
    const log = this.logs.get(groupId);
    if (log?.failed) return Promise.reject(new StoreUnavailableError(`cannot write group ${groupId}: ${describeError(log.failed)}`));
    // Serialised now: the caller's objects may change before the flush.
    const line = `${JSON.stringify(record)}\n`;
    return new Promise<void>((resolve, reject) => {
      let q = this.queued.get(groupId);
      if (!q) this.queued.set(groupId, (q = []));
      q.push({ line, rec: record, resolve, reject });
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
        if (this.queued.size > 0) this.schedule();
      });
    });
  }

  private async flushLoop(): Promise<void> {
    while (this.queued.size > 0) {
      const batch = [...this.queued];
      this.queued.clear();
      this.stats.flushes++;
      const written = await Promise.all(batch.map(([id, items]) => this.writeGroup(id, items)));
      const ok = written.filter((w): w is Written => w !== null);
      if (this.o.fsync === 'always') {
        await Promise.all(
          ok.map(async (w) => {
            try {
              await w.log.fh!.datasync();
              this.stats.fsyncs++;
            } catch (err) {
              // Whether the data reached the disk is unknown: take it back, so a refused record
              // cannot reappear at the next start.
              await truncateBack(w.log.fh!, w.before).catch(() => undefined);
              this.fail(w.log, err);
              for (const it of w.items) it.reject(this.refusal(w.id, err));
              w.items = [];
            }
          }),
        );
      }
      for (const w of ok) {
        if (w.items.length === 0) continue;
        this.writeError = null;
        w.log.acked = { path: w.log.activePath!, size: w.log.size };
        this.durableN.set(w.id, w.items.at(-1)!.rec.n);
        for (const it of w.items) it.resolve();
        this.releaseCheckpoint(w.id);
      }
    }
  }

  /** One write for every queued record of a group. Null when it failed (its appends are refused). */
  private async writeGroup(id: string, items: PendingAppend[]): Promise<Written | null> {
    let log = this.logs.get(id);
    if (!log) {
      log = new GroupLog(id, join(this.groupsDir, id), this.o.logger);
      this.logs.set(id, log);
      this.durableN.set(id, 0);
    }
    if (log.failed) {
      for (const it of items) it.reject(this.refusal(id, log.failed));
      return null;
    }
    const data = Buffer.from(items.map((i) => i.line).join(''), 'utf8');
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
      await writeFully(log.fh!, data, log.activePath!, this.write);
    } catch (err) {
      // Leave no partial line behind: the next record must start on a clean line. Back to the
      // length before this write, which held only whole records, and never past the real end.
      if (log.fh) await truncateBack(log.fh, before).catch(() => undefined);
      this.fail(log, err);
      for (const it of items) it.reject(this.refusal(id, err));
      return null;
    }
    log.noted(items.map((i) => ({ rec: i.rec, bytes: Buffer.byteLength(i.line) })));
    this.stats.appends += items.length;
    this.stats.bytes += data.length;
    return { id, items, log, before };
  }

  private fail(log: GroupLog, err: unknown): void {
    log.failed = err instanceof Error ? err : new Error(String(err));
    this.writeError = `group ${log.id}: ${describeError(err)}`;
    this.o.logger.error({ group: log.id, err: describeError(err) }, 'could not write a group log; its changes are refused until it is reloaded');
  }

  private refusal(id: string, err: unknown): StoreUnavailableError {
    return new StoreUnavailableError(`cannot write group ${id}: ${describeError(err)}`, { cause: err });
  }

  async reopen(groupId: string): Promise<StoredGroup> {
    const log = this.logs.get(groupId);
    if (log) await log.close();
    this.logs.delete(groupId);
    this.waitingCheckpoints.get(groupId)?.resolve();
    this.waitingCheckpoints.delete(groupId);
    return this.load(groupId, log?.acked ?? undefined);
  }

  checkpoint(groupId: string, cp: GroupCheckpoint): Promise<void> {
    if (this.closed || !SAFE_ID.test(groupId)) return Promise.resolve();
    // Serialised now (the core hands over live objects), written once every record it covers is
    // durable; only the newest waiting one is kept.
    const prev = this.waitingCheckpoints.get(groupId);
    prev?.resolve();
    return new Promise<void>((resolve) => {
      this.waitingCheckpoints.set(groupId, { n: cp.n, text: JSON.stringify(cp), resolve });
      this.releaseCheckpoint(groupId);
    });
  }

  private releaseCheckpoint(groupId: string): void {
    const w = this.waitingCheckpoints.get(groupId);
    if (!w || (this.durableN.get(groupId) ?? 0) < w.n) return;
    if (this.logs.get(groupId)?.failed) return;
    this.waitingCheckpoints.delete(groupId);
    const prev = this.checkpointWrites.get(groupId) ?? Promise.resolve();
    const next = prev.then(() => this.writeCheckpoint(groupId, w.text)).finally(w.resolve);
    this.checkpointWrites.set(groupId, next);
  }

  private async writeCheckpoint(groupId: string, text: string): Promise<void> {
    const path = join(this.groupsDir, groupId, 'state.json');
    try {
      await replaceFile(path, text, this.write);
      this.stats.checkpoints++;
      this.stats.checkpointBytes += Buffer.byteLength(text);
    } catch (err) {
      // Only a shortcut for the next start: the log still has everything.
      this.o.logger.warn({ group: groupId, err: describeError(err) }, 'could not write a checkpoint; the next start replays more of the log');
    }
  }


  async readEntries(groupId: string, range: { beforeSeq?: number | undefined; afterSeq?: number | undefined; limit: number }): Promise<TranscriptEntry[]> {
    const log = this.logs.get(groupId);
    return log ? log.entries(range) : [];
  }

  async checkWritable(): Promise<void> {
    const path = join(this.o.dataDir, `.write-probe-${process.pid}`);
    try {
      const fh = await open(path, 'w');
      try {
        await writeFully(fh, Buffer.from('probe\n'), path, this.write);
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

  health(): { writable: boolean; error: string | null; unreadableGroups?: UnreadableGroup[] } {
    const out = { writable: this.writeError === null, error: this.writeError };
    if (this.unreadable.size === 0) return out;
    return { ...out, unreadableGroups: [...this.unreadable].map(([group, problem]) => ({ group, problem })) };
  }

  async flush(): Promise<void> {
    for (;;) {
      if (this.flushing) await this.flushing;
      else if (this.scheduled || this.queued.size > 0) await new Promise((r) => setImmediate(r));
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
    await Promise.all([...this.logs.values()].map((l) => l.close()));
  }

  /** Migration writes a group's whole log at once into a fresh directory (see migrateV1). */
  private async writeMigrated(dir: string, records: GroupRecord[]): Promise<void> {
    await mkdir(join(dir, 'log'), { recursive: true });
    const path = join(dir, 'log', segmentName(1));
    const fh = await open(path, 'w');
    try {
      await writeFully(fh, Buffer.from(records.map((r) => `${JSON.stringify(r)}\n`).join(''), 'utf8'), path, this.write);
      await fh.datasync();
    } finally {
      await fh.close();
    }
    await syncDirs([join(dir, 'log'), dir]);
  }
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
