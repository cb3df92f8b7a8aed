/**
 * Taking the location out of a WebP before it is kept. WebP is a RIFF file of chunks; metadata is
 * an `EXIF` chunk (an EXIF block: its GPS data taken out in place, exifGps.ts, so it keeps its
 * length; one that cannot be read safely is dropped) and an `XMP ` chunk (dropped when it names
 * a position). When a chunk is dropped, the VP8X header's flag for it is cleared once no chunk
 * of its kind is left, and the RIFF size is written again.
 *
 * The walk follows the chunk sizes (each padded to an even length) within the RIFF size; bytes
 * past it are no part of the image and are dropped. A file cut short keeps what it has, except
 * a metadata chunk cut in the middle, which is dropped. A WebP with no location comes back as the
 * very same bytes.
 */
import { LOCATION_WORDS, cleanExifBlock } from './exifGps.js';

export type WebpOutcome = { ok: true; bytes: Uint8Array; changed: boolean } | { ok: false; problem: string };

const METADATA = new Set(['EXIF', 'XMP ']);
/** The VP8X flags of the metadata chunks. */
const FLAG: Record<string, number> = { EXIF: 0x08, 'XMP ': 0x04 };

interface Chunk {
  fourcc: string;
  /** The whole chunk as it will be written: header, data, pad. */
  bytes: Uint8Array;
}

/** The WebP without location metadata; a problem when its RIFF header is not a WebP's. */
export function removeWebpLocation(input: Uint8Array): WebpOutcome {
  const b = Buffer.from(input.buffer, input.byteOffset, input.byteLength);
  if (b.length < 12 || b.toString('latin1', 0, 4) !== 'RIFF' || b.toString('latin1', 8, 12) !== 'WEBP') {
    return { ok: false, problem: 'it has no RIFF WEBP header' };
  }
  // The RIFF size counts from the form type on; a decoder reads no further.
  const declared = b.readUInt32LE(4);
  if (declared < 12) return { ok: false, problem: 'its RIFF size leaves no room for an image' };
  const end = Math.min(b.length, declared + 8);
  let changed = end < b.length;
  const chunks: Chunk[] = [];
  let pos = 12;
  while (pos < end) {
    // Too short for a chunk header: nothing a reader can take as metadata.
    if (pos + 8 > end) {
      chunks.push({ fourcc: '', bytes: b.subarray(pos, end) });
      break;
    }
    const fourcc = b.toString('latin1', pos, pos + 4);
    const size = b.readUInt32LE(pos + 4);
    const dataEnd = pos + 8 + size;
    if (dataEnd > end) {
      if (METADATA.has(fourcc)) changed = true;
      else chunks.push({ fourcc, bytes: b.subarray(pos, end) });
      break;
    }
    const chunkEnd = Math.min(end, dataEnd + (size & 1));
    const edit = editChunk(fourcc, b.subarray(pos + 8, dataEnd));
    if (edit === 'keep') chunks.push({ fourcc, bytes: b.subarray(pos, chunkEnd) });
    else {
      changed = true;
      // New data of the same length: the header and the pad stay.
      const [head, pad] = [b.subarray(pos, pos + 8), b.subarray(dataEnd, chunkEnd)];
      if (edit !== 'drop') chunks.push({ fourcc, bytes: Buffer.concat([head, edit, pad]) });
    }
    pos = chunkEnd;
  }
  if (!changed) return { ok: true, bytes: input, changed: false };
  clearFlags(chunks);
  const out = Buffer.concat([b.subarray(0, 12), ...chunks.map((c) => c.bytes)]);
  out.writeUInt32LE(out.length - 8, 4);
  return { ok: true, bytes: new Uint8Array(out), changed: true };
}

function editChunk(fourcc: string, data: Uint8Array): 'keep' | 'drop' | Uint8Array {
  if (fourcc === 'EXIF') {
    const { outcome, bytes } = cleanExifBlock(data);
    return outcome === 'none' ? 'keep' : outcome === 'removed' ? bytes : 'drop';
  }
  if (fourcc === 'XMP ') return LOCATION_WORDS.test(Buffer.from(data).toString('latin1')) ? 'drop' : 'keep';
  return 'keep';
}

/** The VP8X flags of metadata no longer there, cleared (in a copy of the VP8X chunk). */
function clearFlags(chunks: Chunk[]): void {
  const i = chunks.findIndex((c) => c.fourcc === 'VP8X');
  if (i < 0 || chunks[i]!.bytes.length < 9) return;
  const vp8x = new Uint8Array(chunks[i]!.bytes);
  for (const [fourcc, flag] of Object.entries(FLAG)) {
    if (!chunks.some((c) => c.fourcc === fourcc)) vp8x[8] = vp8x[8]! & ~flag;
  }
  chunks[i] = { fourcc: 'VP8X', bytes: vp8x };
}
