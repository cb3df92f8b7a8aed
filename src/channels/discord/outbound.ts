/**
 * Sending one chunk of text to a Discord channel through its webhook, with the recoveries that
 * keep replies from being lost: a webhook deleted behind our back is recreated once, and a
 * system notice that cannot use the webhook (no Manage Webhooks) is posted by the bot itself so
 * the chat still hears what is wrong. Errors leave here sanitised (no webhook token).
 */
import { HTTPError, Routes, SnowflakeUtil, type APIMessage, type Client, type WebhookClient } from 'discord.js';
import type { Logger } from '../../core/ports.js';
import type { ChatRef } from '../../core/types.js';
import { BoundedSet } from '../../core/lib/BoundedMap.js';
import { DiscordPostError, isMissingPermission, sanitizeError } from './errors.js';
import { guildChannel } from './permissions.js';
import { missingManageWebhooksMessage } from './startupChecks.js';
import { MissingWebhookPermission, isUnknownWebhook, type WebhookCache } from './webhooks.js';

export interface OutboundContext {
  client: Client;
  webhooks: WebhookCache;
  log: Logger;
  /** Remember a channel-level problem so `/group list` can show it. */
  channelProblem(channelId: string, message: string): void;
  /**
   * Ids of this process's posts whose send was answered (or that a lookup already claimed), so a
   * lookup never takes one of them for the post it is looking for.
   */
  answered: BoundedSet<string>;
}

export interface Sender {
  username: string;
  avatarURL: string | undefined;
  /** 'none': the text pings nobody (a relayed person's "@everyone" stays text); else users only. */
  mentions?: 'none' | undefined;
}

/**
 * Resends after a failure that leaves it open whether Discord created the message (the
 * connection dropped, the request timed out, a 5xx). The webhook clients do not retry these
 * themselves (`retries: 0` in webhooks.ts), because a blind resend posts the reply twice when
 * Discord had acted. Instead we first look in the channel for the message: found → done, exactly
 * once; not found → send again. Only when the lookup itself fails do we resend blind, accepting
 * a possible duplicate over a lost reply. Bounded: 4 resends, 0.5 s → 4 s apart.
 */
const UNSURE_RETRIES = 4;
/** How far back (ms) a message counts as "the one we just tried to send": covers clock skew. */
export const LOOKUP_SLACK_MS = 5000;
/** Ids kept in `OutboundContext.answered`. */
export const ANSWERED_KEPT = 1000;

/** Post `content` (already within 2,000 characters) with `files`, and return the Discord message id. */
export async function sendChunk(ctx: OutboundContext, chat: ChatRef, content: string, who: Sender, isSystem: boolean, files?: Array<{ attachment: Buffer; name: string }>): Promise<string> {
  const where = `Discord: posting as ${who.username} in ${chat.chatId}`;
  let unsure = 0;
  let recreated = false;
  const firstTry = Date.now();
  for (;;) {
    let hook: WebhookClient | undefined;
    try {
      hook = await ctx.webhooks.get(chat.chatId);
      const sent = await hook.send({
        content,
        ...(files?.length ? { files } : {}),
        username: who.username,
        ...(who.avatarURL ? { avatarURL: who.avatarURL } : {}),
        ...(who.mentions === 'none' ? { allowedMentions: { parse: [] } } : {}),
        ...(chat.threadId ? { threadId: chat.threadId } : {}),
      });
      ctx.answered.add(sent.id);
      return sent.id;
    } catch (err) {
      if (hook && isUnsure(err) && unsure < UNSURE_RETRIES) {
        unsure++;
        await new Promise((r) => setTimeout(r, 250 * 2 ** unsure));
        const found = await findPosted(ctx, chat, hook.id, who.username, content, firstTry - LOOKUP_SLACK_MS, { files: files?.length ?? 0 });
        if (found) {
          ctx.log.warn({ chatId: chat.chatId, messageId: found }, 'discord: the answer to a post was lost, but the message is in the channel; not sending it again');
          ctx.answered.add(found);
          return found;
        }
        ctx.log.warn({ chatId: chat.chatId, err: sanitizeError(err, where).message, attempt: unsure }, 'discord: a post failed without a clear answer; sending it again');
        continue;
      }
      if (!recreated && isUnknownWebhook(err)) {
        recreated = true;
        ctx.log.warn({ chatId: chat.chatId }, 'discord: the channel webhook is gone; recreating it');
        ctx.webhooks.forget(chat.chatId);
        continue;
      }
      if (err instanceof MissingWebhookPermission || isMissingPermission(err)) {
        const channel = await guildChannel(ctx.client, chat.chatId);
        const msg = missingManageWebhooksMessage({ id: chat.chatId, name: channel?.name });
        ctx.channelProblem(chat.chatId, msg);
        ctx.log.error(msg);
        if (isSystem) return sendAsBot(ctx, chat, content, where);
        throw new DiscordPostError(msg, 403, 50013);
      }
      throw sanitizeError(err, where);
    }
  }
}

/** No answer (dropped connection, timeout) or a 5xx: the message may or may not exist. */
function isUnsure(err: unknown): boolean {
  if (err instanceof HTTPError) return err.status >= 500;
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  return err.name === 'AbortError' || (typeof code === 'string' && /^(UND_ERR_|E[A-Z]+$)/.test(code));
}

/**
 * Pages of 100 read when looking for a post: a resumed delivery may be an outage behind. One
 * further back than that is sent again (a duplicate, never a loss).
 */
const LOOKUP_PAGES = 10;

/**
 * The id of our webhooks' message (this one's, or an earlier webhook of ours in the channel) with
 * this author, text and number of files (`files`; Discord may rename files, so not their names),
 * created since `sinceMs` and after message `after`, not in `skip`; the oldest such. Undefined when
 * there is none or the channel cannot be read (then the caller sends).
 */
export async function findPosted(
  ctx: OutboundContext,
  chat: ChatRef,
  webhookId: string,
  username: string,
  content: string,
  sinceMs: number,
  opts: { after?: string | undefined; skip?: ReadonlySet<string> | undefined; files?: number | undefined } = {},
): Promise<string | undefined> {
  try {
    let after = SnowflakeUtil.generate({ timestamp: BigInt(Math.max(0, sinceMs)) }).toString();
    if (opts.after && BigInt(opts.after) > BigInt(after)) after = opts.after;
    const text = content.trim();
    for (let page = 0; page < LOOKUP_PAGES; page++) {
      const recent = (await ctx.client.rest.get(Routes.channelMessages(chat.threadId ?? chat.chatId), {
        query: new URLSearchParams({ after, limit: '100' }),
      })) as APIMessage[];
      // Oldest first: if a blind resend (lookup failed earlier) made two, the first one is kept.
      const ordered = recent.sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1));
      const mine = ordered.find(
        (m) =>
          m.webhook_id &&
          (m.webhook_id === webhookId || ctx.webhooks.isOwn(m.webhook_id)) &&
          !ctx.answered.has(m.id) &&
          !opts.skip?.has(m.id) &&
          m.author.username === username &&
          m.content.trim() === text &&
          (m.attachments?.length ?? 0) === (opts.files ?? 0),
      );
      if (mine) return mine.id;
      const last = ordered.at(-1);
      if (recent.length < 100 || !last) return undefined;
      after = last.id;
    }
    return undefined;
  } catch (err) {
    ctx.log.warn({ chatId: chat.chatId, err: sanitizeError(err, 'Discord: reading recent messages').message }, 'discord: cannot check whether a post went through');
    return undefined;
  }
}

async function sendAsBot(ctx: OutboundContext, chat: ChatRef, content: string, where: string): Promise<string> {
  try {
    const sent = (await ctx.client.rest.post(Routes.channelMessages(chat.threadId ?? chat.chatId), {
      body: { content, allowed_mentions: { parse: ['users'] } },
    })) as { id: string };
    return sent.id;
  } catch (err) {
    throw sanitizeError(err, where);
  }
}
