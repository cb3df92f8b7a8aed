/**
 * A request for approval on Telegram, every argument shown before the buttons:
 * - whole, the arguments as a JSON code block, when it fits one message (4,096 characters of
 *   visible text; the markup does not count);
 * - else in parts, each saying "part k of n" with its piece of the arguments as code, the buttons
 *   under the last one only, so nobody presses them before the whole request is in the chat;
 * - else (more than MAX_ARG_PARTS parts: nobody reads a wall of messages) the arguments as a .json
 *   document, with the buttons under it and a caption saying to read it first.
 * The arguments are model output: in HTML they are escaped and inside <pre>, so backticks, tags,
 * `&amp;` or `**` show literally; when Telegram rejects the markup anyway, the plain text goes.
 */
import { InputFile, type Bot } from 'grammy';
import type { ApprovalRequest, ArgPart } from '../../core/text/approvalText.js';
import { argParts, argsFileName, fileNote, MAX_ARG_PARTS, partHead } from '../../core/text/approvalText.js';
import { escapeHtml } from './format.js';
import { placement, sendWithRecovery, TELEGRAM_LIMIT } from './sender.js';
import type { SendAttempt, SendHooks, SendTarget } from './sender.js';
import { CAPTION_LIMIT, sendPost, type OutFile } from './sendFiles.js';

/** What one post carries: its text, its files, and whether it asks for approval. */
interface Post {
  text: string;
  files: readonly OutFile[];
  approval: ApprovalRequest | undefined;
}

/** One message of a request, in both of the forms it may be sent in. */
export interface TgPart {
  html: string;
  plain: string;
}

/** How a request goes out: its messages, then (when the arguments are too long to read here) the file. */
export interface TgApproval {
  parts: TgPart[];
  file?: { name: string; bytes: Uint8Array; caption: TgPart | undefined } | undefined;
}

const code = (text: string) => `<pre><code class="language-json">${escapeHtml(text)}</code></pre>`;

/** Lines of text around the arguments, as both forms. */
function message(before: string, args: string, after: string | undefined): TgPart {
  const tail = after === undefined ? '' : `\n${after}`;
  return { html: `${escapeHtml(before)}\n${code(args)}${escapeHtml(tail)}`, plain: `${before}\n${args}${tail}` };
}

/** The messages (and maybe the file) of a request; the visible text of each is within Telegram's limit. */
export function telegramApproval(r: ApprovalRequest): TgApproval {
  const whole = message(r.head, r.args, r.how);
  if (whole.plain.length <= TELEGRAM_LIMIT) return { parts: [whole] };
  // Room for the longest head a part can have ("part 99 of 99, going on …") and the last one's line.
  const budget = TELEGRAM_LIMIT - partHead(r, 99, 99, true).length - r.how.length - 2;
  const pieces = argParts(r.args, budget);
  if (pieces.length <= MAX_ARG_PARTS) {
    const n = pieces.length;
    const part = (p: ArgPart, i: number) =>
      message(partHead(r, i + 1, n, p.continues), p.text, i === n - 1 ? r.how : undefined);
    return { parts: pieces.map(part) };
  }
  const name = argsFileName(r);
  const text = `${r.head}\n${fileNote(r, name)}\n${r.how}`;
  const caption = { html: escapeHtml(text), plain: text };
  const bytes = new TextEncoder().encode(r.args);
  // A caption too long for a document (very long names) goes as a message before it.
  if (text.length > CAPTION_LIMIT) return { parts: [caption], file: { name, bytes, caption: undefined } };
  return { parts: [], file: { name, bytes, caption } };
}

/** A part as this attempt sends it: HTML, or plain after Telegram rejected the markup. */
function form(p: TgPart, c: SendAttempt): { text: string; parse_mode?: 'HTML' } {
  return c.html ? { text: p.html, parse_mode: 'HTML' } : { text: p.plain };
}

/**
 * A post with `text`, or, when it asks for `approval` (and carries no files, which a request never
 * does), the request laid out as above. Resolves with the message ids in order.
 */
export function sendPostOrRequest(bot: Bot, target: SendTarget, post: Post, hooks: SendHooks): Promise<number[]> {
  const { text, files, approval } = post;
  if (approval && files.length === 0) return sendApproval(bot, target, approval, hooks);
  return sendPost(bot, target, text, files, hooks);
}

/** Send a request through one bot; resolves with the message ids in order (the buttons are on the last). */
async function sendApproval(bot: Bot, target: SendTarget, r: ApprovalRequest, hooks: SendHooks): Promise<number[]> {
  const t: SendTarget = { ...target };
  const { parts, file } = telegramApproval(r);
  const ids: number[] = [];
  const buttons = (on: boolean) => (on && t.keyboard ? { reply_markup: t.keyboard } : {});
  for (const [i, part] of parts.entries()) {
    const extra = { ...buttons(i === parts.length - 1 && !file), link_preview_options: { is_disabled: true } };
    ids.push(
      await sendWithRecovery(bot, t, hooks, 'sendMessage', (c) => {
        const { text, ...mode } = form(part, c);
        return bot.api.sendMessage(c.chatId, text, { ...mode, ...placement(c), ...extra });
      }),
    );
    // The reply goes on the first message only.
    t.replyTo = undefined;
  }
  if (file) {
    ids.push(
      await sendWithRecovery(bot, t, hooks, 'sendDocument', (c) => {
        const caption = file.caption ? form(file.caption, c) : undefined;
        const mode = caption?.parse_mode ? { parse_mode: caption.parse_mode } : {};
        const text = caption ? { caption: caption.text, ...mode } : {};
        // A new InputFile each attempt: grammY consumes the one it sent.
        const input = new InputFile(file.bytes, file.name);
        return bot.api.sendDocument(c.chatId, input, { ...text, ...placement(c), ...buttons(true) });
      }),
    );
  }
  return ids;
}
