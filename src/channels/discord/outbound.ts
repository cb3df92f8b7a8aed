/**
 * Sending one chunk of text to a Discord channel through its webhook, with the recoveries that
 * keep replies from being lost: a webhook deleted behind our back is recreated once, and a
 * system notice that cannot use the webhook (no Manage Webhooks) is posted by the bot itself so
 * the chat still hears what is wrong. Errors leave here sanitised (no webhook token).
 */
import { Routes, type Client } from 'discord.js';
import type { Logger } from '../../core/ports.js';
import type { ChatRef } from '../../core/types.js';
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
}

export interface Sender {
  username: string;
  avatarURL: string | undefined;
}

/** Post `content` (already within 2,000 characters) and return the Discord message id. */
export async function sendChunk(ctx: OutboundContext, chat: ChatRef, content: string, who: Sender, isSystem: boolean): Promise<string> {
  const where = `Discord: posting as ${who.username} in ${chat.chatId}`;
  for (let attempt = 0; ; attempt++) {
    try {
      const hook = await ctx.webhooks.get(chat.chatId);
      const sent = await hook.send({
        content,
        username: who.username,
        ...(who.avatarURL ? { avatarURL: who.avatarURL } : {}),
        ...(chat.threadId ? { threadId: chat.threadId } : {}),
      });
      return sent.id;
    } catch (err) {
      if (attempt === 0 && isUnknownWebhook(err)) {
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
