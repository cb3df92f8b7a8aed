/**
 * PNG's text chunks, read and written back in the same form: `tEXt` (keyword, NUL, Latin-1
 * text), `zTXt` (the text deflated) and `iTXt` (UTF-8, optionally deflated, with a language tag
 * and a translated keyword). And ImageMagick's "Raw profile type NAME" text, which carries a
 * binary profile — an EXIF block, XMP, Photoshop resources — as hex digits: "\nexif\n   1234\n4578…".
 *
 * Anything these cannot read with certainty is null: the caller drops that chunk, as a text
 * chunk is never needed to show the image.
 */
import { deflateSync, inflateSync } from 'node:zlib';

/** A text chunk's words, read: its keyword and text, and a way to write another text in its place. */
export interface TextChunk {
  keyword: string;
  text: Buffer;
  /** Everything a reader could take a location from (keywords, language tag, text), as Latin-1. */
  words: string;
  /** The chunk's data with `text` in place of its text, compressed as it was. */
  rewrite(text: Buffer): Uint8Array;
}

/** More text than this, inflated, is no caption: a file made to fill memory (the chunk is dropped). */
const MAX_TEXT_BYTES = 16 * 1024 * 1024;

/** The text chunk's keyword and text, or null when it cannot be read (no keyword, bad deflate data, too large). */
export function readTextChunk(type: string, data: Uint8Array): TextChunk | null {
  const b = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const nul = b.indexOf(0);
  if (nul <= 0) return null;
  const keyword = b.toString('latin1', 0, nul);
  const at = (textStart: number, compressed: boolean): TextChunk | null => {
    const stored = b.subarray(textStart);
    const text = compressed ? inflateBounded(stored) : stored;
    if (!text) return null;
    const head = b.subarray(0, textStart);
    return {
      keyword,
      text,
      words: `${head.toString('latin1')}\n${text.toString('latin1')}`,
      rewrite: (t) => new Uint8Array(Buffer.concat([head, compressed ? deflateSync(t) : t])),
    };
  };
  if (type === 'tEXt') return at(nul + 1, false);
  if (type === 'zTXt') return b[nul + 1] === 0 ? at(nul + 2, true) : null;
  if (type === 'iTXt') {
    const flag = b[nul + 1];
    if ((flag !== 0 && flag !== 1) || b[nul + 2] !== 0) return null;
    const langEnd = b.indexOf(0, nul + 3);
    const translatedEnd = langEnd < 0 ? -1 : b.indexOf(0, langEnd + 1);
    return translatedEnd < 0 ? null : at(translatedEnd + 1, flag === 1);
  }
  return null;
}

function inflateBounded(b: Buffer): Buffer | null {
  try {
    return inflateSync(b, { maxOutputLength: MAX_TEXT_BYTES });
  } catch {
    return null;
  }
}

/** A raw profile's name ("exif", "APP1", "xmp", "8bim"…) and its bytes. */
export interface RawProfile {
  name: string;
  bytes: Buffer;
}

/** The keyword ImageMagick gives a raw profile chunk. */
export const RAW_PROFILE = /^raw profile type (\S+)$/i;

/**
 * The bytes of a raw profile's text: a line with its name, one with its length, then that many
 * bytes as hex digits in lines. Null when the text is not of that form or has fewer digits than
 * it says.
 */
export function readRawProfile(text: Buffer): RawProfile | null {
  const m = /^\s*(\S+)[ \t\r]*\n\s*(\d+)[ \t\r]*\n([\s\S]*)$/.exec(text.toString('latin1'));
  if (!m) return null;
  const length = Number(m[2]);
  const hex = m[3]!.replace(/\s+/g, '');
  if (!/^[0-9a-f]*$/i.test(hex) || hex.length < 2 * length) return null;
  return { name: m[1]!, bytes: Buffer.from(hex.slice(0, 2 * length), 'hex') };
}

/** A raw profile's text as ImageMagick writes it: 72 hex digits a line. */
export function writeRawProfile(p: RawProfile): Buffer {
  const hex = p.bytes.toString('hex');
  const lines: string[] = [];
  for (let i = 0; i < hex.length; i += 72) lines.push(hex.slice(i, i + 72));
  return Buffer.from(`\n${p.name}\n${String(p.bytes.length).padStart(8)}\n${lines.join('\n')}\n`, 'latin1');
}
