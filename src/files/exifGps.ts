/**
 * Removing the location from an EXIF block (the TIFF structure inside a JPEG's `Exif` APP1
 * segment), in place and without moving anything: the GPS IFD and every value it points to are
 * overwritten with zeros, and the GPSInfo entry (tag 0x8825) that points to it is taken out of
 * its IFD — the entries after it move up by one, the count goes down, and the twelve bytes freed
 * at the IFD's end are zeroed. Every other tag keeps its bytes and its offset, so Orientation,
 * the camera, the date and the thumbnail stay as they were, and the block keeps its length (a
 * JPEG whose later parts are found by offsets, such as an MPF image, stays valid).
 *
 * Every offset is checked before it is followed. Whatever cannot be read with certainty —
 * an offset outside the block, an IFD that overlaps another, a GPS value of an unknown type —
 * makes the block `malformed`, and the caller drops the whole block rather than keep a location.
 */

/**
 * Location in metadata kept as text (XMP, PNG text chunks), whatever the namespace:
 * exif:GPSLatitude, drone-dji:GpsLongitude, Iptc4xmpExt:GPSAltitude…
 */
export const LOCATION_WORDS = /gps|latitude|longitude/i;

/** What removing the location did to the block. */
export type ExifGpsOutcome = 'none' | 'removed' | 'malformed';

const GPS_INFO = 0x8825;
/** IFDs that may hold further IFDs: the Exif IFD and the Interoperability IFD. */
const SUB_IFDS = new Set([0x8769, 0xa005]);
/** Bytes per value of each TIFF type (1 BYTE … 13 IFD); unknown types have none. */
const TYPE_SIZE = [0, 1, 1, 2, 4, 8, 1, 1, 2, 4, 8, 4, 8, 4];
/** More IFDs than any camera writes: a chain longer than this is a loop or a trick. */
const MAX_IFDS = 32;

class Malformed extends Error {}

interface Ifd {
  at: number;
  count: number;
  /** Whether the 4-byte next-IFD offset is inside the block (some writers leave it off at the end). */
  hasNext: boolean;
}

/** The TIFF block with bounds-checked reads in its byte order. */
class Tiff {
  readonly le: boolean;
  constructor(readonly b: Uint8Array) {
    if (b.length < 8) throw new Malformed('shorter than a TIFF header');
    if (b[0] === 0x49 && b[1] === 0x49) this.le = true;
    else if (b[0] === 0x4d && b[1] === 0x4d) this.le = false;
    else throw new Malformed('no TIFF byte order');
    if (this.u16(2) !== 42) throw new Malformed('not TIFF');
  }

  need(at: number, n: number): void {
    if (!Number.isInteger(at) || at < 0 || n < 0 || at + n > this.b.length) throw new Malformed(`offset ${at} (+${n}) is outside the block`);
  }

  u16(at: number): number {
    this.need(at, 2);
    return this.le ? this.b[at]! | (this.b[at + 1]! << 8) : (this.b[at]! << 8) | this.b[at + 1]!;
  }

  u32(at: number): number {
    this.need(at, 4);
    const [a, b, c, d] = [this.b[at]!, this.b[at + 1]!, this.b[at + 2]!, this.b[at + 3]!];
    return (this.le ? (d << 24) | (c << 16) | (b << 8) | a : (a << 24) | (b << 16) | (c << 8) | d) >>> 0;
  }

  set16(at: number, v: number): void {
    this.need(at, 2);
    this.b[at] = this.le ? v & 0xff : v >> 8;
    this.b[at + 1] = this.le ? v >> 8 : v & 0xff;
  }

  ifd(at: number): Ifd {
    if (at < 8) throw new Malformed(`an IFD at ${at}, inside the header`);
    const count = this.u16(at);
    this.need(at + 2, 12 * count);
    return { at, count, hasNext: at + 2 + 12 * count + 4 <= this.b.length };
  }

  /** An IFD's bytes: [start, end). */
  span(ifd: Ifd): [number, number] {
    return [ifd.at, ifd.at + 2 + 12 * ifd.count + (ifd.hasNext ? 4 : 0)];
  }
}

/**
 * Take the location out of `tiff` (changed in place). `none`: there was none and not a byte
 * changed; `removed`: it is gone; `malformed`: the block cannot be read safely (its bytes may
 * have been changed part-way; the caller drops it).
 */
export function removeExifGps(tiff: Uint8Array): ExifGpsOutcome {
  try {
    return removeIn(new Tiff(tiff));
  } catch (err) {
    if (err instanceof Malformed) return 'malformed';
    throw err;
  }
}

function removeIn(t: Tiff): ExifGpsOutcome {
  // Walk every IFD a reader would: IFD0 and the chain after it, the Exif and Interoperability
  // IFDs. Note where GPSInfo entries are, and the bytes each IFD takes.
  const walked: Ifd[] = [];
  const gpsEntries: Array<{ ifd: Ifd; index: number; target: number }> = [];
  const seen = new Set<number>();
  const todo: Array<{ at: number; chain: boolean }> = [{ at: t.u32(4), chain: true }];
  for (let first = true; todo.length > 0; first = false) {
    const { at, chain } = todo.shift()!;
    // A pointer past the block's end leads nowhere any reader could follow: nothing to remove
    // there. (IFD0 itself must be readable.)
    if (!first && (at < 8 || at + 2 > t.b.length)) continue;
    if (seen.has(at)) continue;
    if (seen.size >= MAX_IFDS) throw new Malformed('too many IFDs');
    seen.add(at);
    const ifd = t.ifd(at);
    walked.push(ifd);
    for (let i = 0; i < ifd.count; i++) {
      const e = at + 2 + 12 * i;
      const tag = t.u16(e);
      if (tag !== GPS_INFO && !SUB_IFDS.has(tag)) continue;
      const type = t.u16(e + 2);
      // A pointer is one LONG (or IFD) value; anything else is not a pointer a reader could follow safely.
      if ((type !== 4 && type !== 13) || t.u32(e + 4) !== 1) throw new Malformed(`tag ${tag.toString(16)} is not an IFD pointer`);
      const target = t.u32(e + 8);
      if (tag === GPS_INFO) gpsEntries.push({ ifd, index: i, target });
      else todo.push({ at: target, chain: false });
    }
    if (chain && ifd.hasNext) {
      const next = t.u32(at + 2 + 12 * ifd.count);
      if (next !== 0) todo.push({ at: next, chain: true });
    }
  }
  if (gpsEntries.length === 0) return 'none';

  // Everything to zero, checked before a byte changes: the GPS IFDs and their values, none of
  // them inside the header or an IFD that stays.
  const zero: Array<[number, number]> = [];
  for (const target of new Set(gpsEntries.map((g) => g.target))) {
    if (walked.some((w) => w.at === target)) throw new Malformed('GPSInfo points at another IFD');
    const gps = t.ifd(target);
    zero.push(t.span(gps));
    for (let i = 0; i < gps.count; i++) {
      const e = gps.at + 2 + 12 * i;
      const size = TYPE_SIZE[t.u16(e + 2)];
      if (!size) throw new Malformed('a GPS value of an unknown type');
      const bytes = size * t.u32(e + 4);
      if (bytes > 4) {
        const at = t.u32(e + 8);
        t.need(at, bytes);
        zero.push([at, at + bytes]);
      }
    }
  }
  for (const [a, b] of zero) {
    if (a < 8) throw new Malformed('GPS data overlaps the header');
    for (const k of walked) {
      const [c, d] = t.span(k);
      if (a < d && c < b) throw new Malformed('GPS data overlaps another IFD');
    }
  }

  for (const [a, b] of zero) t.b.fill(0, a, b);
  // Take the entries out, the last of an IFD first so the earlier indexes stay right.
  const byPlace = [...gpsEntries].sort((x, y) => x.ifd.at - y.ifd.at || y.index - x.index);
  for (const g of byPlace) {
    const count = t.u16(g.ifd.at);
    const entries = g.ifd.at + 2;
    const end = entries + 12 * count + (g.ifd.hasNext ? 4 : 0);
    t.b.copyWithin(entries + 12 * g.index, entries + 12 * (g.index + 1), end);
    t.b.fill(0, end - 12, end);
    t.set16(g.ifd.at, count - 1);
  }
  return 'removed';
}

/** "Exif\0\0": how a JPEG's APP1 segment starts, and some PNG and WebP writers keep it before the TIFF structure. */
const EXIF_HEADER = [0x45, 0x78, 0x69, 0x66, 0x00, 0x00];

/**
 * An EXIF block as PNG and WebP files carry it — the TIFF structure, with or without "Exif\0\0"
 * before it — without its location: a copy (the input is left alone) and what was done to it.
 */
export function cleanExifBlock(block: Uint8Array): { outcome: ExifGpsOutcome; bytes: Uint8Array } {
  const bytes = new Uint8Array(block);
  const prefixed = EXIF_HEADER.every((x, i) => bytes[i] === x);
  const outcome = removeExifGps(bytes.subarray(prefixed ? EXIF_HEADER.length : 0));
  return { outcome, bytes };
}
