/**
 * Sending text to a chat through one bot: split to Telegram's 4096 limit, rendered as HTML with a
 * plain-text fallback when Telegram rejects the markup, reply and forum-topic parameters, and the
 * group → supergroup migration answer. 429s are waited out by grammY's auto-retry transformer
 * installed on every bot; the channel sends to one chat one post at a time across bots, so a
 * rate-limited chunk is never overtaken by the next one. File posts (sendFiles.ts) go through the
 * same recoveries (`sendWithRecovery`).
 */
import type { Bot } from 'grammy';
import type { InlineKeyboardMarkup } from 'grammy/types';
import type { Logger } from '../../core/ports.js';
import { splitMessage } from '../../core/text/split.js';
import { describeError, isNetworkError, isParseError, isThreadNotFound, migratedTo } from './errors.js';
import { toTelegramHtml } from './format.js';

export const TELEGRAM_LIMIT = 4096;

export interface SendTarget {
  /** Telegram chat id (after any known migration). */
  chatId: number;
  threadId?: number | undefined;
  /** Message id (in this bot's numbering) the first chunk replies to. */
  replyTo?: number | undefined;
  /** Buttons under the post (a request for approval): on its last chunk. */
  keyboard?: InlineKeyboardMarkup | undefined;
  /**
   * Put before every chunk (a relayed person's name): ready HTML, and the same as plain text. On
   * every one, because a later chunk without it would read as the post of the bot that sent it.
   */
  prefix?: Prefix | undefined;
}

/** Text before each of a post's chunks, in both of the forms a chunk is sent in. */
export interface Prefix {
  html: string;
  plain: string;
}

/**
 * The chunks `text` is posted as, each leaving room for `prefix`: posting and editing split
 * alike, so an edit meets the chunks it changes. Under a prefix a chunk's leading blank lines go,
 * so the name sits on the same line as the text it attributes.
 */
export function chunksOf(text: string, prefix?: Prefix): string[] {
  const chunks = splitMessage(text, TELEGRAM_LIMIT - (prefix?.plain.length ?? 0)).filter((c) => c.trim().length > 0);
  return prefix ? chunks.map((c) => c.replace(/^\s*\n/, '')) : chunks;
}

/** A chunk as sent: HTML (after the prefix's HTML), or plain after Telegram refused the markup. */
export function renderChunk(chunk: string, html: boolean, prefix: Prefix | undefined): string {
  return html ? (prefix?.html ?? '') + toTelegramHtml(chunk) : (prefix?.plain ?? '') + chunk;
}

export interface SendHooks {
  /** Telegram said the chat moved: remember, re-key, then the send goes on to the new id. */
  onMigrated(oldId: number, newId: number): Promise<void>;
  log: Logger;
}

/**
 * A network error (no answer: refused, reset, dropped, timed out; or a 5xx page that is not JSON)
 * is retried. That is at-least-once: when the connection dropped *after* Telegram posted the
 * message, the retry posts it again. The Bot API has no idempotency key and a bot cannot read the
 * chat to check (Discord can, see outbound.ts), and a client cannot tell "dropped before" from
 * "dropped after" once the request was sent — so the choice is a rare visible duplicate or a
 * silently lost reply; we take the duplicate. (JSON 5xx and 429 are retried by auto-retry.)
 * Pinned by tests/reliability/telegram-faults.test.ts.
 */
const NETWORK_RETRIES = 3;

/** Send `text` as one or more messages; resolves with the message ids in order. */
export function sendText(bot: Bot, target: SendTarget, text: string, hooks: SendHooks): Promise<number[]> {
  return sendChunks(bot, { ...target }, text, hooks);
}

/**
 * `sendText` on a target the caller shares with its later sends (sendFiles.ts): a migration or a
 * vanished topic met here holds for them too, and the reply, used once, is cleared.
 */
export async function sendChunks(bot: Bot, t: SendTarget, text: string, hooks: SendHooks): Promise<number[]> {
  const chunks = chunksOf(text, t.prefix);
  const ids: number[] = [];
  for (const [i, chunk] of chunks.entries()) {
    const keyboard = i === chunks.length - 1 ? t.keyboard : undefined;
    ids.push(
      await sendWithRecovery(bot, t, hooks, 'sendMessage', (c) =>
        bot.api.sendMessage(c.chatId, renderChunk(chunk, c.html, t.prefix), {
          ...(c.html ? { parse_mode: 'HTML' as const } : {}),
          ...placement(c),
          link_preview_options: { is_disabled: true },
          ...(keyboard ? { reply_markup: keyboard } : {}),
        }),
      ),
    );
    // The reply goes on the first message only.
    t.replyTo = undefined;
  }
  return ids;
}

/** Where one call posts, as it is at this attempt (the chat may have moved, the topic gone). */
export interface SendAttempt {
  chatId: number;
  threadId: number | undefined;
  replyTo: number | undefined;
  /** Send the text as HTML; false after Telegram rejected the markup. */
  html: boolean;
}

/** The forum topic and reply parameters of one attempt. */
export function placement(c: SendAttempt): { message_thread_id?: number; reply_parameters?: { message_id: number; allow_sending_without_reply: true } } {
  return {
    ...(c.threadId !== undefined ? { message_thread_id: c.threadId } : {}),
    ...(c.replyTo !== undefined ? { reply_parameters: { message_id: c.replyTo, allow_sending_without_reply: true as const } } : {}),
  };
}

/**
 * One Bot API post (`method` names it in errors; a text chunk, a photo, a document), made again as
 * each answer requires: to the new chat after a migration, as plain text when the markup was
 * rejected, to the main chat when the topic is gone, after a pause on a network error. `t` is
 * updated as it goes, so the posts after it go where this one went. Resolves with the message id.
 */
export async function sendWithRecovery(bot: Bot, t: SendTarget, hooks: SendHooks, method: string, call: (c: SendAttempt) => Promise<{ message_id: number }>): Promise<number> {
  let html = true;
  let networkTries = 0;
  // Each failure below changes what we send, so the loop always ends.
  for (let attempt = 0; ; attempt++) {
    try {
      const msg = await call({ chatId: t.chatId, threadId: t.threadId, replyTo: t.replyTo, html });
      return msg.message_id;
    } catch (err) {
      const safe = describeError(err, [bot.token]);
      const newId = migratedTo(err);
      if (newId !== undefined && newId !== t.chatId && attempt < 5) {
        hooks.log.info({ from: t.chatId, to: newId }, 'telegram: chat was upgraded to a supergroup; re-keying and resending');
        await hooks.onMigrated(t.chatId, newId);
        t.chatId = newId;
        continue;
      }
      if (html && isParseError(err)) {
        hooks.log.warn({ err: safe }, 'telegram: markup rejected; resending as plain text');
        html = false;
        continue;
      }
      if (t.threadId !== undefined && isThreadNotFound(err)) {
        hooks.log.warn({ threadId: t.threadId }, 'telegram: forum topic is gone; posting to the main chat');
        t.threadId = undefined;
        continue;
      }
      if (isNetworkError(err) && networkTries < NETWORK_RETRIES) {
        networkTries++;
        await new Promise((r) => setTimeout(r, 1000 * 2 ** networkTries));
        continue;
      }
      // The cause stays attached: a relay tells a refusal for good (403, 400) from a passing failure.
      throw new Error(`telegram ${method} failed: ${safe}`, { cause: err });
    }
  }
}
