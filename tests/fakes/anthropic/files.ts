/**
 * Files in requests to the fake Anthropic server: `image` blocks (base64) and `document` blocks
 * (a base64 PDF, or a plain-text source) in user messages. Each one is decoded and kept with its
 * SHA-256 and media type, so a test can check that the bytes a model got are the bytes that were
 * posted. The checks of the real API that are cheap to make answer 400 `invalid_request_error`
 * with its wording: a media type the API does not take, data that is not base64, an image whose
 * bytes are not of the type it claims, an image over 5 MB (of base64 text).
 */
import { createHash } from 'node:crypto';

/** The API's limit for one image, on its base64 text. */
export const FAKE_IMAGE_MAX_BASE64 = 5 * 1024 * 1024;

/** One file as the fake received it. */
export interface ReceivedFile {
  /** Where it was: `messages[2].content[1]`. */
  path: string;
  kind: 'image' | 'document';
  mediaType: string;
  /** SHA-256 (hex) of the decoded bytes; for a text document, of its text as UTF-8. */
  sha256: string;
  /** Decoded bytes. */
  size: number;
  /** A plain-text document's text. */
  text?: string;
  /** A document's `title`. */
  title?: string;
}

const IMAGE_TYPES = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'];

type Json = Record<string, unknown>;

/** The image type its bytes say, from their magic numbers. */
function sniff(b: Buffer): string | null {
  if (b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'image/png';
  if (b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'image/jpeg';
  if (b.subarray(0, 4).toString('latin1') === 'GIF8') return 'image/gif';
  if (b.subarray(0, 4).toString('latin1') === 'RIFF' && b.subarray(8, 12).toString('latin1') === 'WEBP') return 'image/webp';
  return null;
}

/** Strict base64 (what the API decodes), or null. */
function decode(data: unknown): Buffer | null {
  if (typeof data !== 'string' || data.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(data)) return null;
  return Buffer.from(data, 'base64');
}

const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

/** The files of a request body in order, or the API's message refusing the first bad one. */
export function receiveFiles(body: Json): { files: ReceivedFile[] } | { problem: string } {
  const files: ReceivedFile[] = [];
  const messages = Array.isArray(body['messages']) ? (body['messages'] as Json[]) : [];
  for (const [i, m] of messages.entries()) {
    if (!Array.isArray(m['content'])) continue;
    for (const [j, block] of (m['content'] as Json[]).entries()) {
      const at = `messages.${i}.content.${j}`;
      const path = `messages[${i}].content[${j}]`;
      const type = block['type'];
      if (type !== 'image' && type !== 'document') continue;
      if (m['role'] !== 'user') return { problem: `${at}: ${String(type)} blocks are only allowed in user messages` };
      const source = (block['source'] ?? {}) as Json;
      const mediaType = String(source['media_type']);
      if (type === 'image') {
        if (source['type'] !== 'base64') return { problem: `${at}.image.source: this fake takes base64 images only` };
        if (!IMAGE_TYPES.includes(mediaType)) return { problem: `${at}.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'` };
        const data = source['data'];
        const bytes = decode(data);
        if (!bytes) return { problem: `${at}.image.source.base64.data: invalid base64 data` };
        if ((data as string).length > FAKE_IMAGE_MAX_BASE64) {
          return { problem: `${at}.image.source.base64: image exceeds 5 MB maximum: ${(data as string).length} bytes > ${FAKE_IMAGE_MAX_BASE64} bytes` };
        }
        if (sniff(bytes) !== mediaType) return { problem: `${at}.image.source.base64.data: Image does not match the provided media type ${mediaType}` };
        files.push({ path, kind: 'image', mediaType, sha256: sha256(bytes), size: bytes.length });
        continue;
      }
      const title = typeof block['title'] === 'string' ? { title: block['title'] } : {};
      if (source['type'] === 'base64' && mediaType === 'application/pdf') {
        const bytes = decode(source['data']);
        if (!bytes) return { problem: `${at}.document.source.base64.data: invalid base64 data` };
        if (bytes.subarray(0, 5).toString('latin1') !== '%PDF-') return { problem: `${at}.document.source.base64.data: The PDF specified was not valid.` };
        files.push({ path, kind: 'document', mediaType, sha256: sha256(bytes), size: bytes.length, ...title });
      } else if (source['type'] === 'text' && mediaType === 'text/plain') {
        const text = source['data'];
        if (typeof text !== 'string' || text === '') return { problem: `${at}.document.source.text.data: must be a non-empty string` };
        files.push({ path, kind: 'document', mediaType, sha256: sha256(text), size: Buffer.byteLength(text), text, ...title });
      } else {
        return { problem: `${at}.document.source: this fake takes a base64 application/pdf or a text/plain text source` };
      }
    }
  }
  return { files };
}
