/**
 * What a file is, from its bytes: its type (magic bytes, never its name or a claimed type), its
 * pixel size, and the bytes to keep (a JPEG, PNG or WebP without location metadata:
 * jpegLocation.ts, pngLocation.ts, webpLocation.ts).
 *
 * An image whose header states more pixels than `limits.max_image_pixels` is refused before
 * anything reads further into it (pixels.ts): a small file can say 30000×30000.
 *
 * The type is `file-type`'s answer when it is one Chorus takes. Where it has none, the leading
 * bytes of the five kinds are checked too (an image cut short before the chunks `file-type`
 * reads is still that image; a browser shows what it can of it). Everything else is plain text
 * only when it is valid UTF-8 with no control characters other than whitespace — text has no
 * magic bytes, and a NUL or a stray control byte means binary data, whatever its name says.
 */
import { isUtf8 } from 'node:buffer';
import { fileTypeFromBuffer } from 'file-type';
import type { AttachmentType } from '../core/fileTypes.js';
import { describeKind } from './fileKinds.js';
import { removeJpegLocation } from './jpegLocation.js';
import { DEFAULT_MAX_IMAGE_PIXELS, headerSize, overPixelLimit } from './pixels.js';
import { removePngLocation } from './pngLocation.js';
import { removeWebpLocation } from './webpLocation.js';

export type Inspected =
  | {
      ok: true;
      type: AttachmentType;
      bytes: Uint8Array;
      width?: number | undefined;
      height?: number | undefined;
    }
  | { ok: false; reason: string; code?: 'too_many_pixels' | undefined };

export interface InspectOptions {
  /** `limits.max_image_pixels`. */
  maxImagePixels?: number | undefined;
}

/** The end of every refusal for a type: what is taken. */
export const TAKEN = 'only images (PNG, JPEG, GIF, WebP), PDF and plain text are taken';

/** `file-type`'s MIME types of what Chorus takes (an animated PNG is a PNG to every viewer). */
const ACCEPTED: Record<string, AttachmentType> = {
  'image/png': 'image/png',
  'image/apng': 'image/png',
  'image/jpeg': 'image/jpeg',
  'image/gif': 'image/gif',
  'image/webp': 'image/webp',
  'application/pdf': 'application/pdf',
};

/**
 * The file's type and the bytes to keep, or why it is not taken. `reason` reads after the file's
 * name: "report.exe is a Windows executable (exe); only images … are taken".
 */
export async function inspectFile(bytes: Uint8Array, opts: InspectOptions = {}): Promise<Inspected> {
  const found = await fileTypeFromBuffer(bytes);
  const type = (found && ACCEPTED[found.mime]) ?? leadingBytesType(bytes);
  if (!type) {
    const text = textProblem(bytes);
    if (!text) return { ok: true, type: 'text/plain', bytes };
    if (found) return { ok: false, reason: `is ${describeKind(found)}; ${TAKEN}` };
    return { ok: false, reason: `${text}; ${TAKEN}` };
  }
  const size = type.startsWith('image/') ? headerSize(bytes) : null;
  const over = size && overPixelLimit(size, opts.maxImagePixels ?? DEFAULT_MAX_IMAGE_PIXELS);
  if (over) return { ok: false, code: 'too_many_pixels', reason: over };
  const cleaned = withoutLocation(type, bytes);
  if (!cleaned.ok) return { ok: false, reason: cleaned.reason };
  return { ok: true, type, bytes: cleaned.bytes, ...pixelSize(cleaned.bytes, type) };
}

type Cleaned = { ok: true; bytes: Uint8Array } | { ok: false; problem: string };
type Checked = { ok: true; bytes: Uint8Array } | { ok: false; reason: string };

/** The kinds that carry location metadata: their name in a refusal, and what takes it out. */
const CLEANERS: Partial<Record<AttachmentType, [string, (b: Uint8Array) => Cleaned]>> = {
  'image/jpeg': ['JPEG', removeJpegLocation],
  'image/png': ['PNG', removePngLocation],
  'image/webp': ['WebP', removeWebpLocation],
};

/** The bytes without location metadata; why not, when the file is too damaged to check. */
function withoutLocation(type: AttachmentType, bytes: Uint8Array): Checked {
  const cleaner = CLEANERS[type];
  if (!cleaner) return { ok: true, bytes };
  const [kind, clean] = cleaner;
  const cleaned = clean(bytes);
  if (cleaned.ok) return cleaned;
  return { ok: false, reason: `is a damaged ${kind} (${cleaned.problem}), so its location data could not be checked` };
}

/** The leading bytes of the kinds Chorus takes, for what `file-type` cannot place. */
function leadingBytesType(b: Uint8Array): AttachmentType | null {
  const starts = (at: number, ...sig: number[]) => sig.every((x, i) => b[at + i] === x);
  if (starts(0, 0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return 'image/png';
  if (starts(0, 0xff, 0xd8, 0xff)) return 'image/jpeg';
  if (starts(0, 0x47, 0x49, 0x46, 0x38) && (starts(4, 0x37, 0x61) || starts(4, 0x39, 0x61))) return 'image/gif';
  if (starts(0, 0x52, 0x49, 0x46, 0x46) && starts(8, 0x57, 0x45, 0x42, 0x50)) return 'image/webp';
  if (starts(0, 0x25, 0x50, 0x44, 0x46, 0x2d)) return 'application/pdf';
  return null;
}

/** Why the bytes are not plain text, or null when they are. */
export function textProblem(b: Uint8Array): string | null {
  if (!isUtf8(b)) return 'is not a kind of file Chorus recognises, nor UTF-8 text';
  for (let i = 0; i < b.length; i++) {
    const c = b[i]!;
    // Tab, line feed, vertical tab, form feed and carriage return are text; other C0 controls and DEL are not.
    if ((c < 0x20 && (c < 0x09 || c > 0x0d)) || c === 0x7f) return c === 0 ? 'is binary data (it holds NUL bytes), not text' : 'is binary data (it holds control characters), not text';
  }
  return null;
}

/** Width and height as the image is shown: a JPEG turned by its EXIF Orientation (5–8) swaps them. */
function pixelSize(bytes: Uint8Array, type: AttachmentType): { width?: number; height?: number } {
  if (!type.startsWith('image/')) return {};
  const size = headerSize(bytes);
  // A header image-size cannot read: the image is kept without a size.
  if (!size) return {};
  const turned = type === 'image/jpeg' && (size.orientation ?? 1) >= 5 && (size.orientation ?? 1) <= 8;
  return turned ? { width: size.height, height: size.width } : { width: size.width, height: size.height };
}
