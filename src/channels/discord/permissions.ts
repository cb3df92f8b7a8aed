/**
 * Permission questions the adapter asks Discord: may this member run admin commands, and can the
 * bot do its job in this channel. Both are answered from discord.js's permission calculation
 * (roles, channel overwrites, owner, Administrator) with members fetched over REST when the
 * cache does not have them — the bot does not request the privileged GuildMembers intent.
 */
import { PermissionFlagsBits, type Client, type GuildBasedChannel } from 'discord.js';

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
 * Permissions the bot itself lacks in a channel, by name ("Manage Webhooks", ...). Empty when all
 * is well or when the bot's own member is not known yet (then the REST calls will tell).
 */
export async function missingBotPermissions(client: Client, channelId: string): Promise<string[]> {
  const channel = await guildChannel(client, channelId);
  if (!channel) return ['View Channel'];
  const me = channel.guild.members.me ?? (await channel.guild.members.fetchMe().catch(() => null));
  if (!me) return [];
  const perms = channel.permissionsFor(me);
  const needed: Array<[bigint, string]> = [
    [PermissionFlagsBits.ViewChannel, 'View Channel'],
    [PermissionFlagsBits.ManageWebhooks, 'Manage Webhooks'],
  ];
  return needed.filter(([bit]) => !perms.has(bit)).map(([, name]) => name);
}
