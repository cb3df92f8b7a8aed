/**
 * Files people and agents share: the attachment an entry carries, and the port through which
 * adapters keep and read their bytes. The bytes never travel inside entries or records; an entry
 * names its files by id, and the store keeps them content-addressed beside the log.
 */

/** The kinds of file Chorus takes, decided from the bytes themselves (never from a name or a claimed type). */
export type AttachmentType = 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp' | 'application/pdf' | 'text/plain';

/** A file attached to a transcript entry. Plain JSON, recorded with the entry. */
export interface Attachment {
  /** The file's id: the SHA-256 (lower-case hex) of the bytes as kept. Equal bytes, equal id. */
  id: string;
  /** The sender's name for it, cleaned (no folders, no control characters), for display and download. */
  name: string;
  type: AttachmentType;
  /** Bytes as kept (after location metadata was removed from a JPEG, PNG or WebP). */
  size: number;
  /** Same as `id`; kept under its own name so a reader need not know how ids are made. */
  sha256: string;
  /** Images: their size in pixels, when the header says. */
  width?: number | undefined;
  height?: number | undefined;
}

/** A file sent to a model in full, with who shared it (the provider labels it with both). */
export interface PromptAttachment extends Attachment {
  from: string;
}

/** A kept file: what it is, and its bytes. */
export interface StoredFile {
  meta: Attachment;
  bytes: Uint8Array;
}

/** A file a channel received, before it is checked and kept. */
export interface IncomingFile {
  /** The name the sender gave (or the platform's, or one made up from the type). */
  name: string;
  bytes: Uint8Array;
}

/**
 * Why a file was not taken: over `limits.max_file_bytes`, an image of more pixels than
 * `limits.max_image_pixels`, a type Chorus does not take, or no bytes.
 */
export type FileRefusalCode = 'too_large' | 'too_many_pixels' | 'unsupported_type' | 'empty';

/**
 * A file an upload wrote to disk while it arrived, so that its bytes were never held whole while
 * the client sent them; `sha256` was computed on the way. Read back only to be checked and kept.
 */
export interface SpooledFile {
  name: string;
  path: string;
  size: number;
  sha256: string;
}

export type KeptFile = { ok: true; attachment: Attachment } | { ok: false; code: FileRefusalCode; reason: string };

/**
 * Keeping and reading files (src/files/ implements it over the Store). Channels keep a message's
 * files first and hand the message over with their attachments after: once the message is
 * acknowledged, its files are durable too.
 */
export interface Files {
  /** `limits.max_file_bytes`: a channel checks a platform's stated size before downloading. */
  readonly maxBytes: number;
  /** `limits.max_files_per_message`. */
  readonly maxPerMessage: number;
  /** `limits.max_image_pixels`: an image whose header states more is refused. */
  readonly maxImagePixels: number;
  /**
   * Check a file (its type from its magic bytes, its size, an image's pixels), remove location
   * metadata from a JPEG, PNG or WebP, and keep it durably.
   * Throws StoreUnavailableError when the store cannot write (nothing kept).
   */
  keep(file: IncomingFile): Promise<KeptFile>;
  /**
   * The folder an upload is written to while it arrives (made, and emptied of what an earlier run
   * left, at the first call); null when files are not taken.
   */
  spool(): Promise<string | null>;
  /**
   * Check and keep a spooled file as `keep` does, then remove it (kept or not). The bytes are read
   * back whole to be checked, within a budget all uploads share (`limits.upload_bytes_in_flight`):
   * past it, a keep waits for the ones before it.
   */
  keepSpooled(file: SpooledFile): Promise<KeptFile>;
  /** A kept file, or null when there is none with this id (or only deleted messages carried it). */
  read(id: string): Promise<StoredFile | null>;
}

/** Files for a gateway built without a keeper (tests of other parts): none is taken; kept ones are read. */
export function noFiles(store: { readFile(id: string): Promise<StoredFile | null> }): Files {
  return {
    maxBytes: 0,
    maxPerMessage: 0,
    maxImagePixels: 0,
    keep: async () => ({ ok: false, code: 'unsupported_type', reason: 'this gateway takes no files' }),
    spool: async () => null,
    keepSpooled: async () => ({ ok: false, code: 'unsupported_type', reason: 'this gateway takes no files' }),
    read: (id) => store.readFile(id),
  };
}

/** What a chat is told when a person's files were not taken: one line, naming each file and why. */
export function fileRefusalNotice(author: string, refusals: readonly string[]): string {
  return `⚠ ${author}: ${refusals.join('; ')}. Only images (PNG, JPEG, GIF, WebP), PDF and plain text up to the size limit reach the agents.`;
}

/**
 * The kept bytes of files to post, in order. A file that cannot be read (never expected: a file is
 * deleted only once no message carries it) is left out and reported through `missing`, so the post
 * still goes out.
 */
export async function readKept(files: Pick<Files, 'read'>, list: readonly Attachment[], missing: (a: Attachment) => void): Promise<Array<{ meta: Attachment; bytes: Uint8Array }>> {
  const out: Array<{ meta: Attachment; bytes: Uint8Array }> = [];
  for (const a of list) {
    const f = await files.read(a.id);
    if (f) out.push({ meta: a, bytes: f.bytes });
    else missing(a);
  }
  return out;
}

/** Lines like `[image: chart.png, 800×600, 120 KB]`: how a file reads where it is not shown in full. */
export function attachmentLine(a: Attachment): string {
  const kind = a.type.startsWith('image/') ? 'image' : a.type === 'application/pdf' ? 'PDF' : 'text file';
  const parts = [a.name.replace(/[\]\r\n]/g, ' ')];
  if (a.width && a.height) parts.push(`${a.width}\u00d7${a.height}`);
  parts.push(sizeText(a.size));
  return `[${kind}: ${parts.join(', ')}]`;
}

/** A byte count as people read it: `512 B`, `120 KB`, `4.2 MB`. */
export function sizeText(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}
