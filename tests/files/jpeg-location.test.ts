/**
 * A JPEG's location is taken out before it is kept: the GPS IFD of its EXIF (both byte orders,
 * wherever a reader would find the pointer) and any XMP naming a position, also an Extended XMP
 * split over segments, an EXIF block placed after the image data, and the secondary images of an
 * MPF file (whose offsets must stay right). Checked with exifr, an independent reader, and by
 * decoding the pixels: everything else of the EXIF (camera, Orientation, date) stays, the image
 * is unchanged, and a JPEG with no location comes back as the very same bytes. Malformed EXIF
 * never throws: the whole block goes rather than a location staying.
 */
import { createHash } from 'node:crypto';
import exifr from 'exifr';
import { describe, expect, it } from 'vitest';
import { FileKeeper } from '../../src/files/FileKeeper.js';
import { inspectFile } from '../../src/files/inspect.js';
import { removeJpegLocation } from '../../src/files/jpegLocation.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { GPS_IFD, cameraIfd, exifSegment, jpeg, jpegPixels, mpfSegment, occurrences, segment, tiff, withSegments, xmpExtensionSegment, xmpSegment } from './images.js';

const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
/** The latitude's seconds (1234/100) as they are written, in either byte order: found nowhere once it is gone. */
const SECONDS_LE = Buffer.from([0xd2, 0x04, 0, 0, 100, 0, 0, 0]);
const SECONDS_BE = Buffer.from([0, 0, 0x04, 0xd2, 0, 0, 0, 100]);

async function gpsOf(b: Uint8Array): Promise<unknown> {
  try {
    return (await exifr.gps(b)) ?? null;
  } catch {
    return null;
  }
}

async function keep(bytes: Uint8Array) {
  const store = new MemoryStore();
  const kept = await new FileKeeper(store).keep({ name: 'IMG_0001.JPG', bytes });
  if (!kept.ok) throw new Error(kept.reason);
  const stored = (await store.readFile(kept.attachment.id))!;
  return { attachment: kept.attachment, bytes: Buffer.from(stored.bytes) };
}

describe('JPEG: GPS taken out of EXIF', () => {
  for (const littleEndian of [true, false]) {
    it(`a phone photo (${littleEndian ? 'II' : 'MM'}): no GPS after keep; camera, Orientation and date stay; same length; same pixels`, async () => {
      const photo = withSegments(jpeg(16, 8), exifSegment(tiff(cameraIfd({ thumbnailIfd: true }), littleEndian)));
      expect(await gpsOf(photo)).toEqual({ latitude: expect.closeTo(52.5201, 3), longitude: expect.closeTo(13.4101, 3) });
      expect(occurrences(photo, littleEndian ? SECONDS_LE : SECONDS_BE)).toHaveLength(1);

      const { attachment, bytes } = await keep(photo);
      expect(await gpsOf(bytes)).toBeNull();
      const tags = await exifr.parse(bytes, { translateValues: false, gps: true, ifd1: true });
      expect(tags).toMatchObject({ Make: 'Canon', Model: 'Canon EOS 5D Mark IV', Orientation: 6, DateTimeOriginal: new Date('2024-05-06T07:08:09.000Z') });
      expect(Object.keys(tags).filter((k) => /gps|latitude|longitude/i.test(k))).toEqual([]);
      expect(occurrences(bytes, littleEndian ? SECONDS_LE : SECONDS_BE)).toEqual([]);
      // Blanked in place: nothing moved.
      expect(bytes.length).toBe(photo.length);
      expect(jpegPixels(bytes).equals(jpegPixels(photo))).toBe(true);
      expect(attachment).toMatchObject({ id: sha(bytes), size: bytes.length, width: 8, height: 16 });
      expect(attachment.id).not.toBe(sha(photo));
    });
  }

  it('a JPEG without EXIF, and one with EXIF but no GPS, come back byte for byte', async () => {
    for (const plain of [jpeg(24, 24), withSegments(jpeg(16, 8), exifSegment(tiff(cameraIfd({ gps: false, thumbnailIfd: true })))), Buffer.concat([jpeg(8, 8), Buffer.from('trailing bytes after EOI')])]) {
      const { attachment, bytes } = await keep(plain);
      expect(bytes.equals(plain)).toBe(true);
      expect(attachment.id).toBe(sha(plain));
    }
  });

  it('GPSInfo in the Exif IFD or in IFD1 is found too, and two of them in one IFD', async () => {
    const gps = { tag: 0x8825, ifd: GPS_IFD };
    const inExif = tiff({ tags: [{ tag: 0x0112, type: 3, values: [3] }, { tag: 0x8769, ifd: { tags: [{ tag: 0x9003, type: 2, values: '2024:01:01 00:00:00' }, gps] } }] });
    const inIfd1 = tiff({ tags: [{ tag: 0x010f, type: 2, values: 'Nikon' }], next: { tags: [{ tag: 0x0103, type: 3, values: [6] }, gps] } });
    const twice = tiff({ tags: [{ tag: 0x010f, type: 2, values: 'Sony' }, gps, { tag: 0x8825, ifd: GPS_IFD }] });
    for (const block of [inExif, inIfd1, twice]) {
      const photo = withSegments(jpeg(8, 8), exifSegment(block));
      const out = removeJpegLocation(photo);
      expect(out).toMatchObject({ ok: true, changed: true });
      if (!out.ok) continue;
      expect(occurrences(out.bytes, SECONDS_LE)).toEqual([]);
      expect(occurrences(out.bytes, Buffer.from([0x25, 0x88]))).toEqual([]);
      expect(await gpsOf(out.bytes)).toBeNull();
      expect(out.bytes.length).toBe(photo.length);
    }
  });

  it('an EXIF block after the image data (between scans) is found and cleaned', async () => {
    const plain = jpeg(8, 8);
    const late = Buffer.concat([plain.subarray(0, plain.length - 2), exifSegment(tiff(cameraIfd())), plain.subarray(plain.length - 2)]);
    const out = removeJpegLocation(late);
    expect(out).toMatchObject({ ok: true, changed: true });
    if (out.ok) expect(occurrences(out.bytes, SECONDS_LE)).toEqual([]);
  });
});

describe('JPEG: XMP that names a position is dropped', () => {
  it('exif:GPSLatitude in XMP: the XMP segment goes, the EXIF stays', async () => {
    const withXmp = withSegments(jpeg(16, 8), exifSegment(tiff(cameraIfd({ gps: false }))), xmpSegment('xmlns:exif="http://ns.adobe.com/exif/1.0/" exif:GPSLatitude="52,31.2N" exif:GPSLongitude="13,24.6E" xmlns:dc="http://purl.org/dc/elements/1.1/" dc:format="image/jpeg"'));
    expect(await exifr.parse(withXmp, { xmp: true })).toMatchObject({ GPSLatitude: expect.anything() });
    const { bytes } = await keep(withXmp);
    expect(occurrences(bytes, Buffer.from('ns.adobe.com/xap'))).toEqual([]);
    const tags = await exifr.parse(bytes, { xmp: true, translateValues: false });
    expect(tags).toMatchObject({ Make: 'Canon', Orientation: 6 });
    expect(tags.GPSLatitude).toBeUndefined();
    expect(bytes.length).toBeLessThan(withXmp.length);
    expect(jpegPixels(bytes).equals(jpegPixels(withXmp))).toBe(true);
  });

  it('XMP without a position stays byte for byte; a drone\'s GpsLongitude and a split Extended XMP are found', async () => {
    const harmless = withSegments(jpeg(8, 8), xmpSegment('xmlns:dc="http://purl.org/dc/elements/1.1/" dc:format="image/jpeg"'));
    expect((await keep(harmless)).bytes.equals(harmless)).toBe(true);

    const drone = withSegments(jpeg(8, 8), xmpSegment('xmlns:drone-dji="http://www.dji.com/drone-dji/1.0/" drone-dji:GpsLongitude="+13.41"'));
    expect(occurrences((await keep(drone)).bytes, Buffer.from('drone-dji'))).toEqual([]);

    // "GPS" split between two chunks of the extension: found only when they are read joined.
    const guid = 'A'.repeat(32);
    const a = '<rdf:Description xmlns:x="http://example.com/x/" x:G';
    const b = 'PSAltitudeRef="0"/>';
    const split = withSegments(
      jpeg(8, 8),
      xmpSegment(`xmlns:xmpNote="http://ns.adobe.com/xmp/note/" xmpNote:HasExtendedXMP="${guid}"`),
      xmpExtensionSegment(guid, a.length + b.length, 0, a),
      xmpExtensionSegment(guid, a.length + b.length, a.length, b),
    );
    const out = (await keep(split)).bytes;
    expect(occurrences(out, Buffer.from('ns.adobe.com/x'))).toEqual([]);
    expect(jpegPixels(out).equals(jpegPixels(split))).toBe(true);
  });
});

describe('JPEG: an MPF file keeps its layout', () => {
  it('the secondary image loses its GPS in place, the primary XMP is blanked rather than removed, every offset stays right', async () => {
    const second = withSegments(jpeg(8, 8), exifSegment(tiff(cameraIfd())));
    const build = (offset: number, firstSize: number) =>
      withSegments(jpeg(16, 8), exifSegment(tiff(cameraIfd())), xmpSegment('xmlns:exif="http://ns.adobe.com/exif/1.0/" exif:GPSLatitude="52,31.2N"'), mpfSegment(offset, second.length, firstSize));
    // The MP header is the TIFF header inside APP2, after "MPF\0"; offsets count from it.
    const draft = build(0, 0);
    const mpHeader = occurrences(draft, Buffer.from('MPF\0', 'latin1'))[0]! + 4;
    const primary = build(draft.length - mpHeader, draft.length);
    const file = Buffer.concat([primary, second]);
    expect(await gpsOf(file.subarray(primary.length))).not.toBeNull();

    const { bytes } = await keep(file);
    expect(bytes.length).toBe(file.length);
    expect(occurrences(bytes, SECONDS_LE)).toEqual([]);
    expect(occurrences(bytes, Buffer.from('ns.adobe.com/xap'))).toEqual([]);
    // The second image is where the index says, whole, decodable, with its camera but no GPS.
    const again = bytes.subarray(primary.length);
    expect(await gpsOf(again)).toBeNull();
    expect(await exifr.parse(again, { translateValues: false })).toMatchObject({ Make: 'Canon', Orientation: 6 });
    expect(jpegPixels(again).equals(jpegPixels(second))).toBe(true);
    expect(jpegPixels(bytes).equals(jpegPixels(file))).toBe(true);
  });
});

describe('JPEG: malformed metadata never throws and never keeps a location', () => {
  const block = () => tiff(cameraIfd());

  /** The GPSInfo entry of IFD0 in `t` (little-endian), by its tag bytes. */
  const gpsEntryAt = (t: Buffer) => occurrences(t, Buffer.from([0x25, 0x88]))[0]!;

  const cases: Array<[string, (t: Buffer) => Buffer]> = [
    ['no TIFF byte order', (t) => Buffer.concat([Buffer.from('XX'), t.subarray(2)])],
    ['the GPS IFD pointer past the end', (t) => (t.writeUInt32LE(0xfffffff0, gpsEntryAt(t) + 8), t)],
    ['the GPS pointer of a wrong type', (t) => (t.writeUInt16LE(3, gpsEntryAt(t) + 2), t)],
    ['a GPS value offset past the end', (t) => {
      const gps = t.readUInt32LE(gpsEntryAt(t) + 8);
      t.writeUInt32LE(0x7fffffff, gps + 2 + 12 * 2 + 8);
      return t;
    }],
    ['a GPS value of an unknown type', (t) => (t.writeUInt16LE(99, t.readUInt32LE(gpsEntryAt(t) + 8) + 2 + 2), t)],
    ['IFD0 with more entries than the block holds', (t) => (t.writeUInt16LE(5000, 8), t)],
    ['the GPS pointer at IFD0 itself', (t) => (t.writeUInt32LE(8, gpsEntryAt(t) + 8), t)],
    ['the block cut in the middle of the GPS IFD', (t) => t.subarray(0, t.readUInt32LE(gpsEntryAt(t) + 8) + 20)],
    ['only "Exif\\0\\0"', () => Buffer.alloc(0)],
  ];
  for (const [label, damage] of cases) {
    it(`${label}: the whole EXIF block is dropped`, async () => {
      const photo = withSegments(jpeg(8, 8), exifSegment(damage(block())));
      const { bytes } = await keep(photo);
      expect(occurrences(bytes, Buffer.from('Exif\0', 'latin1'))).toEqual([]);
      expect(occurrences(bytes, SECONDS_LE)).toEqual([]);
      expect(jpegPixels(bytes).equals(jpegPixels(photo))).toBe(true);
    });
  }

  it('an IFD chain that loops, and a pointer to a sub-IFD past the end, are walked once and the GPS still goes', async () => {
    const t = block();
    // IFD0's next pointer back at IFD0.
    const count = t.readUInt16LE(8);
    t.writeUInt32LE(8, 8 + 2 + 12 * count);
    const out = removeJpegLocation(withSegments(jpeg(8, 8), exifSegment(t)));
    expect(out).toMatchObject({ ok: true, changed: true });
    if (out.ok) expect(occurrences(out.bytes, SECONDS_LE)).toEqual([]);
  });

  it('random damage to the EXIF block: never throws, and exifr never finds a position in what is kept', async () => {
    let seed = 12345;
    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const base = block();
    const image = jpeg(8, 8);
    for (let round = 0; round < 400; round++) {
      const t = Buffer.from(base);
      const flips = 1 + Math.floor(rand() * 4);
      for (let k = 0; k < flips; k++) t[Math.floor(rand() * t.length)] = Math.floor(rand() * 256);
      const photo = withSegments(image, exifSegment(t));
      const seen = await inspectFile(photo);
      expect(seen.ok, `round ${round}`).toBe(true);
      if (seen.ok) expect(await gpsOf(seen.bytes), `round ${round}`).toBeNull();
    }
  });

  it('a JPEG whose segments cannot be followed to its image data is refused, naming why', async () => {
    const cut = Buffer.concat([Buffer.from([0xff, 0xd8]), segment(0xe0, Buffer.alloc(10)).subarray(0, 8)]);
    const kept = await new FileKeeper(new MemoryStore()).keep({ name: 'cut.jpg', bytes: cut });
    expect(kept).toEqual({ ok: false, code: 'unsupported_type', reason: expect.stringMatching(/^cut\.jpg is a damaged JPEG \(.+\), so its location data could not be checked$/) });
  });
});
