/**
 * The `Files` port over a Store: checks a file (inspect.ts: its type from its bytes, a JPEG's
 * location taken out), names it by the SHA-256 of the bytes it keeps, and has the store keep
 * them durably. Channels call it before handing a message over,
 * so an acknowledged message's files are on disk (or committed) too.
 */
import { createHash } from 'node:crypto';
import type { Store } from '../core/ports.js';
import type { Attachment, Files, IncomingFile, KeptFile, StoredFile } from '../core/fileTypes.js';
import { sizeText } from '../core/fileTypes.js';
import { inspectFile } from './inspect.js';

/** Defaults of `limits.max_file_bytes` and `limits.max_files_per_message`. */
export const DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024;
export const DEFAULT_MAX_FILES_PER_MESSAGE = 4;

/** A file id: the SHA-256 of its bytes in lower-case hex. */
export const FILE_ID = /^[0-9a-f]{64}$/;

export class FileKeeper implements Files {
  readonly maxBytes: number;
  readonly maxPerMessage: number;

  constructor(
    private readonly store: Pick<Store, 'putFile' | 'readFile' | 'fileReferenced'>,
    limits: { max_file_bytes?: number | undefined; max_files_per_message?: number | undefined } = {},
  ) {
    this.maxBytes = limits.max_file_bytes ?? DEFAULT_MAX_FILE_BYTES;
    this.maxPerMessage = limits.max_files_per_message ?? DEFAULT_MAX_FILES_PER_MESSAGE;
  }

  async keep(file: IncomingFile): Promise<KeptFile> {
    const name = cleanFileName(file.name);
    if (file.bytes.byteLength === 0) return { ok: false, code: 'empty', reason: `${name} is empty` };
    if (file.bytes.byteLength > this.maxBytes) {
      return { ok: false, code: 'too_large', reason: `${name} is ${sizeText(file.bytes.byteLength)}; the limit is ${sizeText(this.maxBytes)}` };
    }
    const seen = await inspectFile(file.bytes);
    // "chart.png is a Windows executable (exe); only images … are taken"
    if (!seen.ok) return { ok: false, code: 'unsupported_type', reason: `${name} ${seen.reason}` };
    const sha256 = createHash('sha256').update(seen.bytes).digest('hex');
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
