/**
 * Small, valid files of every kind Chorus takes, made here rather than kept as fixtures: PNG and
 * JPEG encoded by the pngjs and jpeg-js that ship inside playwright-core (also used to decode
 * them back), a 1×1 GIF and a 1×1 lossless WebP, a PDF of a few lines, and the pieces of a JPEG's
 * metadata — an EXIF block (TIFF) built tag by tag with a GPS IFD, XMP packets, an MPF index.
 */
import { createRequire } from 'node:module';
import { constants, crc32, deflateSync } from 'node:zlib';

const require = createRequire(import.meta.url);
interface Raster {
  width: number;
  height: number;
  data: Buffer;
}
const bundle = require('playwright-core/lib/utilsBundle') as {
  jpegjs: { encode(img: Raster, quality: number): { data: Buffer }; decode(b: Uint8Array, o?: object): Raster };
  PNG: {
    new (o: { width: number; height: number }): Raster;
    sync: { write(p: Raster): Buffer; read(b: Buffer): Raster };
  };
};

/** A gradient, so the pixels are not all alike. */
function raster(width: number, height: number): Buffer {
  const data = Buffer.alloc(width * height * 4);
  for (let i = 0; i < width * height; i++) {
    data[i * 4] = (i * 13) & 0xff;
    data[i * 4 + 1] = (i * 7) & 0xff;
    data[i * 4 + 2] = 200;
    data[i * 4 + 3] = 255;
  }
  return data;
}

export function png(width = 3, height = 2): Buffer {
  const p = new bundle.PNG({ width, height });
  raster(width, height).copy(p.data);
  return bundle.PNG.sync.write(p);
}

/** An animated PNG's marker: an acTL chunk before the image data (file-type says image/apng). */
export function apng(): Buffer {
  const plain = png(2, 2);
  const data = Buffer.alloc(8);
  data.writeUInt32BE(1, 0);
  const type = Buffer.from('acTL');
  const chunk = Buffer.concat([u32be(8), type, data, u32be(crc32(Buffer.concat([type, data])))]);
  // After the signature (8) and IHDR (25).
  return Buffer.concat([plain.subarray(0, 33), chunk, plain.subarray(33)]);
}

export function jpeg(width = 16, height = 8): Buffer {
  return Buffer.from(bundle.jpegjs.encode({ width, height, data: raster(width, height) }, 85).data);
}

/** The pixels of a JPEG, to show that taking metadata out left the image as it was. */
export function jpegPixels(b: Uint8Array): Buffer {
  return Buffer.from(bundle.jpegjs.decode(b, { useTArray: true }).data);
}

export const gif = (): Buffer => Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');
export const webp = (): Buffer => Buffer.from('UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA==', 'base64');
export const pdf = (): Buffer => Buffer.from('%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n2 0 obj << /Type /Pages /Kids [] /Count 0 >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n');

/** A Windows executable's first bytes: the MZ header pointing at a PE header. */
export function windowsExe(): Buffer {
  const b = Buffer.alloc(1024);
  b.write('MZ', 0, 'latin1');
  b.writeUInt32LE(0x80, 0x3c);
  b.write('PE\0\0', 0x80, 'latin1');
  b.writeUInt16LE(0x14c, 0x84);
  return b;
}

function u32be(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
}

// ---------------------------------------------------------------------------------------------
// EXIF

/** One TIFF tag: values of a type (2 ASCII, 3 SHORT, 4 LONG, 5 RATIONAL as [num, den] pairs, 1 BYTE), or a sub-IFD. */
export type Tag = { tag: number; type: 1 | 2 | 3 | 4 | 5 | 7; values: number[] | string } | { tag: number; ifd: IfdSpec };
export interface IfdSpec {
  tags: Tag[];
  next?: IfdSpec | undefined;
}

/** A TIFF block: the header, then each IFD followed by its values and the IFDs it points to. */
export function tiff(ifd0: IfdSpec, littleEndian = true): Buffer {
  const out: number[] = [];
  const put16 = (at: number, v: number) => {
    const bytes = littleEndian ? [v & 0xff, v >> 8] : [v >> 8, v & 0xff];
    out.splice(at, 2, ...bytes);
  };
  const put32 = (at: number, v: number) => {
    const bytes = [v >>> 24, (v >>> 16) & 0xff, (v >>> 8) & 0xff, v & 0xff];
    out.splice(at, 4, ...(littleEndian ? bytes.reverse() : bytes));
  };
  const zeros = (n: number) => {
    const at = out.length;
    for (let i = 0; i < n; i++) out.push(0);
    return at;
  };
  out.push(...(littleEndian ? [0x49, 0x49] : [0x4d, 0x4d]));
  zeros(6);
  put16(2, 42);
  const write = (spec: IfdSpec): number => {
    const tags = [...spec.tags].sort((a, b) => a.tag - b.tag);
    const at = zeros(2 + 12 * tags.length + 4);
    put16(at, tags.length);
    const later: Array<() => void> = [];
    tags.forEach((t, i) => {
      const e = at + 2 + 12 * i;
      put16(e, t.tag);
      if ('ifd' in t) {
        put16(e + 2, 4);
        put32(e + 4, 1);
        later.push(() => put32(e + 8, write(t.ifd)));
        return;
      }
      const raw = encode(t.type, t.values, littleEndian);
      put16(e + 2, t.type);
      put32(e + 4, t.type === 5 ? (t.values as number[]).length / 2 : t.type === 2 ? raw.length : raw.length / ({ 1: 1, 3: 2, 4: 4, 7: 1 } as Record<number, number>)[t.type]!);
      if (raw.length <= 4) raw.forEach((x, k) => (out[e + 8 + k] = x));
      else {
        if (out.length % 2) out.push(0);
        const v = out.length;
        out.push(...raw);
        put32(e + 8, v);
      }
    });
    for (const f of later) f();
    if (spec.next) put32(at + 2 + 12 * tags.length, write(spec.next));
    return at;
  };
  put32(4, write(ifd0));
  return Buffer.from(out);
}

function encode(type: number, values: number[] | string, le: boolean): number[] {
  if (typeof values === 'string') return [...Buffer.from(`${values}\0`, 'latin1')];
  const out: number[] = [];
  for (const v of values) {
    if (type === 1 || type === 7) out.push(v & 0xff);
    else if (type === 3) out.push(...(le ? [v & 0xff, v >> 8] : [v >> 8, v & 0xff]));
    else {
      const bytes = [v >>> 24, (v >>> 16) & 0xff, (v >>> 8) & 0xff, v & 0xff];
      out.push(...(le ? bytes.reverse() : bytes));
    }
  }
  return out;
}

/** 52° 31′ 12.34″ N, 13° 24′ 36.5″ E, 34.5 m: a place that must not survive keeping. */
export const GPS_IFD: IfdSpec = {
  tags: [
    { tag: 0x0000, type: 1, values: [2, 3, 0, 0] },
    { tag: 0x0001, type: 2, values: 'N' },
    { tag: 0x0002, type: 5, values: [52, 1, 31, 1, 1234, 100] },
    { tag: 0x0003, type: 2, values: 'E' },
    { tag: 0x0004, type: 5, values: [13, 1, 24, 1, 365, 10] },
    { tag: 0x0006, type: 5, values: [345, 10] },
  ],
};

/** IFD0 of a phone photo: camera, Orientation 6 (turned 90°), the Exif IFD, and GPS unless `gps: false`. */
export function cameraIfd(o: { gps?: boolean; orientation?: number; thumbnailIfd?: boolean } = {}): IfdSpec {
  return {
    tags: [
      { tag: 0x010f, type: 2, values: 'Canon' },
      { tag: 0x0110, type: 2, values: 'Canon EOS 5D Mark IV' },
      { tag: 0x0112, type: 3, values: [o.orientation ?? 6] },
      { tag: 0x8769, ifd: { tags: [{ tag: 0x9003, type: 2, values: '2024:05:06 07:08:09' }] } },
      ...(o.gps === false ? [] : [{ tag: 0x8825, ifd: GPS_IFD }]),
    ],
    next: o.thumbnailIfd ? { tags: [{ tag: 0x0103, type: 3, values: [6] }] } : undefined,
  };
}

/** A JPEG segment: marker, length, payload. */
export function segment(marker: number, payload: Uint8Array): Buffer {
  const head = Buffer.alloc(4);
  head[0] = 0xff;
  head[1] = marker;
  head.writeUInt16BE(payload.length + 2, 2);
  return Buffer.concat([head, payload]);
}

export const exifSegment = (tiffBlock: Uint8Array): Buffer => segment(0xe1, Buffer.concat([Buffer.from('Exif\0\0', 'latin1'), tiffBlock]));

export function xmpSegment(body: string): Buffer {
  return segment(0xe1, Buffer.from(`http://ns.adobe.com/xap/1.0/\0<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?><x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description ${body}/></rdf:RDF></x:xmpmeta><?xpacket end="w"?>`, 'utf8'));
}

/** One Extended XMP chunk (signature, GUID, full length, this chunk's offset, its part of the text). */
export function xmpExtensionSegment(guid: string, full: number, offset: number, part: string): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(full, 0);
  head.writeUInt32BE(offset, 4);
  return segment(0xe1, Buffer.concat([Buffer.from('http://ns.adobe.com/xmp/extension/\0', 'latin1'), Buffer.from(guid.padEnd(32, '0').slice(0, 32), 'latin1'), head, Buffer.from(part, 'utf8')]));
}

/** `segments` put right after the JPEG's SOI. */
export function withSegments(jpegBytes: Uint8Array, ...segments: Uint8Array[]): Buffer {
  return Buffer.concat([Buffer.from(jpegBytes.subarray(0, 2)), ...segments, Buffer.from(jpegBytes.subarray(2))]);
}

/** An MPF APP2 segment whose index names one more image at `offset` (from the MP header) of `size` bytes. */
export function mpfSegment(offsetOfSecond: number, sizeOfSecond: number, sizeOfFirst: number): Buffer {
  const index = tiff({
    tags: [
      { tag: 0xb000, type: 7, values: [0x30, 0x31, 0x30, 0x30] },
      { tag: 0xb001, type: 4, values: [2] },
      { tag: 0xb002, type: 7, values: [...entry(0x030000, sizeOfFirst, 0), ...entry(0x010001, sizeOfSecond, offsetOfSecond)] },
    ],
  }, false);
  return segment(0xe2, Buffer.concat([Buffer.from('MPF\0', 'latin1'), index]));
}

function entry(attr: number, size: number, offset: number): number[] {
  const b = Buffer.alloc(16);
  b.writeUInt32BE(attr, 0);
  b.writeUInt32BE(size, 4);
  b.writeUInt32BE(offset, 8);
  return [...b];
}

/** Where `needle` occurs in `hay`, every time. */
export function occurrences(hay: Uint8Array, needle: Uint8Array): number[] {
  const h = Buffer.from(hay.buffer, hay.byteOffset, hay.byteLength);
  const out: number[] = [];
  for (let at = h.indexOf(needle); at >= 0; at = h.indexOf(needle, at + 1)) out.push(at);
  return out;
}

/**
 * A photo of about 5 MB (noise compresses badly: 1660×1245 at quality 95), with a phone's EXIF
 * and its GPS position. `seed` makes different photos. Takes under a second to encode.
 */
export function bigPhoto(seed = 1, width = 1660, height = 1245): Buffer {
  const data = Buffer.alloc(width * height * 4);
  let x = seed * 2654435761 || 1;
  for (let i = 0; i < data.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    data[i] = i % 4 === 3 ? 255 : x & 0xff;
  }
  const encoded = Buffer.from(bundle.jpegjs.encode({ width, height, data }, 95).data);
  return withSegments(encoded, exifSegment(tiff(cameraIfd())));
}

// ---------------------------------------------------------------------------------------------
// PNG and WebP metadata

/** A PNG chunk: length, type, data, CRC. */
export function pngChunk(type: string, data: Uint8Array): Buffer {
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  return Buffer.concat([u32be(data.length), body, u32be(crc32(body))]);
}

/** `chunks` put right after the PNG's IHDR (the signature is 8 bytes, IHDR 25). */
export function withPngChunks(pngBytes: Uint8Array, ...chunks: Uint8Array[]): Buffer {
  return Buffer.concat([Buffer.from(pngBytes.subarray(0, 33)), ...chunks, Buffer.from(pngBytes.subarray(33))]);
}

export type PngTextType = 'tEXt' | 'zTXt' | 'iTXt';

/** A tEXt, zTXt or iTXt chunk (`compressed` for an iTXt whose text is deflated). */
export function pngTextChunk(type: PngTextType, keyword: string, text: string, compressed = false): Buffer {
  const body = Buffer.from(text, type === 'iTXt' ? 'utf8' : 'latin1');
  const key = Buffer.from(`${keyword}\0`, 'latin1');
  if (type === 'tEXt') return pngChunk(type, Buffer.concat([key, body]));
  if (type === 'zTXt') return pngChunk(type, Buffer.concat([key, Buffer.from([0]), deflateSync(body)]));
  // Compression flag and method, an empty language tag and translated keyword.
  const head = Buffer.from([compressed ? 1 : 0, 0, 0, 0]);
  return pngChunk(type, Buffer.concat([key, head, compressed ? deflateSync(body) : body]));
}

/** ImageMagick's "Raw profile type NAME" text: the name, the length, the bytes as hex 72 digits a line. */
export function rawProfileText(name: string, bytes: Uint8Array): string {
  const hex = Buffer.from(bytes).toString('hex').match(/.{1,72}/g) ?? [];
  return `\n${name}\n${String(bytes.length).padStart(8)}\n${hex.join('\n')}\n`;
}

/** The chunks of a PNG, each with its data, and whether its CRC is right. */
export function pngChunks(b: Uint8Array): Array<{ type: string; data: Buffer; crcOk: boolean }> {
  const buf = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  const out: Array<{ type: string; data: Buffer; crcOk: boolean }> = [];
  for (let pos = 8; pos + 12 <= buf.length; ) {
    const length = buf.readUInt32BE(pos);
    // A chunk cut short is no chunk a reader takes.
    if (pos + 12 + length > buf.length) break;
    const body = buf.subarray(pos + 4, pos + 8 + length);
    const crcOk = buf.readUInt32BE(pos + 8 + length) === crc32(body);
    out.push({ type: body.toString('latin1', 0, 4), data: body.subarray(4), crcOk });
    pos += 12 + length;
  }
  return out;
}

/** The pixels of a PNG, decoded by pngjs (which checks every chunk's CRC). */
export function pngPixels(b: Uint8Array): Buffer {
  return Buffer.from(bundle.PNG.sync.read(Buffer.from(b)).data);
}

/** A RIFF chunk: FourCC, little-endian size, data, a pad byte when the size is odd. */
export function riffChunk(fourcc: string, data: Uint8Array): Buffer {
  const size = Buffer.alloc(4);
  size.writeUInt32LE(data.length);
  return Buffer.concat([Buffer.from(fourcc, 'latin1'), size, data, Buffer.alloc(data.length & 1)]);
}

/** The 1×1 lossless WebP as an extended one (VP8X with `flags`), with `chunks` after its image data. */
export function extendedWebp(flags: number, ...chunks: Uint8Array[]): Buffer {
  const vp8l = Buffer.from(webp().subarray(12));
  // Flags, three reserved bytes, canvas width − 1 and height − 1 (24 bits each).
  const vp8x = riffChunk('VP8X', Buffer.from([flags, 0, 0, 0, 0, 0, 0, 0, 0, 0]));
  const body = Buffer.concat([Buffer.from('WEBP', 'latin1'), vp8x, vp8l, ...chunks]);
  const size = Buffer.alloc(4);
  size.writeUInt32LE(body.length);
  return Buffer.concat([Buffer.from('RIFF', 'latin1'), size, body]);
}

export interface RiffChunk {
  fourcc: string;
  data: Buffer;
}

/** The chunks of a WebP as a reader walks them within the RIFF size, and that size. */
export function webpChunks(b: Uint8Array): { riffSize: number; chunks: RiffChunk[]; endsAt: number } {
  const buf = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  const riffSize = buf.readUInt32LE(4);
  const chunks: RiffChunk[] = [];
  let pos = 12;
  while (pos + 8 <= Math.min(buf.length, riffSize + 8)) {
    const size = buf.readUInt32LE(pos + 4);
    chunks.push({ fourcc: buf.toString('latin1', pos, pos + 4), data: buf.subarray(pos + 8, pos + 8 + size) });
    pos += 8 + size + (size & 1);
  }
  return { riffSize, chunks, endsAt: pos };
}

/**
 * A valid PNG of `width` × `height` that is tiny on disk: 1-bit greyscale, every row zeros, so
 * deflate packs it about a thousand to one (30000×30000 is some 110 KB). Decoding it whole takes
 * what its size says.
 */
export function blankPng(width: number, height: number): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 1; // bit depth
  ihdr[9] = 0; // greyscale
  // Each row: filter byte 0, then width / 8 bytes of zeros. Run-length matching packs zeros as
  // tightly as a full search, in a fraction of the time.
  const raw = Buffer.alloc((1 + Math.ceil(width / 8)) * height);
  const idat = deflateSync(raw, { level: 1, strategy: constants.Z_RLE });
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([signature, pngChunk('IHDR', ihdr), pngChunk('IDAT', idat), pngChunk('IEND', Buffer.alloc(0))]);
}
