/**
 * `limits.max_image_pixels`: an image whose header states more pixels than the limit (40 MP by
 * default) is refused before anything decodes it — a 30000×30000 PNG of some 110 KB, a GIF, WebP
 * or JPEG whose header claims as much — with a reason naming its size and the limit; nothing is
 * kept. Within the limit an image is taken as before; a tool's image goes through the same
 * checks (and loses its location the same way). The key's default, range and its place in
 * config.example.yaml.
 */
import { readFileSync } from 'node:fs';
import exifr from 'exifr';
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfigText } from '../../src/config/load.js';
import { FileKeeper } from '../../src/files/FileKeeper.js';
import { inspectFile } from '../../src/files/inspect.js';
import { keepToolFiles } from '../../src/tools/toolFiles.js';
import { CapturingLogger } from '../helpers/logger.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { blankPng, cameraIfd, extendedWebp, gif, jpeg, png, pngChunk, pngPixels, tiff } from './images.js';
import { withPngChunks } from './images.js';

/** A header stating `width` × `height`, patched into a real file of the kind. */
function gifOf(width: number, height: number): Buffer {
  const b = gif();
  b.writeUInt16LE(width, 6);
  b.writeUInt16LE(height, 8);
  return b;
}

function webpOf(width: number, height: number): Buffer {
  const b = extendedWebp(0);
  // The VP8X chunk's data starts at 20: flags, three reserved bytes, then width − 1 and height − 1 in 24 bits.
  b.writeUIntLE(width - 1, 24, 3);
  b.writeUIntLE(height - 1, 27, 3);
  return b;
}

function jpegOf(width: number, height: number): Buffer {
  const b = jpeg(16, 8);
  // SOF0: FF C0, length (2), precision (1), then height and width.
  const sof = b.indexOf(Buffer.from([0xff, 0xc0]));
  b.writeUInt16BE(height, sof + 5);
  b.writeUInt16BE(width, sof + 7);
  return b;
}

describe('limits.max_image_pixels at intake', () => {
  it('a 30000×30000 PNG of about 110 KB is refused as too_many_pixels, naming size and limit', async () => {
    const bomb = blankPng(30000, 30000);
    expect(bomb.length).toBeLessThan(120 * 1024);
    // The same making gives a valid PNG: a small one decodes.
    expect(pngPixels(blankPng(64, 48)).length).toBe(64 * 48 * 4);

    const store = new MemoryStore();
    const kept = await new FileKeeper(store).keep({ name: 'huge.png', bytes: bomb });
    const reason = 'huge.png is 30000×30000 pixels (900 MP); the limit is 40 MP';
    expect(kept).toEqual({ ok: false, code: 'too_many_pixels', reason });
    expect(store.files.size).toBe(0);
  });

  it('GIF, WebP and JPEG headers stating too many pixels are refused the same way', async () => {
    const keeper = new FileKeeper(new MemoryStore());
    const refused = (reason: RegExp) => ({ ok: false, code: 'too_many_pixels', reason: expect.stringMatching(reason) });
    expect(await keeper.keep({ name: 'a.gif', bytes: gifOf(65535, 65535) })).toMatchObject(
      refused(/^a\.gif is 65535×65535 pixels \(4294\.84 MP\); the limit is 40 MP$/),
    );
    const webpKept = await keeper.keep({ name: 'b.webp', bytes: webpOf(16384, 16384) });
    expect(webpKept).toMatchObject(refused(/^b\.webp is 16384×16384 /));
    const jpegKept = await keeper.keep({ name: 'c.jpg', bytes: jpegOf(60000, 60000) });
    expect(jpegKept).toMatchObject(refused(/^c\.jpg is 60000×60000 /));
  });

  it('within the limit an image is taken; the limit is the configured one', async () => {
    const fits = blankPng(6000, 6000); // 36 MP
    const kept = await new FileKeeper(new MemoryStore()).keep({ name: 'wide.png', bytes: fits });
    expect(kept).toMatchObject({ ok: true, attachment: { width: 6000, height: 6000 } });
    const seen = await inspectFile(gifOf(1000, 1000), { maxImagePixels: 1_000_000 });
    expect(seen).toMatchObject({ ok: true, width: 1000, height: 1000 });
    const small = new FileKeeper(new MemoryStore(), { max_image_pixels: 1_000_000 });
    expect(small.maxImagePixels).toBe(1_000_000);
    // Just over: megapixels would read the same, so the pixels are counted out.
    const reason = 'x.gif is 1001×1000 pixels (1,001,000 pixels); the limit is 1,000,000 pixels';
    const over = await small.keep({ name: 'x.gif', bytes: gifOf(1001, 1000) });
    expect(over).toEqual({ ok: false, code: 'too_many_pixels', reason });
  });
});

describe('images a tool returns', () => {
  it('one of too many pixels is not kept (logged); a PNG with a position is kept without it', async () => {
    const store = new MemoryStore();
    const logger = new CapturingLogger();
    const located = withPngChunks(png(3, 2), pngChunk('eXIf', tiff(cameraIfd())));
    const result = {
      content: [
        { type: 'image', data: blankPng(30000, 30000).toString('base64'), mimeType: 'image/png' },
        { type: 'image', data: located.toString('base64'), mimeType: 'image/png' },
      ],
    };
    const kept = await keepToolFiles(result, new FileKeeper(store), 'charts.render', logger);
    expect(kept).toHaveLength(1);
    expect(store.files.size).toBe(1);
    const bytes = (await store.readFile(kept[0]!.id))!.bytes;
    expect(await exifr.gps(Buffer.from(bytes))).toBeUndefined();
    expect(logger.text()).toContain('30000×30000 pixels');
  });
});

describe('limits.max_image_pixels in the config', () => {
  const AGENT = 'agents:\n  - { id: analyst, name: Analyst, persona: "numbers" }\n';
  const problems = (yaml: string): string[] => {
    try {
      parseConfigText(AGENT + yaml, 'test.yaml', {});
    } catch (err) {
      if (err instanceof ConfigError) return err.problems.map((p) => `${p.path}: ${p.message}`);
      throw err;
    }
    return [];
  };

  it('defaults to 40 MP, takes a whole number in range, and config.example.yaml documents it', () => {
    expect(parseConfigText(AGENT, 'test.yaml', {}).config.limits.max_image_pixels).toBe(40_000_000);
    const set = parseConfigText(`${AGENT}limits: { max_image_pixels: 12000000 }\n`, 'test.yaml', {});
    expect(set.config.limits.max_image_pixels).toBe(12_000_000);
    const named = [expect.stringMatching(/^limits\.max_image_pixels: /)];
    expect(problems('limits: { max_image_pixels: 0 }\n')).toEqual(named);
    expect(problems('limits: { max_image_pixels: 2.5 }\n')).toEqual(named);
    const example = readFileSync('config.example.yaml', 'utf8');
    expect(example).toMatch(/^ {2}max_image_pixels: 40000000 +# /m);
    expect(parseConfigText(example, 'config.example.yaml', {}).config.limits.max_image_pixels).toBe(40_000_000);
  });
});
