/**
 * Files in chat completions (OpenAI, llama.cpp's server with a vision projector, Ollama, vLLM). A
 * user turn with files becomes content parts: for each file a label and then the file — an
 * `image_url` part with a data URL for an image, the content itself for a text file — and after
 * them the turn's text. Chat completions have no part for a PDF that every compatible server
 * takes, so a PDF goes as its line (src/llm/promptFiles.ts), as does a file that could not be read.
 *
 * Several servers flatten text parts into one string by plain concatenation, so every text part
 * made here ends in a line break: a label or a file never runs into the text after it.
 */
import type OpenAI from 'openai';
import type { ChatTurn } from '../core/types.js';
import { DEFAULT_MAX_IMAGE_PIXELS } from '../files/pixels.js';
import { base64Of, bytesOf, fileLabel, textOf, tooManyPixels, unshownFile, type PromptFiles } from './promptFiles.js';

type ContentPart = OpenAI.Chat.Completions.ChatCompletionContentPart;

/**
 * The content parts of a user turn with files: each file (label, then the file, or its line), then
 * the text. An image over `maxImagePixels` goes as its line.
 */
export function openAiUserContent(
  turn: ChatTurn,
  files: PromptFiles,
  maxImagePixels = DEFAULT_MAX_IMAGE_PIXELS,
): ContentPart[] {
  const parts: ContentPart[] = [];
  const text = (t: string) => parts.push({ type: 'text', text: t });
  for (const a of turn.attachments ?? []) {
    const bytes = bytesOf(files, a);
    const pixels = bytes && tooManyPixels(a, bytes, maxImagePixels);
    if (!bytes) text(`${unshownFile(a, 'the file could not be read')}\n\n`);
    else if (a.type === 'text/plain') text(`${fileLabel(a)}\n${endLine(textOf(bytes))}\n`);
    else if (a.type === 'application/pdf') text(`${unshownFile(a, 'this model is not sent PDFs')}\n\n`);
    else if (pixels) text(`${unshownFile(a, pixels)}\n\n`);
    else {
      text(`${fileLabel(a)}\n`);
      parts.push({ type: 'image_url', image_url: { url: `data:${a.type};base64,${base64Of(bytes)}` } });
    }
  }
  text(turn.content);
  return parts;
}

/** Text ending in a line break (one is added when it has none). */
function endLine(t: string): string {
  return t.endsWith('\n') ? t : `${t}\n`;
}
