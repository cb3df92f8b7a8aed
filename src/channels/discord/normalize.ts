/**
 * Discord message → InboundMessage, and the decision whether a message is for Chorus at all.
 *
 * Skipped: Chorus's own webhook posts and its own bot's messages (their echoes would otherwise
 * loop back into the router), other bots unless `allow_bots`, DMs, system messages (joins, pins),
 * channels outside the allow-list, and messages with nothing to read. A bot let in is marked as one.
 */
import { MessageType, type GuildMember, type Message, type PartialUser, type User } from 'discord.js';
import { cleanDisplayName } from '../../core/text/displayName.js';
import type { AgentDef, InboundMessage, NormalizedMessage } from '../../core/types.js';

export interface NormalizeContext {
  botUserId: string | undefined;
  applicationId: string | undefined;
  isOwnWebhook(webhookId: string): boolean;
  webhookName: string;
  allowBots: boolean;
  /** Empty = every channel the bot can read. */
  allowList: ReadonlySet<string>;
  agents: readonly AgentDef[];
  /** Which agent posted this message (the adapter's map, then the router's). */
  agentForMessage(chatId: string, messageId: string): string | undefined;
}

export function normalizeMessage(m: Message, ctx: NormalizeContext): NormalizedMessage {
  if (!m.inGuild()) return { skip: 'not in a server' };
  if (m.type !== MessageType.Default && m.type !== MessageType.Reply) return { skip: 'system message' };
  if (isOwnMessage(m, ctx)) return { skip: 'own post' };
  // Webhook posts of other integrations arrive as bot authors too; both follow allow_bots.
  if ((m.author.bot || m.webhookId) && !ctx.allowBots) return { skip: 'bot author' };

  // A thread belongs to its parent channel's group; posts go back into the thread.
  const thread = m.channel.isThread() ? m.channel : null;
  const chatId = thread?.parentId ?? m.channelId;
  if (ctx.allowList.size > 0 && !ctx.allowList.has(chatId)) return { skip: 'channel not in channels.discord.channels' };

  const text = readableText(m);
  // Files alone are a message: the channel fetches and keeps them before handing it over.
  if (!text.trim() && m.attachments.size === 0) return { skip: 'no text (is the Message Content intent enabled?)' };

  const parentName = thread ? thread.parent?.name : 'name' in m.channel ? m.channel.name : undefined;
  const message: InboundMessage = {
    channel: 'discord',
    chatId,
    messageId: m.id,
    author: { id: m.author.id, name: personName(m.member, m.author) },
    text,
    ts: m.createdTimestamp,
    threadId: thread?.id,
    replyToAgentId: replyTarget(m, chatId, ctx),
    replyToPlatformId: m.reference?.messageId ?? undefined,
    chatTitle: parentName ? `#${parentName}` : undefined,
  };
  const avatar = avatarUrlOf(m.member, m.author);
  if (avatar) message.authorAvatarUrl = avatar;
  // Another bot or another integration's webhook (Chorus's own are skipped above) is never a
  // person: its commands are refused and what agents do for it is budgeted (core/rooms/BotPairs).
  if (m.author.bot || m.webhookId) message.authorKind = 'bot';
  return { message };
}

/**
 * How a person is named: their server nickname, else their display name, else their username
 * (a user known only by id, as in a reaction removal: "user <id>"). Cleaned like every display
 * name (core/text/displayName.ts): no bidi or invisible tricks.
 */
export function personName(member: GuildMember | null | undefined, user: User | PartialUser): string {
  return cleanDisplayName(member?.displayName ?? user.globalName ?? user.username ?? '') || cleanDisplayName(user.username ?? '') || `user ${user.id}`;
}

/** The picture Discord shows for a person (their server avatar, else their own or the default): https only. */
export function avatarUrlOf(member: GuildMember | null | undefined, user: User): string | undefined {
  try {
    const url = (member ?? user).displayAvatarURL({ extension: 'png', size: 128 });
    return /^https:\/\/\S+$/i.test(url) ? url : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Chorus's own post (the gateway bot's, or any of its webhooks' under whatever name: agents, the
 * system voice, people relayed from other chats): never input, or it would loop back.
 */
export function isOwnMessage(m: Pick<Message, 'author' | 'webhookId' | 'applicationId'>, ctx: Pick<NormalizeContext, 'botUserId' | 'applicationId' | 'isOwnWebhook'>): boolean {
  if (ctx.botUserId && m.author.id === ctx.botUserId) return true;
  if (!m.webhookId) return false;
  if (ctx.isOwnWebhook(m.webhookId)) return true;
  // After a restart the echo of a post may beat the webhook lookup; the application id still tells.
  return Boolean(ctx.applicationId && m.applicationId === ctx.applicationId);
}

/** The agent whose webhook message this one replies to, if any. */
function replyTarget(m: Message, chatId: string, ctx: NormalizeContext): string | undefined {
  const refId = m.reference?.messageId;
  if (!refId) return undefined;
  const known = ctx.agentForMessage(chatId, refId);
  if (known) return known;
  // Unknown id (posted before a restart, map trimmed): recognise the agent by the webhook name.
  const ref = m.channel.messages.cache.get(refId);
  if (!ref?.webhookId) return undefined;
  const own = ctx.isOwnWebhook(ref.webhookId) || (ctx.applicationId !== undefined && ref.applicationId === ctx.applicationId);
  if (!own) return undefined;
  const byName = ctx.agents.find((a) => a.name.trim() === ref.author.username);
  if (byName) return byName.id;
  // Agents whose names Discord refuses post under the webhook name with a bold label.
  if (ref.author.username === ctx.webhookName) {
    return ctx.agents.find((a) => ref.content.startsWith(`**${a.name}:**`))?.id;
  }
  return undefined;
}

/**
 * The message text as people read it: `<@id>` → `@Name`, `<#id>` → `#channel`, `<@&id>` → `@Role`
 * (attachments are files, see files.ts). Plain `@handle` text (how people address agents, which are not
 * Discord users) is left alone, and so are `@everyone`/`@here` so the router sees its aliases.
 */
function readableText(m: Message): string {
  let text = m.content ?? '';
  const guild = m.guild;
  text = text.replace(/<@!?(\d+)>/g, (whole, id: string) => {
    const member = guild?.members.cache.get(id);
    const user = m.mentions.users.get(id) ?? m.client.users.cache.get(id);
    const name = member?.displayName ?? user?.globalName ?? user?.username;
    return name ? `@${name}` : whole;
  });
  text = text.replace(/<@&(\d+)>/g, (whole, id: string) => {
    const role = guild?.roles.cache.get(id);
    return role ? `@${role.name}` : whole;
  });
  text = text.replace(/<#(\d+)>/g, (whole, id: string) => {
    const ch = m.client.channels.cache.get(id);
    return ch && 'name' in ch && ch.name ? `#${ch.name}` : whole;
  });
  return text;
}
