/**
 * Files a request sends in full (`ChatTurn.attachments`), the part both real providers share:
 * reading their bytes once per request, and the words around them.
 *
 * Which files go in full is the core's decision (agents that see, `llm.max_images_in_prompt`, the
 * context budget); a provider only renders them. Every turn's text already carries each file's
 * line (`[image: chart.png, 800×600, 120 KB]`), so a file a provider cannot send — unreadable, a
 * kind the API does not take, over an API limit, over `limits.max_image_pixels` — is sent as that
 * line again with a note, and the words of the turn never change.
 *
 * Everything here is a pure function of the attachment and its bytes: a history turn with a file
 * renders byte for byte the same on every call, so it stays in the provider's cached prefix.
 */
import type { PromptAttachment, StoredFile } from '../core/fileTypes.js';
import { attachmentLine } from '../core/fileTypes.js';
import type { LlmRequest, Logger } from '../core/ports.js';
import { headerSize, pixelsText } from '../files/pixels.js';

/** The bytes of a request's files by id; null: the file could not be read. */
export type PromptFiles = ReadonlyMap<string, StoredFile | null>;

/** No files read: every attachment is sent as its line. */
export const NO_FILES: PromptFiles = new Map();

/**
 * Read every file the request's turns name, once each (several turns may share a file). A read
 * that fails counts as a file that could not be read: the turn still goes out, with the line,
 * rather than the whole call failing over one file.
 */
export async function readPromptFiles(req: LlmRequest, logger?: Logger): Promise<PromptFiles> {
  const ids = new Set<string>();
  for (const m of req.messages) for (const a of m.attachments ?? []) ids.add(a.id);
  if (ids.size === 0) return NO_FILES;
  const read = req.readFile;
  const out = new Map<string, StoredFile | null>();
  await Promise.all(
    [...ids].map(async (id) => {
      if (!read) return out.set(id, null);
      try {
        out.set(id, await read(id));
      } catch (err) {
        logger?.warn({ fileId: id, err: String(err) }, 'could not read a file for the prompt; its line is sent instead');
        out.set(id, null);
      }
    }),
  );
  return out;
}

/** What a file is called in a label: `Image`, `PDF`, `Text file`. */
function kindOf(a: PromptAttachment): string {
  return a.type.startsWith('image/') ? 'Image' : a.type === 'application/pdf' ? 'PDF' : 'Text file';
}

/** Names and senders inside quotes and labels: without the characters that would end them. */
function quoted(s: string): string {
  return s.replace(/["\r\n]/g, ' ').trim() || '?';
}

/** The text before a file sent in full: `Image "chart.png" shared by Maya:`. */
export function fileLabel(a: PromptAttachment): string {
  return `${kindOf(a)} "${quoted(a.name)}" shared by ${quoted(a.from)}:`;
}

/** What stands in for a file that cannot be sent: who shared it, that it is not shown, and its line. */
export function unshownFile(a: PromptAttachment, why: string): string {
  return `${kindOf(a)} "${quoted(a.name)}" shared by ${quoted(a.from)} (not shown: ${why}): ${attachmentLine(a)}`;
}

/** A text file's content as text (UTF-8; a byte-order mark dropped, bad sequences replaced). */
export function textOf(bytes: Uint8Array): string {
  return new TextDecoder().decode(bytes);
}

export function base64Of(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

/** Base64 length of `n` bytes, without encoding them. */
export function base64Length(n: number): number {
  return Math.ceil(n / 3) * 4;
}

/** The readable bytes of an attachment, or null (not read, or no file with that id). */
export function bytesOf(files: PromptFiles, a: PromptAttachment): Uint8Array | null {
  return files.get(a.id)?.bytes ?? null;
}

/**
 * Why an image is not sent for its pixels, or null. A server decodes what it is sent: an image
 * over `limits.max_image_pixels` (kept before the limit was lowered, or before it existed) never
 * goes. The size is the one its header states — its attachment's when the header cannot be read.
 */
export function tooManyPixels(a: PromptAttachment, bytes: Uint8Array, maxPixels: number): string | null {
  if (!a.type.startsWith('image/')) return null;
  const size = headerSize(bytes) ?? (a.width && a.height ? { width: a.width, height: a.height } : null);
  if (!size || size.width * size.height <= maxPixels) return null;
  return `over the ${pixelsText(maxPixels)} an image may have`;
}
