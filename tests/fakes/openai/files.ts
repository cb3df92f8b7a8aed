/**
 * Content parts in requests to the fake OpenAI-compatible server. `image_url` parts with a data
 * URL are decoded and kept with their SHA-256 and media type, so a test can check that the bytes a
 * model got are the bytes that were posted. A server without vision answers as llama.cpp does
 * without a projector (`--mmproj`): 500 "image input is not supported - hint: …" in most builds,
 * 400 in newer ones (option `noVision`).
 */
import { createHash } from 'node:crypto';

/** One image as the fake received it. */
export interface ReceivedImage {
  /** Where it was: `messages[2].content[1]`. */
  path: string;
  mediaType: string;
  /** SHA-256 (hex) of the decoded bytes. */
  sha256: string;
  size: number;
}

/** llama.cpp's words for an image sent to a model without a vision projector. */
export const NO_VISION_MESSAGE = 'image input is not supported - hint: if this is unexpected, you may need to provide the mmproj';

type Json = Record<string, unknown>;

const PART_TYPES = new Set(['text', 'image_url', 'input_audio', 'file']);

/** The images of a request body in order, or a 400 message for the first part the server would refuse. */
export function receiveImages(body: Json): { images: ReceivedImage[] } | { problem: string } {
  const images: ReceivedImage[] = [];
  const messages = Array.isArray(body['messages']) ? (body['messages'] as Json[]) : [];
  for (const [i, m] of messages.entries()) {
    const content = m['content'];
    if (!Array.isArray(content)) continue;
    for (const [j, part] of (content as Json[]).entries()) {
      const at = `messages[${i}].content[${j}]`;
      if (!PART_TYPES.has(String(part['type']))) return { problem: `Invalid value for '${at}.type': '${String(part['type'])}'` };
      if (part['type'] === 'text' && typeof part['text'] !== 'string') return { problem: `Missing required parameter: '${at}.text'` };
      if (part['type'] !== 'image_url') continue;
      if (m['role'] !== 'user') return { problem: `Invalid '${at}': image_url parts are only allowed in user messages` };
      const url = String((part['image_url'] as Json | undefined)?.['url'] ?? '');
      const data = /^data:([a-z]+\/[a-z0-9.+-]+);base64,([A-Za-z0-9+/]*={0,2})$/.exec(url);
      if (!data) return { problem: `Invalid '${at}.image_url.url': this fake takes base64 data URLs only` };
      const bytes = Buffer.from(data[2]!, 'base64');
      images.push({ path: at, mediaType: data[1]!, sha256: createHash('sha256').update(bytes).digest('hex'), size: bytes.length });
    }
  }
  return { images };
}
