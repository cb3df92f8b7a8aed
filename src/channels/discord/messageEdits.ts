/**
 * People editing and deleting their messages on Discord, from the gateway's message update and
 * delete events to `ChannelHost.edited`, so the entry follows and the room's other chats get the
 * change.
 *
 * An update is taken when the text changed: Discord also sends updates when a link's preview is
 * added or a message is pinned, with the same text. A message discord.js does not hold (posted
 * before the bot started, or pushed out of its cache) arrives as a partial (the Message partial):
 * an update without its text is fetched; a deletion names only the message, so its author is not
 * known (empty id and name) and the core finds the entry by the message id.
 *
 * Skipped as for new messages (normalize.ts): Chorus's own posts (its bot, every one of its
 * webhooks: agents, notices, people relayed from other chats — changing those is Chorus's own
 * doing and must not loop back), other bots unless `allow_bots`, DMs, channels outside the
 * allow-list.
 */
import type { Client, Message, PartialMessage } from 'discord.js';
import type { Logger } from '../../core/ports.js';
import type { PlatformEdit } from '../../core/roomTypes.js';
import type { NormalizedMessage } from '../../core/types.js';
import { sanitizeError } from './errors.js';
import { isOwnMessage, personName, type NormalizeContext } from './normalize.js';

export interface EditEventsContext {
  log: Logger;
  /** Is this client the adapter's current gateway session? */
  live(client: Client): boolean;
  /** The normalisation of new messages, with the session's context. */
  normalize(m: Message): NormalizedMessage;
  ownership(): Pick<NormalizeContext, 'botUserId' | 'applicationId' | 'isOwnWebhook'>;
  allowBots: boolean;
  allowList: ReadonlySet<string>;
  deliver(e: PlatformEdit): void;
}

type AnyMessage = Message | PartialMessage;

export function listenForEdits(client: Client, ctx: EditEventsContext): void {
  client.on('messageUpdate', (old, m) => {
    if (!ctx.live(client)) return;
    onUpdate(old, m, ctx).catch((err: unknown) => ctx.log.error({ messageId: m.id, reason: sanitizeError(err, 'Discord: an edit').message }, 'discord: an edit could not be handed over'));
  });
  client.on('messageDelete', (m) => {
    if (ctx.live(client)) onDelete(m, ctx);
  });
  client.on('messageDeleteBulk', (messages) => {
    if (!ctx.live(client)) return;
    // Oldest first, as they were written.
    for (const m of [...messages.values()].sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1))) onDelete(m, ctx);
  });
}

async function onUpdate(old: AnyMessage, updated: AnyMessage, ctx: EditEventsContext): Promise<void> {
  let m: Message;
  try {
    m = updated.partial ? await updated.fetch() : updated;
  } catch (err) {
    ctx.log.warn({ messageId: updated.id, reason: sanitizeError(err, 'Discord: reading an edited message').message }, 'discord: an edited message could not be read; the edit is not carried');
    return;
  }
  // Not an edit of the text: a preview, a pin, a flag (known old text), or no edit time at all.
  if (!old.partial ? old.content === m.content : m.editedTimestamp === null) return;
  // Reading it took a while: the session may have ended meanwhile.
  if (!ctx.live(m.client)) return;
  const result = ctx.normalize(m);
  if ('skip' in result) {
    ctx.log.debug({ messageId: m.id, reason: result.skip }, 'discord: edit skipped');
    return;
  }
  const msg = result.message;
  ctx.deliver({ channel: 'discord', chatId: msg.chatId, platformMessageId: m.id, author: msg.author, text: msg.text });
}

function onDelete(m: AnyMessage, ctx: EditEventsContext): void {
  if (!m.inGuild()) return;
  const chatId = (m.channel?.isThread() ? m.channel.parentId : null) ?? m.channelId;
  if (ctx.allowList.size > 0 && !ctx.allowList.has(chatId)) return;
  let author = { id: '', name: '' };
  if (!m.partial) {
    if (isOwnMessage(m, ctx.ownership())) return;
    if ((m.author.bot || m.webhookId) && !ctx.allowBots) return;
    author = { id: m.author.id, name: personName(m.member, m.author) };
  }
  ctx.deliver({ channel: 'discord', chatId, platformMessageId: m.id, author, deleted: true });
}
