/**
 * What both stores check of a kept file. A file's id is the SHA-256 of its bytes, so a store can
 * always tell whether what it holds is what was kept: bytes that do not hash to their id (a bit
 * flipped on disk, a row changed by hand) are never served as that file.
 */
import { createHash } from 'node:crypto';
import type { Attachment } from '../core/fileTypes.js';

/** A file id: the SHA-256 of its bytes, lower-case hex. Also safe as a file name. */
export const FILE_ID = /^[0-9a-f]{64}$/;

export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/**
 * Refuse to keep what could never be read back: an id that is not the bytes' SHA-256 would be
 * found damaged at every read, and would stand in the way of the right bytes under that id.
 * A caller's mistake, not the store's: a plain Error, never StoreUnavailableError.
 */
export function checkFileToKeep(meta: Attachment, bytes: Uint8Array): void {
  if (!FILE_ID.test(meta.id)) throw new Error(`a file id must be a SHA-256 in lower-case hex, not ${JSON.stringify(meta.id).slice(0, 80)}`);
  if (meta.size !== bytes.byteLength) throw new Error(`file ${meta.id}: meta.size ${meta.size} but ${bytes.byteLength} bytes`);
  const actual = sha256Hex(bytes);
  if (actual !== meta.id) throw new Error(`file ${meta.id}: the bytes hash to ${actual}`);
}

/** Why a file read back is not the file `id`, or null when it is. */
export function storedFileProblem(id: string, meta: Attachment, bytes: Uint8Array): string | null {
  if (meta.id !== id) return `its meta names file ${String(meta.id).slice(0, 80)}`;
  if (meta.size !== bytes.byteLength) return `its meta says ${meta.size} bytes but it holds ${bytes.byteLength}`;
  const actual = sha256Hex(bytes);
  if (actual !== id) return `its bytes hash to ${actual}`;
  return null;
}
