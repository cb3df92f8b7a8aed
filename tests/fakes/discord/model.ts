/**
 * The fake Discord's world: one guild with text channels, roles, members and webhooks, and the
 * messages posted in it. Payload builders produce the raw API shapes discord.js 14 parses, with
 * only the fields it actually reads filled in.
 */

/** Permission bits the fake computes with (same values as Discord's). */
export const Perm = {
  Administrator: 1n << 3n,
  ManageChannels: 1n << 4n,
  ManageMessages: 1n << 13n,
  AddReactions: 1n << 6n,
  ViewChannel: 1n << 10n,
  SendMessages: 1n << 11n,
  ReadMessageHistory: 1n << 16n,
  ManageWebhooks: 1n << 29n,
} as const;

/** Gateway intents the fake cares about. */
export const Intent = { Guilds: 1, GuildMessages: 1 << 9, GuildMessageReactions: 1 << 10, MessageContent: 1 << 15 } as const;

const DISCORD_EPOCH = 1420070400000n;
let increment = 0n;

/** A snowflake that encodes the current time, so discord.js derives sane timestamps from it. */
export function snowflake(): string {
  increment = (increment + 1n) & 0xfffn;
  return (((BigInt(Date.now()) - DISCORD_EPOCH) << 22n) | (1n << 17n) | increment).toString();
}

export interface FakeUser {
  id: string;
  username: string;
  global_name: string | null;
  bot: boolean;
}

export interface FakeRole {
  id: string;
  name: string;
  permissions: bigint;
  position: number;
}

export interface FakeChannel {
  id: string;
  name: string;
  /** Channel-level overwrites (role or member id → allow/deny bits). */
  overwrites: Array<{ id: string; type: 0 | 1; allow: bigint; deny: bigint }>;
}

export interface FakeWebhook {
  id: string;
  token: string;
  channel_id: string;
  name: string;
  /** Set when a bot application created it (Discord reports this). */
  application_id: string | null;
}

/** One message as the fake stores it: enough to build the API object and to assert on. */
export interface StoredMessage {
  id: string;
  channel_id: string;
  author: FakeUser;
  content: string;
  webhook_id: string | null;
  application_id: string | null;
  /** For webhook posts: what the execute call asked for. */
  avatar_url: string | null;
  reply_to: string | null;
  ts: number;
  /** When its text was last edited (Discord's `edited_timestamp`). */
  edited_ts?: number | null | undefined;
  /** What the post asked for (`allowed_mentions` of the execute / create call), as Discord got it. */
  allowed_mentions?: unknown;
  /** Files on the message: a person's (served at `url`), or ones a webhook uploaded (`sha256`). */
  attachments?: Array<{ id: string; filename: string; size: number; url: string; content_type?: string | undefined; sha256?: string | undefined }> | undefined;
}

/** A reaction's emoji: unicode (`id` null) or a server's custom emoji (`name` and `id`). */
export interface FakeEmoji {
  name: string;
  id: string | null;
}

/** One user's reaction on one message, as the fake keeps it. */
export interface FakeReaction {
  channelId: string;
  messageId: string;
  userId: string;
  emoji: FakeEmoji;
}

/** The key Discord tells emoji apart by: the character, or `name:id` for a custom one. */
export function emojiKey(e: FakeEmoji): string {
  return e.id ? `${e.name}:${e.id}` : e.name;
}

const EMOJI_PART = String.raw`\p{Extended_Pictographic}(?:\p{Emoji_Modifier}|\uFE0F|\uFE0E|[\u{E0020}-\u{E007F}])*`;
const UNICODE_EMOJI = new RegExp(String.raw`^(?:${EMOJI_PART}(?:\u200D${EMOJI_PART})*|\p{Regional_Indicator}{2}|[0-9#*]\uFE0F?\u20E3)$`, 'u');

/** Is `text` one unicode emoji Discord would take as a reaction (roughly: one pictograph sequence)? */
export function isUnicodeEmoji(text: string): boolean {
  return UNICODE_EMOJI.test(text);
}

/** The emoji object of gateway reaction events. */
export function emojiPayload(e: FakeEmoji): Record<string, unknown> {
  return e.id ? { id: e.id, name: e.name, animated: false } : { id: null, name: e.name };
}

export function userPayload(u: FakeUser): Record<string, unknown> {
  return {
    id: u.id,
    username: u.username,
    global_name: u.global_name,
    discriminator: '0',
    avatar: null,
    bot: u.bot,
    public_flags: 0,
  };
}

export function rolePayload(r: FakeRole): Record<string, unknown> {
  return {
    id: r.id,
    name: r.name,
    permissions: r.permissions.toString(),
    position: r.position,
    color: 0,
    hoist: false,
    managed: false,
    mentionable: false,
    icon: null,
    unicode_emoji: null,
    flags: 0,
  };
}

export function channelPayload(c: FakeChannel, guildId: string, position: number): Record<string, unknown> {
  return {
    id: c.id,
    type: 0,
    guild_id: guildId,
    name: c.name,
    position,
    parent_id: null,
    topic: null,
    nsfw: false,
    last_message_id: null,
    rate_limit_per_user: 0,
    permission_overwrites: c.overwrites.map((o) => ({ id: o.id, type: o.type, allow: o.allow.toString(), deny: o.deny.toString() })),
  };
}

export function memberPayload(u: FakeUser, roles: string[], withUser = true): Record<string, unknown> {
  return {
    ...(withUser ? { user: userPayload(u) } : {}),
    nick: null,
    avatar: null,
    roles,
    joined_at: '2024-01-01T00:00:00.000Z',
    premium_since: null,
    deaf: false,
    mute: false,
    pending: false,
    flags: 0,
  };
}

export function webhookPayload(w: FakeWebhook, guildId: string, creator: FakeUser | null): Record<string, unknown> {
  return {
    id: w.id,
    type: 1,
    guild_id: guildId,
    channel_id: w.channel_id,
    name: w.name,
    avatar: null,
    token: w.token,
    application_id: w.application_id,
    ...(creator ? { user: userPayload(creator) } : {}),
  };
}

/** The API message object for a stored message (REST responses and MESSAGE_CREATE). */
export function messagePayload(
  m: StoredMessage,
  guildId: string,
  referenced: StoredMessage | undefined,
  opts: { blankContent?: boolean; memberRoles?: string[] | undefined; mentions?: FakeUser[] } = {},
): Record<string, unknown> {
  const blank = opts.blankContent ?? false;
  return {
    id: m.id,
    type: m.reply_to ? 19 : 0,
    channel_id: m.channel_id,
    guild_id: guildId,
    author: m.webhook_id ? { id: m.webhook_id, username: m.author.username, discriminator: '0000', avatar: null, bot: true } : userPayload(m.author),
    // Discord sends a partial member (no user) with guild messages from real members.
    ...(m.webhook_id || opts.memberRoles === undefined ? {} : { member: memberPayload(m.author, opts.memberRoles, false) }),
    content: blank ? '' : m.content,
    timestamp: new Date(m.ts).toISOString(),
    edited_timestamp: m.edited_ts ? new Date(m.edited_ts).toISOString() : null,
    tts: false,
    mention_everyone: false,
    mentions: (opts.mentions ?? []).map((u) => userPayload(u)),
    mention_roles: [],
    attachments: (m.attachments ?? []).map(({ sha256: _sha, ...a }) => ({ ...a, proxy_url: a.url })),
    embeds: [],
    components: [],
    pinned: false,
    flags: 0,
    ...(m.webhook_id ? { webhook_id: m.webhook_id } : {}),
    ...(m.application_id ? { application_id: m.application_id } : {}),
    ...(m.reply_to
      ? {
          message_reference: { type: 0, message_id: m.reply_to, channel_id: m.channel_id, guild_id: guildId },
          referenced_message: referenced ? messagePayload(referenced, guildId, undefined, { blankContent: blank }) : null,
        }
      : {}),
  };
}
