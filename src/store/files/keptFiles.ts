/**
 * The files people share, kept by the file store under `data_dir/files/`, content-addressed:
 *
 *   files/<first two hex digits of the id>/<id>   one file per kept file
 *   files/.partial/                              writes not finished yet (emptied at every open)
 *
 * A kept file is one file on disk, a header line and then the bytes exactly as kept:
 *
 *   chorus-file 1 {"id":"…","name":"chart.png","type":"image/png","size":1234,…}\n<bytes>
 *
 * One file rather than the bytes and a JSON beside them, so that one rename publishes both: no
 * crash can leave bytes without their name and type, or a name without its bytes. The id is the
 * SHA-256 of the bytes, so every read checks them; bytes that do not hash to their id are never
 * served. The two-digit folders keep any one directory to a few thousand entries.
 *
 * Keeping is whole or nothing: the bytes go to a temporary file in `.partial/`, which is synced
 * (with `fsync: always`), then renamed to its place, and the folder synced, before `put` resolves.
 * A crash before the rename leaves only a temporary file, which no read ever looks at and the
 * next open removes. A damaged file found when the same bytes are kept again is renamed aside
 * (`<id>.damaged-<time>`, never deleted) and the good bytes put in its place. A file is removed
 * only when no message carries it any more (the store decides, fileCollector.ts): one unlink,
 * then the folder synced, so a kill leaves it whole or gone.
 *
 * The name in the header is the first sender's and is never shown: every message names its files
 * itself (its entry's attachments), so the same bytes sent as two names stay two names.
 */
import { mkdir, open, readdir, readFile, rename, rm, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Attachment, StoredFile } from '../../core/fileTypes.js';
import type { Logger } from '../../core/ports.js';
import { StoreUnavailableError, describeError } from '../../core/errors.js';
import { FILE_ID, checkFileToKeep, storedFileProblem } from '../fileCheck.js';
import { plainWrite, writeFully, type WriteFn } from './writeFully.js';

const MAGIC = 'chorus-file 1 ';
/** The header line is the meta of one file (a name of at most 200 characters): far below this. */
const MAX_HEADER = 16 * 1024;

export interface KeptFilesOptions {
  dataDir: string;
  fsync: 'always' | 'never';
  logger: Logger;
  /** Every write(2) goes through it (the store's test hook for full disks). */
  write?: WriteFn | undefined;
}

/** What reading one kept file found: the file, or why it is damaged (and its meta if that was readable). */
type Found = { file: StoredFile } | { problem: string; meta?: Attachment } | null;

export class KeptFiles {
  /** Keeps of one id in flight: a second waits for the first, then finds the file kept. */
  private readonly inFlight = new Map<string, Promise<void>>();
  private tmpCount = 0;

  constructor(private readonly o: KeptFilesOptions) {}

  get dir(): string {
    return join(this.o.dataDir, 'files');
  }

  private get partialDir(): string {
    return join(this.dir, '.partial');
  }

  private pathOf(id: string): string {
    return join(this.dir, id.slice(0, 2), id);
  }

  /** Make the folders, and remove what writes cut short by a crash left in `.partial/`. */
  async open(): Promise<void> {
    const made = await mkdir(this.partialDir, { recursive: true });
    if (made && this.o.fsync === 'always') await syncDir(made === this.dir ? this.o.dataDir : this.dir);
    const left = await readdir(this.partialDir);
    for (const name of left) await rm(join(this.partialDir, name), { recursive: true, force: true });
    if (left.length > 0) this.o.logger.warn({ count: left.length, dir: this.partialDir }, 'removed file writes a crash cut short (none of them had been kept)');
  }

  async put(meta: Attachment, bytes: Uint8Array): Promise<void> {
    checkFileToKeep(meta, bytes);
    for (;;) {
      const running = this.inFlight.get(meta.id);
      if (!running) break;
      // Whatever it ended in: if it failed, this keep tries again itself.
      await running.catch(() => undefined);
    }
    const done = this.keep(meta, bytes);
    this.inFlight.set(meta.id, done);
    try {
      await done;
    } finally {
      if (this.inFlight.get(meta.id) === done) this.inFlight.delete(meta.id);
    }
  }

  private async keep(meta: Attachment, bytes: Uint8Array): Promise<void> {
    const path = this.pathOf(meta.id);
    let found: Found;
    try {
      found = await this.find(meta.id);
    } catch (err) {
      throw new StoreUnavailableError(`cannot keep file ${meta.id}: ${describeError(err)}`, { cause: err });
    }
    if (found && 'file' in found) {
      // Kept already (the first name stays). It may have been written without a sync (a run
      // with `fsync: never`): make sure it is durable before saying so.
      if (this.o.fsync === 'always') await this.syncKept(meta.id, path);
      return;
    }
    if (found) {
      const aside = `${path}.damaged-${Date.now()}`;
      this.o.logger.error({ file: meta.id, path, problem: found.problem, movedTo: aside }, 'a kept file was damaged; moved aside and kept again from the bytes just received');
      await rename(path, aside).catch((err: unknown) => {
        throw new StoreUnavailableError(`cannot keep file ${meta.id}: moving its damaged copy aside failed: ${describeError(err)}`, { cause: err });
      });
      // Only the bytes were wrong: the name it was first kept under stays.
      if (found.meta) meta = { ...meta, name: found.meta.name };
    }
    await this.write(meta, bytes, path);
  }

  /** Write to `.partial/`, sync, rename into place, sync the folder. Nothing is left on failure. */
  private async write(meta: Attachment, bytes: Uint8Array, path: string): Promise<void> {
    const tmp = join(this.partialDir, `${meta.id}.${process.pid}.${++this.tmpCount}`);
    const header = Buffer.from(`${MAGIC}${JSON.stringify(meta)}\n`, 'utf8');
    const body = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const write = this.o.write ?? plainWrite;
    let renamed = false;
    try {
      const fh = await open(tmp, 'wx');
      try {
        await writeFully(fh, header, tmp, write);
        await writeFully(fh, body, tmp, write);
        if (this.o.fsync === 'always') await fh.datasync();
      } finally {
        await fh.close();
      }
      const folder = join(this.dir, meta.id.slice(0, 2));
      const made = await mkdir(folder, { recursive: true });
      // A new folder is itself an entry of `files/`: synced there, or a power cut could lose it.
      if (made && this.o.fsync === 'always') await syncDir(this.dir);
      await rename(tmp, path);
      renamed = true;
      if (this.o.fsync === 'always') await syncDir(folder);
    } catch (err) {
      if (!renamed) await unlink(tmp).catch(() => undefined);
      // Renamed but its folder not synced: whole, but not known durable. Refused all the same;
      // keeping it again finds it and syncs it.
      throw new StoreUnavailableError(`cannot keep file ${meta.id}: ${describeError(err)}`, { cause: err });
    }
  }

  private async syncKept(id: string, path: string): Promise<void> {
    try {
      const fh = await open(path, 'r');
      try {
        await fh.datasync();
      } finally {
        await fh.close();
      }
      await syncDir(join(this.dir, id.slice(0, 2)));
    } catch (err) {
      throw new StoreUnavailableError(`cannot keep file ${id}: syncing its kept copy failed: ${describeError(err)}`, { cause: err });
    }
  }

  /** Remove a kept file for good; its folder is synced so the removal survives a power cut too. */
  async remove(id: string): Promise<void> {
    if (!FILE_ID.test(id)) return;
    try {
      await unlink(this.pathOf(id));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw new StoreUnavailableError(`cannot remove file ${id}: ${describeError(err)}`, { cause: err });
    }
    if (this.o.fsync === 'always') await syncDir(join(this.dir, id.slice(0, 2)));
  }

  async read(id: string): Promise<StoredFile | null> {
    if (!FILE_ID.test(id)) return null;
    let found: Found;
    try {
      found = await this.find(id);
    } catch (err) {
      throw new StoreUnavailableError(`cannot read file ${id}: ${describeError(err)}`, { cause: err });
    }
    if (!found) return null;
    if ('file' in found) return found.file;
    this.o.logger.error({ file: id, path: this.pathOf(id), problem: found.problem }, 'a kept file is damaged; it is not served (kept as it is)');
    return null;
  }

  /** The file under `id`: whole and checked, damaged (why), or none. Throws when it cannot be read. */
  private async find(id: string): Promise<Found> {
    let data: Buffer;
    try {
      data = await readFile(this.pathOf(id));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
    return parseKeptFile(id, data);
  }
}

/** One kept file's content: its header and bytes, checked against the id. */
export function parseKeptFile(id: string, data: Buffer): { file: StoredFile } | { problem: string; meta?: Attachment } {
  if (data.subarray(0, MAGIC.length).toString('latin1') !== MAGIC) return { problem: 'it does not start with the chorus-file header' };
  const end = data.indexOf(0x0a, MAGIC.length);
  if (end < 0 || end > MAX_HEADER) return { problem: 'its header line has no end' };
  let meta: Attachment;
  try {
    meta = JSON.parse(data.subarray(MAGIC.length, end).toString('utf8')) as Attachment;
  } catch {
    return { problem: 'its header is not JSON' };
  }
  if (typeof meta !== 'object' || meta === null || typeof meta.name !== 'string' || typeof meta.type !== 'string' || typeof meta.size !== 'number') {
    return { problem: 'its header is not the meta of a file' };
  }
  // A copy: the caller may keep the bytes while the large read buffer goes.
  const bytes = new Uint8Array(data.subarray(end + 1));
  const problem = storedFileProblem(id, meta, bytes);
  if (!problem) return { file: { meta, bytes } };
  return meta.id === id ? { problem, meta } : { problem };
}

/** fsync a directory, so the entries just made in it survive a power cut. */
async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
