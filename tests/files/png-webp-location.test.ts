/**
 * A PNG's and a WebP's location is taken out before it is kept, as a JPEG's is: the GPS of an
 * EXIF block (PNG `eXIf`, ImageMagick's "Raw profile type exif/APP1" text in tEXt, zTXt or iTXt,
 * WebP `EXIF`) while the camera, the date and the Orientation stay; XMP naming a position (PNG
 * iTXt `XML:com.adobe.xmp`, WebP `XMP `) and GPS properties in text chunks dropped whole; an EXIF
 * block that cannot be read dropped rather than kept. Checked with exifr, an independent reader
 * (on the chunk's EXIF block where exifr reads no such chunk), and by decoding: every PNG chunk's
 * CRC is right and the pixels are the same; a WebP's RIFF size and VP8X flags match its chunks and
 * its image data is untouched. A file with no location comes back as the very same bytes.
 */
import { inflateSync } from 'node:zlib';
import exifr from 'exifr';
import { describe, expect, it } from 'vitest';
import { FileKeeper } from '../../src/files/FileKeeper.js';
import { inspectFile } from '../../src/files/inspect.js';
import { MemoryStore } from '../helpers/memory-store.js';
import {
  cameraIfd,
  extendedWebp,
  png,
  pngChunk,
  pngChunks,
  pngPixels,
  pngTextChunk,
  rawProfileText,
  riffChunk,
  tiff,
  webp,
  webpChunks,
  withPngChunks,
} from './images.js';

async function gpsOf(b: Uint8Array): Promise<unknown> {
  try {
    return (await exifr.gps(Buffer.from(b))) ?? null;
  } catch {
    return null;
  }
}

const BERLIN = { latitude: expect.closeTo(52.5201, 3), longitude: expect.closeTo(13.4101, 3) };
const CAMERA = { Make: 'Canon', Model: 'Canon EOS 5D Mark IV', Orientation: 6 };
const xmpPacket = (description: string) =>
  '<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">' +
  `<rdf:Description ${description}/></rdf:RDF></x:xmpmeta>`;
const XMP_GPS = xmpPacket(
  'xmlns:exif="http://ns.adobe.com/exif/1.0/" exif:GPSLatitude="52,31.2056N" exif:GPSLongitude="13,24.6083E"',
);
const XMP_PLAIN = xmpPacket('xmlns:xmp="http://ns.adobe.com/xap/1.0/" xmp:CreatorTool="Chorus test"');

async function keep(bytes: Uint8Array, name = 'photo.png') {
  const store = new MemoryStore();
  const kept = await new FileKeeper(store).keep({ name, bytes });
  if (!kept.ok) throw new Error(kept.reason);
  return { attachment: kept.attachment, bytes: Buffer.from((await store.readFile(kept.attachment.id))!.bytes) };
}

/** The PNG is whole: every chunk's CRC right, and it decodes to the pixels of `original`. */
function expectSamePng(bytes: Uint8Array, original: Uint8Array): void {
  expect(pngChunks(bytes).filter((c) => !c.crcOk).map((c) => c.type)).toEqual([]);
  expect(pngPixels(bytes).equals(pngPixels(original))).toBe(true);
}

/** The bytes of the raw EXIF profile kept in a text chunk (inflated, hex decoded), the TIFF block alone. */
function rawProfileTiff(bytes: Uint8Array, keyword: string): Buffer | null {
  const isText = (type: string) => ['tEXt', 'zTXt', 'iTXt'].includes(type);
  const c = pngChunks(bytes).find((x) => isText(x.type) && x.data.toString('latin1').startsWith(`${keyword}\0`));
  if (!c) return null;
  const afterKey = c.data.subarray(keyword.length + 1);
  // zTXt: a method byte first; iTXt: flag, method, empty language tag and translated keyword.
  let text = afterKey;
  if (c.type === 'zTXt') text = inflateSync(afterKey.subarray(1));
  if (c.type === 'iTXt') text = afterKey[0] === 1 ? inflateSync(afterKey.subarray(4)) : afterKey.subarray(4);
  const m = /^\s*\S+\s*\n\s*(\d+)\s*\n([\s\S]*)$/.exec(text.toString('latin1'))!;
  const block = Buffer.from(m[2]!.replace(/\s+/g, ''), 'hex');
  expect(block.length).toBe(Number(m[1]));
  return block.subarray(0, 6).toString('latin1') === 'Exif\0\0' ? block.subarray(6) : block;
}

describe('PNG: location taken out', () => {
  for (const littleEndian of [true, false]) {
    const order = littleEndian ? 'II' : 'MM';
    it(`an eXIf chunk (${order}): no GPS after keep; camera and Orientation stay; CRCs and pixels right`, async () => {
      const photo = withPngChunks(png(3, 2), pngChunk('eXIf', tiff(cameraIfd(), littleEndian)));
      expect(await gpsOf(photo)).toEqual(BERLIN);

      const { attachment, bytes } = await keep(photo);
      expect(await gpsOf(bytes)).toBeNull();
      const tags = await exifr.parse(bytes, { translateValues: false, gps: true });
      expect(tags).toMatchObject(CAMERA);
      expect(Object.keys(tags).filter((k) => /gps|latitude|longitude/i.test(k))).toEqual([]);
      // Taken out in place: the chunk keeps its length.
      expect(bytes.length).toBe(photo.length);
      expectSamePng(bytes, photo);
      expect(attachment).toMatchObject({ width: 3, height: 2, size: bytes.length });
    });
  }

  it('a metadata chunk whose type is in other letter case (exifr reads it all the same) is cleaned too', async () => {
    // The data of an iTXt chunk (without its length, type and CRC), under the type ITXT.
    const xmp = pngTextChunk('iTXt', 'XML:com.adobe.xmp', XMP_GPS).subarray(8, -4);
    const photo = withPngChunks(png(3, 2), pngChunk('EXIF', tiff(cameraIfd())), pngChunk('ITXT', xmp));
    expect(await gpsOf(photo)).toEqual(BERLIN);
    expect(await exifr.parse(photo, { xmp: true })).toMatchObject({ GPSLatitude: expect.anything() });
    const { bytes } = await keep(photo);
    expect(await gpsOf(bytes)).toBeNull();
    expect(pngChunks(bytes).map((c) => c.type)).toEqual(['IHDR', 'EXIF', 'IDAT', 'IEND']);
    expect(pngChunks(bytes).every((c) => c.crcOk)).toBe(true);
  });

  it('an eXIf chunk that cannot be read safely is dropped whole; the image stays', async () => {
    const block = tiff(cameraIfd());
    // The first IFD's entry count says far more entries than the block holds.
    block.writeUInt16LE(500, block.readUInt32LE(4));
    const photo = withPngChunks(png(3, 2), pngChunk('eXIf', block));
    const { bytes } = await keep(photo);
    expect(pngChunks(bytes).map((c) => c.type)).toEqual(['IHDR', 'IDAT', 'IEND']);
    expectSamePng(bytes, photo);
  });

  const rawProfiles: Array<[string, 'tEXt' | 'zTXt' | 'iTXt', boolean, string, boolean]> = [
    ['zTXt "Raw profile type exif" (ImageMagick)', 'zTXt', false, 'exif', true],
    ['tEXt "Raw profile type APP1"', 'tEXt', false, 'APP1', true],
    ['compressed iTXt "Raw profile type exif", the TIFF block alone', 'iTXt', true, 'exif', false],
  ];
  for (const [label, type, compressed, name, exifHeader] of rawProfiles) {
    it(`EXIF in a ${label}: written back without GPS, the camera kept`, async () => {
      const keyword = `Raw profile type ${name}`;
      const block = tiff(cameraIfd());
      const payload = exifHeader ? Buffer.concat([Buffer.from('Exif\0\0', 'latin1'), block]) : block;
      const photo = withPngChunks(png(3, 2), pngTextChunk(type, keyword, rawProfileText(name, payload), compressed));
      expect(await gpsOf(rawProfileTiff(photo, keyword)!)).toEqual(BERLIN);

      const { bytes } = await keep(photo);
      const kept = rawProfileTiff(bytes, keyword);
      expect(kept).not.toBeNull();
      expect(await gpsOf(kept!)).toBeNull();
      expect(await exifr.parse(kept!, { translateValues: false })).toMatchObject(CAMERA);
      expect(pngChunks(bytes).map((c) => c.type)).toEqual(['IHDR', type, 'IDAT', 'IEND']);
      expectSamePng(bytes, photo);
    });
  }

  it('a raw EXIF profile whose hex cannot be read is dropped', async () => {
    const badHex = pngTextChunk('tEXt', 'Raw profile type exif', '\nexif\n     400\n4578696600zz\n');
    const photo = withPngChunks(png(3, 2), badHex);
    const { bytes } = await keep(photo);
    expect(pngChunks(bytes).map((c) => c.type)).toEqual(['IHDR', 'IDAT', 'IEND']);
  });

  for (const [label, compressed] of [['an iTXt', false], ['a compressed iTXt', true]] as const) {
    it(`XMP with a GPS position in ${label} "XML:com.adobe.xmp" is dropped; XMP without one stays`, async () => {
      const photo = withPngChunks(png(3, 2), pngTextChunk('iTXt', 'XML:com.adobe.xmp', XMP_GPS, compressed));
      // exifr reads XMP from an iTXt chunk that is not compressed.
      if (!compressed) {
        expect(await exifr.parse(photo, { xmp: true })).toMatchObject({ GPSLatitude: expect.anything() });
      }
      const { bytes } = await keep(photo);
      expect(pngChunks(bytes).map((c) => c.type)).toEqual(['IHDR', 'IDAT', 'IEND']);
      expect(Buffer.from(bytes).toString('latin1')).not.toMatch(/GPS/);
      expectSamePng(bytes, photo);

      const plain = withPngChunks(png(3, 2), pngTextChunk('iTXt', 'XML:com.adobe.xmp', XMP_PLAIN, compressed));
      expect(Buffer.from((await keep(plain)).bytes).equals(plain)).toBe(true);
    });
  }

  it('XMP in a raw profile and GPS properties in text chunks are dropped; a plain comment stays', async () => {
    const photo = withPngChunks(
      png(3, 2),
      pngTextChunk('zTXt', 'Raw profile type xmp', rawProfileText('xmp', Buffer.from(XMP_GPS))),
      pngTextChunk('tEXt', 'exif:GPSLatitude', '52/1, 31/1, 1234/100'),
      pngTextChunk('zTXt', 'Description', 'Taken at latitude 52.52, longitude 13.41'),
      pngTextChunk('tEXt', 'Comment', 'Quarterly chart'),
    );
    const { bytes } = await keep(photo);
    const left = pngChunks(bytes).filter((c) => c.type === 'tEXt' || c.type === 'zTXt');
    expect(left.map((c) => c.data.toString('latin1'))).toEqual(['Comment\0Quarterly chart']);
    expectSamePng(bytes, photo);
  });

  it('a text chunk that cannot be read (bad deflate data) is dropped', async () => {
    const broken = pngChunk('zTXt', Buffer.from('Raw profile type exif\0\0not deflate data', 'latin1'));
    const { bytes } = await keep(withPngChunks(png(3, 2), broken));
    expect(pngChunks(bytes).map((c) => c.type)).toEqual(['IHDR', 'IDAT', 'IEND']);
  });

  it('chunks after IEND (where exifr still looks) are dropped, as is a metadata chunk cut short', async () => {
    const plain = png(3, 2);
    const trailing = Buffer.concat([plain, pngChunk('eXIf', tiff(cameraIfd()))]);
    expect(await gpsOf(trailing)).toEqual(BERLIN);
    const kept = (await keep(trailing)).bytes;
    expect(kept.equals(plain)).toBe(true);

    // An eXIf chunk cut in the middle, in a file that ends there.
    const exif = pngChunk('eXIf', tiff(cameraIfd()));
    const cut = Buffer.concat([plain.subarray(0, plain.length - 12), exif.subarray(0, exif.length - 20)]);
    const keptCut = (await keep(cut)).bytes;
    expect(pngChunks(keptCut).map((c) => c.type)).toEqual(['IHDR', 'IDAT']);
    expect(Buffer.from(keptCut).toString('latin1')).not.toContain('eXIf');
  });

  it('a PNG with EXIF but no position, and text chunks without one, come back as the very same bytes', async () => {
    const exif = pngChunk('eXIf', tiff(cameraIfd({ gps: false })));
    const photo = withPngChunks(png(3, 2), exif, pngTextChunk('tEXt', 'Software', 'Chorus'));
    expect(Buffer.from((await keep(photo)).bytes).equals(photo)).toBe(true);
  });
});

describe('WebP: location taken out', () => {
  const EXIF_FLAG = 0x08;
  const XMP_FLAG = 0x04;
  const imageData = () => webpChunks(webp()).chunks.find((c) => c.fourcc === 'VP8L')!.data;

  /** The WebP is whole: its RIFF size is its length, its chunks end where the file does, its image data as it was. */
  function expectWholeWebp(bytes: Uint8Array): ReturnType<typeof webpChunks> {
    const walked = webpChunks(bytes);
    expect(walked.riffSize).toBe(bytes.length - 8);
    expect(walked.endsAt).toBe(bytes.length);
    expect(walked.chunks.find((c) => c.fourcc === 'VP8L')!.data.equals(imageData())).toBe(true);
    return walked;
  }

  for (const exifHeader of [false, true]) {
    const label = exifHeader ? 'EXIF (after "Exif\\0\\0")' : 'EXIF';
    it(`${label} and XMP with GPS: the EXIF keeps the camera, not GPS; the XMP goes; VP8X, RIFF fixed`, async () => {
      const block = tiff(cameraIfd());
      const exif = exifHeader ? Buffer.concat([Buffer.from('Exif\0\0', 'latin1'), block]) : block;
      const xmp = riffChunk('XMP ', Buffer.from(XMP_GPS));
      const photo = extendedWebp(EXIF_FLAG | XMP_FLAG, riffChunk('EXIF', exif), xmp);
      const before = webpChunks(photo).chunks;
      expect(await gpsOf(before.find((c) => c.fourcc === 'EXIF')!.data.subarray(exifHeader ? 6 : 0))).toEqual(BERLIN);

      const { attachment, bytes } = await keep(photo, 'photo.webp');
      const walked = expectWholeWebp(bytes);
      expect(walked.chunks.map((c) => c.fourcc)).toEqual(['VP8X', 'VP8L', 'EXIF']);
      const keptExif = walked.chunks.find((c) => c.fourcc === 'EXIF')!.data.subarray(exifHeader ? 6 : 0);
      expect(await gpsOf(keptExif)).toBeNull();
      expect(await exifr.parse(Buffer.from(keptExif), { translateValues: false })).toMatchObject(CAMERA);
      expect(walked.chunks[0]!.data[0]).toBe(EXIF_FLAG);
      expect(Buffer.from(bytes).toString('latin1')).not.toMatch(/GPS/);
      expect(attachment).toMatchObject({ type: 'image/webp', width: 1, height: 1 });
    });
  }

  it('an EXIF chunk that cannot be read (odd length, padded) is dropped, its flag cleared; XMP stays', async () => {
    const xmp = riffChunk('XMP ', Buffer.from(XMP_PLAIN));
    const photo = extendedWebp(EXIF_FLAG | XMP_FLAG, riffChunk('EXIF', Buffer.from('II*\0bad')), xmp);
    const { bytes } = await keep(photo, 'photo.webp');
    const walked = expectWholeWebp(bytes);
    expect(walked.chunks.map((c) => c.fourcc)).toEqual(['VP8X', 'VP8L', 'XMP ']);
    expect(walked.chunks[0]!.data[0]).toBe(XMP_FLAG);
  });

  it('bytes past the RIFF size are dropped; a WebP with no location comes back as the very same bytes', async () => {
    const plain = extendedWebp(EXIF_FLAG, riffChunk('EXIF', tiff(cameraIfd({ gps: false }))));
    expect(Buffer.from((await keep(plain, 'plain.webp')).bytes).equals(plain)).toBe(true);
    expect(Buffer.from((await keep(webp(), 'tiny.webp')).bytes).equals(webp())).toBe(true);

    const trailing = Buffer.concat([plain, riffChunk('EXIF', tiff(cameraIfd()))]);
    expect(Buffer.from((await keep(trailing, 'trailing.webp')).bytes).equals(plain)).toBe(true);
  });
});

describe('damaged metadata never keeps a position', () => {
  let seed = 424242;
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const damage = (b: Buffer, from: number) => {
    const out = Buffer.from(b);
    const flips = 1 + Math.floor(rand() * 4);
    for (let k = 0; k < flips; k++) out[from + Math.floor(rand() * (out.length - from))] = Math.floor(rand() * 256);
    return out;
  };

  it('random damage to a PNG with eXIf and a raw EXIF profile: never throws, no GPS kept', async () => {
    const block = tiff(cameraIfd());
    const profile = pngTextChunk('tEXt', 'Raw profile type exif', rawProfileText('exif', block));
    const photo = withPngChunks(png(3, 2), pngChunk('eXIf', block), profile);
    for (let round = 0; round < 300; round++) {
      const seen = await inspectFile(damage(photo, 8));
      if (!seen.ok) continue;
      expect(await gpsOf(seen.bytes), `round ${round}`).toBeNull();
      const chunks = pngChunks(seen.bytes);
      for (const c of chunks.filter((x) => x.type === 'eXIf')) expect(await gpsOf(c.data), `round ${round}`).toBeNull();
      const hasProfile = chunks.some((x) => x.data.toString('latin1').startsWith('Raw profile type exif\0'));
      const profileTiff = hasProfile ? rawProfileTiff(seen.bytes, 'Raw profile type exif') : null;
      if (profileTiff) expect(await gpsOf(profileTiff), `round ${round}`).toBeNull();
    }
  });

  it('random damage anywhere after the RIFF header of a WebP with EXIF: never throws, no GPS kept', async () => {
    const photo = extendedWebp(0x08, riffChunk('EXIF', tiff(cameraIfd())));
    for (let round = 0; round < 300; round++) {
      const seen = await inspectFile(damage(photo, 12));
      if (!seen.ok) continue;
      const exif = webpChunks(seen.bytes).chunks.filter((x) => x.fourcc === 'EXIF');
      for (const c of exif) expect(await gpsOf(c.data), `round ${round}`).toBeNull();
    }
  });
});
