/**
 * Taking the location out of a PNG before it is kept. A PNG carries metadata in chunks:
 *
 * - `eXIf`: an EXIF block. Its GPS data is taken out in place (exifGps.ts); the rest — the
 *   camera, the date, the Orientation — stays. A block that cannot be read safely is dropped.
 * - `tEXt`, `zTXt`, `iTXt`: text. ImageMagick keeps a JPEG's EXIF here as a "Raw profile type
 *   exif" (or "APP1") of hex digits: cleaned the same way and written back in the same form.
 *   Any other text chunk that names a position — XMP (`XML:com.adobe.xmp`, or a raw XMP or
 *   Photoshop profile), ImageMagick's `exif:GPSLatitude` properties — is dropped whole, as is
 *   one that cannot be read (bad deflate data, text that inflates past any caption).
 *
 * Every edited chunk gets its CRC again. The walk follows the chunk lengths as a decoder does;
 * bytes after IEND are no part of the image (and a reader walking on would find chunks there),
 * so they are dropped. A file cut short keeps what it has, except a metadata chunk cut in the
 * middle, which is dropped. A PNG with no location comes back as the very same bytes.
 */
import { crc32 } from 'node:zlib';
import { LOCATION_WORDS, cleanExifBlock } from './exifGps.js';
import { RAW_PROFILE, readRawProfile, readTextChunk, writeRawProfile, type TextChunk } from './pngText.js';

export type PngOutcome = { ok: true; bytes: Uint8Array; changed: boolean } | { ok: false; problem: string };

const SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
/**
 * The metadata chunks by their types in lower case: some readers (exifr among them) take a chunk
 * whatever the case of its type, so `EXIF` or `Itxt` are read as what they spell.
 */
const TEXT_CHUNKS: Record<string, 'tEXt' | 'zTXt' | 'iTXt'> = { text: 'tEXt', ztxt: 'zTXt', itxt: 'iTXt' };
const METADATA_CHUNKS = new Set(['exif', ...Object.keys(TEXT_CHUNKS)]);
/** Raw profiles that hold an EXIF block (ImageMagick names a JPEG's APP1 segment either way). */
const EXIF_PROFILES = new Set(['exif', 'app1']);
const XMP_SIGNATURE = 'http://ns.adobe.com/xap/1.0/\0';
/** A TIFF header in either byte order: an EXIF block inside another profile (Photoshop's resources). */
const TIFF_HEADER = /II\x2a\x00|MM\x00\x2a/;

/** What becomes of one chunk: kept, dropped, or new data in its place. */
type ChunkEdit = 'keep' | 'drop' | Uint8Array;

/** The PNG without location metadata; a problem when it is not a PNG at all. */
export function removePngLocation(input: Uint8Array): PngOutcome {
  const b = Buffer.from(input.buffer, input.byteOffset, input.byteLength);
  if (b.length < SIGNATURE.length || SIGNATURE.some((x, i) => b[i] !== x)) {
    return { ok: false, problem: 'it does not start with the PNG signature' };
  }
  const parts: Uint8Array[] = [b.subarray(0, SIGNATURE.length)];
  let changed = false;
  let pos = SIGNATURE.length;
  while (pos < b.length) {
    // Too short for a chunk's length and type: nothing a reader can take as metadata.
    if (pos + 8 > b.length) {
      parts.push(b.subarray(pos));
      break;
    }
    const length = b.readUInt32BE(pos);
    const type = b.toString('latin1', pos + 4, pos + 8);
    const end = pos + 12 + length;
    if (length > 0x7fffffff || end > b.length) {
      if (METADATA_CHUNKS.has(type.toLowerCase())) changed = true;
      else parts.push(b.subarray(pos));
      break;
    }
    const edit = editChunk(type, b.subarray(pos + 8, pos + 8 + length));
    if (edit === 'keep') parts.push(b.subarray(pos, end));
    else {
      changed = true;
      if (edit !== 'drop') parts.push(chunk(type, edit));
    }
    pos = end;
    if (type === 'IEND') {
      if (pos < b.length) changed = true;
      break;
    }
  }
  if (!changed) return { ok: true, bytes: input, changed: false };
  return { ok: true, bytes: new Uint8Array(Buffer.concat(parts)), changed: true };
}

function editChunk(type: string, data: Uint8Array): ChunkEdit {
  const kind = type.toLowerCase();
  if (kind === 'exif') {
    const { outcome, bytes } = cleanExifBlock(data);
    return outcome === 'none' ? 'keep' : outcome === 'removed' ? bytes : 'drop';
  }
  const textType = TEXT_CHUNKS[kind];
  if (!textType) return 'keep';
  const text = readTextChunk(textType, data);
  if (!text) return 'drop';
  const raw = RAW_PROFILE.exec(text.keyword);
  if (raw) return editRawProfile(text, raw[1]!.toLowerCase());
  return LOCATION_WORDS.test(text.words) ? 'drop' : 'keep';
}

/** A raw profile: its EXIF block cleaned, or the profile dropped when it holds a position any other way. */
function editRawProfile(text: TextChunk, kind: string): ChunkEdit {
  const profile = readRawProfile(text.text);
  if (!profile) return 'drop';
  const latin1 = profile.bytes.toString('latin1');
  if (!EXIF_PROFILES.has(kind) || latin1.startsWith(XMP_SIGNATURE)) {
    return LOCATION_WORDS.test(latin1) || TIFF_HEADER.test(latin1) ? 'drop' : 'keep';
  }
  const { outcome, bytes } = cleanExifBlock(profile.bytes);
  if (outcome === 'none') return 'keep';
  if (outcome === 'malformed') return 'drop';
  return text.rewrite(writeRawProfile({ name: profile.name, bytes: Buffer.from(bytes) }));
}

/** A chunk: length, type, data and the CRC of type and data. */
function chunk(type: string, data: Uint8Array): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(data, crc32(head.subarray(4))) >>> 0);
  return Buffer.concat([head, data, crc]);
}
