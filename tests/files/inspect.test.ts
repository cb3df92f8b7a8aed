/**
 * Intake: a file's type is decided from its bytes (file-type, and the leading bytes of the five
 * kinds), never from its name — PNG (animated too), JPEG, GIF, WebP and PDF are taken with their
 * pixel size, text only when it is UTF-8 with no control characters; anything else is refused
 * with a reason naming what it is. Kept through FileKeeper, the bytes are kept as they came (a
 * JPEG with no location included) under the SHA-256 of those bytes.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { FileKeeper } from '../../src/files/FileKeeper.js';
import { inspectFile } from '../../src/files/inspect.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { apng, cameraIfd, exifSegment, gif, jpeg, pdf, png, tiff, webp, windowsExe, withSegments } from './images.js';

const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
const TAKEN = 'only images (PNG, JPEG, GIF, WebP), PDF and plain text are taken';

describe('intake: the type from the bytes', () => {
  const cases: Array<[string, () => Uint8Array, string, { width?: number; height?: number }]> = [
    ['PNG', () => png(3, 2), 'image/png', { width: 3, height: 2 }],
    ['animated PNG', apng, 'image/png', { width: 2, height: 2 }],
    ['JPEG', () => jpeg(16, 8), 'image/jpeg', { width: 16, height: 8 }],
    ['GIF', gif, 'image/gif', { width: 1, height: 1 }],
    ['WebP', webp, 'image/webp', { width: 1, height: 1 }],
    ['PDF', pdf, 'application/pdf', {}],
    ['text', () => Buffer.from('Ünïcödé notes ✓ 🎉\r\n\tindented\fpage\n'), 'text/plain', {}],
    ['text with a BOM', () => Buffer.from('\ufeffbom first\n'), 'text/plain', {}],
    ['an SVG (XML is text)', () => Buffer.from('<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"/>'), 'text/plain', {}],
  ];
  for (const [label, make, type, size] of cases) {
    it(`${label} is taken as ${type}, kept byte for byte under its SHA-256`, async () => {
      const bytes = make();
      const seen = await inspectFile(bytes);
      expect(seen).toMatchObject({ ok: true, type });
      if (!seen.ok) return;
      expect({ width: seen.width, height: seen.height }).toEqual({ width: size.width, height: size.height });
      expect(Buffer.from(seen.bytes).equals(Buffer.from(bytes))).toBe(true);

      const store = new MemoryStore();
      const keeper = new FileKeeper(store);
      // The name says nothing: a PNG called .pdf is a PNG.
      const name = `upload.${type === 'application/pdf' ? 'png' : 'pdf'}`;
      const kept = await keeper.keep({ name, bytes });
      expect(kept).toEqual({ ok: true, attachment: { id: sha(bytes), sha256: sha(bytes), name, type, size: bytes.length, ...size } });
      expect(Buffer.from((await keeper.read(sha(bytes)))!.bytes).equals(Buffer.from(bytes))).toBe(true);
    });
  }

  it('an image cut short before the chunks file-type reads is still taken by its leading bytes, without a size', async () => {
    const cut = png(3, 2).subarray(0, 12);
    expect(await inspectFile(cut)).toEqual({ ok: true, type: 'image/png', bytes: cut });
  });

  it('a JPEG turned by its EXIF Orientation reports the size it is shown at', async () => {
    const turned = withSegments(jpeg(16, 8), exifSegment(tiff(cameraIfd({ gps: false, orientation: 6 }))));
    expect(await inspectFile(turned)).toMatchObject({ ok: true, width: 8, height: 16 });
    const upright = withSegments(jpeg(16, 8), exifSegment(tiff(cameraIfd({ gps: false, orientation: 1 }))));
    expect(await inspectFile(upright)).toMatchObject({ ok: true, width: 16, height: 8 });
  });
});

describe('intake: refusals name what the file is', () => {
  it('a Windows executable renamed .png is refused as unsupported_type, nothing kept', async () => {
    const store = new MemoryStore();
    const kept = await new FileKeeper(store).keep({ name: 'holiday.png', bytes: windowsExe() });
    expect(kept).toEqual({ ok: false, code: 'unsupported_type', reason: `holiday.png is a Windows executable (exe); ${TAKEN}` });
    expect(store.files.size).toBe(0);
  });

  it('an archive, a video and a kind with no description are named by what file-type found', async () => {
    const zip = Buffer.concat([Buffer.from('PK\x03\x04\x14\x00\x00\x00\x08\x00', 'latin1'), Buffer.alloc(40)]);
    expect(await inspectFile(zip)).toEqual({ ok: false, reason: `is a ZIP archive (zip); ${TAKEN}` });
    const elf = Buffer.concat([Buffer.from('\x7fELF\x02\x01\x01', 'latin1'), Buffer.alloc(60)]);
    expect(await inspectFile(elf)).toEqual({ ok: false, reason: `is a Linux executable (elf); ${TAKEN}` });
    const bmp = Buffer.concat([Buffer.from('BM', 'latin1'), Buffer.alloc(60, 1)]);
    expect(await inspectFile(bmp)).toMatchObject({ ok: false, reason: expect.stringMatching(/^is a BMP image \(bmp\); /) });
  });

  it('text must be UTF-8 with no control characters but whitespace', async () => {
    expect(await inspectFile(Buffer.from('hello\0world'))).toEqual({ ok: false, reason: `is binary data (it holds NUL bytes), not text; ${TAKEN}` });
    expect(await inspectFile(Buffer.from('bell\x07here'))).toEqual({ ok: false, reason: `is binary data (it holds control characters), not text; ${TAKEN}` });
    expect(await inspectFile(Buffer.from('del\x7f'))).toMatchObject({ ok: false });
    expect(await inspectFile(Buffer.from('caf\xe9 latin-1', 'latin1'))).toEqual({ ok: false, reason: `is not a kind of file Chorus recognises, nor UTF-8 text; ${TAKEN}` });
    // Random bytes: never text.
    const noise = Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919 + 13) % 256));
    expect((await inspectFile(noise)).ok).toBe(false);
  });

  it('the reason reads after the file name through FileKeeper; empty and too large keep their own', async () => {
    const keeper = new FileKeeper(new MemoryStore(), { max_file_bytes: 1000 });
    expect(await keeper.keep({ name: 'dir/../notes.bin', bytes: Buffer.from('a\0b') })).toEqual({ ok: false, code: 'unsupported_type', reason: `notes.bin is binary data (it holds NUL bytes), not text; ${TAKEN}` });
    expect(await keeper.keep({ name: 'e.txt', bytes: new Uint8Array(0) })).toEqual({ ok: false, code: 'empty', reason: 'e.txt is empty' });
    expect(await keeper.keep({ name: 'big.txt', bytes: Buffer.alloc(2000, 0x61) })).toMatchObject({ ok: false, code: 'too_large' });
  });
});
