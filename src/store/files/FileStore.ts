/**
 * The file Store: the group-commit layer (../GroupCommit.ts) over the file backend
 * (FileBackend.ts), which keeps one append-only log per group and a checkpoint beside it under
 * `data_dir`. Appends made while a batch is being written go together into the next one: one
 * write per group file, then one `fdatasync` per file, and only then does anyone hear "durable".
 */
import { GroupCommit } from '../GroupCommit.js';
import { FileBackend, type FileAppend, type FileBackendOptions, type FileStoreStats } from './FileBackend.js';
import type { SearchIndexes } from './searchIndex.js';

export type FileStoreOptions = FileBackendOptions;
export type { FileStoreStats };

export class FileStore extends GroupCommit<FileAppend> {
  /** Write counters, read by the benchmarks. */
  readonly stats: FileStoreStats;
  /** The in-memory search indexes (searchIndex.ts). */
  readonly search: SearchIndexes;

  constructor(o: FileStoreOptions) {
    const backend = new FileBackend(o);
    super(backend, o.logger);
    this.stats = backend.stats;
    this.search = backend.search;
  }
}
