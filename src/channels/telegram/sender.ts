/**
 * Sending text to a chat through one bot: split to Telegram's 4096 limit, rendered as HTML with a
 * plain-text fallback when Telegram rejects the markup, reply and forum-topic parameters, and the
 * group → supergroup migration answer. 429s are waited out by grammY's auto-retry transformer
 * installed on every bot; the channel sends to one chat one post at a time across bots, so a
 * rate-limited chunk is never overtaken by the next one.
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
  /** Put before the first chunk (a relayed person's name): ready HTML, and the same as plain text. */
  prefix?: Prefix | undefined;
}

/** Text before a post's first chunk, in both of the forms a chunk is sent in. */
export interface Prefix {
  html: string;
  plain: string;
}

/**
 * The chunks `text` is posted as, the first leaving room for `prefix`: posting and editing split
 * alike, so an edit meets the chunks it changes.
 */
export function chunksOf(text: string, prefix?: Prefix): string[] {
  return splitMessage(text, TELEGRAM_LIMIT - (prefix?.plain.length ?? 0)).filter((c) => c.trim().length > 0);
}

/** A chunk as sent: HTML (with the prefix's HTML on the first), or plain after Telegram refused the markup. */
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
export async function sendText(bot: Bot, target: SendTarget, text: string, hooks: SendHooks): Promise<number[]> {
  const chunks = chunksOf(text, target.prefix);
  const ids: number[] = [];
  const t = { ...target };
  for (const [i, chunk] of chunks.entries()) {
    ids.push(await sendChunk(bot, t, chunk, i === 0 ? t.replyTo : undefined, hooks, i === chunks.length - 1 ? t.keyboard : undefined, i === 0 ? t.prefix : undefined));
  }
  return ids;
}

async function sendChunk(bot: Bot, t: SendTarget, chunk: string, replyTo: number | undefined, hooks: SendHooks, keyboard: InlineKeyboardMarkup | undefined, prefix: Prefix | undefined): Promise<number> {
  let html = true;
  let networkTries = 0;
  // Each failure below changes what we send, so the loop always ends.
  for (let attempt = 0; ; attempt++) {
    try {
      const msg = await bot.api.sendMessage(t.chatId, renderChunk(chunk, html, prefix), {
        ...(html ? { parse_mode: 'HTML' as const } : {}),
        ...(t.threadId !== undefined ? { message_thread_id: t.threadId } : {}),
        ...(replyTo !== undefined ? { reply_parameters: { message_id: replyTo, allow_sending_without_reply: true } } : {}),
        link_preview_options: { is_disabled: true },
        ...(keyboard ? { reply_markup: keyboard } : {}),
      });
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
      throw new Error(`telegram sendMessage failed: ${safe}`, { cause: err });
    }
  }
}
