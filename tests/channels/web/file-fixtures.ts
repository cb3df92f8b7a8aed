/**
 * Real files for upload tests: PNGs of any size made here (valid chunks and checksums, so any
 * decoder takes them), a tiny GIF and JPEG, a one-page PDF, and a Windows program's first bytes.
 */
import { createHash, randomBytes } from 'node:crypto';
import { crc32, deflateSync } from 'node:zlib';

function chunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body) >>> 0);
  return Buffer.concat([len, body, crc]);
}

/**
 * A `width`×`height` RGB PNG. `noise`: random pixels stored without compression, so the file is
 * about 3 bytes a pixel (for uploads of a given size); otherwise one colour, a few hundred bytes.
 */
export function png(width: number, height: number, opts: { noise?: boolean; rgb?: [number, number, number] } = {}): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // RGB
  const row = width * 3 + 1;
  let raw: Buffer;
  if (opts.noise) {
    raw = randomBytes(row * height);
    for (let y = 0; y < height; y++) raw[y * row] = 0; // filter: none
  } else {
    raw = Buffer.alloc(row * height);
    const [r, g, b] = opts.rgb ?? [79, 70, 229];
    for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) raw.set([r, g, b], y * row + 1 + x * 3);
  }
  const idat = deflateSync(raw, { level: opts.noise ? 0 : 9 });
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr), chunk('IDAT', idat), chunk('IEND', Buffer.alloc(0))]);
}

/** A 1×1 GIF. */
export const GIF = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

/** A one-page PDF. */
export const PDF = Buffer.from(
  '%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n' +
    '3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 200 200]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n',
  'latin1',
);

/** The start of a Windows executable (`MZ`, the DOS stub's words): what a renamed `.exe` begins with. */
export const EXE = Buffer.concat([Buffer.from('MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff', 'latin1'), Buffer.alloc(50), Buffer.from('This program cannot be run in DOS mode.\r\n', 'latin1'), randomBytes(400)]);

export function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}
