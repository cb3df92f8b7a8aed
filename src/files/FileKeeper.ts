/**
 * The `Files` port over a Store: checks a file (inspect.ts: its type from its bytes, an image's
 * pixel count from its header, a photo's location taken out), names it by the SHA-256 of the
 * bytes it keeps, and has the store keep them durably. Channels call it before handing a message
 * over, so an acknowledged message's files are on disk (or committed) too.
 *
 * Uploads arrive spooled to disk (the web channel writes them there as they stream in), so a slow
 * or a crowd of senders holds no memory. Checking one reads it back whole — cleaning a photo's
 * location rewrites it, plain text is checked to its last byte — so the files being checked share
 * one budget (`limits.upload_bytes_in_flight`): however many uploads arrive at once, the bytes
 * held for them stay within it, and the rest wait their turn with their bytes on disk.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, rm, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { Store } from '../core/ports.js';
import type { Attachment, Files, IncomingFile, KeptFile, SpooledFile, StoredFile } from '../core/fileTypes.js';
import { sizeText } from '../core/fileTypes.js';
import { ByteBudget } from './byteBudget.js';
import { inspectFile } from './inspect.js';
import { DEFAULT_MAX_IMAGE_PIXELS } from './pixels.js';

/** Defaults of `limits.max_file_bytes`, `limits.max_files_per_message` and `limits.upload_bytes_in_flight`. */
export const DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024;
export const DEFAULT_MAX_FILES_PER_MESSAGE = 4;
export const DEFAULT_UPLOAD_BYTES_IN_FLIGHT = 64 * 1024 * 1024;

export interface FileLimits {
  max_file_bytes?: number | undefined;
  max_files_per_message?: number | undefined;
  max_image_pixels?: number | undefined;
  upload_bytes_in_flight?: number | undefined;
}

/** A file id: the SHA-256 of its bytes in lower-case hex. */
export const FILE_ID = /^[0-9a-f]{64}$/;

/** The `limits` keys FileKeeper reads. */

export class FileKeeper implements Files {
  readonly maxBytes: number;
  readonly maxPerMessage: number;
  readonly maxImagePixels: number;
  /** The bytes of spooled uploads held at once while they are checked and kept. */
  readonly budget: ByteBudget;
  private readonly spoolDir: string;
  private spoolReady: Promise<string> | null = null;

  constructor(
    private readonly store: Pick<Store, 'putFile' | 'readFile' | 'fileReferenced'>,
    limits: FileLimits = {},
    /** `spoolDir`: where uploads are written as they arrive (its content is removed at first use). */
    opts: { spoolDir?: string | undefined } = {},
  ) {
    this.maxBytes = limits.max_file_bytes ?? DEFAULT_MAX_FILE_BYTES;
    this.maxPerMessage = limits.max_files_per_message ?? DEFAULT_MAX_FILES_PER_MESSAGE;
    this.maxImagePixels = limits.max_image_pixels ?? DEFAULT_MAX_IMAGE_PIXELS;
    this.budget = new ByteBudget(limits.upload_bytes_in_flight ?? DEFAULT_UPLOAD_BYTES_IN_FLIGHT);
    this.spoolDir = resolve(opts.spoolDir ?? join(tmpdir(), `chorus-uploads-${process.pid}`));
  }

  spool(): Promise<string> {
    // What an earlier run left there was never acknowledged: its uploads were cut short.
    this.spoolReady ??= rm(this.spoolDir, { recursive: true, force: true })
      .then(() => mkdir(this.spoolDir, { recursive: true }))
      .then(() => this.spoolDir);
    return this.spoolReady;
  }

  async keep(file: IncomingFile): Promise<KeptFile> {
    return this.check(cleanFileName(file.name), file.bytes, null);
  }

  async keepSpooled(file: SpooledFile): Promise<KeptFile> {
    try {
      // Only what an upload wrote to the spool is ever read here.
      if (dirname(resolve(file.path)) !== this.spoolDir) throw new Error(`not a spooled upload: ${file.path}`);
      const name = cleanFileName(file.name);
      const refused = this.sizeProblem(name, file.size);
      if (refused) return refused;
      const release = await this.budget.take(file.size);
      try {
        const bytes = await readFile(file.path);
        return await this.check(name, bytes, bytes.byteLength === file.size ? file.sha256 : null);
      } finally {
        release();
      }
    } finally {
      await unlink(file.path).catch(() => undefined);
    }
  }

  private sizeProblem(name: string, size: number): KeptFile | null {
    if (size === 0) return { ok: false, code: 'empty', reason: `${name} is empty` };
    if (size <= this.maxBytes) return null;
    const reason = `${name} is ${sizeText(size)}; the limit is ${sizeText(this.maxBytes)}`;
    return { ok: false, code: 'too_large', reason };
  }

  /** `sha256`: the hash of `bytes` when already known (computed as they arrived). */
  private async check(name: string, bytes: Uint8Array, sha256Of: string | null): Promise<KeptFile> {
    const refused = this.sizeProblem(name, bytes.byteLength);
    if (refused) return refused;
    const seen = await inspectFile(bytes, { maxImagePixels: this.maxImagePixels });
    // "chart.png is a Windows executable (exe); only images … are taken"
    if (!seen.ok) return { ok: false, code: seen.code ?? 'unsupported_type', reason: `${name} ${seen.reason}` };
    // Bytes the check left as they were hash as they did on the way in.
    const sha256 = seen.bytes === bytes && sha256Of ? sha256Of : createHash('sha256').update(seen.bytes).digest('hex');
    const attachment: Attachment = {
      id: sha256,
      name,
      type: seen.type,
      size: seen.bytes.byteLength,
      sha256,
      ...(seen.width && seen.height ? { width: seen.width, height: seen.height } : {}),
    };
    await this.store.putFile(attachment, seen.bytes);
    return { ok: true, attachment };
  }

  /** A kept file; none once only deleted messages carried it (even before it is collected). */
  read(id: string): Promise<StoredFile | null> {
    if (!FILE_ID.test(id)) return Promise.resolve(null);
    if (this.store.fileReferenced?.(id) === false) return Promise.resolve(null);
    return this.store.readFile(id);
  }
}

/** A sender's file name as Chorus keeps it: the last path part, no control characters, at most 200 characters. */
export function cleanFileName(name: string): string {
  const base = name.split(/[\\/]/).pop() ?? '';
  // eslint-disable-next-line no-control-regex
  const clean = base.replace(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069"]/g, '').trim().slice(0, 200);
  return clean || 'file';
}
