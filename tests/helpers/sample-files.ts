/**
 * Real files made in tests: a PNG of any size (a valid image every decoder opens), a minimal PDF,
 * a GIF, a Windows executable's first bytes, and their SHA-256.
 */
import { createHash } from 'node:crypto';
import { crc32, deflateSync } from 'node:zlib';

/** A valid RGB PNG of `width` × `height`: rows of one gradient (`seed` varies the bytes), or noise that does not compress. */
export function samplePng(width = 8, height = 6, seed = 0, noise = false): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body) >>> 0);
    return Buffer.concat([len, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // RGB
  const row = Buffer.alloc(1 + width * 3);
  for (let x = 0; x < width; x++) row.set([(seed * 40 + x) & 255, 90, 200], 1 + x * 3);
  let state = (seed + 1) * 2654435761;
  const noisyRow = () => {
    const r = Buffer.alloc(1 + width * 3);
    for (let i = 1; i < r.length; i++) r[i] = (state = (Math.imul(state, 1103515245) + 12345) >>> 0) >>> 24;
    return r;
  };
  const raw = Buffer.concat(Array.from({ length: height }, () => (noise ? noisyRow() : row)));
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}

/** The start of a Windows executable (an MZ header pointing at a PE signature), whatever it is named. */
export function windowsExe(): Buffer {
  const b = Buffer.alloc(512);
  b.write('MZ', 0, 'ascii');
  b.writeUInt32LE(0x80, 0x3c);
  b.write('PE\0\0', 0x80, 'binary');
  return b;
}

export function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** A one-page PDF; `padding` bytes of comment make it as large as a test needs. */
export function samplePdf(padding = 0): Buffer {
  const objects = ['<< /Type /Catalog /Pages 2 0 R >>', '<< /Type /Pages /Kids [3 0 R] /Count 1 >>', '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >>'];
  let out = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((o, i) => {
    offsets.push(out.length);
    out += `${i + 1} 0 obj\n${o}\nendobj\n`;
  });
  out += `%${'x'.repeat(Math.max(0, padding))}\n`;
  const xref = out.length;
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}

/** A 1×1 GIF. */
export const SAMPLE_GIF = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');
