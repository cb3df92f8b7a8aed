/**
 * How an agent, or a person relayed from another chat, appears on Discord: the webhook `username`
 * and `avatar_url` of its posts, and the rules Discord puts on webhook usernames (1–80
 * characters, never "discord" or "clyde").
 */
import type { RelayedAuthor } from '../../core/roomTypes.js';
import { cleanDisplayName } from '../../core/text/displayName.js';
import type { AgentDef, ChannelKind } from '../../core/types.js';
import type { DiscordConfig } from './config.js';

/** Discord's limit on webhook usernames. */
const WEBHOOK_USERNAME_MAX = 80;

/** Why Discord would refuse `name` as a webhook username, or null when it is fine. */
export function webhookUsernameProblem(name: string): string | null {
  const trimmed = name.trim();
  if (trimmed.length === 0) return 'it is empty';
  if (trimmed.length > WEBHOOK_USERNAME_MAX) return `it is longer than ${WEBHOOK_USERNAME_MAX} characters (${trimmed.length})`;
  const banned = /discord|clyde/i.exec(trimmed);
  if (banned) return `it contains "${banned[0].toLowerCase()}", which Discord does not allow in webhook names`;
  return null;
}

const PLATFORM_NAMES: Record<ChannelKind, string> = { telegram: 'Telegram', web: 'Web', discord: 'Discord' };

/**
 * A name Discord takes as a webhook username, whoever chose it: a person on Telegram called
 * "Discord Fan" is still relayed ("Disc0rd Fan"): one letter of each word Discord refuses becomes
 * a digit, so the name stays readable; cut to 80 characters (never inside a surrogate pair).
 */
export function safeWebhookUsername(name: string): string {
  let s = name
    .replace(/discord/gi, (w) => `${w.slice(0, 4)}0${w.slice(5)}`)
    .replace(/clyde/gi, (w) => `${w[0]}1${w.slice(2)}`)
    .trim();
  if (s.length > WEBHOOK_USERNAME_MAX) {
    const points = Array.from(s);
    while (points.join('').length > WEBHOOK_USERNAME_MAX) points.pop();
    s = points.join('').trimEnd();
  }
  return s;
}

/**
 * How a person (or a foreign bot) from another chat of the room posts here: "Maya · Telegram",
 * "Helper (bot) · Telegram", with their picture when it is an https URL. The name is cut before
 * the platform, so a long one still shows where it comes from. Their text never pings anyone.
 */
export function relayIdentity(from: RelayedAuthor): { username: string; avatarURL: string | undefined; mentions: 'none' } {
  const suffix = `${from.kind === 'bot' ? ' (bot)' : ''} · ${PLATFORM_NAMES[from.platform] ?? from.platform}`;
  const name = cleanDisplayName(from.name, WEBHOOK_USERNAME_MAX) || 'Someone';
  const points = Array.from(name);
  while (points.length > 1 && points.join('').trimEnd().length + suffix.length > WEBHOOK_USERNAME_MAX) points.pop();
  const avatar = from.avatarUrl?.trim();
  return {
    username: safeWebhookUsername(points.join('').trimEnd() + suffix),
    avatarURL: avatar && /^https:\/\/\S+$/i.test(avatar) ? avatar : undefined,
    mentions: 'none',
  };
}

/** What one post of an agent carries besides its text. */
export interface WebhookIdentity {
  username: string;
  avatarURL: string | undefined;
  /**
   * Set when the agent's name cannot be a webhook username: the post goes out under the webhook
   * name and the text starts with this label, so readers still see who speaks.
   */
  label: string | undefined;
}

export function identityFor(agent: AgentDef, cfg: DiscordConfig): WebhookIdentity {
  const avatarURL = avatarUrlFor(agent, cfg);
  if (webhookUsernameProblem(agent.name)) return { username: cfg.webhook_name, avatarURL, label: `**${agent.name}:** ` };
  return { username: agent.name.trim(), avatarURL, label: undefined };
}

/**
 * `discord.avatar_url` wins; else the agent's `avatar` when it is an https URL; else, for emoji
 * avatars, an image URL built from `emoji_avatar_base`; else none (Discord shows its default).
 */
function avatarUrlFor(agent: AgentDef, cfg: DiscordConfig): string | undefined {
  const explicit = agent.discord?.avatar_url?.trim();
  if (explicit) return explicit;
  const avatar = agent.avatar?.trim();
  if (!avatar) return undefined;
  if (/^https:\/\/\S+$/i.test(avatar)) return avatar;
  if (cfg.emoji_avatar_base && isEmoji(avatar)) return emojiImageUrl(cfg.emoji_avatar_base, avatar);
  return undefined;
}

/** A short string made of emoji (with joiners and variation selectors), e.g. "📈" or "🧑‍💻". */
function isEmoji(s: string): boolean {
  return s.length <= 32 && /^(?:\p{Extended_Pictographic}|\p{Regional_Indicator}|\p{Emoji_Modifier}|\u200d|\ufe0f|[#*0-9]\u20e3)+$/u.test(s);
}

/**
 * Image URL for an emoji. The base may carry a placeholder so it fits common emoji CDNs:
 * `{codepoints}` → "1f4c8" / "1f9d1-200d-1f4bb" (Twemoji file names, FE0F dropped),
 * `{emoji}` → the URL-encoded emoji; without a placeholder the encoded emoji is appended.
 */
function emojiImageUrl(base: string, emoji: string): string {
  if (base.includes('{codepoints}')) {
    const cps = [...emoji]
      .map((c) => c.codePointAt(0)!)
      .filter((cp) => cp !== 0xfe0f)
      .map((cp) => cp.toString(16));
    return base.replace('{codepoints}', cps.join('-'));
  }
  if (base.includes('{emoji}')) return base.replace('{emoji}', encodeURIComponent(emoji));
  return base + encodeURIComponent(emoji);
}
