/**
 * Taking the location out of a JPEG before it is kept: GPS data from every `Exif` APP1 segment
 * (exifGps.ts, in place), and every XMP APP1 segment dropped when any of them names a GPS
 * position (XMP holds it as text, `exif:GPSLatitude`, a drone's `GpsLongitude`…; an Extended XMP
 * packet split over several segments is read joined). A JPEG with no location comes back as the
 * very same bytes.
 *
 * The walk follows the segments as a decoder does: markers, their lengths, fill bytes, and the
 * entropy-coded data after each SOS scanned to the next real marker (stuffed `FF 00` and restart
 * markers skipped), so segments between the scans of a progressive JPEG are seen, and the image
 * ends at its EOI. Images after it (the secondary images of an MPF file: previews, depth and
 * gain maps) are found by their SOI and cleaned the same way.
 *
 * An EXIF block that cannot be read safely is dropped whole rather than kept with a location.
 * Where later parts of the file are found by offsets — in a file with an MPF index, and in
 * every image after the first — nothing may change length: a segment is then blanked instead
 * (turned into a comment segment of zeros of the same length), never removed.
 */
import { LOCATION_WORDS, removeExifGps } from './exifGps.js';

export type JpegOutcome = { ok: true; bytes: Uint8Array; changed: boolean } | { ok: false; problem: string };

interface Segment {
  /** Where its marker starts (the 0xFF) and where it ends. */
  start: number;
  end: number;
  marker: number;
}

interface Edit {
  start: number;
  end: number;
  /** Bytes in its place; empty to remove it. */
  with: Uint8Array;
}

const APP1 = 0xe1;
const APP2 = 0xe2;
const SOS = 0xda;
const EOI = 0xd9;
const EXIF = ascii('Exif\0');
const XMP = ascii('http://ns.adobe.com/xap/1.0/\0');
const XMP_EXTENSION = ascii('http://ns.adobe.com/xmp/extension/\0');
const MPF = ascii('MPF\0');

function ascii(s: string): Uint8Array {
  return Uint8Array.from(s, (c) => c.charCodeAt(0));
}

/** The JPEG without location metadata; a problem when its segments cannot be followed to its image data. */
export function removeJpegLocation(input: Uint8Array): JpegOutcome {
  const b = Buffer.from(input.buffer, input.byteOffset, input.byteLength);
  const first = walk(b, 0);
  if ('problem' in first) return { ok: false, problem: first.problem };
  const fixedLayout = first.segments.some((s) => s.marker === APP2 && startsWith(b, s.start + 4, MPF));
  const edits = cleanImage(b, first.segments, fixedLayout);
  // Later images: never change their length, the offsets that find them would be wrong.
  let tries = 0;
  for (let at = b.indexOf(SOI_PREFIX, first.end); at >= 0; ) {
    // A real file has a few; thousands are a file made to keep this walk busy.
    if (++tries > MAX_LATER_IMAGES) return { ok: false, problem: 'it holds too many embedded images to check them for a location' };
    const next = walk(b, at);
    if ('problem' in next) {
      at = b.indexOf(SOI_PREFIX, at + 1);
      continue;
    }
    edits.push(...cleanImage(b, next.segments, true));
    at = b.indexOf(SOI_PREFIX, Math.max(next.end, at + 1));
  }
  if (edits.length === 0) return { ok: true, bytes: input, changed: false };
  edits.sort((x, y) => x.start - y.start);
  const parts: Uint8Array[] = [];
  let at = 0;
  for (const e of edits) {
    parts.push(b.subarray(at, e.start), e.with);
    at = e.end;
  }
  parts.push(b.subarray(at));
  return { ok: true, bytes: new Uint8Array(Buffer.concat(parts)), changed: true };
}

const SOI_PREFIX = Buffer.from([0xff, 0xd8, 0xff]);
/** Places after the first image that look like the start of another one, at most. */
const MAX_LATER_IMAGES = 1000;

/**
 * The segments of the image starting at `start` (its SOI), up to the first SOS and every one
 * between later scans, and where the image ends (after its EOI; the end of the data when it is
 * cut short inside its image data). A problem when it ends before any image data.
 */
function walk(b: Buffer, start: number): { segments: Segment[]; end: number } | { problem: string } {
  if (b[start] !== 0xff || b[start + 1] !== 0xd8) return { problem: 'it does not start with a JPEG SOI marker' };
  const segments: Segment[] = [];
  let pos = start + 2;
  let scanned = false;
  for (;;) {
    // Bytes that are not a marker where one belongs are skipped, as decoders skip them.
    const ff = b.indexOf(0xff, pos);
    if (ff < 0 || ff + 1 >= b.length) return scanned ? { segments, end: b.length } : { problem: 'it ends before its image data' };
    pos = ff;
    while (b[pos + 1] === 0xff) pos++;
    if (pos + 1 >= b.length) return scanned ? { segments, end: b.length } : { problem: 'it ends before its image data' };
    const marker = b[pos + 1]!;
    if (marker === EOI) return scanned ? { segments, end: pos + 2 } : { problem: 'it ends before its image data' };
    if (marker === 0x00 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      pos += 2;
      continue;
    }
    if (marker === 0xd8) return { problem: 'a second SOI inside the image' };
    if (pos + 4 > b.length) return scanned ? { segments, end: b.length } : { problem: 'it ends inside a segment header' };
    const length = b.readUInt16BE(pos + 2);
    if (length < 2 || pos + 2 + length > b.length) {
      return scanned ? { segments, end: b.length } : { problem: 'a segment runs past the end of the file' };
    }
    segments.push({ start: pos, end: pos + 2 + length, marker });
    pos += 2 + length;
    if (marker === SOS) {
      scanned = true;
      pos = entropyEnd(b, pos);
    }
  }
}

/** Where the entropy-coded data that starts at `pos` ends: at the next marker that is not a restart. */
function entropyEnd(b: Buffer, pos: number): number {
  for (let at = pos; ; ) {
    const ff = b.indexOf(0xff, at);
    if (ff < 0 || ff + 1 >= b.length) return b.length;
    const next = b[ff + 1]!;
    // FF 00 is a stuffed byte, FF D0–D7 a restart marker, FF FF fill before a marker.
    if (next === 0x00 || (next >= 0xd0 && next <= 0xd7) || next === 0xff) at = ff + 1;
    else return ff;
  }
}

/** The edits that take the location out of one image's segments. */
function cleanImage(b: Buffer, segments: Segment[], fixedLayout: boolean): Edit[] {
  const edits: Edit[] = [];
  const drop = (s: Segment) => edits.push({ start: s.start, end: s.end, with: fixedLayout ? blank(s) : new Uint8Array(0) });
  for (const s of segments) {
    if (s.marker !== APP1 || !startsWith(b, s.start + 4, EXIF)) continue;
    // The TIFF block starts after "Exif\0" and one pad byte.
    const head = s.start + 4 + EXIF.length + 1;
    if (head > s.end) {
      drop(s);
      continue;
    }
    const tiff = new Uint8Array(b.subarray(head, s.end));
    const outcome = removeExifGps(tiff);
    if (outcome === 'removed') edits.push({ start: head, end: s.end, with: tiff });
    else if (outcome === 'malformed') drop(s);
  }
  const xmp = segments.filter((s) => s.marker === APP1 && (startsWith(b, s.start + 4, XMP) || startsWith(b, s.start + 4, XMP_EXTENSION)));
  if (xmp.length > 0 && LOCATION_WORDS.test(xmpText(b, xmp))) for (const s of xmp) drop(s);
  return edits;
}

/**
 * The text of every XMP segment of an image, the main packet and the Extended XMP chunks joined
 * in file order (a name split between two chunks is found whole). Latin-1 is enough to find
 * ASCII names in UTF-8.
 */
function xmpText(b: Buffer, xmp: Segment[]): string {
  let main = '';
  let extended = '';
  for (const s of xmp) {
    if (startsWith(b, s.start + 4, XMP)) main += b.toString('latin1', s.start + 4 + XMP.length, s.end);
    // After the signature: a 32-byte GUID, the full length and this chunk's offset, 4 bytes each.
    else extended += b.toString('latin1', Math.min(s.end, s.start + 4 + XMP_EXTENSION.length + 40), s.end);
  }
  return `${main}\n${extended}`;
}

/** A segment of the same length that says nothing: a comment (COM) of zeros. */
function blank(s: Segment): Uint8Array {
  const out = new Uint8Array(s.end - s.start);
  out[0] = 0xff;
  out[1] = 0xfe;
  out[2] = (s.end - s.start - 2) >> 8;
  out[3] = (s.end - s.start - 2) & 0xff;
  return out;
}

function startsWith(b: Uint8Array, at: number, sig: Uint8Array): boolean {
  if (at + sig.length > b.length) return false;
  for (let i = 0; i < sig.length; i++) if (b[at + i] !== sig[i]) return false;
  return true;
}
