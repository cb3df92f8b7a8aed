/**
 * Posting text with files through one bot: images with `sendPhoto` (shown inline), GIFs with
 * `sendAnimation`, everything else with `sendDocument`, each uploaded from the kept bytes. The
 * text (with a relayed person's name before it) is the first file's caption, as HTML, when it fits
 * Telegram's caption limit, otherwise it goes as messages before the files. A relayed person's
 * other files carry their name alone as the caption: each is a message of its own, sent by a bot
 * that may be an agent's, and must not read as that agent's. Every file post gets
 * the text sender's recoveries (sender.ts: migration, rejected markup, vanished topic, network);
 * 429s are waited out by auto-retry on every method. Two refusals have their own way out: an image
 * Telegram will not process as a photo goes as a document, and a caption it counts as too long
 * goes as a message before the file.
 */
import { GrammyError, InputFile, type Bot } from 'grammy';
import type { Attachment } from '../../core/fileTypes.js';
import { placement, renderChunk, sendChunks, sendText, sendWithRecovery, type Prefix, type SendAttempt, type SendHooks, type SendTarget } from './sender.js';

/** Telegram's caption limit; a longer text goes as its own messages before the files. */
export const CAPTION_LIMIT = 1024;

/**
 * Telegram takes photos up to 10 MB whose width and height add up to at most 10,000 with a side
 * ratio of at most 20; other images go as documents rather than be refused.
 */
const PHOTO_MAX_BYTES = 10 * 1024 * 1024;

export interface OutFile {
  meta: Attachment;
  bytes: Uint8Array;
}

/**
 * Send `text` with `files` (none: text alone) through one bot; resolves with every message id in
 * order. The reply goes on the first message, buttons (`target.keyboard`) on the last.
 */
export async function sendPost(bot: Bot, target: SendTarget, text: string, files: readonly OutFile[], hooks: SendHooks): Promise<number[]> {
  if (files.length === 0) return sendText(bot, target, text, hooks);
  const t: SendTarget = { ...target, keyboard: undefined };
  const ids: number[] = [];
  const body = text.trim();
  // A file without the text still says whose it is (relayed); an agent's carries nothing.
  const named: Caption | undefined = t.prefix ? { body: '', prefix: t.prefix } : undefined;
  let caption: Caption | undefined = body || t.prefix ? { body, prefix: t.prefix } : undefined;
  if (body && body.length + (t.prefix?.plain.length ?? 0) > CAPTION_LIMIT) {
    ids.push(...(await textFirst(bot, t, body, hooks)));
    caption = named;
  }
  for (const [i, file] of files.entries()) {
    const keyboard = i === files.length - 1 ? target.keyboard : undefined;
    try {
      ids.push(await sendFile(bot, t, file, i === 0 ? caption : named, keyboard, hooks));
    } catch (err) {
      // The rendered caption turned out too long after all: the text as messages, then the file.
      if (i !== 0 || !caption?.body || !refusedAs(err, /caption is too long/i)) throw err;
      hooks.log.warn({ name: file.meta.name }, 'telegram: caption refused as too long; sending the text first');
      ids.push(...(await textFirst(bot, t, caption.body, hooks)));
      ids.push(await sendFile(bot, t, file, named, keyboard, hooks));
    }
    t.replyTo = undefined;
  }
  return ids;
}

/** The text as messages before the files (they follow where it went: a moved chat, a gone topic). */
function textFirst(bot: Bot, t: SendTarget, body: string, hooks: SendHooks): Promise<number[]> {
  return sendChunks(bot, t, body, hooks);
}

interface Caption {
  body: string;
  prefix: Prefix | undefined;
}

type Kind = 'photo' | 'animation' | 'document';

/** How a file is best shown: an image inline when Telegram takes it as a photo. */
function kindOf(meta: Attachment): Kind {
  if (meta.type === 'image/gif') return 'animation';
  if (!meta.type.startsWith('image/') || meta.size > PHOTO_MAX_BYTES) return 'document';
  const { width: w, height: h } = meta;
  if (w && h && (w + h > 10_000 || Math.max(w, h) / Math.min(w, h) > 20)) return 'document';
  return 'photo';
}

async function sendFile(bot: Bot, t: SendTarget, file: OutFile, caption: Caption | undefined, keyboard: SendTarget['keyboard'], hooks: SendHooks): Promise<number> {
  const kind = kindOf(file.meta);
  const send = (k: Kind) =>
    sendWithRecovery(bot, t, hooks, k === 'photo' ? 'sendPhoto' : k === 'animation' ? 'sendAnimation' : 'sendDocument', (c) => {
      // A new InputFile each attempt: grammY consumes the one it sent.
      const input = new InputFile(file.bytes, file.meta.name);
      const extra = { ...captionFields(caption, c), ...placement(c), ...(keyboard ? { reply_markup: keyboard } : {}) };
      if (k === 'photo') return bot.api.sendPhoto(c.chatId, input, extra);
      if (k === 'animation') return bot.api.sendAnimation(c.chatId, input, extra);
      return bot.api.sendDocument(c.chatId, input, extra);
    });
  try {
    return await send(kind);
  } catch (err) {
    // An image Telegram will not process as a photo or animation still reaches the chat as a file.
    if (kind === 'document' || !refusedAs(err, /PHOTO|IMAGE|ANIMATION|DIMENSIONS|file type/i)) throw err;
    hooks.log.warn({ name: file.meta.name, type: file.meta.type }, `telegram: ${kind} refused; sending the file as a document`);
    return send('document');
  }
}

/** The caption as this attempt sends it: HTML (the name bold), or plain after the markup was rejected. */
function captionFields(caption: Caption | undefined, c: SendAttempt): { caption?: string; parse_mode?: 'HTML' } {
  if (!caption) return {};
  const name = caption.prefix ? nameCaption(caption.prefix, c.html) : '';
  const text = caption.body ? renderChunk(caption.body, c.html, caption.prefix) : name;
  if (!text) return {};
  return c.html ? { caption: text, parse_mode: 'HTML' } : { caption: text };
}

/** A relayed file without text carries the name alone: "Maya (Discord)". */
export function nameCaption(prefix: Prefix, html: boolean): string {
  return (html ? prefix.html : prefix.plain).replace(/:\s*$/, '');
}

/** A 400 from Telegram (kept as the cause of the sender's error) whose description matches. */
function refusedAs(err: unknown, description: RegExp): boolean {
  const cause = err instanceof Error ? err.cause : undefined;
  return cause instanceof GrammyError && cause.error_code === 400 && description.test(cause.description);
}
