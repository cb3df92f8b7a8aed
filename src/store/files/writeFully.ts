/**
 * Writes that either land whole or are known to have failed. `write(2)` may take only part of
 * what it was given: on a full disk Linux writes what fits and reports ENOSPC only on the next
 * call. A store that counted the length it asked for would acknowledge a record of which only a
 * prefix is on disk, and a later "take it back" truncate to that inflated size would pad the file
 * with NUL bytes. Every write of the file store goes through here.
 */
import { open, rename, unlink, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/** One `write(2)`: how many bytes of `data[offset, offset + length)` the file took. */
export type WriteFn = (fh: FileHandle, data: Buffer, offset: number, length: number, path: string) => Promise<{ bytesWritten: number }>;

export const plainWrite: WriteFn = (fh, data, offset, length) => fh.write(data, offset, length);

/**
 * Write all of `data` at the file's position (its end, for a file opened to append): what a
 * write did not take is written again. An error part-way is thrown as it came, with the part
 * already written left in the file for the caller to take back (see `truncateBack`).
 */
export async function writeFully(fh: FileHandle, data: Buffer, path: string, write: WriteFn = plainWrite): Promise<void> {
  let done = 0;
  while (done < data.length) {
    const { bytesWritten } = await write(fh, data, done, data.length - done, path);
    // No progress and no error: calling again would spin, and the rest is not on disk.
    if (!(bytesWritten > 0)) throw Object.assign(new Error(`short write: ${path} took ${done} of ${data.length} bytes, then none`), { code: 'EIO' });
    done += bytesWritten;
  }
}

/**
 * Take a file back to `size`, the length known to hold only complete writes, after a write
 * failed. Never further than the file really is: truncating past its end would grow it with NUL
 * bytes. Returns the length the file has now.
 */
export async function truncateBack(fh: FileHandle, size: number): Promise<number> {
  const { size: now } = await fh.stat();
  if (now <= size) return now;
  await fh.truncate(size);
  return size;
}

/**
 * Replace a small file at once: write a temporary file beside it in full, then rename it over the
 * old one, so a reader sees the old content or the new, never a part. A failed write leaves the
 * old file as it was and removes the temporary one (it would only take space on a full disk).
 */
export async function replaceFile(path: string, text: string, write: WriteFn = plainWrite): Promise<void> {
  const tmp = join(dirname(path), `.${basename(path)}.tmp`);
  const fh = await open(tmp, 'w');
  try {
    await writeFully(fh, Buffer.from(text, 'utf8'), tmp, write);
    await fh.close();
  } catch (err) {
    await fh.close().catch(() => undefined);
    await unlink(tmp).catch(() => undefined);
    throw err;
  }
  await rename(tmp, path);
}
