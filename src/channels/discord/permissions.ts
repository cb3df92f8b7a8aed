/**
 * Permission questions the adapter asks Discord: which channel a chat id is, and may this member
 * run admin commands there. Answered from discord.js's permission calculation (roles, channel
 * overwrites, owner, Administrator) with members fetched over REST when the cache does not have
 * them — the bot does not request the privileged GuildMembers intent.
 */
import { PermissionFlagsBits, Routes, type Client, type GuildBasedChannel } from 'discord.js';

/** The guild channel behind a chat id, from the cache or fetched. */
export async function guildChannel(client: Client, channelId: string): Promise<GuildBasedChannel | undefined> {
  const cached = client.channels.cache.get(channelId);
  const channel = cached ?? (await client.channels.fetch(channelId).catch(() => null));
  if (!channel || channel.isDMBased()) return undefined;
  return channel as GuildBasedChannel;
}

/** Does `userId` have Manage Channels in that channel? Unknown members and channels: no. */
export async function hasManageChannels(client: Client, channelId: string, userId: string): Promise<boolean> {
  const channel = await guildChannel(client, channelId);
  if (!channel) return false;
  const member = await channel.guild.members.fetch(userId).catch(() => null);
  if (!member) return false;
  return channel.permissionsFor(member).has(PermissionFlagsBits.ManageChannels);
}

/**
 * The permissions the bot lacks to react in `channel` (Read Message History, and Add Reactions to
 * be the first with an emoji), by name; empty when it has them.
 */
export function missingReactionPermissions(client: Client, channel: GuildBasedChannel): string[] {
  const me = client.user ? channel.permissionsFor(client.user) : null;
  if (!me) return ['Add Reactions', 'Read Message History'];
  const out: string[] = [];
  if (!me.has(PermissionFlagsBits.AddReactions)) out.push('Add Reactions');
  if (!me.has(PermissionFlagsBits.ReadMessageHistory)) out.push('Read Message History');
  return out;
}

/**
 * Put the guild of `channelId` in the cache if it is not there. Without a gateway session nothing
 * is cached, and the channel's permissions cannot be worked out without its guild.
 */
export async function fetchGuildOf(client: Client, channelId: string): Promise<void> {
  if (client.channels.cache.has(channelId)) return;
  const raw = (await client.rest.get(Routes.channel(channelId))) as { guild_id?: string };
  if (raw.guild_id && !client.guilds.cache.has(raw.guild_id)) await client.guilds.fetch(raw.guild_id);
}
