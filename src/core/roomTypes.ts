/**
 * Rooms across chats: one group living in several chats at once (a Telegram group, a Discord
 * channel, the web room). The group's own chat (`GroupHead.channel` / `chatId`) is its home; the
 * others are its links. Every entry is posted to each chat of the room that did not see it
 * already, and each chat's copy has its own delivery state in the log, so a platform that is down
 * holds back nothing on the others and gets its backlog in order, once, when it returns.
 *
 * Shapes only: what the log keeps of links and copies, what channels report and are asked to post.
 */
import type { ChannelKind, ChatAddress, InboundAuthor } from './types.js';

// Defined beside the entry that holds them (types.ts), named here with the rest of the rooms' shapes.
export type { ChatAddress, ChatCopy } from './types.js';

/** One chat of a room other than the group's home chat. */
export interface LinkedChat {
  channel: ChannelKind;
  /** The platform's chat id; a web link's is the group's id (the web room of the group). */
  chatId: string;
  /** What people call the chat ("#general", "Team chat"), for announcements and lists. */
  title?: string | undefined;
  /** When it was linked. */
  at: number;
}

/** `channel:chatId`: the key of one chat in `TranscriptEntry.copies` and `DeliveryOutcome.chat`. */
export function chatKeyOf(c: ChatAddress): string {
  return `${c.channel}:${c.chatId}`;
}

/** The chat a key names (the inverse of `chatKeyOf`; chat ids may hold ':' themselves). */
export function chatOfKey(key: string): ChatAddress {
  const i = key.indexOf(':');
  return { channel: key.slice(0, i) as ChannelKind, chatId: key.slice(i + 1) };
}

/** Who wrote a message relayed into another chat: how that chat shows them. */
export interface RelayedAuthor {
  /** Their display name where they wrote it. */
  name: string;
  /** The platform they wrote on ("Maya · Telegram"). */
  platform: ChannelKind;
  /** A bot that is not a Chorus agent (Telegram's bot-to-bot mode) or a person. */
  kind: 'person' | 'bot';
  /** An https URL of their picture, where the platform gave one (Discord). */
  avatarUrl?: string | undefined;
}

/**
 * Who posted a message a channel is asked to change or remove: the agent (its own bot / webhook
 * name), the relay (a relayed person), or the system voice. Telegram lets only the bot that sent a
 * message edit it.
 */
export type PostedBy = { agentId: string } | { relayed: RelayedAuthor } | { system: true };

/**
 * A person changed or deleted a message on a platform (Telegram `edited_message`, Discord message
 * update / delete). `deleted` without `text`: it is gone.
 */
export interface PlatformEdit {
  channel: ChannelKind;
  chatId: string;
  platformMessageId: string;
  author: InboundAuthor;
  text?: string | undefined;
  deleted?: true | undefined;
}

/**
 * An edit or deletion to carry to one chat's copy of an entry (kept in the group's state until
 * done, so a crash or an outage does not lose it). The copy's text is made again from the entry.
 */
export interface CarryItem {
  seq: number;
  /** The chat's key. */
  chat: string;
  /** The platform ids of the copy there. */
  ids: string[];
  /** Who posted the copy. */
  by: PostedBy;
  /** Which of the channel's identities posted it (`ChatCopy.via`), when known. */
  via?: string | undefined;
  /** The entry's edit time this brings the copy to. */
  at: number;
  /** The entry's new text (an edit); the channel shows it as it showed the copy (a relayed line carries the name). */
  text?: string | undefined;
  deleted?: true | undefined;
}

/** A one-time code that links another chat to this group's room (`/group link`). */
export interface LinkCode {
  code: string;
  /** Valid until (epoch ms). */
  until: number;
  /** The chat it was made in (its key), to name it when used. */
  from: string;
}

/** How long a link code is valid. */
export const LINK_CODE_TTL_MS = 10 * 60 * 1000;
