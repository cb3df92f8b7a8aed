/**
 * Writing an uploaded file to the spool folder as it arrives: through a hash and a byte count into
 * a file of its own, with backpressure end to end (the request is read only as fast as the disk
 * takes the bytes), so no upload is ever held whole in memory however slow or many the senders.
 * The spool is not the store: a spooled file is read back, checked and kept by the keeper
 * (FileKeeper.keepSpooled), and removed either way; what a crash leaves there is removed at the
 * next start.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream, type WriteStream } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { SpooledFile } from '../../core/fileTypes.js';

let count = 0;

export class SpoolWriter {
  readonly path: string;
  private out: WriteStream | null = null;

  constructor(dir: string) {
    this.path = join(dir, `upload-${process.pid}-${++count}-${randomBytes(6).toString('hex')}`);
  }

  /** Write the part out; resolves once all of it is in the file (unsynced: the kept copy is made durable). */
  async write(part: Readable): Promise<Omit<SpooledFile, 'name'>> {
    const hash = createHash('sha256');
    let size = 0;
    const counted = new Transform({
      transform(chunk: Buffer, _enc, done) {
        size += chunk.length;
        hash.update(chunk);
        done(null, chunk);
      },
    });
    this.out = createWriteStream(this.path, { flags: 'wx' });
    try {
      await pipeline(part, counted, this.out);
    } catch (err) {
      await unlink(this.path).catch(() => undefined);
      throw err;
    }
    return { path: this.path, size, sha256: hash.digest('hex') };
  }

  /** The message was refused while this part was still arriving: stop, and remove what was written. */
  abandon(): void {
    this.out?.destroy(new Error('the upload was refused'));
  }
}

/** Remove spooled files a message will not keep. */
export async function discardSpooled(files: readonly Pick<SpooledFile, 'path'>[]): Promise<void> {
  await Promise.all(files.map((f) => unlink(f.path).catch(() => undefined)));
}
