/**
 * Files in the Messages API. A user turn with files becomes, for each file, a short label
 * (`Image "chart.png" shared by Maya:`) and then the file itself — an `image` block (base64), a
 * `document` block with a base64 PDF, or a `document` block with a plain-text source — and after
 * them the turn's text. Images come before the words about them, as Anthropic recommends.
 *
 * The API refuses a whole request over one file past its limits (an image over 5 MB of base64 or
 * 8000 pixels a side, over 2000 pixels a side when the request has more than 20 images, more
 * than 32 MB in all), and would refuse it again on every later turn while that file is in the
 * history. Such a file is sent as its line instead (src/llm/promptFiles.ts): the turn loses the
 * picture, not the agent its voice. So is an image over `limits.max_image_pixels`, whatever the
 * API would take.
 */
import type Anthropic from '@anthropic-ai/sdk';
import type { PromptAttachment } from '../core/fileTypes.js';
import type { ChatTurn } from '../core/types.js';
import { nonEmpty } from './common.js';
import { DEFAULT_MAX_IMAGE_PIXELS } from '../files/pixels.js';
import { base64Length, base64Of, bytesOf, fileLabel, textOf, tooManyPixels, unshownFile } from './promptFiles.js';
import type { PromptFiles } from './promptFiles.js';

type ContentBlockParam = Anthropic.ContentBlockParam;

/** The API's limit for one image, on its base64 text. */
export const IMAGE_MAX_BASE64 = 5 * 1024 * 1024;
/** Longest side of an image the API takes. */
export const IMAGE_MAX_SIDE = 8000;
/** With more images than this in one request, each side may be at most `MANY_IMAGES_MAX_SIDE`. */
export const MANY_IMAGES = 20;
export const MANY_IMAGES_MAX_SIDE = 2000;
/**
 * Base64 bytes of files one request may carry: the API takes 32 MB per request, and the text,
 * the tools and the JSON around them need room too.
 */
export const REQUEST_FILES_MAX_BASE64 = 24 * 1024 * 1024;

/** Per turn, per attachment: null to send it in full, or why it goes as its line. */
export type FilePlan = Array<Array<string | null>>;

function longestSide(a: PromptAttachment): number {
  return Math.max(a.width ?? 0, a.height ?? 0);
}

/**
 * Which files of the request go in full. Newer turns come first for the request's byte budget:
 * the newest files are the ones being talked about, and an older one left out is still named by
 * its line.
 */
export function planAnthropicFiles(
  turns: readonly ChatTurn[],
  files: PromptFiles,
  maxImagePixels = DEFAULT_MAX_IMAGE_PIXELS,
): FilePlan {
  const plan: FilePlan = turns.map((t) =>
    (t.role === 'user' ? (t.attachments ?? []) : []).map((a) => {
      const bytes = bytesOf(files, a);
      if (!bytes) return 'the file could not be read';
      if (!a.type.startsWith('image/')) return null;
      const pixels = tooManyPixels(a, bytes, maxImagePixels);
      if (pixels) return pixels;
      if (base64Length(bytes.length) > IMAGE_MAX_BASE64) return 'over the 5 MB the model takes for an image';
      if (longestSide(a) > IMAGE_MAX_SIDE) return `over the ${IMAGE_MAX_SIDE} pixels a side the model takes`;
      return null;
    }),
  );
  const each = (fn: (a: PromptAttachment, i: number, j: number) => void) =>
    turns.forEach((t, i) => plan[i]!.forEach((why, j) => why === null && fn(t.attachments![j]!, i, j)));

  let images = 0;
  each((a) => void (a.type.startsWith('image/') && images++));
  if (images > MANY_IMAGES) {
    each((a, i, j) => {
      if (a.type.startsWith('image/') && longestSide(a) > MANY_IMAGES_MAX_SIDE) {
        plan[i]![j] = `over the ${MANY_IMAGES_MAX_SIDE} pixels a side the model takes with more than ${MANY_IMAGES} images`;
      }
    });
  }

  let budget = REQUEST_FILES_MAX_BASE64;
  for (let i = turns.length - 1; i >= 0; i--) {
    turns[i]!.attachments?.forEach((a, j) => {
      if (plan[i]![j] !== null) return;
      const size = base64Length(files.get(a.id)!.bytes.length);
      if (size > budget) plan[i]![j] = 'too large to send with the other files';
      else budget -= size;
    });
  }
  return plan;
}

/** The content of a user turn: each file (label, then the file, or its line), then the turn's text. */
export function anthropicUserContent(turn: ChatTurn, plan: ReadonlyArray<string | null>, files: PromptFiles): ContentBlockParam[] {
  const out: ContentBlockParam[] = [];
  (turn.attachments ?? []).forEach((a, j) => {
    const why = plan[j];
    const bytes = bytesOf(files, a);
    if (why !== null || !bytes) {
      out.push({ type: 'text', text: unshownFile(a, why ?? 'the file could not be read') });
      return;
    }
    out.push({ type: 'text', text: fileLabel(a) }, fileBlock(a, bytes));
  });
  out.push({ type: 'text', text: nonEmpty(turn.content) });
  return out;
}

function fileBlock(a: PromptAttachment, bytes: Uint8Array): ContentBlockParam {
  switch (a.type) {
    case 'image/png':
    case 'image/jpeg':
    case 'image/gif':
    case 'image/webp':
      return { type: 'image', source: { type: 'base64', media_type: a.type, data: base64Of(bytes) } };
    case 'application/pdf':
      return { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: base64Of(bytes) }, title: a.name };
    case 'text/plain':
      return { type: 'document', source: { type: 'text', media_type: 'text/plain', data: nonEmpty(textOf(bytes)) }, title: a.name };
  }
}
